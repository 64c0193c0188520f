/* bench/matmul: Loom's matmul kernels against OpenBLAS, side by side in one
 * run, 1 and 2 threads.
 *
 * Loom builds each product the way the model compiler builds a MatMul with
 * a constant weight B [K, N] (a classifier, a transformer's projections):
 * B packed into column panels as graph_pass_pack_matmul packs it (the
 * width from graph_pack_matmul_width: one target vector from 16 rows on,
 * a GEMV's whole column tile for one row), the compute definition
 * (topi_matmul_packed, or topi_matmul_nd where the pass leaves B alone),
 * the group scheduler (compile_schedule_group: the default schedule the
 * target decides), driver_build. `--runtime-b` times the product of two
 * run-time operands instead (the kernel reads B [K, N] as it is).
 *
 * The peer is OpenBLAS: cblas_sgemm, and for one row (M = 1) the faster of
 * its two matrix-vector products, sgemv on B [K, N] (CblasTrans) and on
 * B^T [N, K] (CblasNoTrans, ONNX Gemm's transB layout and numpy's
 * x @ W.T): per round both run, the faster median is the peer's time.
 *
 * Protocol (as bench/ops): 3 warm-up calls of each side, the check (max
 * |Loom - peer| / max |peer| <= 1e-4), then `repeat` rounds; in each round
 * each side waits until no other thread of the process runs (OpenBLAS's
 * workers spin ~100 ms after a call), calls itself untimed for 2 ms
 * (waking its own workers and their CPUs, as in a steady stream of calls),
 * then once timed; the order alternates from round to round. (With a
 * single untimed call, the side that followed OpenBLAS's 100 ms wait met
 * a CPU idle that long: Loom's 2-thread 1 x 768 x 768 took 34 us there
 * and 10 us after 2 ms of calls, OpenBLAS's 11 us either way.) Reported: medians (and minima in the
 * raw results), GFLOP/s and ratio = OpenBLAS time / Loom time (> 1: Loom
 * faster).
 *
 * usage: bench_matmul [--repeat N] [--threads 1,2] [--target NAME] [--target-opt K=V,...]
 *                     [--runtime-b] [--gemv] [--bert] [--out FILE] [--dump DIR] [M N K ...]
 * --gemv: the 25 GEMV shapes 1 x N x K, N, K in {768, 1000, 2048, 3072,
 * 4096}; --bert: BERT-base's products at sequence 128 (128 x 768 x 768,
 * 128 x 3072 x 768, 128 x 768 x 3072); --out FILE appends one JSON line
 * per shape and thread count (the raw results bench/matmul_table.py turns
 * into docs/bench.md's tables); --dump DIR writes each kernel's generated C
 * there (matmul_MxNxK.Tt.c). */
#include "bench_timing.h"
#include "compile/compile.h"
#include "driver/driver.h"
#include "graph/passes.h"
#include "runtime/threadpool.h"
#include "target/target.h"
#include "te/te.h"
#include "tir/schedule/schedule.h"
#include "topi/topi_ops.h"
#include "topi/topi_schedule.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Shape {
  int64_t M, N, K;
} Shape;

typedef struct Options {
  int repeat;
  bool runtime_b;
  const char *dump; /* a directory for each kernel's generated C, or NULL */
  const Target *target;
  FILE *out;
} Options;

static float *falloc(size_t n) {
  float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (!p) {
    fprintf(stderr, "bench_matmul: out of memory\n");
    exit(1);
  }
  return p;
}

static void fill_random(float *p, size_t n, uint64_t seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = (float)((double)(seed >> 40) / (double)(1ULL << 24) * 2.0 - 1.0);
  }
}

/* The product as the compiler builds it: A [M, K] x B, B packed (width w >
 * 0, Bp [graph_pack_matmul_panels, K, w]) or plain [K, N]. */
static PrimFunc *matmul_func(Arena *a, Shape sh, int64_t w, LoomError *err) {
  TeTensor *A = te_placeholder(a, "A", DT_F32, 2, (int64_t[]){sh.M, sh.K}, err);
  TeTensor *B = w > 0 ? te_placeholder(a, "B", DT_F32, 3, (int64_t[]){graph_pack_matmul_panels(sh.M, sh.N, w), sh.K, w}, err)
                      : te_placeholder(a, "B", DT_F32, 2, (int64_t[]){sh.K, sh.N}, err);
  if (!A || !B) return NULL;
  TeTensor *C = w > 0 ? topi_matmul_packed(a, "C", A, B, sh.N, err) : topi_matmul_nd(a, "C", A, B, err);
  if (!C) return NULL;
  return te_create_primfunc(a, "matmul", (TeTensor *[]){A, B, C}, 3, err);
}

typedef struct Peer {
  Shape sh;
  const float *A, *B, *Bt;
  float *C;
} Peer;

static void peer_gemm(const Peer *p) {
  int M = (int)p->sh.M, N = (int)p->sh.N, K = (int)p->sh.K;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, p->A, K, p->B, N, 0.0f, p->C, N);
}
/* y = B^T x with B [K, N] row-major: OpenBLAS's sgemv_n kernel. */
static void peer_gemv_kn(const Peer *p) {
  int N = (int)p->sh.N, K = (int)p->sh.K;
  cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, p->B, N, p->A, 1, 0.0f, p->C, 1);
}
/* y = W x with W = B^T [N, K] row-major: sgemv_t, one dot product per row. */
static void peer_gemv_nk(const Peer *p) {
  int N = (int)p->sh.N, K = (int)p->sh.K;
  cblas_sgemv(CblasRowMajor, CblasNoTrans, N, K, 1.0f, p->Bt, K, p->A, 1, 0.0f, p->C, 1);
}

static double max_rel_err(const float *x, const float *ref, int64_t n) {
  double maxref = 0, maxdiff = 0;
  for (int64_t i = 0; i < n; i++) {
    maxref = fmax(maxref, fabs(ref[i]));
    maxdiff = fmax(maxdiff, fabs((double)ref[i] - x[i]));
  }
  return maxdiff / fmax(maxref, 1e-30);
}

static int bench_one(Shape sh, int threads, const Options *o) {
  Arena *a = arena_new();
  LoomError err = {0};
  int rc = 1;
  DriverModule *mod = NULL;
  ThreadPool *pool = NULL;
  Schedule *keep = NULL;
  int lanes = target_lanes(o->target, DT_F32);
  int64_t w = o->runtime_b ? 0 : graph_pack_matmul_width(sh.M, sh.N, lanes, lanes * topi_gemv_panel_vectors(o->target));
  size_t na = (size_t)(sh.M * sh.K), nb = (size_t)(sh.K * sh.N), nc = (size_t)(sh.M * sh.N);
  int64_t panels = graph_pack_matmul_panels(sh.M, sh.N, w);
  size_t np = w > 0 ? (size_t)(panels * w * sh.K) : nb;
  float *A = falloc(na), *B = falloc(nb), *Bt = falloc(nb), *Bl = falloc(np), *Cl = falloc(nc), *Cp = falloc(nc);
  double *tl = malloc(sizeof(double) * (size_t)o->repeat), *tp[2];
  tp[0] = malloc(sizeof(double) * (size_t)o->repeat);
  tp[1] = malloc(sizeof(double) * (size_t)o->repeat);
  fill_random(A, na, 1);
  fill_random(B, nb, 2);
  for (int64_t k = 0; k < sh.K; k++)
    for (int64_t n = 0; n < sh.N; n++) Bt[n * sh.K + k] = B[k * sh.N + n];
  if (w > 0) graph_pack_panels_f32(B, sh.K, sh.N, w, panels, Bl);
  else memcpy(Bl, B, nb * sizeof(float));

  PrimFunc *f = matmul_func(a, sh, w, &err);
  if (!f) goto out;
  GroupFunc gf = {.func = f};
  const PrimFunc *funcs[1] = {compile_schedule_group(&gf, o->target, threads, &keep)};
  BuildOptions build = {.cflags = o->target->cflags};
  DriverOptions dopt = {.build = &build};
  if (driver_build(a, funcs, 1, &dopt, &mod, &err)) goto out;
  Kernel k;
  if (driver_get_kernel(mod, "matmul", &k, &err)) goto out;
  if (o->dump) {
    char path[512];
    snprintf(path, sizeof path, "%s/matmul_%lldx%lldx%lld.%dt.c", o->dump, (long long)sh.M, (long long)sh.N,
             (long long)sh.K, threads);
    FILE *df = fopen(path, "w");
    if (df) fputs(driver_source(mod), df), fclose(df);
  }
  if (threadpool_create(threads, &pool, &err)) goto out;
  openblas_set_num_threads(threads);
  int64_t bshape[3] = {w > 0 ? panels : sh.K, w > 0 ? sh.K : sh.N, w};
  DLTensor t[3] = {
      {.data = A, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = (int64_t[]){sh.M, sh.K}},
      {.data = Bl, .device = {kDLCPU, 0}, .ndim = w > 0 ? 3 : 2, .dtype = {kDLFloat, 32, 1}, .shape = bshape},
      {.data = Cl, .device = {kDLCPU, 0}, .ndim = 2, .dtype = {kDLFloat, 32, 1}, .shape = (int64_t[]){sh.M, sh.N}},
  };
  DLTensor *ptrs[3] = {&t[0], &t[1], &t[2]};
  Peer peer = {sh, A, B, Bt, Cp};
  void (*peers[2])(const Peer *) = {peer_gemm, NULL};
  const char *peer_names[2] = {"sgemm", NULL};
  int npeers = 1;
  if (sh.M == 1) {
    peers[0] = peer_gemv_kn, peers[1] = peer_gemv_nk;
    peer_names[0] = "sgemv_kn", peer_names[1] = "sgemv_nk";
    npeers = 2;
  }
  double rel_err = 0;
  for (int p = 0; p < npeers; p++) {
    for (int i = 0; i < 3; i++) {
      if (kernel_call(&k, ptrs, 3, pool, NULL, &err)) goto out;
      peers[p](&peer);
    }
    double e = max_rel_err(Cl, Cp, (int64_t)nc);
    if (!(e <= 1e-4)) {
      fprintf(stderr, "bench_matmul: %lldx%lldx%lld: Loom differs from OpenBLAS %s by %g (relative)\n",
              (long long)sh.M, (long long)sh.N, (long long)sh.K, peer_names[p], e);
      goto out;
    }
    rel_err = fmax(rel_err, e);
  }
  for (int r = 0; r < o->repeat; r++)
    for (int side = 0; side <= npeers; side++) {
      int who = (side + r) % (npeers + 1); /* 0: Loom, 1..: the peers, rotating */
      quiesce();
      for (double w0 = now_s(); now_s() - w0 < 2e-3;) {
        if (who == 0) kernel_call(&k, ptrs, 3, pool, NULL, &err);
        else peers[who - 1](&peer);
      }
      double t0 = now_s();
      if (who == 0) kernel_call(&k, ptrs, 3, pool, NULL, &err);
      else peers[who - 1](&peer);
      double dt = now_s() - t0;
      if (who == 0) tl[r] = dt;
      else tp[who - 1][r] = dt;
    }
  double ml = median(tl, o->repeat), mp[2] = {median(tp[0], o->repeat), npeers > 1 ? median(tp[1], o->repeat) : 1e30};
  int best = mp[1] < mp[0];
  double mb = mp[best], flop = 2.0 * (double)sh.M * (double)sh.N * (double)sh.K;
  printf("| %5lld | %5lld | %5lld | %d | %8.4f | %6.1f | %-8s | %8.4f | %6.1f | %5.2f |\n", (long long)sh.M,
         (long long)sh.N, (long long)sh.K, threads, ml * 1e3, flop / ml * 1e-9, peer_names[best], mb * 1e3,
         flop / mb * 1e-9, mb / ml);
  fflush(stdout);
  if (o->out) {
    fprintf(o->out,
            "{\"M\": %lld, \"N\": %lld, \"K\": %lld, \"threads\": %d, \"target\": \"%s\", \"b\": \"%s\", "
            "\"panel_width\": %lld, \"repeat\": %d, \"loom_ms\": %.6f, \"loom_min_ms\": %.6f",
            (long long)sh.M, (long long)sh.N, (long long)sh.K, threads, o->target->name,
            o->runtime_b ? "runtime" : "constant", (long long)w, o->repeat, ml * 1e3, minimum(tl, o->repeat) * 1e3);
    for (int p = 0; p < npeers; p++)
      fprintf(o->out, ", \"openblas_%s_ms\": %.6f, \"openblas_%s_min_ms\": %.6f", peer_names[p], mp[p] * 1e3,
              peer_names[p], minimum(tp[p], o->repeat) * 1e3);
    fprintf(o->out, ", \"openblas_ms\": %.6f, \"openblas_over_loom\": %.4f, \"max_rel_err\": %.3g}\n", mb * 1e3, mb / ml,
            rel_err);
    fflush(o->out);
  }
  rc = 0;
out:
  if (rc && err.msg[0]) fprintf(stderr, "bench_matmul: %s\n", err.msg);
  threadpool_destroy(pool);
  driver_module_free(mod);
  sch_free(keep);
  free(A), free(B), free(Bt), free(Bl), free(Cl), free(Cp), free(tl), free(tp[0]), free(tp[1]);
  arena_free(a);
  return rc;
}

/* The host's CPU model (/proc/cpuinfo), for the raw results. */
static void cpu_model(char *buf, size_t cap) {
  snprintf(buf, cap, "unknown");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
      snprintf(buf, cap, "%s", strchr(line, ':') + 2);
      buf[strcspn(buf, "\n")] = 0;
      break;
    }
  if (f) fclose(f);
}

enum { MAX_SHAPES = 64 };

int main(int argc, char **argv) {
  Options o = {.repeat = 15};
  int thread_counts[4] = {1, 2}, n_threads = 2;
  Shape shapes[MAX_SHAPES];
  int n_shapes = 0;
  const char *target_name = NULL, *target_opt = NULL, *out_path = NULL;
  static const int64_t gemv_sizes[] = {768, 1000, 2048, 3072, 4096};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
      o.repeat = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      n_threads = 0;
      for (char *p = strtok(argv[++i], ","); p && n_threads < 4; p = strtok(NULL, ",")) thread_counts[n_threads++] = atoi(p);
    } else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
      target_name = argv[++i];
    } else if (strcmp(argv[i], "--target-opt") == 0 && i + 1 < argc) {
      target_opt = argv[++i];
    } else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out_path = argv[++i];
    } else if (strcmp(argv[i], "--dump") == 0 && i + 1 < argc) {
      o.dump = argv[++i];
    } else if (strcmp(argv[i], "--runtime-b") == 0) {
      o.runtime_b = true;
    } else if (strcmp(argv[i], "--gemv") == 0) {
      for (int n = 0; n < 5; n++)
        for (int k = 0; k < 5 && n_shapes < MAX_SHAPES; k++) shapes[n_shapes++] = (Shape){1, gemv_sizes[n], gemv_sizes[k]};
    } else if (strcmp(argv[i], "--bert") == 0) {
      static const Shape bert[] = {{128, 768, 768}, {128, 3072, 768}, {128, 768, 3072}};
      for (int s = 0; s < 3 && n_shapes < MAX_SHAPES; s++) shapes[n_shapes++] = bert[s];
    } else if (i + 2 < argc && n_shapes < MAX_SHAPES && atoll(argv[i]) > 0) {
      shapes[n_shapes++] = (Shape){atoll(argv[i]), atoll(argv[i + 1]), atoll(argv[i + 2])};
      i += 2;
    } else {
      fprintf(stderr, "usage: bench_matmul [--repeat N] [--threads 1,2] [--target NAME] [--target-opt K=V,...] "
                      "[--runtime-b] [--gemv] [--bert] [--out FILE] [--dump DIR] [M N K ...]\n");
      return 2;
    }
  }
  if (o.repeat < 1) o.repeat = 1;
  for (int s = 0; s < n_shapes; s++)
    if (shapes[s].M < 1 || shapes[s].N < 1 || shapes[s].K < 1 || shapes[s].M * shapes[s].K > INT32_MAX ||
        shapes[s].K * shapes[s].N > INT32_MAX) {
      fprintf(stderr, "bench_matmul: shape %lld x %lld x %lld: each extent must be at least 1 (and the operands "
                      "under 2^31 elements)\n", (long long)shapes[s].M, (long long)shapes[s].N, (long long)shapes[s].K);
      return 2;
    }
  if (n_shapes == 0) {
    static const Shape defaults[] = {{1024, 1024, 1024}, {128, 768, 768}, {128, 3072, 768}, {1, 1000, 2048}};
    memcpy(shapes, defaults, sizeof defaults);
    n_shapes = 4;
  }
  Target target;
  LoomError err = {0};
  if (target_parse(target_name, &target, &err) || target_apply_options(&target, target_opt, &err)) {
    fprintf(stderr, "bench_matmul: --target: %s\n", err.msg);
    return 2;
  }
  o.target = &target;
  if (out_path && !(o.out = fopen(out_path, "a"))) {
    fprintf(stderr, "bench_matmul: --out %s: cannot open for appending\n", out_path);
    return 2;
  }
  char cpu[128];
  cpu_model(cpu, sizeof cpu);
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 1) load[0] = -1;
  printf("bench_matmul: Loom (%s, %s B, default schedule) vs OpenBLAS (core %s) on %s, median of %d rounds, "
         "load %.2f\n\n",
         target.name, o.runtime_b ? "run-time" : "constant", openblas_get_corename(), cpu, o.repeat, load[0]);
  if (o.out) {
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&now));
    fprintf(o.out, "{\"run\": \"%s\", \"cpu\": \"%s\", \"target\": \"%s\", \"openblas_core\": \"%s\", \"load\": %.2f}\n",
            date, cpu, target.name, openblas_get_corename(), load[0]);
  }
  printf("|     M |     N |     K | threads | Loom ms | GFLOP/s | peer | OpenBLAS ms | GFLOP/s | ratio |\n");
  printf("|------:|------:|------:|--------:|--------:|--------:|------|------------:|--------:|------:|\n");
  int rc = 0;
  for (int s = 0; s < n_shapes; s++)
    for (int t = 0; t < n_threads; t++) rc |= bench_one(shapes[s], thread_counts[t], &o);
  printf("\nratio = OpenBLAS time / Loom time (> 1: Loom faster); for M = 1 the faster of sgemv on B and on B^T\n");
  if (o.out) fclose(o.out);
  return rc;
}

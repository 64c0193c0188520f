/* bench/ops: Loom's generated operator kernels against oneDNN (and, for
 * matmul, OpenBLAS), side by side and interleaved in one run, at 1 and 2
 * threads (issue 5, part 2).
 *
 * Operators:
 *   - every distinct conv2d of ResNet-50 (23) and MobileNetV2 (30, 10 of
 *     them depthwise), torchvision, batch 1, 224x224 input (kConvs below);
 *   - the matmuls of BERT-base at sequence length 128 (kMatmuls below).
 *
 * Loom's side is what the model compiler generates for such a node: the
 * compute definition of src/topi/topi_ops.h (topi_conv2d_nchwc_onnx /
 * topi_depthwise_conv2d_nchwc_onnx in the blocked layout the layout pass
 * picks; topi_matmul_packed for a product with a weight, topi_matmul_nd
 * for the attention's), made a PrimFunc with te_create_primfunc, scheduled
 * by compile_schedule_group (src/compile/schedule_group.c, the compiler's
 * own group scheduler: the topi default schedule of the anchor, conv,
 * depthwise conv or matmul) and built by driver_build, all
 * kernels of one thread count in one module. Its input is already blocked
 * (NCHWc) and its weights pre-packed, as in a compiled model (the compiler
 * packs weights at compile time), so only the kernel is timed. The schedule
 * is made for the thread count it runs with (as bench/matmul does; the
 * model compiler uses the machine's core count). Kernels are called
 * directly with a preallocated workspace, as the executor does.
 *
 * oneDNN's side (C API, Debian's libdnnl 2.x built with OpenMP): the conv
 * primitive with format_tag any for source, weights and destination and
 * algorithm auto, so it picks its blocked layouts and its best
 * implementation; inputs and weights are reordered into them before timing,
 * only the primitive is timed. The 2-D matmuls (activations x constant
 * weights) let oneDNN pick the weights' layout too; the attention batch
 * matmuls take both operands as plain row-major activations, QK^T with B
 * transposed (strides). OpenBLAS: cblas_sgemm, in a loop over the batch for
 * the batch matmuls (CblasTrans for QK^T). Loom's QK^T reads K^T as the
 * compiled BERT's matmul kernel does: materialized [12, 64, 128] (the
 * compiler makes the transpose its own kernel).
 *
 * Threads: Loom's thread pool, omp_set_num_threads (before creating the
 * primitives) and openblas_set_num_threads are all set to each count of
 * --threads.
 *
 * Timing, per operator and thread count: 3 warm-up calls of each side, a
 * check, then `repeat` rounds; in each round every side runs once timed,
 * the order rotating from round to round. Before a side's timed call the
 * other libraries' worker threads must have gone to sleep (their spinning
 * would steal the second core: GNU OpenMP workers spin ~5 ms after a
 * parallel region, OpenBLAS's ~80 ms; we wait until no other thread of the
 * process is running, at most 300 ms), then the side runs once untimed
 * (waking its own workers) and once timed. Reported: the median of each
 * side's timed calls, GFLOP/s, and the ratio peer time / Loom time
 * (> 1: Loom is faster). The geometric means in the JSON line are the other
 * way round (Loom time / peer time, issue 5's bars: <= 1.10).
 *
 * Check: every Loom output is compared with every peer's output (Loom's
 * unblocked to NCHW first); max |loom - peer| / max |peer| above 1e-3
 * fails the run.
 *
 * Tuned (bench/tune): --records FILE schedules each kernel by its fastest
 * record (the default where there is none); --tune N first tunes every
 * selected operator on its own, N trials at each thread count, into FILE
 * (tune_kernels: the same tuner as `loom tune`), --tune-only stops there.
 *
 * usage: bench_ops [--repeat N] [--threads 1,2] [--filter SUBSTRING] [--json-only] [--dump DIR]
 *                  [--target NAME] (x86_64-avx2 builds Loom's kernels for AVX2 on any host)
 *                  [--records FILE [--tune N [--tune-only] [--search evolutionary|random] [--seed N]]] */
#include "bench_timing.h"
#include "compile/compile.h"
#include "driver/driver.h"
#include "runtime/threadpool.h"
#include "target/target.h"
#include "te/te.h"
#include "tir/flops.h"
#include "tir/schedule/schedule.h"
#include "tir/text.h"
#include "topi/topi_ops.h"
#include "tune/tune.h"
#include "autotune/records.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if DNNL_CPU_RUNTIME != DNNL_RUNTIME_OMP
#error "bench_ops sets oneDNN's thread count with omp_set_num_threads: this oneDNN is not built with OpenMP"
#endif

/* ---------------- the operators ---------------- */

/* N, C, H, W, K, R, S, stride, pad, group: every distinct Conv of
 * torchvision's resnet50 and mobilenet_v2 at batch 1, 224x224, in order of
 * first appearance; `count` is how often the network has it. Read off the
 * ONNX exports in models/ (scripts/export-zoo) with onnx.shape_inference;
 * pads are symmetric, strides equal in H and W. */
typedef struct ConvShape {
  const char *model;
  int n, c, h, w, k, r, s, stride, pad, group, count;
} ConvShape;

static const ConvShape kConvs[] = {
    {"resnet50", 1, 3, 224, 224, 64, 7, 7, 2, 3, 1, 1}, /* stem */
    {"resnet50", 1, 64, 56, 56, 64, 1, 1, 1, 0, 1, 1},
    {"resnet50", 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 3},
    {"resnet50", 1, 64, 56, 56, 256, 1, 1, 1, 0, 1, 4},
    {"resnet50", 1, 256, 56, 56, 64, 1, 1, 1, 0, 1, 2},
    {"resnet50", 1, 256, 56, 56, 128, 1, 1, 1, 0, 1, 1},
    {"resnet50", 1, 128, 56, 56, 128, 3, 3, 2, 1, 1, 1},
    {"resnet50", 1, 128, 28, 28, 512, 1, 1, 1, 0, 1, 4},
    {"resnet50", 1, 256, 56, 56, 512, 1, 1, 2, 0, 1, 1},
    {"resnet50", 1, 512, 28, 28, 128, 1, 1, 1, 0, 1, 3},
    {"resnet50", 1, 128, 28, 28, 128, 3, 3, 1, 1, 1, 3},
    {"resnet50", 1, 512, 28, 28, 256, 1, 1, 1, 0, 1, 1},
    {"resnet50", 1, 256, 28, 28, 256, 3, 3, 2, 1, 1, 1},
    {"resnet50", 1, 256, 14, 14, 1024, 1, 1, 1, 0, 1, 6},
    {"resnet50", 1, 512, 28, 28, 1024, 1, 1, 2, 0, 1, 1},
    {"resnet50", 1, 1024, 14, 14, 256, 1, 1, 1, 0, 1, 5},
    {"resnet50", 1, 256, 14, 14, 256, 3, 3, 1, 1, 1, 5},
    {"resnet50", 1, 1024, 14, 14, 512, 1, 1, 1, 0, 1, 1},
    {"resnet50", 1, 512, 14, 14, 512, 3, 3, 2, 1, 1, 1},
    {"resnet50", 1, 512, 7, 7, 2048, 1, 1, 1, 0, 1, 3},
    {"resnet50", 1, 1024, 14, 14, 2048, 1, 1, 2, 0, 1, 1},
    {"resnet50", 1, 2048, 7, 7, 512, 1, 1, 1, 0, 1, 2},
    {"resnet50", 1, 512, 7, 7, 512, 3, 3, 1, 1, 1, 2},
    {"mobilenetv2", 1, 3, 224, 224, 32, 3, 3, 2, 1, 1, 1}, /* stem */
    {"mobilenetv2", 1, 32, 112, 112, 32, 3, 3, 1, 1, 32, 1},
    {"mobilenetv2", 1, 32, 112, 112, 16, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 16, 112, 112, 96, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 96, 112, 112, 96, 3, 3, 2, 1, 96, 1},
    {"mobilenetv2", 1, 96, 56, 56, 24, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 24, 56, 56, 144, 1, 1, 1, 0, 1, 2},
    {"mobilenetv2", 1, 144, 56, 56, 144, 3, 3, 1, 1, 144, 1},
    {"mobilenetv2", 1, 144, 56, 56, 24, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 144, 56, 56, 144, 3, 3, 2, 1, 144, 1},
    {"mobilenetv2", 1, 144, 28, 28, 32, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 32, 28, 28, 192, 1, 1, 1, 0, 1, 3},
    {"mobilenetv2", 1, 192, 28, 28, 192, 3, 3, 1, 1, 192, 2},
    {"mobilenetv2", 1, 192, 28, 28, 32, 1, 1, 1, 0, 1, 2},
    {"mobilenetv2", 1, 192, 28, 28, 192, 3, 3, 2, 1, 192, 1},
    {"mobilenetv2", 1, 192, 14, 14, 64, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 64, 14, 14, 384, 1, 1, 1, 0, 1, 4},
    {"mobilenetv2", 1, 384, 14, 14, 384, 3, 3, 1, 1, 384, 4},
    {"mobilenetv2", 1, 384, 14, 14, 64, 1, 1, 1, 0, 1, 3},
    {"mobilenetv2", 1, 384, 14, 14, 96, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 96, 14, 14, 576, 1, 1, 1, 0, 1, 3},
    {"mobilenetv2", 1, 576, 14, 14, 576, 3, 3, 1, 1, 576, 2},
    {"mobilenetv2", 1, 576, 14, 14, 96, 1, 1, 1, 0, 1, 2},
    {"mobilenetv2", 1, 576, 14, 14, 576, 3, 3, 2, 1, 576, 1},
    {"mobilenetv2", 1, 576, 7, 7, 160, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 160, 7, 7, 960, 1, 1, 1, 0, 1, 3},
    {"mobilenetv2", 1, 960, 7, 7, 960, 3, 3, 1, 1, 960, 3},
    {"mobilenetv2", 1, 960, 7, 7, 160, 1, 1, 1, 0, 1, 2},
    {"mobilenetv2", 1, 960, 7, 7, 320, 1, 1, 1, 0, 1, 1},
    {"mobilenetv2", 1, 320, 7, 7, 1280, 1, 1, 1, 0, 1, 1},
};

/* BERT-base, sequence 128, 12 heads of 64: C[b] = A[b] (M x K) x B[b] (K x N). */
typedef struct MatmulShape {
  const char *name;
  int batch, m, n, k;
  bool trans_b; /* the model's B is the transpose of a row-major [N, K] (QK^T) */
  bool const_b; /* B is a weight (the peers may pre-pack it) */
} MatmulShape;

static const MatmulShape kMatmuls[] = {
    {"bert/qkv_out_proj", 1, 128, 768, 768, false, true}, /* Q, K, V and output projections */
    {"bert/ffn_up", 1, 128, 3072, 768, false, true},
    {"bert/ffn_down", 1, 128, 768, 3072, false, true},
    {"bert/attn_qk", 12, 128, 128, 64, true, false}, /* scores = Q K^T */
    {"bert/attn_av", 12, 128, 64, 128, false, false}, /* context = P V */
};

/* The panel width of packed matmul weights and the largest channel block
 * (graph_pass_pack_matmul, graph_pass_layout_nchwc): the target's f32
 * vector, as the compiler gives them. */
static int g_lanes = 16;
static int pick_block(int channels) { return graph_layout_channel_block(channels, g_lanes); }

/* ---------------- helpers ---------------- */

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_ops: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

#define DNNL_CHECK(call)                                                  \
  do {                                                                    \
    dnnl_status_t s_ = (call);                                            \
    if (s_ != dnnl_success) die("oneDNN: %s failed (status %d)", #call, (int)s_); \
  } while (0)

static float *falloc(size_t n) {
  size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  float *p = aligned_alloc(64, bytes ? bytes : 64);
  if (!p) die("out of memory (%zu floats)", n);
  memset(p, 0, bytes);
  return p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static void fill_random(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((double)(rng_state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
}

/* max |got - want| / max |want| */
static double rel_err(const float *got, const float *want, size_t n) {
  double maxref = 0, maxdiff = 0;
  for (size_t i = 0; i < n; i++) {
    maxref = fmax(maxref, fabs((double)want[i]));
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= maxdiff)) maxdiff = d; /* NaN propagates */
  }
  return maxdiff / (maxref > 0 ? maxref : 1.0);
}

static DLTensor dl_f32(float *data, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = kDLFloat;
  t.dtype.bits = 32;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

/* ---------------- options and results ---------------- */

typedef struct Options {
  int repeat;
  int threads[8], n_threads;
  const char *filter;
  const char *dump; /* --dump DIR: scheduled TIR, trace and generated C of Loom's kernels */
  const char *target; /* --target NAME (NULL: this machine) */
  const char *records; /* --records FILE: schedules from the tuning records (the default where none) */
  int tune;            /* --tune N: first tune every operator N trials into --records */
  bool tune_only;      /* --tune-only: no benchmark after tuning */
  bool random_search;  /* --search random: the tuner's baseline */
  uint64_t seed;       /* --seed N: the tuner's */
  bool json_only;
} Options;

enum { PEER_ONEDNN, PEER_OPENBLAS, N_PEERS };
static const char *const kPeerNames[N_PEERS] = {"oneDNN", "OpenBLAS"};
static const char *const kPeerKeys[N_PEERS] = {"onednn", "openblas"};

typedef struct Result {
  char op[48], shape[64];
  const char *group; /* "resnet50", "mobilenetv2", "bert" */
  int threads;
  double flops, loom_ms, peer_ms[N_PEERS], err[N_PEERS];
  double loom_min_ms, peer_min_ms[N_PEERS]; /* fastest call: a hint on a busy machine */
  bool has_peer[N_PEERS];
  char impl[N_PEERS][48];
} Result;

static Result *g_results;
static int g_n_results, g_cap_results;

static Result *new_result(void) {
  if (g_n_results == g_cap_results) {
    g_cap_results = g_cap_results ? 2 * g_cap_results : 64;
    g_results = realloc(g_results, sizeof(Result) * (size_t)g_cap_results);
    if (!g_results) die("out of memory");
  }
  Result *r = &g_results[g_n_results++];
  memset(r, 0, sizeof *r);
  return r;
}

/* ---------------- Loom: one module per thread count ---------------- */

static RecordStore *g_records; /* --records */
static bool g_tuning;          /* --tune: loom_schedule returns the unscheduled function */

typedef struct LoomOp {
  char fname[48]; /* the PrimFunc / kernel symbol */
  int64_t shapes[3][6];
  int ndims[3];
  int64_t flops; /* tir_func_flops of the compute definition */
  Kernel kernel;
} LoomOp;

typedef struct Sched {
  const PrimFunc *func;
  Schedule *keep;
} Sched;

/* The compiler's path for one node: compute (te) -> PrimFunc -> the
 * group scheduler -> (driver_build later, all at once). */
static Sched loom_schedule(Arena *a, LoomOp *op, TeTensor *const *args, const Target *target, int threads) {
  LoomError err = {0};
  PrimFunc *f = te_create_primfunc(a, op->fname, args, 3, &err);
  if (!f) die("te_create_primfunc %s: %s", op->fname, err.msg);
  op->flops = tir_func_flops(f);
  GroupFunc gf;
  memset(&gf, 0, sizeof gf);
  gf.func = f;
  Sched s = {NULL, NULL};
  if (g_tuning) { /* --tune: only the unscheduled function is wanted */
    s.func = f;
    return s;
  }
  if (g_records) s.func = compile_schedule_from_records(g_records, &gf, target, threads, &s.keep);
  if (!s.func) s.func = compile_schedule_group(&gf, target, threads, &s.keep);
  return s;
}

static void conv_name(const ConvShape *c, int index_in_model, char *op, size_t oplen, char *shape, size_t shlen) {
  bool dw = c->group > 1;
  snprintf(op, oplen, "%s/%s%02d", c->model, dw ? "dwconv" : "conv", index_in_model);
  int oh = (c->h + 2 * c->pad - c->r) / c->stride + 1;
  snprintf(shape, shlen, "C%d %dx%d K%d %dx%d s%d p%d%s -> %dx%d", c->c, c->h, c->w, c->k, c->r, c->s, c->stride,
           c->pad, dw ? " dw" : "", oh, oh);
}

static Sched loom_conv(Arena *a, const ConvShape *c, LoomOp *op, const Target *target, int threads) {
  LoomError err = {0};
  bool dw = c->group > 1;
  int cb = pick_block(c->c), kb = dw ? cb : pick_block(c->k);
  int oh = (c->h + 2 * c->pad - c->r) / c->stride + 1, ow = (c->w + 2 * c->pad - c->s) / c->stride + 1;
  int64_t xs[5] = {c->n, c->c / cb, c->h, c->w, cb};
  int64_t ws6[6] = {c->k / kb, c->c / cb, c->r, c->s, cb, kb};
  int64_t wsd[6] = {c->c / cb, 1, c->r, c->s, 1, cb};
  int64_t ys[5] = {c->n, c->k / kb, oh, ow, kb};
  memcpy(op->shapes[0], xs, sizeof xs);
  memcpy(op->shapes[1], dw ? wsd : ws6, sizeof ws6);
  memcpy(op->shapes[2], ys, sizeof ys);
  op->ndims[0] = 5, op->ndims[1] = 6, op->ndims[2] = 5;
  TeTensor *x = te_placeholder(a, "x", DT_F32, 5, xs, &err);
  TeTensor *w = te_placeholder(a, "w", DT_F32, 6, op->shapes[1], &err);
  if (!x || !w) die("placeholder: %s", err.msg);
  TopiConvParams p;
  memset(&p, 0, sizeof p);
  p.strides[0] = p.strides[1] = c->stride;
  for (int i = 0; i < 4; i++) p.pads[i] = c->pad;
  p.group = c->group;
  TeTensor *y = dw ? topi_depthwise_conv2d_nchwc_onnx(a, "conv", x, w, &p, &err)
                   : topi_conv2d_nchwc_onnx(a, "conv", x, w, NULL, &p, &err);
  if (!y) die("conv compute: %s", err.msg);
  return loom_schedule(a, op, (TeTensor *[]){x, w, y}, target, threads);
}

static Sched loom_matmul(Arena *a, const MatmulShape *m, LoomOp *op, const Target *target, int threads) {
  LoomError err = {0};
  int nd = m->batch > 1 ? 3 : 2;
  int64_t as[3], bs[3], cs[3];
  if (nd == 3) {
    memcpy(as, (int64_t[]){m->batch, m->m, m->k}, sizeof as);
    memcpy(bs, (int64_t[]){m->batch, m->k, m->n}, sizeof bs);
    memcpy(cs, (int64_t[]){m->batch, m->m, m->n}, sizeof cs);
  } else {
    memcpy(as, (int64_t[]){m->m, m->k}, 2 * sizeof(int64_t));
    memcpy(bs, (int64_t[]){m->k, m->n}, 2 * sizeof(int64_t));
    memcpy(cs, (int64_t[]){m->m, m->n}, 2 * sizeof(int64_t));
  }
  /* A weight B is packed into column panels at compile time, as
   * graph_pass_pack_matmul does in a compiled model. */
  bool packed = m->const_b && m->batch == 1;
  int64_t ps[3] = {(m->n + g_lanes - 1) / g_lanes, m->k, g_lanes};
  memcpy(op->shapes[0], as, sizeof as);
  memcpy(op->shapes[1], packed ? ps : bs, sizeof bs);
  memcpy(op->shapes[2], cs, sizeof cs);
  op->ndims[0] = op->ndims[2] = nd;
  op->ndims[1] = packed ? 3 : nd;
  TeTensor *A = te_placeholder(a, "A", DT_F32, nd, as, &err);
  TeTensor *B = te_placeholder(a, "B", DT_F32, op->ndims[1], op->shapes[1], &err);
  if (!A || !B) die("placeholder: %s", err.msg);
  TeTensor *C = packed ? topi_matmul_packed(a, "C", A, B, m->n, &err) : topi_matmul_nd(a, "C", A, B, &err);
  if (!C) die("matmul compute: %s", err.msg);
  return loom_schedule(a, op, (TeTensor *[]){A, B, C}, target, threads);
}

typedef struct LoomCall {
  const Kernel *k;
  DLTensor t[3];
  DLTensor *ptrs[3];
  loom_kernel_env env;
} LoomCall;

static void loom_run(void *ctx) {
  LoomCall *c = ctx;
  int32_t rc = c->k->fn(c->ptrs, 3, &c->env);
  if (rc) die("Loom kernel %s failed with code %d", c->k->name, (int)rc);
}

static void loom_call_init(LoomCall *c, LoomOp *op, float *const bufs[3], ThreadPool *pool, void *ws) {
  memset(c, 0, sizeof *c);
  c->k = &op->kernel;
  for (int i = 0; i < 3; i++) {
    c->t[i] = dl_f32(bufs[i], op->ndims[i], op->shapes[i]);
    c->ptrs[i] = &c->t[i];
  }
  threadpool_fill_env(pool, &c->env);
  c->env.workspace = ws;
  c->env.workspace_bytes = op->kernel.workspace_bytes;
}

/* ---------------- oneDNN ---------------- */

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;

typedef struct DnnlPrim {
  dnnl_primitive_t prim;
  dnnl_exec_arg_t args[4];
  int nargs;
} DnnlPrim;

static void dnnl_run(void *ctx) {
  DnnlPrim *p = ctx;
  DNNL_CHECK(dnnl_primitive_execute(p->prim, g_stream, p->nargs, p->args));
  DNNL_CHECK(dnnl_stream_wait(g_stream));
}

/* to = from, converting the layout (untimed setup and check). */
static void bench_reorder(dnnl_memory_t from, const dnnl_memory_desc_t *from_md, dnnl_memory_t to,
                         const dnnl_memory_desc_t *to_md) {
  dnnl_primitive_desc_t rpd;
  dnnl_primitive_t r;
  DNNL_CHECK(dnnl_reorder_primitive_desc_create(&rpd, from_md, g_engine, to_md, g_engine, NULL));
  DNNL_CHECK(dnnl_primitive_create(&r, rpd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  DNNL_CHECK(dnnl_primitive_execute(r, g_stream, 2, args));
  DNNL_CHECK(dnnl_stream_wait(g_stream));
  dnnl_primitive_destroy(r);
  dnnl_primitive_desc_destroy(rpd);
}

/* A memory of layout md holding user data of layout user_md: the user's
 * buffer itself when the layouts agree, else a reordered copy. */
static dnnl_memory_t dnnl_from_user(const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *user_md, float *user) {
  dnnl_memory_t um, m;
  DNNL_CHECK(dnnl_memory_create(&um, user_md, g_engine, user));
  if (dnnl_memory_desc_equal(md, user_md)) return um;
  DNNL_CHECK(dnnl_memory_create(&m, md, g_engine, DNNL_MEMORY_ALLOCATE));
  bench_reorder(um, user_md, m, md);
  dnnl_memory_destroy(um);
  return m;
}

/* Copies memory m (layout md) into user data of layout user_md. */
static void dnnl_to_user(dnnl_memory_t m, const dnnl_memory_desc_t *md, const dnnl_memory_desc_t *user_md, float *user) {
  dnnl_memory_t um;
  DNNL_CHECK(dnnl_memory_create(&um, user_md, g_engine, user));
  bench_reorder(m, md, um, user_md);
  dnnl_memory_destroy(um);
}

static void dnnl_impl_name(dnnl_primitive_desc_t pd, char *out, size_t len) {
  const char *s = NULL;
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &s) != dnnl_success || !s) s = "?";
  snprintf(out, len, "%s", s);
}

static void dnnl_prim_free(DnnlPrim *p) {
  dnnl_primitive_destroy(p->prim);
  for (int i = 0; i < p->nargs; i++) dnnl_memory_destroy(p->args[i].memory);
}

/* ---------------- timing ---------------- */

typedef struct Side {
  void (*run)(void *ctx);
  void *ctx;
  double *times;
} Side;

static void time_sides(Side *sides, int n, int repeat) {
  for (int w = 0; w < 3; w++)
    for (int s = 0; s < n; s++) sides[s].run(sides[s].ctx);
  for (int r = 0; r < repeat; r++)
    for (int j = 0; j < n; j++) {
      Side *s = &sides[(j + r) % n];
      quiesce();
      s->run(s->ctx); /* wakes this side's own workers */
      double t0 = now_s();
      s->run(s->ctx);
      s->times[r] = now_s() - t0;
    }
}

static void check_err(const char *op, int threads, const char *peer, double err) {
  if (!(err <= 1e-3)) {
    fprintf(stderr, "bench_ops: %s at %d thread(s): Loom's output differs from %s's: max relative error %g > 1e-3\n",
            op, threads, peer, err);
    exit(1);
  }
}

/* ---------------- one conv ---------------- */

static void bench_conv(const ConvShape *c, LoomOp *op, const char *opname, const char *shape, int threads,
                       ThreadPool *pool, void *ws, int repeat) {
  bool dw = c->group > 1;
  int cb = pick_block(c->c), kb = dw ? cb : pick_block(c->k);
  int oh = (c->h + 2 * c->pad - c->r) / c->stride + 1, ow = (c->w + 2 * c->pad - c->s) / c->stride + 1;
  int cg = c->c / c->group;
  size_t nx = (size_t)c->n * c->c * c->h * c->w, nw = (size_t)c->k * cg * c->r * c->s;
  size_t ny = (size_t)c->n * c->k * oh * ow;
  float *x = falloc(nx), *w = falloc(nw), *xb = falloc(nx), *wb = falloc(nw), *yb = falloc(ny);
  float *y_loom = falloc(ny), *y_dnnl = falloc(ny);
  fill_random(x, nx);
  fill_random(w, nw);
  /* Loom's blocked input and pre-packed weights (what the layout pass makes) */
  for (int n = 0; n < c->n; n++)
    for (int ch = 0; ch < c->c; ch++)
      for (int h = 0; h < c->h; h++)
        for (int ww = 0; ww < c->w; ww++)
          xb[((((size_t)n * (c->c / cb) + ch / cb) * c->h + h) * c->w + ww) * cb + ch % cb] =
              x[(((size_t)n * c->c + ch) * c->h + h) * c->w + ww];
  for (int k = 0; k < c->k; k++)
    for (int ci = 0; ci < cg; ci++)
      for (int r = 0; r < c->r; r++)
        for (int s = 0; s < c->s; s++) {
          float v = w[(((size_t)k * cg + ci) * c->r + r) * c->s + s];
          if (dw) /* [C/c, 1, R, S, 1, c] */
            wb[(((size_t)(k / cb) * c->r + r) * c->s + s) * cb + k % cb] = v;
          else /* [K/kb, C/cb, R, S, cb, kb] */
            wb[(((((size_t)(k / kb) * (c->c / cb) + ci / cb) * c->r + r) * c->s + s) * cb + ci % cb) * kb + k % kb] = v;
        }
  LoomCall lc;
  loom_call_init(&lc, op, (float *[]){xb, wb, yb}, pool, ws);

  /* oneDNN */
  dnnl_memory_desc_t user_src, user_w, user_dst, any_src, any_w, any_dst;
  dnnl_dims_t src_dims = {c->n, c->c, c->h, c->w}, dst_dims = {c->n, c->k, oh, ow};
  dnnl_dims_t w_dims = {c->k, cg, c->r, c->s}, gw_dims = {c->group, c->k / c->group, cg, c->r, c->s};
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&user_src, 4, src_dims, dnnl_f32, dnnl_nchw));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&user_dst, 4, dst_dims, dnnl_f32, dnnl_nchw));
  if (c->group > 1) DNNL_CHECK(dnnl_memory_desc_init_by_tag(&user_w, 5, gw_dims, dnnl_f32, dnnl_goihw));
  else DNNL_CHECK(dnnl_memory_desc_init_by_tag(&user_w, 4, w_dims, dnnl_f32, dnnl_oihw));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any_src, 4, src_dims, dnnl_f32, dnnl_format_tag_any));
  DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any_dst, 4, dst_dims, dnnl_f32, dnnl_format_tag_any));
  if (c->group > 1) DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any_w, 5, gw_dims, dnnl_f32, dnnl_format_tag_any));
  else DNNL_CHECK(dnnl_memory_desc_init_by_tag(&any_w, 4, w_dims, dnnl_f32, dnnl_format_tag_any));
  dnnl_convolution_desc_t cd;
  dnnl_dims_t strides = {c->stride, c->stride}, pad = {c->pad, c->pad};
  DNNL_CHECK(dnnl_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_auto, &any_src, &any_w,
                                                NULL, &any_dst, strides, pad, pad));
  dnnl_primitive_desc_t pd;
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &cd, NULL, g_engine, NULL));
  const dnnl_memory_desc_t *src_md = dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0);
  const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  const dnnl_memory_desc_t *dst_md = dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0);
  DnnlPrim dp;
  memset(&dp, 0, sizeof dp);
  DNNL_CHECK(dnnl_primitive_create(&dp.prim, pd));
  dnnl_memory_t dst_mem;
  DNNL_CHECK(dnnl_memory_create(&dst_mem, dst_md, g_engine, DNNL_MEMORY_ALLOCATE));
  dp.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, dnnl_from_user(src_md, &user_src, x)};
  dp.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, dnnl_from_user(w_md, &user_w, w)};
  dp.args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, dst_mem};
  dp.nargs = 3;

  Result *res = new_result();
  snprintf(res->op, sizeof res->op, "%.40s", opname);
  snprintf(res->shape, sizeof res->shape, "%.60s", shape);
  res->group = c->model;
  res->threads = threads;
  res->flops = 2.0 * c->n * c->k * oh * ow * (double)cg * c->r * c->s;
  if (op->flops >= 0 && fabs((double)op->flops - res->flops) > 0.5)
    fprintf(stderr, "bench_ops: %s: tir_func_flops says %lld, expected %.0f\n", opname, (long long)op->flops,
            res->flops);
  dnnl_impl_name(pd, res->impl[PEER_ONEDNN], sizeof res->impl[PEER_ONEDNN]);

  double *tl = calloc((size_t)repeat, sizeof(double)), *td = calloc((size_t)repeat, sizeof(double));
  Side sides[2] = {{loom_run, &lc, tl}, {dnnl_run, &dp, td}};
  /* warm-up + check first (time_sides warms up again; cheap) */
  loom_run(&lc);
  dnnl_run(&dp);
  for (int n = 0; n < c->n; n++)
    for (int k = 0; k < c->k; k++)
      for (int h = 0; h < oh; h++)
        for (int ww = 0; ww < ow; ww++)
          y_loom[(((size_t)n * c->k + k) * oh + h) * ow + ww] =
              yb[((((size_t)n * (c->k / kb) + k / kb) * oh + h) * ow + ww) * kb + k % kb];
  dnnl_to_user(dst_mem, dst_md, &user_dst, y_dnnl);
  res->err[PEER_ONEDNN] = rel_err(y_loom, y_dnnl, ny);
  res->has_peer[PEER_ONEDNN] = true;
  check_err(opname, threads, "oneDNN", res->err[PEER_ONEDNN]);
  time_sides(sides, 2, repeat);
  res->loom_ms = median(tl, repeat) * 1e3;
  res->peer_ms[PEER_ONEDNN] = median(td, repeat) * 1e3;
  res->loom_min_ms = minimum(tl, repeat) * 1e3;
  res->peer_min_ms[PEER_ONEDNN] = minimum(td, repeat) * 1e3;

  free(tl);
  free(td);
  dnnl_prim_free(&dp);
  dnnl_primitive_desc_destroy(pd);
  free(x), free(w), free(xb), free(wb), free(yb), free(y_loom), free(y_dnnl);
}

/* ---------------- one matmul ---------------- */

typedef struct BlasCall {
  const MatmulShape *m;
  const float *A, *B; /* B: [K, N], or [N, K] when trans_b */
  float *C;
} BlasCall;

static void blas_run(void *ctx) {
  BlasCall *b = ctx;
  const MatmulShape *m = b->m;
  for (int i = 0; i < m->batch; i++)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, m->trans_b ? CblasTrans : CblasNoTrans, m->m, m->n, m->k, 1.0f,
                b->A + (size_t)i * m->m * m->k, m->k, b->B + (size_t)i * m->k * m->n, m->trans_b ? m->k : m->n, 0.0f,
                b->C + (size_t)i * m->m * m->n, m->n);
}

static void bench_matmul(const MatmulShape *m, LoomOp *op, int threads, ThreadPool *pool, void *ws, int repeat) {
  size_t na = (size_t)m->batch * m->m * m->k, nb = (size_t)m->batch * m->k * m->n, nc = (size_t)m->batch * m->m * m->n;
  float *A = falloc(na), *B = falloc(nb), *Bl = falloc(nb), *Cl = falloc(nc), *Cd = falloc(nc), *Cb = falloc(nc);
  float *Cdu = falloc(nc);
  fill_random(A, na);
  fill_random(B, nb); /* the peers' B: [b][k][n], or [b][n][k] when trans_b */
  if (m->trans_b) {
    for (int b = 0; b < m->batch; b++)
      for (int n = 0; n < m->n; n++)
        for (int k = 0; k < m->k; k++)
          Bl[((size_t)b * m->k + k) * m->n + n] = B[((size_t)b * m->n + n) * m->k + k];
  } else {
    memcpy(Bl, B, nb * sizeof(float));
  }
  if (m->const_b && m->batch == 1) { /* Loom's B in column panels (loom_matmul): Bl[p][k][c] = B[k][p * w + c] */
    int64_t w = op->shapes[1][2];
    float *panels = falloc((size_t)(op->shapes[1][0] * m->k * w));
    for (int64_t p = 0; p < op->shapes[1][0]; p++)
      for (int64_t k = 0; k < m->k; k++)
        for (int64_t c = 0; c < w; c++)
          panels[(p * m->k + k) * w + c] = p * w + c < m->n ? B[k * m->n + p * w + c] : 0.0f;
    free(Bl);
    Bl = panels;
  }
  LoomCall lc;
  loom_call_init(&lc, op, (float *[]){A, Bl, Cl}, pool, ws);
  BlasCall bc = {m, A, B, Cb};

  /* oneDNN matmul */
  int nd = m->batch > 1 ? 3 : 2;
  dnnl_memory_desc_t a_md, b_user, b_md, c_md;
  if (nd == 3) {
    dnnl_dims_t ad = {m->batch, m->m, m->k}, bd = {m->batch, m->k, m->n}, cdims = {m->batch, m->m, m->n};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&a_md, 3, ad, dnnl_f32, dnnl_abc));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c_md, 3, cdims, dnnl_f32, dnnl_abc));
    if (m->trans_b) {
      dnnl_dims_t st = {(dnnl_dim_t)m->n * m->k, 1, m->k};
      DNNL_CHECK(dnnl_memory_desc_init_by_strides(&b_user, 3, bd, dnnl_f32, st));
    } else {
      DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_user, 3, bd, dnnl_f32, dnnl_abc));
    }
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_md, 3, bd, dnnl_f32, m->const_b ? dnnl_format_tag_any : dnnl_abc));
    if (!m->const_b) b_md = b_user;
  } else {
    dnnl_dims_t ad = {m->m, m->k}, bd = {m->k, m->n}, cdims = {m->m, m->n};
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_f32, dnnl_ab));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&c_md, 2, cdims, dnnl_f32, dnnl_ab));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_user, 2, bd, dnnl_f32, m->trans_b ? dnnl_ba : dnnl_ab));
    DNNL_CHECK(dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dnnl_f32, m->const_b ? dnnl_format_tag_any : dnnl_ab));
    if (!m->const_b) b_md = b_user;
  }
  dnnl_matmul_desc_t mdsc;
  DNNL_CHECK(dnnl_matmul_desc_init(&mdsc, &a_md, &b_md, NULL, &c_md));
  dnnl_primitive_desc_t pd;
  DNNL_CHECK(dnnl_primitive_desc_create(&pd, &mdsc, NULL, g_engine, NULL));
  const dnnl_memory_desc_t *wq = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  DnnlPrim dp;
  memset(&dp, 0, sizeof dp);
  DNNL_CHECK(dnnl_primitive_create(&dp.prim, pd));
  dnnl_memory_t am, cm;
  DNNL_CHECK(dnnl_memory_create(&am, &a_md, g_engine, A));
  DNNL_CHECK(dnnl_memory_create(&cm, &c_md, g_engine, Cd));
  dp.args[0] = (dnnl_exec_arg_t){DNNL_ARG_SRC, am};
  dp.args[1] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, dnnl_from_user(wq, &b_user, B)};
  dp.args[2] = (dnnl_exec_arg_t){DNNL_ARG_DST, cm};
  dp.nargs = 3;

  Result *res = new_result();
  snprintf(res->op, sizeof res->op, "%s", m->name);
  snprintf(res->shape, sizeof res->shape, "%dx%dx%dx%d%s", m->batch, m->m, m->n, m->k, m->trans_b ? " B^T" : "");
  res->group = "bert";
  res->threads = threads;
  res->flops = 2.0 * m->batch * m->m * (double)m->n * m->k;
  if (op->flops >= 0 && fabs((double)op->flops - res->flops) > 0.5)
    fprintf(stderr, "bench_ops: %s: tir_func_flops says %lld, expected %.0f\n", m->name, (long long)op->flops,
            res->flops);
  dnnl_impl_name(pd, res->impl[PEER_ONEDNN], sizeof res->impl[PEER_ONEDNN]);
  snprintf(res->impl[PEER_OPENBLAS], sizeof res->impl[PEER_OPENBLAS], "%s", m->batch > 1 ? "sgemm x batch" : "sgemm");

  loom_run(&lc);
  dnnl_run(&dp);
  blas_run(&bc);
  memcpy(Cdu, Cd, nc * sizeof(float));
  res->err[PEER_ONEDNN] = rel_err(Cl, Cdu, nc);
  res->err[PEER_OPENBLAS] = rel_err(Cl, Cb, nc);
  res->has_peer[PEER_ONEDNN] = res->has_peer[PEER_OPENBLAS] = true;
  check_err(m->name, threads, "oneDNN", res->err[PEER_ONEDNN]);
  check_err(m->name, threads, "OpenBLAS", res->err[PEER_OPENBLAS]);

  double *tl = calloc((size_t)repeat, sizeof(double)), *td = calloc((size_t)repeat, sizeof(double));
  double *tb = calloc((size_t)repeat, sizeof(double));
  Side sides[3] = {{loom_run, &lc, tl}, {dnnl_run, &dp, td}, {blas_run, &bc, tb}};
  time_sides(sides, 3, repeat);
  res->loom_ms = median(tl, repeat) * 1e3;
  res->peer_ms[PEER_ONEDNN] = median(td, repeat) * 1e3;
  res->peer_ms[PEER_OPENBLAS] = median(tb, repeat) * 1e3;
  res->loom_min_ms = minimum(tl, repeat) * 1e3;
  res->peer_min_ms[PEER_ONEDNN] = minimum(td, repeat) * 1e3;
  res->peer_min_ms[PEER_OPENBLAS] = minimum(tb, repeat) * 1e3;

  free(tl), free(td), free(tb);
  dnnl_prim_free(&dp);
  dnnl_primitive_desc_destroy(pd);
  free(A), free(B), free(Bl), free(Cl), free(Cd), free(Cb), free(Cdu);
}

/* ---------------- output ---------------- */

static void print_row(const Result *r, int peer, bool json_only) {
  if (json_only || !r->has_peer[peer]) return;
  double lg = r->flops / (r->loom_ms * 1e6), pg = r->flops / (r->peer_ms[peer] * 1e6);
  printf("| %-20s | %-32s | %d | %8.3f | %-8s | %8.3f | %5.2f | %6.1f | %6.1f | %.1e | %s |\n", r->op, r->shape,
         r->threads, r->loom_ms, kPeerNames[peer], r->peer_ms[peer], r->peer_ms[peer] / r->loom_ms, lg, pg,
         r->err[peer], r->impl[peer]);
  fflush(stdout);
}

/* Geometric mean of Loom time / peer time over the results of `group` at
 * `threads`; NAN when there are none. */
static double geomean(const char *group, int peer, int threads, int *count) {
  double s = 0;
  int n = 0;
  for (int i = 0; i < g_n_results; i++) {
    const Result *r = &g_results[i];
    if (strcmp(r->group, group) || r->threads != threads || !r->has_peer[peer]) continue;
    s += log(r->loom_ms / r->peer_ms[peer]);
    n++;
  }
  if (count) *count = n;
  return n ? exp(s / n) : NAN;
}

static void json_number(const char *key, double v, bool *first) {
  printf("%s\"%s\":", *first ? "" : ",", key);
  if (isfinite(v)) printf("%.6g", v);
  else printf("null");
  *first = false;
}

static void print_json(const Options *o, const char *target, const char *load0, const char *load1) {
  printf("{\"bench\":\"ops\",\"target\":\"%s\",\"openblas_core\":\"%s\",\"repeat\":%d,\"threads\":[", target,
         openblas_get_corename(), o->repeat);
  for (int t = 0; t < o->n_threads; t++) printf("%s%d", t ? "," : "", o->threads[t]);
  printf("],\"loadavg_start\":\"%s\",\"loadavg_end\":\"%s\",\"ops\":[", load0, load1);
  for (int i = 0; i < g_n_results; i++) {
    const Result *r = &g_results[i];
    printf("%s{\"op\":\"%s\",\"shape\":\"%s\",\"threads\":%d,\"gflop\":%.6g,\"loom_ms\":%.6g,\"loom_min_ms\":%.6g",
           i ? "," : "", r->op, r->shape, r->threads, r->flops * 1e-9, r->loom_ms, r->loom_min_ms);
    for (int p = 0; p < N_PEERS; p++)
      if (r->has_peer[p])
        printf(",\"%s_ms\":%.6g,\"%s_min_ms\":%.6g,\"%s_over_loom\":%.6g,\"loom_over_%s\":%.6g,\"%s_max_rel_err\":%.3g",
               kPeerKeys[p], r->peer_ms[p], kPeerKeys[p], r->peer_min_ms[p], kPeerKeys[p], r->peer_ms[p] / r->loom_ms,
               kPeerKeys[p], r->loom_ms / r->peer_ms[p], kPeerKeys[p], r->err[p]);
    printf("}");
  }
  printf("]");
  bool first = false;
  static const struct {
    const char *group, *key;
    int peer;
  } means[] = {
      {"resnet50", "resnet50_conv_geomean_loom_over_onednn", PEER_ONEDNN},
      {"mobilenetv2", "mobilenetv2_conv_geomean_loom_over_onednn", PEER_ONEDNN},
      {"bert", "bert_matmul_geomean_loom_over_openblas", PEER_OPENBLAS},
      {"bert", "bert_matmul_geomean_loom_over_onednn", PEER_ONEDNN},
  };
  for (size_t g = 0; g < sizeof means / sizeof means[0]; g++)
    for (int t = 0; t < o->n_threads; t++) {
      char key[96];
      snprintf(key, sizeof key, "%s_%dt", means[g].key, o->threads[t]);
      json_number(key, geomean(means[g].group, means[g].peer, o->threads[t], NULL), &first);
    }
  printf("}\n");
}

static void read_loadavg(char *out, size_t len) {
  snprintf(out, len, "?");
  FILE *f = fopen("/proc/loadavg", "r");
  if (!f) return;
  float a, b, c;
  if (fscanf(f, "%f %f %f", &a, &b, &c) == 3) snprintf(out, len, "%.2f %.2f %.2f", a, b, c);
  fclose(f);
}

/* ---------------- main ---------------- */

/* --tune: each selected operator tuned on its own (tune_kernels), o->tune
 * trials at each thread count, into o->records; run again with the same
 * records, a tuning goes on from what is there. */
static void tune_ops(const Options *o, const Target *target, const bool *conv_on, char (*conv_ops)[48],
                     const bool *mm_on) {
  const int n_convs = (int)(sizeof kConvs / sizeof kConvs[0]), n_mm = (int)(sizeof kMatmuls / sizeof kMatmuls[0]);
  g_tuning = true;
  for (int ti = 0; ti < o->n_threads; ti++) {
    for (int i = 0; i < n_convs + n_mm; i++) {
      bool conv = i < n_convs;
      if (conv ? !conv_on[i] : !mm_on[i - n_convs]) continue;
      Arena *a = arena_new();
      LoomOp op;
      memset(&op, 0, sizeof op);
      snprintf(op.fname, sizeof op.fname, "%.40s", conv ? conv_ops[i] : kMatmuls[i - n_convs].name);
      *strchr(op.fname, '/') = '_';
      Sched s = conv ? loom_conv(a, &kConvs[i], &op, target, o->threads[ti])
                     : loom_matmul(a, &kMatmuls[i - n_convs], &op, target, o->threads[ti]);
      TuneOptions topt = {.records = o->records, .trials = o->tune, .seed = o->seed,
                          .search = o->random_search ? TUNE_SEARCH_RANDOM : TUNE_SEARCH_EVOLUTIONARY};
      TuneProgress p;
      LoomError err = {0};
      double t0 = now_s();
      if (tune_kernels(&s.func, 1, target, o->threads[ti], &topt, &p, &err)) die("tune %s: %s", op.fname, err.msg);
      fprintf(stderr, "bench_ops: tuned %s, %d thread(s): %d trials (%d failed) in %.1f s, %.4f -> %.4f ms, flops %lld\n",
              op.fname, o->threads[ti], p.trials, p.failed, now_s() - t0, p.model_ms_default, p.model_ms_now,
              (long long)op.flops);
      arena_free(a);
    }
  }
  g_tuning = false;
}

static bool selected(const Options *o, const char *op, const char *shape) {
  return !o->filter || strstr(op, o->filter) || strstr(shape, o->filter);
}

static void usage(void) {
  fprintf(stderr, "usage: bench_ops [--repeat N] [--threads 1,2] [--filter SUBSTRING] [--json-only] [--dump DIR] "
                  "[--target NAME]\n"
                  "                 [--records FILE [--tune TRIALS [--tune-only] [--search evolutionary|random] [--seed N]]]\n");
  exit(2);
}

static void dump_file(const char *dir, const char *name, int threads, const char *ext, const char *text) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s.%dt.%s", dir, name, threads, ext);
  FILE *f = fopen(path, "w");
  if (!f) die("--dump: cannot write %s", path);
  fputs(text, f);
  fclose(f);
}

/* --dump DIR: per kernel its scheduled TIR and schedule trace, and the
 * module's generated C, for reading what the default schedules made. */
static void dump_module(const char *dir, int threads, const PrimFunc *const *funcs, Schedule *const *keep, int nf,
                        const DriverModule *mod) {
  for (int i = 0; i < nf; i++) {
    char *tir = tir_print_func(funcs[i]), *trace = trace_to_text(sch_trace(keep[i]));
    dump_file(dir, funcs[i]->name, threads, "tir", tir);
    dump_file(dir, funcs[i]->name, threads, "trace", trace);
    free(tir);
    free(trace);
  }
  dump_file(dir, "module", threads, "c", driver_source(mod));
}

int main(int argc, char **argv) {
  Options o = {.repeat = 10, .threads = {1, 2}, .n_threads = 2, .seed = 1};
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
      o.repeat = atoi(argv[++i]);
      if (o.repeat < 1) usage();
    } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
      o.n_threads = 0;
      for (char *p = strtok(argv[++i], ","); p && o.n_threads < 8; p = strtok(NULL, ",")) {
        int t = atoi(p);
        if (t < 1) usage();
        o.threads[o.n_threads++] = t;
      }
      if (!o.n_threads) usage();
    } else if (!strcmp(argv[i], "--filter") && i + 1 < argc) {
      o.filter = argv[++i];
    } else if (!strcmp(argv[i], "--json-only")) {
      o.json_only = true;
    } else if (!strcmp(argv[i], "--dump") && i + 1 < argc) {
      o.dump = argv[++i];
    } else if (!strcmp(argv[i], "--target") && i + 1 < argc) {
      o.target = argv[++i];
    } else if (!strcmp(argv[i], "--records") && i + 1 < argc) {
      o.records = argv[++i];
    } else if (!strcmp(argv[i], "--tune") && i + 1 < argc) {
      o.tune = atoi(argv[++i]);
      if (o.tune < 1) usage();
    } else if (!strcmp(argv[i], "--tune-only")) {
      o.tune_only = true;
    } else if (!strcmp(argv[i], "--search") && i + 1 < argc) {
      const char *v = argv[++i];
      if (strcmp(v, "random") && strcmp(v, "evolutionary")) usage();
      o.random_search = !strcmp(v, "random");
    } else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
      o.seed = strtoull(argv[++i], NULL, 10);
    } else {
      usage();
    }
  }

  /* The operator list (names are per model, numbered in order). */
  enum { N_CONVS = sizeof kConvs / sizeof kConvs[0], N_MATMULS = sizeof kMatmuls / sizeof kMatmuls[0] };
  char conv_ops[N_CONVS][48], conv_shapes[N_CONVS][64];
  bool conv_on[N_CONVS], mm_on[N_MATMULS];
  int n_on = 0;
  for (int i = 0, idx = 0; i < N_CONVS; i++) {
    idx = i > 0 && !strcmp(kConvs[i].model, kConvs[i - 1].model) ? idx + 1 : 1;
    conv_name(&kConvs[i], idx, conv_ops[i], sizeof conv_ops[i], conv_shapes[i], sizeof conv_shapes[i]);
    conv_on[i] = selected(&o, conv_ops[i], conv_shapes[i]);
    n_on += conv_on[i];
  }
  for (int i = 0; i < N_MATMULS; i++) {
    mm_on[i] = selected(&o, kMatmuls[i].name, "");
    n_on += mm_on[i];
  }
  if (!n_on) {
    fprintf(stderr, "bench_ops: --filter %s selects no operator\n", o.filter);
    return 2;
  }

  char load0[64], load1[64];
  read_loadavg(load0, sizeof load0);
  Target target;
  LoomError terr = {0};
  if (target_parse(o.target, &target, &terr)) die("--target: %s", terr.msg);
  g_lanes = target_lanes(&target, DT_F32);
  if (o.tune && !o.records) usage();
  if (o.tune) tune_ops(&o, &target, conv_on, conv_ops, mm_on);
  if (o.tune_only) return 0;
  if (o.records) {
    LoomError rerr = {0};
    if (records_open(o.records, &g_records, &rerr)) die("--records: %s", rerr.msg);
  }
  DNNL_CHECK(dnnl_engine_create(&g_engine, dnnl_cpu, 0));
  DNNL_CHECK(dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags));
  if (!o.json_only) {
    printf("bench_ops: Loom (%s, %s) vs oneDNN %d.%d.%d and OpenBLAS sgemm\n"
           "(OpenBLAS core %s; oneDNN's ISA: the impl column), median of %d interleaved runs each;\n"
           "load average at start %s\n\n",
           target.name, o.records ? "tuned: the fastest record of each kernel" : "the compiler's default schedules",
           dnnl_version()->major, dnnl_version()->minor, dnnl_version()->patch, openblas_get_corename(),
           o.repeat, load0);
    printf("| op | shape | threads | Loom ms | peer | peer ms | peer/Loom | Loom GFLOP/s | peer GFLOP/s | max rel err "
           "| peer impl |\n");
    printf("|---|---|--:|--:|---|--:|--:|--:|--:|--:|---|\n");
  }

  for (int ti = 0; ti < o.n_threads; ti++) {
    int threads = o.threads[ti];
    omp_set_num_threads(threads);
    openblas_set_num_threads(threads);
    Arena *a = arena_new();
    LoomOp *ops = calloc(N_CONVS + N_MATMULS, sizeof(LoomOp));
    const PrimFunc *funcs[N_CONVS + N_MATMULS];
    Schedule *keep[N_CONVS + N_MATMULS];
    int nf = 0;
    for (int i = 0; i < N_CONVS; i++) {
      if (!conv_on[i]) continue;
      snprintf(ops[i].fname, sizeof ops[i].fname, "%.40s", conv_ops[i]);
      *strchr(ops[i].fname, '/') = '_';
      Sched s = loom_conv(a, &kConvs[i], &ops[i], &target, threads);
      funcs[nf] = s.func;
      keep[nf++] = s.keep;
    }
    for (int i = 0; i < N_MATMULS; i++) {
      if (!mm_on[i]) continue;
      LoomOp *op = &ops[N_CONVS + i];
      snprintf(op->fname, sizeof op->fname, "%.40s", kMatmuls[i].name);
      *strchr(op->fname, '/') = '_';
      Sched s = loom_matmul(a, &kMatmuls[i], op, &target, threads);
      funcs[nf] = s.func;
      keep[nf++] = s.keep;
    }
    LoomError err = {0};
    DriverModule *mod = NULL;
    double tb = now_s();
    BuildOptions build = {.cflags = target.cflags};
    DriverOptions dopt = {.build = &build};
    if (driver_build(a, funcs, nf, &dopt, &mod, &err)) die("driver_build: %s", err.msg);
    if (o.dump) dump_module(o.dump, threads, funcs, keep, nf, mod);
    for (int i = 0; i < nf; i++) sch_free(keep[i]);
    if (!o.json_only) fprintf(stderr, "bench_ops: %d Loom kernels built for %d thread(s) in %.1f s\n", nf, threads,
                              now_s() - tb);
    size_t ws_bytes = 64;
    for (int i = 0; i < N_CONVS + N_MATMULS; i++) {
      if (!ops[i].fname[0]) continue;
      if (driver_get_kernel(mod, ops[i].fname, &ops[i].kernel, &err)) die("kernel: %s", err.msg);
      if (ops[i].kernel.workspace_bytes > ws_bytes) ws_bytes = ops[i].kernel.workspace_bytes;
    }
    void *ws = aligned_alloc(64, (ws_bytes + 63) / 64 * 64);
    ThreadPool *pool = NULL;
    if (threadpool_create(threads, &pool, &err)) die("threadpool: %s", err.msg);

    for (int i = 0; i < N_CONVS; i++) {
      if (!conv_on[i]) continue;
      bench_conv(&kConvs[i], &ops[i], conv_ops[i], conv_shapes[i], threads, pool, ws, o.repeat);
      print_row(&g_results[g_n_results - 1], PEER_ONEDNN, o.json_only);
    }
    for (int i = 0; i < N_MATMULS; i++) {
      if (!mm_on[i]) continue;
      bench_matmul(&kMatmuls[i], &ops[N_CONVS + i], threads, pool, ws, o.repeat);
      print_row(&g_results[g_n_results - 1], PEER_ONEDNN, o.json_only);
      print_row(&g_results[g_n_results - 1], PEER_OPENBLAS, o.json_only);
    }
    threadpool_destroy(pool);
    free(ws);
    driver_module_free(mod);
    free(ops);
    arena_free(a);
  }
  read_loadavg(load1, sizeof load1);

  if (!o.json_only) {
    printf("\npeer/Loom = peer time / Loom time (> 1: Loom is faster); load average at the end %s\n", load1);
    printf("geometric means of Loom time / peer time (issue 5's bars: <= 1.10):\n");
    static const struct {
      const char *group, *what;
      int peer;
    } means[] = {{"resnet50", "ResNet-50 convs / oneDNN", PEER_ONEDNN},
                 {"mobilenetv2", "MobileNetV2 convs / oneDNN", PEER_ONEDNN},
                 {"bert", "BERT matmuls / OpenBLAS", PEER_OPENBLAS},
                 {"bert", "BERT matmuls / oneDNN", PEER_ONEDNN}};
    for (size_t g = 0; g < sizeof means / sizeof means[0]; g++)
      for (int t = 0; t < o.n_threads; t++) {
        int n;
        double v = geomean(means[g].group, means[g].peer, o.threads[t], &n);
        if (n) printf("  %-28s %d thread%s: %.3f (%d ops)\n", means[g].what, o.threads[t], o.threads[t] == 1 ? " " : "s",
                      v, n);
      }
    printf("\n");
  }
  print_json(&o, target.name, load0, load1);
  dnnl_stream_destroy(g_stream);
  dnnl_engine_destroy(g_engine);
  free(g_results);
  return 0;
}

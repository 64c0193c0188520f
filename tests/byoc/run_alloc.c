/* Counts the heap allocations of a model's runs: run_alloc MODEL.loom
 * THREADS MAX_BYTES loads the model, sets every input (f32 or i64) to a
 * small ramp,
 * runs it 3 times to warm up (libgomp and OpenBLAS
 * create their threads and per-thread state on first use), then counts
 * every malloc, calloc, realloc and aligned allocation, from any library
 * in the process, during 5 more runs. Exit 0 when no single allocation
 * reached MAX_BYTES: the back ends' scratchpads and intermediate tensors
 * (kilobytes and more) come from Loom's workspace, planned at compile
 * time, never from a per-run allocation. And every run's outputs equal the
 * first's, bit for bit. Prints what it saw.
 *
 * The counter interposes the allocator by defining malloc and friends in
 * this executable, forwarding to glibc's __libc_ entry points: not in a
 * sanitizer build, whose runtime owns those symbols (tests/CMakeLists.txt). */
#include <loom/loom_runtime.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);

static atomic_int counting;
static atomic_long calls, bytes, largest;

static void count(size_t n) {
  if (!atomic_load(&counting)) return;
  atomic_fetch_add(&calls, 1);
  atomic_fetch_add(&bytes, (long)n);
  long prev = atomic_load(&largest);
  while ((long)n > prev && !atomic_compare_exchange_weak(&largest, &prev, (long)n)) {
  }
}

void *malloc(size_t n) {
  count(n);
  return __libc_malloc(n);
}

void *calloc(size_t k, size_t n) {
  count(k * n);
  return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n) {
  count(n);
  return __libc_realloc(p, n);
}

void *aligned_alloc(size_t align, size_t n) {
  count(n);
  return __libc_memalign(align, n);
}

int posix_memalign(void **out, size_t align, size_t n) {
  count(n);
  void *p = __libc_memalign(align, n);
  if (!p) return 12; /* ENOMEM */
  *out = p;
  return 0;
}

void *memalign(size_t align, size_t n) {
  count(n);
  return __libc_memalign(align, n);
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: run_alloc MODEL.loom THREADS MAX_BYTES\n");
    return 2;
  }
  char err[1024];
  loom_model *m = NULL;
  loom_model_options opt;
  memset(&opt, 0, sizeof opt);
  opt.num_threads = atoi(argv[2]);
  long max_bytes = atol(argv[3]);
  if (loom_model_load(argv[1], &opt, &m, err, sizeof err)) {
    fprintf(stderr, "run_alloc: %s\n", err);
    return 1;
  }
  int rc = 0;
  for (int32_t k = 0; k < loom_model_num_inputs(m) && !rc; k++) {
    loom_tensor_info info;
    bool known = loom_model_input_info(m, k, &info) == LOOM_OK;
    bool f32 = known && info.dtype.code == kDLFloat && info.dtype.bits == 32;
    bool i64 = known && info.dtype.code == kDLInt && info.dtype.bits == 64;
    if (!f32 && !i64) {
      fprintf(stderr, "run_alloc: input %d is neither f32 nor i64\n", (int)k);
      rc = 1;
      break;
    }
    int64_t n = 1;
    for (int32_t d = 0; d < info.ndim; d++) n *= info.shape[d];
    void *x = malloc(8 * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; x && i < n; i++) { /* token ids or values: small, varied */
      if (f32) ((float *)x)[i] = (float)(i % 17) * 0.125f - 1.0f;
      else ((int64_t *)x)[i] = i % 17;
    }
    DLTensor t = {
        .data = x, .device = {kDLCPU, 0}, .ndim = info.ndim, .dtype = info.dtype, .shape = (int64_t *)info.shape};
    if (!x || loom_model_set_input(m, k, &t)) {
      fprintf(stderr, "run_alloc: cannot set input %d: %s\n", (int)k, loom_model_error(m));
      rc = 1;
    }
    free(x);
  }
  /* Every run's outputs must be the first's, bit for bit: the workspace
   * a back end keeps its intermediates in is shared with other kernels. */
  int32_t nout = loom_model_num_outputs(m);
  void **first = calloc((size_t)nout + 1, sizeof *first);
  size_t *first_bytes = calloc((size_t)nout + 1, sizeof *first_bytes);
  for (int i = 0; i < 8 && !rc; i++) {
    if (i == 3) atomic_store(&counting, 1);
    if (loom_model_run(m)) {
      fprintf(stderr, "run_alloc: %s\n", loom_model_error(m));
      rc = 1;
    }
    atomic_store(&counting, 0);
    for (int32_t k = 0; k < nout && !rc; k++) {
      DLTensor y;
      if (loom_model_get_output(m, k, &y)) {
        rc = 1;
        break;
      }
      size_t n = (size_t)(y.dtype.bits / 8) * (size_t)y.dtype.lanes;
      for (int32_t d = 0; d < y.ndim; d++) n *= (size_t)y.shape[d];
      if (i == 0) {
        first[k] = malloc(n ? n : 1);
        first_bytes[k] = n;
        if (first[k]) memcpy(first[k], y.data, n);
      } else if (!first[k] || n != first_bytes[k] || memcmp(first[k], y.data, n)) {
        fprintf(stderr, "run_alloc: output %d of run %d differs from the first run's\n", (int)k, i);
        rc = 1;
      }
    }
    if (i >= 3) atomic_store(&counting, 1);
  }
  atomic_store(&counting, 0);
  for (int32_t k = 0; k < nout; k++) free(first[k]);
  free(first), free(first_bytes);
  loom_model_free(m);
  printf("run_alloc: 5 runs on %d threads: %ld allocations, %ld bytes, the largest %ld bytes\n", opt.num_threads,
         atomic_load(&calls), atomic_load(&bytes), atomic_load(&largest));
  if (!rc && atomic_load(&largest) >= max_bytes) {
    fprintf(stderr, "run_alloc: an allocation of %ld bytes during a run (expected none of %ld or more)\n",
            atomic_load(&largest), max_bytes);
    rc = 1;
  }
  return rc;
}

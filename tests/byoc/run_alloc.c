/* Counts the heap allocations of a model's runs: run_alloc MODEL.loom
 * THREADS MAX_BYTES loads the model, sets every input to a small ramp,
 * runs it 3 times to warm up (libgomp and OpenBLAS
 * create their threads and per-thread state on first use), then counts
 * every malloc, calloc, realloc and aligned allocation, from any library
 * in the process, during 5 more runs. Exit 0 when no single allocation
 * reached MAX_BYTES: the back ends' scratchpads and intermediate tensors
 * (kilobytes and more) come from Loom's workspace, planned at compile
 * time, never from a per-run allocation. Prints what it saw.
 *
 * The counter interposes the allocator by defining malloc and friends in
 * this executable, forwarding to glibc's __libc_ entry points: not in a
 * sanitizer build, whose runtime owns those symbols (tests/CMakeLists.txt). */
#include <loom/loom_runtime.h>

#include <stdatomic.h>
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
    if (loom_model_input_info(m, k, &info) || info.dtype.code != kDLFloat || info.dtype.bits != 32) {
      fprintf(stderr, "run_alloc: input %d is not f32\n", (int)k);
      rc = 1;
      break;
    }
    int64_t n = 1;
    for (int32_t d = 0; d < info.ndim; d++) n *= info.shape[d];
    float *x = malloc(sizeof *x * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; x && i < n; i++) x[i] = (float)(i % 17) * 0.125f - 1.0f;
    DLTensor t = {.data = x, .device = {kDLCPU, 0}, .ndim = info.ndim, .dtype = info.dtype, .shape = (int64_t *)info.shape};
    if (!x || loom_model_set_input(m, k, &t)) {
      fprintf(stderr, "run_alloc: cannot set input %d: %s\n", (int)k, loom_model_error(m));
      rc = 1;
    }
    free(x);
  }
  for (int i = 0; i < 8 && !rc; i++) {
    if (i == 3) atomic_store(&counting, 1);
    if (loom_model_run(m)) {
      fprintf(stderr, "run_alloc: %s\n", loom_model_error(m));
      rc = 1;
    }
  }
  atomic_store(&counting, 0);
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

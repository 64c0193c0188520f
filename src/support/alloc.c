#include "support/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* Process-wide by necessity: the hook sits below every context. Atomics keep
 * it race-free when the thread pool allocates while a test is armed. */
static atomic_int armed;
static atomic_size_t fail_at, count, bytes;
static atomic_int failed;

void loom_alloc_test_arm(size_t n) {
  atomic_store(&count, 0);
  atomic_store(&bytes, 0);
  atomic_store(&failed, 0);
  atomic_store(&fail_at, n);
  atomic_store(&armed, 1);
}

void loom_alloc_test_disarm(void) { atomic_store(&armed, 0); }

void loom_alloc_test_stats(size_t *b, size_t *c) {
  if (b) *b = atomic_load(&bytes);
  if (c) *c = atomic_load(&count);
}

int loom_alloc_test_failed(void) { return atomic_load(&failed); }

/* Counts one allocation of `size` bytes; true when this one must fail. */
static int armed_should_fail(size_t size) {
  atomic_fetch_add_explicit(&bytes, size, memory_order_relaxed);
  size_t n = atomic_fetch_add_explicit(&count, 1, memory_order_relaxed) + 1;
  if (n != atomic_load_explicit(&fail_at, memory_order_relaxed)) return 0;
  atomic_store(&failed, 1);
  return 1;
}

static inline int should_fail(size_t size) {
  if (__builtin_expect(!atomic_load_explicit(&armed, memory_order_relaxed), 1)) return 0;
  return armed_should_fail(size);
}

void *loom_malloc(size_t size) { return should_fail(size) ? NULL : malloc(size); }

void *loom_calloc(size_t n, size_t size) {
  /* On overflow the product is only a count for the stats; calloc refuses it. */
  return should_fail(n * size) ? NULL : calloc(n, size);
}

void *loom_realloc(void *p, size_t size) { return should_fail(size) ? NULL : realloc(p, size); }

void *loom_aligned_alloc(size_t align, size_t size) {
  return should_fail(size) ? NULL : aligned_alloc(align, size);
}

void loom_free(void *p) { free(p); }

char *loom_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *q = loom_malloc(n);
  if (q) memcpy(q, s, n);
  return q;
}

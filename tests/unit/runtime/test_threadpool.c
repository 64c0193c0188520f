#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/threadpool.h"

typedef struct Hits {
  atomic_int *counts; /* how often each iteration ran */
  atomic_long calls;
} Hits;

static void count_body(void *c, int64_t begin, int64_t end) {
  Hits *h = c;
  atomic_fetch_add(&h->calls, 1);
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&h->counts[i], 1);
}

/* Every iteration runs exactly once, for many small jobs back to back (the
 * pattern that exposes lost wake-ups and generation mix-ups). */
static void test_many_small_jobs(void **state) {
  (void)state;
  for (int threads = 1; threads <= 4; threads++) {
    ThreadPool *p;
    assert_int_equal(threadpool_create(threads, &p, NULL), LOOM_OK);
    assert_int_equal(threadpool_num_threads(p), threads);
    enum { MAXN = 97 };
    atomic_int counts[MAXN];
    for (int job = 0; job < 3000; job++) {
      int64_t n = job % MAXN;
      for (int i = 0; i < MAXN; i++) atomic_init(&counts[i], 0);
      Hits h = {counts, 0};
      threadpool_parallel_for(p, n, count_body, &h);
      for (int i = 0; i < MAXN; i++) assert_int_equal(atomic_load(&counts[i]), i < n ? 1 : 0);
      if (n > 0) assert_true(atomic_load(&h.calls) <= (threads == 1 ? 1 : threads * THREADPOOL_CHUNKS_PER_THREAD));
    }
    threadpool_destroy(p);
  }
}

typedef struct Nested {
  ThreadPool *pool;
  atomic_int *counts; /* 16 x 16 */
} Nested;

static void inner_body(void *c, int64_t begin, int64_t end) {
  atomic_int *row = c;
  for (int64_t j = begin; j < end; j++) atomic_fetch_add(&row[j], 1);
}

static void outer_body(void *c, int64_t begin, int64_t end) {
  Nested *n = c;
  for (int64_t i = begin; i < end; i++) threadpool_parallel_for(n->pool, 16, inner_body, &n->counts[i * 16]);
}

/* A parallel loop inside a parallel loop runs (serially) instead of
 * deadlocking on the busy pool. */
static void test_nested(void **state) {
  (void)state;
  ThreadPool *p;
  assert_int_equal(threadpool_create(3, &p, NULL), LOOM_OK);
  atomic_int counts[256];
  for (int rep = 0; rep < 200; rep++) {
    for (int i = 0; i < 256; i++) atomic_init(&counts[i], 0);
    Nested n = {p, counts};
    threadpool_parallel_for(p, 16, outer_body, &n);
    for (int i = 0; i < 256; i++) assert_int_equal(atomic_load(&counts[i]), 1);
  }
  threadpool_destroy(p);
}

static void sum_body(void *c, int64_t begin, int64_t end) {
  double *partial = c;
  /* Each chunk writes only its own slots: no atomics needed, so a wrong
   * chunk split shows up as a wrong sum. */
  for (int64_t i = begin; i < end; i++) partial[i] = (double)i * 0.5;
}

static void test_large_range_and_env(void **state) {
  (void)state;
  ThreadPool *p;
  assert_int_equal(threadpool_create(2, &p, NULL), LOOM_OK);
  loom_kernel_env env = {0};
  threadpool_fill_env(p, &env);
  assert_ptr_equal(env.pool, p);
  assert_int_equal(env.num_threads, 2);
  int64_t n = 100003;
  double *v = calloc((size_t)n, sizeof *v);
  env.parallel_for(env.pool, n, sum_body, v);
  double s = 0;
  for (int64_t i = 0; i < n; i++) s += v[i];
  assert_true(s == 0.5 * (double)n * (double)(n - 1) / 2);
  free(v);
  threadpool_destroy(p);
  threadpool_fill_env(NULL, &env);
  assert_null(env.parallel_for);
}

static void test_env_thread_count(void **state) {
  (void)state;
  setenv("LOOM_NUM_THREADS", "3", 1);
  assert_int_equal(threadpool_default_threads(), 3);
  ThreadPool *p;
  assert_int_equal(threadpool_create(0, &p, NULL), LOOM_OK);
  assert_int_equal(threadpool_num_threads(p), 3);
  threadpool_destroy(p);
  setenv("LOOM_NUM_THREADS", "zero", 1);
  assert_true(threadpool_default_threads() >= 1);
  unsetenv("LOOM_NUM_THREADS");
  LoomError err = {0};
  assert_int_equal(threadpool_create(5000, &p, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "5000"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_many_small_jobs),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_large_range_and_env),
      cmocka_unit_test(test_env_thread_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

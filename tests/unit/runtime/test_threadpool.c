#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

typedef struct Slow {
  atomic_int *counts;
  int64_t work; /* busy iterations per index */
} Slow;

static void slow_body(void *c, int64_t begin, int64_t end) {
  Slow *s = c;
  for (int64_t i = begin; i < end; i++) {
    volatile int64_t sink = 0;
    for (int64_t j = 0; j < s->work * (1 + i % 3); j++) sink += j;
    atomic_fetch_add(&s->counts[i], 1);
  }
}

/* Loops of long chunks (threads then spin past their minimum, up to twice
 * their longest chunk) between instant ones and pauses (they sleep), loops
 * of fewer iterations than threads, of uneven chunks: every iteration runs
 * once whichever way the threads wait. */
static void test_long_and_short_chunks(void **state) {
  (void)state;
  struct timespec pause = {0, 2 * 1000 * 1000};
  for (int threads = 2; threads <= 4; threads++) {
    ThreadPool *p;
    assert_int_equal(threadpool_create(threads, &p, NULL), LOOM_OK);
    enum { MAXN = 29 };
    atomic_int counts[MAXN];
    for (int job = 0; job < 300; job++) {
      int64_t n = 1 + job % MAXN;
      for (int i = 0; i < MAXN; i++) atomic_init(&counts[i], 0);
      Slow s = {counts, job % 3 == 0 ? 20000 : job % 3 == 1 ? 0 : 500};
      threadpool_parallel_for(p, n, slow_body, &s);
      for (int i = 0; i < MAXN; i++) assert_int_equal(atomic_load(&counts[i]), i < n ? 1 : 0);
      if (job % 50 == 49) nanosleep(&pause, NULL);
    }
    threadpool_destroy(p);
  }
}

typedef struct Caller {
  ThreadPool *pool;
  atomic_int counts[41];
  int wrong;
} Caller;

static void *caller_main(void *arg) {
  Caller *c = arg;
  for (int job = 0; job < 1000; job++) {
    int64_t n = 1 + job % 41;
    for (int i = 0; i < 41; i++) atomic_init(&c->counts[i], 0);
    Hits h = {c->counts, 0};
    threadpool_parallel_for(c->pool, n, count_body, &h);
    for (int i = 0; i < 41; i++) c->wrong += atomic_load(&c->counts[i]) != (i < n ? 1 : 0);
  }
  return NULL;
}

/* Two threads share a pool: whichever finds it busy runs its loop
 * serially; every iteration of both runs once. */
static void test_concurrent_callers(void **state) {
  (void)state;
  ThreadPool *p;
  assert_int_equal(threadpool_create(3, &p, NULL), LOOM_OK);
  Caller a = {.pool = p}, b = {.pool = p};
  pthread_t ta, tb;
  assert_int_equal(pthread_create(&ta, NULL, caller_main, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, caller_main, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  assert_int_equal(a.wrong, 0);
  assert_int_equal(b.wrong, 0);
  threadpool_destroy(p);
}

static void slow_once_body(void *c, int64_t begin, int64_t end) {
  Slow s = {c, 200000};
  slow_body(&s, begin, end);
}

/* Shutdown finds the workers asleep (after a pause far longer than their
 * spin; whether they slept yet does not change what is checked), spinning
 * after a loop of long chunks (their deadline far ahead), or never having
 * seen a job. */
static void test_shutdown(void **state) {
  (void)state;
  struct timespec pause = {0, 50 * 1000 * 1000};
  for (int threads = 2; threads <= 4; threads++) {
    for (int how = 0; how < 3; how++) {
      ThreadPool *p;
      assert_int_equal(threadpool_create(threads, &p, NULL), LOOM_OK);
      atomic_int counts[16];
      for (int i = 0; i < 16; i++) atomic_init(&counts[i], 0);
      Hits h = {counts, 0};
      if (how == 0) {
        threadpool_parallel_for(p, 16, count_body, &h);
        nanosleep(&pause, NULL);
      } else if (how == 1) {
        threadpool_parallel_for(p, 16, slow_once_body, counts);
      }
      threadpool_destroy(p);
      for (int i = 0; i < 16; i++) assert_int_equal(atomic_load(&counts[i]), how < 2 ? 1 : 0);
    }
  }
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
      cmocka_unit_test(test_long_and_short_chunks),
      cmocka_unit_test(test_concurrent_callers),
      cmocka_unit_test(test_shutdown),
      cmocka_unit_test(test_large_range_and_env),
      cmocka_unit_test(test_env_thread_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

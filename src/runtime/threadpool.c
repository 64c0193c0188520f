#include "runtime/threadpool.h"
#include "support/alloc.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Spin iterations before sleeping. Kernels run parallel loops back to back a
 * few microseconds apart, and a condvar wake-up costs ~5-20 us, so a short
 * spin pays off; a long one burns a shared machine's cores for nothing. */
enum { WORKER_SPIN = 4096, CALLER_SPIN = 1 << 14 };

struct ThreadPool {
  int n_threads; /* including the caller */
  pthread_t *workers;
  int n_workers_started;

  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers sleep here waiting for a new generation */
  pthread_cond_t done; /* the caller sleeps here waiting for the last chunk */
  atomic_uint generation;
  atomic_int sleeping_workers;
  atomic_int caller_sleeping;
  atomic_bool stop;
  atomic_bool busy; /* a job is running: nested / concurrent calls go serial */

  /* The current job. Written by the caller before bumping `ticket` to the new
   * generation; read by a worker only after it won a chunk of that
   * generation, when the caller is guaranteed to still wait on it. */
  loom_parallel_body body;
  void *closure;
  int64_t n;
  int n_chunks;
  _Atomic uint64_t ticket; /* see ticket_make */
  atomic_int chunks_done;
};

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* ticket layout: generation (32 bits) | chunk count (16) | next chunk (16).
 * Everything a worker decides before winning a chunk comes from this one
 * word, so a worker that woke late for an old generation can neither take a
 * chunk of a newer job nor misread its size. */
static uint64_t ticket_make(uint32_t gen, int n_chunks) { return (uint64_t)gen << 32 | (uint64_t)n_chunks << 16; }

static void chunk_range(int64_t n, int n_chunks, int c, int64_t *begin, int64_t *end) {
  int64_t base = n / n_chunks, extra = n % n_chunks;
  *begin = c * base + (c < extra ? c : extra);
  *end = *begin + base + (c < extra ? 1 : 0);
}

/* Takes and runs chunks of generation `gen` until none are left. */
static void run_chunks(ThreadPool *p, uint32_t gen) {
  for (;;) {
    uint64_t t = atomic_load(&p->ticket);
    for (;;) {
      if ((uint32_t)(t >> 32) != gen) return;
      if ((t & 0xffff) >= ((t >> 16) & 0xffff)) return;
      if (atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) break;
    }
    /* We hold an unfinished chunk of `gen`: the caller is still waiting on
     * it, so the job fields are those of `gen`. */
    int c = (int)(t & 0xffff), n_chunks = (int)((t >> 16) & 0xffff);
    int64_t b, e;
    chunk_range(p->n, n_chunks, c, &b, &e);
    p->body(p->closure, b, e);
    if (atomic_fetch_add(&p->chunks_done, 1) + 1 == n_chunks && atomic_load(&p->caller_sleeping)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
}

static void *worker_main(void *arg) {
  ThreadPool *p = arg;
  uint32_t seen = atomic_load(&p->generation);
  for (;;) {
    uint32_t gen = atomic_load(&p->generation);
    for (int i = 0; gen == seen && i < WORKER_SPIN && !atomic_load(&p->stop); i++) {
      cpu_relax();
      gen = atomic_load(&p->generation);
    }
    if (gen == seen) {
      pthread_mutex_lock(&p->mu);
      /* seq_cst increment then re-check: pairs with the caller's store of
       * generation then load of sleeping_workers, so no wake-up is lost. */
      atomic_fetch_add(&p->sleeping_workers, 1);
      while ((gen = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
        pthread_cond_wait(&p->wake, &p->mu);
      atomic_fetch_sub(&p->sleeping_workers, 1);
      pthread_mutex_unlock(&p->mu);
    }
    if (atomic_load(&p->stop)) return NULL;
    seen = gen;
    run_chunks(p, gen);
  }
}

int threadpool_default_threads(void) {
  const char *s = getenv("LOOM_NUM_THREADS");
  if (s && *s) {
    char *end;
    long v = strtol(s, &end, 10);
    if (!*end && v >= 1 && v <= 1024) return (int)v;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n >= 1 ? (int)(n > 1024 ? 1024 : n) : 1;
}

loom_status threadpool_create(int num_threads, ThreadPool **out, LoomError *err) {
  *out = NULL;
  if (num_threads > 1024)
    return err_set(err, LOOM_ERR_INVALID_ARG, "thread pool: num_threads %d, expected at most 1024", num_threads);
  if (num_threads <= 0) num_threads = threadpool_default_threads();
  ThreadPool *p = loom_calloc(1, sizeof *p);
  if (!p) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "thread pool: out of memory");
  p->n_threads = num_threads;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  atomic_init(&p->generation, 0);
  atomic_init(&p->ticket, 0);
  if (num_threads > 1) {
    p->workers = loom_calloc((size_t)num_threads - 1, sizeof *p->workers);
    if (!p->workers) {
      threadpool_destroy(p);
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "thread pool: out of memory");
    }
    for (int i = 0; i < num_threads - 1; i++) {
      int rc = pthread_create(&p->workers[i], NULL, worker_main, p);
      if (rc != 0) {
        threadpool_destroy(p);
        return err_set(err, LOOM_ERR_RUNTIME, "thread pool: starting worker %d of %d failed: %s", i + 1,
                       num_threads - 1, strerror(rc));
      }
      p->n_workers_started++;
    }
  }
  *out = p;
  return LOOM_OK;
}

void threadpool_destroy(ThreadPool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, true);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_workers_started; i++) pthread_join(p->workers[i], NULL);
  loom_free(p->workers);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  loom_free(p);
}

int threadpool_num_threads(const ThreadPool *p) { return p ? p->n_threads : 1; }

void threadpool_parallel_for(void *pool, int64_t n, loom_parallel_body body, void *closure) {
  ThreadPool *p = pool;
  if (n <= 0) return;
  bool expected = false;
  if (!p || p->n_threads == 1 || n == 1 || !atomic_compare_exchange_strong(&p->busy, &expected, true)) {
    body(closure, 0, n);
    return;
  }
  p->body = body;
  p->closure = closure;
  p->n = n;
  int64_t chunks = (int64_t)p->n_threads * THREADPOOL_CHUNKS_PER_THREAD;
  p->n_chunks = (int)(n < chunks ? n : chunks);
  atomic_store(&p->chunks_done, 0);
  uint32_t gen = atomic_load(&p->generation) + 1;
  atomic_store(&p->ticket, ticket_make(gen, p->n_chunks));
  atomic_store(&p->generation, gen);
  if (atomic_load(&p->sleeping_workers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  run_chunks(p, gen);
  for (int i = 0; atomic_load(&p->chunks_done) < p->n_chunks && i < CALLER_SPIN; i++) cpu_relax();
  if (atomic_load(&p->chunks_done) < p->n_chunks) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_sleeping, 1);
    while (atomic_load(&p->chunks_done) < p->n_chunks) pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->caller_sleeping, 0);
    pthread_mutex_unlock(&p->mu);
  }
  atomic_store(&p->busy, false);
}

void threadpool_fill_env(ThreadPool *pool, loom_kernel_env *env) {
  env->parallel_for = pool ? threadpool_parallel_for : NULL;
  env->pool = pool;
  env->num_threads = threadpool_num_threads(pool);
}

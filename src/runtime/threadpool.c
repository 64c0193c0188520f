#include "runtime/threadpool.h"
#include "support/alloc.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Spin iterations before sleeping, at least. Kernels run parallel loops
 * back to back a few microseconds apart, and a condvar wake-up costs ~5-20
 * us, so a short spin pays off; a long one burns a shared machine's cores
 * for nothing. A thread that has just run chunks of a loop spins longer
 * when those chunks were long: see spin_deadline. */
enum { WORKER_SPIN = 4096, CALLER_SPIN = 1 << 14 };
/* Past its minimum spin, a worker looks every CHECK_EVERY pauses (~9 us)
 * whether the caller is running (a read of its CPU clock, a system call of
 * ~0.5 us): under a tenth of the spin's time. */
enum { CHECK_EVERY = 256 };

typedef struct Worker {
  struct ThreadPool *pool;
  int index; /* 1..n_threads-1; the caller is thread 0 */
} Worker;

struct ThreadPool {
  int n_threads; /* including the caller */
  pthread_t *workers;
  Worker *worker_args;
  int n_workers_started;

  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers sleep here waiting for a new generation */
  pthread_cond_t done; /* the caller sleeps here waiting for the last chunk */
  atomic_uint generation;
  atomic_int sleeping_workers;
  atomic_int caller_sleeping;
  atomic_bool stop;
  atomic_bool busy; /* a job is running: nested / concurrent calls go serial */

  /* The current job. Written by the caller before it arms the chunks for
   * the new generation; read by a worker only after it won a chunk of that
   * generation, when the caller is guaranteed to still wait on it. */
  loom_parallel_body body;
  void *closure;
  int64_t n;
  atomic_int chunking; /* chunking_pack */
  atomic_int caller_clock; /* the caller's CPU-time clock (a clockid_t) */
  /* claim[c]: gen << 1 when chunk c is armed for generation gen, | 1 once a
   * thread took it (see run_chunks). */
  _Atomic uint64_t *claim;
  atomic_int chunks_done;
};

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether a thread is running: it used at least half of the wall time
 * since the last look as CPU time (the first look says yes). */
typedef struct Watch {
  clockid_t clock;
  int64_t cpu, wall; /* at the last look; wall 0: none yet */
} Watch;

static bool watch_running(Watch *w) {
  struct timespec t;
  if (clock_gettime(w->clock, &t) != 0) return true; /* the thread exited: not ours to judge */
  int64_t cpu = (int64_t)t.tv_sec * 1000000000 + t.tv_nsec, wall = now_ns();
  bool running = w->wall == 0 || 2 * (cpu - w->cpu) >= wall - w->wall;
  w->cpu = cpu;
  w->wall = wall;
  return running;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* The job's chunks: `threads` (at most the pool's, at most n) contiguous
 * shares of the loop, as even as whole iterations allow, each cut into
 * `per_thread` chunks. Chunk c is piece c % per_thread of share
 * c / per_thread. */
typedef struct Chunking {
  int threads, per_thread;
} Chunking;

static Chunking chunking_of(int64_t n, int pool_threads) {
  Chunking k = {pool_threads < n ? pool_threads : (int)n, 1};
  int64_t per = n / k.threads;
  k.per_thread = per < THREADPOOL_CHUNKS_PER_THREAD ? (int)per : THREADPOOL_CHUNKS_PER_THREAD;
  return k;
}

static int chunking_pack(Chunking k) { return k.threads << 8 | k.per_thread; }
static Chunking chunking_unpack(int v) { return (Chunking){v >> 8, v & 0xff}; }

static void chunk_range(int64_t n, Chunking k, int c, int64_t *begin, int64_t *end) {
  int t = c / k.per_thread, j = c % k.per_thread;
  int64_t tb = t * n / k.threads, te = (t + 1) * n / k.threads;
  *begin = tb + j * (te - tb) / k.per_thread;
  *end = tb + (j + 1) * (te - tb) / k.per_thread;
}

/* Runs chunk c of generation `gen` if no thread took it yet; returns how
 * long it took in ns, or -1 when another thread had taken it. The claim
 * succeeds only on a chunk armed for `gen`, so a worker that woke late for
 * an old generation takes nothing of a newer job (every chunk of a finished
 * generation was claimed: no armed value of an old one is left). */
static int64_t try_chunk(ThreadPool *p, uint32_t gen, int c, Chunking k) {
  uint64_t armed = (uint64_t)gen << 1;
  if (atomic_load_explicit(&p->claim[c], memory_order_relaxed) != armed ||
      !atomic_compare_exchange_strong(&p->claim[c], &armed, armed | 1))
    return -1;
  /* We hold an unfinished chunk of `gen`: the caller is still waiting on
   * it, so the job fields are those of `gen`. */
  int64_t b, e, t0 = now_ns();
  chunk_range(p->n, k, c, &b, &e);
  if (b < e) p->body(p->closure, b, e);
  int64_t took = now_ns() - t0;
  if (atomic_fetch_add(&p->chunks_done, 1) + 1 == k.threads * k.per_thread && atomic_load(&p->caller_sleeping)) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done);
    pthread_mutex_unlock(&p->mu);
  }
  return took;
}

/* Thread `self` runs its own chunks of generation `gen` first, a contiguous
 * range of the loop that is the same in every call with the same extent
 * (OpenMP's static schedule): a GEMV's share of the weights, or a conv's
 * rows, stay in that core's L2 from one call to the next (1 x 768 x 768 at
 * 2 threads: each half of the 2.4 MB matrix fits one core's 2 MB L2; taken
 * first-come, first-served, every call streamed it from L3 again, slower
 * than 1 thread). Then it takes the chunks still left of the others, so a
 * preempted or late thread's share is done by those that are running.
 * Returns the shortest chunk it ran, in ns (0: none). */
static int64_t run_chunks(ThreadPool *p, uint32_t gen, int self) {
  Chunking k = chunking_unpack(atomic_load(&p->chunking));
  int n_chunks = k.threads * k.per_thread;
  if (k.per_thread < 1 || n_chunks > p->n_threads * THREADPOOL_CHUNKS_PER_THREAD) return 0; /* a newer job being set up */
  int home = self < k.threads ? self * k.per_thread : 0, home_end = self < k.threads ? home + k.per_thread : 0;
  int64_t shortest = -1;
  for (int i = 0; i < n_chunks; i++) {
    /* home chunks first, then the others' in order after them */
    int c = i < home_end - home ? home + i : (home_end + i - (home_end - home)) % n_chunks;
    int64_t took = try_chunk(p, gen, c, k);
    if (took >= 0 && (shortest < 0 || took < shortest)) shortest = took;
  }
  return shortest < 0 ? 0 : shortest;
}

/* Until when a thread that finished its part of a loop at `finished` (ns)
 * keeps spinning, past its minimum spin, before it sleeps; `shortest` is
 * the shortest chunk it ran (0: none). When it finds no chunk left, every
 * other thread still in the loop is running its last chunk, and the next
 * loop comes microseconds after they finish. Chunks of one loop differ by
 * at most one iteration and have at least one, so none takes more than
 * twice the shortest (the shortest, not the longest: a chunk during which
 * the host preempted the thread took longer than its work). Until then the
 * next job is due, and sleeping would only add a wake-up to its start. With
 * the minimum spin alone (~0.15 ms: WORKER_SPIN pauses of ~35 ns on the
 * Xeon this was measured on), a ResNet-50 run at 2 threads (~45 loops of
 * 0.1-3 ms, chunks of up to ~0.4 ms) put its worker to sleep ~2.5 times on
 * an otherwise idle pair of CPUs and ~15 times on a busy host, each time
 * the other thread's last chunk outlasted the spin. A longer wait is not
 * the loop's imbalance but a thread the host preempted, or the end of the
 * model's run; a worker also stops spinning as soon as the caller, which
 * publishes the next loop, is seen not running (watch_running): sleeping
 * then gives its CPU away, to the caller itself if the host had taken the
 * caller's, and keeps its standing with the scheduler, which spinning
 * would spend. The spin costs a thread at most twice the CPU time of the
 * chunks it follows. */
static int64_t spin_deadline(int64_t finished, int64_t shortest) { return finished + 2 * shortest; }

static void *worker_main(void *arg) {
  const Worker *w = arg;
  ThreadPool *p = w->pool;
  uint32_t seen = atomic_load(&p->generation);
  int64_t deadline = 0;
  for (;;) {
    uint32_t gen = atomic_load(&p->generation);
    Watch caller = {(clockid_t)atomic_load(&p->caller_clock), 0, 0};
    for (int i = 0; gen == seen && !atomic_load(&p->stop); i++) {
      /* past the minimum spin: until the deadline, while the caller runs */
      if (i >= WORKER_SPIN && (now_ns() >= deadline || (i % CHECK_EVERY == 0 && !watch_running(&caller)))) break;
      if (i == INT_MAX) i = WORKER_SPIN;
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
    int64_t shortest = run_chunks(p, gen, w->index);
    deadline = spin_deadline(now_ns(), shortest);
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
  atomic_init(&p->chunking, 0);
  if (num_threads > 1) {
    p->workers = loom_calloc((size_t)num_threads - 1, sizeof *p->workers);
    p->worker_args = loom_calloc((size_t)num_threads - 1, sizeof *p->worker_args);
    p->claim = loom_calloc((size_t)num_threads * THREADPOOL_CHUNKS_PER_THREAD, sizeof *p->claim);
    if (!p->workers || !p->worker_args || !p->claim) {
      threadpool_destroy(p);
      return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "thread pool: out of memory");
    }
    for (int i = 0; i < num_threads - 1; i++) {
      p->worker_args[i] = (Worker){p, i + 1};
      int rc = pthread_create(&p->workers[i], NULL, worker_main, &p->worker_args[i]);
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
  loom_free(p->worker_args);
  loom_free((void *)p->claim);
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
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) == 0) atomic_store(&p->caller_clock, (int)clock);
  Chunking k = chunking_of(n, p->n_threads);
  int n_chunks = k.threads * k.per_thread;
  atomic_store(&p->chunking, chunking_pack(k));
  atomic_store(&p->chunks_done, 0);
  uint32_t gen = atomic_load(&p->generation) + 1;
  for (int c = 0; c < n_chunks; c++) atomic_store(&p->claim[c], (uint64_t)gen << 1);
  atomic_store(&p->generation, gen);
  if (atomic_load(&p->sleeping_workers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  int64_t shortest = run_chunks(p, gen, 0);
  int64_t deadline = spin_deadline(now_ns(), shortest);
  for (int i = 0; atomic_load(&p->chunks_done) < n_chunks && (i < CALLER_SPIN || now_ns() < deadline);) {
    cpu_relax();
    if (i < CALLER_SPIN) i++;
  }
  if (atomic_load(&p->chunks_done) < n_chunks) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_sleeping, 1);
    while (atomic_load(&p->chunks_done) < n_chunks) pthread_cond_wait(&p->done, &p->mu);
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

/* A fork/join thread pool for the parallel loops of generated kernels.
 *
 * Workers are persistent pthreads. A parallel_for publishes one job cut
 * into chunks, each thread's own contiguous share first (the same share in
 * every call of the same extent, so its data stays in that core's caches),
 * then whatever chunks of the others are left; the caller returns when all
 * chunks are done. Idle
 * workers spin (a model runs its parallel loops back to back), for as long
 * as the other threads' last chunks of the loop may take while the caller
 * is running, and then sleep on a condition variable, so an idle pool costs
 * no CPU.
 *
 * A parallel_for issued while the pool is busy (a nested parallel loop, or a
 * second thread sharing the pool) runs serially in its caller: correct, and
 * never deadlocks. */
#ifndef LOOM_RUNTIME_THREADPOOL_H
#define LOOM_RUNTIME_THREADPOOL_H

#include "loom/loom_kernel.h"
#include "support/error.h"

typedef struct ThreadPool ThreadPool;

/* num_threads counts the caller: 1 means no worker threads. num_threads <= 0
 * takes $LOOM_NUM_THREADS, else the number of online CPUs. */
loom_status threadpool_create(int num_threads, ThreadPool **out, LoomError *err);
/* Joins the workers. NULL is allowed. Must not run concurrently with a
 * parallel_for on the same pool. */
void threadpool_destroy(ThreadPool *pool);
int threadpool_num_threads(const ThreadPool *pool);

/* Chunks per thread a parallel loop is cut into (at most; fewer when it
 * has fewer iterations): threads claim chunks of their own share, then of
 * the others' as they finish, so when one is slow (a shared machine's host runs something else on its core, or it
 * woke late) the others take over its remaining chunks instead of waiting
 * at the end of the loop for its whole share. */
enum { THREADPOOL_CHUNKS_PER_THREAD = 4 };

/* What one parallel loop's fork/join costs its caller when the workers
 * are spinning (loops back to back): publishing the job, the workers'
 * claims and the caller's wait for the last chunk, with empty chunks.
 * Measured once (2 threads, 2001 empty loops of 8 iterations, medians of
 * three runs, chrt -f 10): 0.56 us on the 2-vCPU Sapphire-Rapids-class
 * Xeon. The default schedules leave a loop serial when splitting it
 * would save less than this (topi_parallel_pays). */
enum { THREADPOOL_FORK_JOIN_NS = 560 };

/* The loom_parallel_for of the kernel ABI; `pool` is a ThreadPool *. */
void threadpool_parallel_for(void *pool, int64_t n, loom_parallel_body body, void *closure);

/* Fills env->parallel_for, pool and num_threads (workspace left alone). A NULL
 * pool gives a serial env. */
void threadpool_fill_env(ThreadPool *pool, loom_kernel_env *env);

/* The thread count a pool created with num_threads <= 0 would get. */
int threadpool_default_threads(void);

#endif

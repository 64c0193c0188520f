/* --threads N: the exported project's worker pool. The host runtime's
 * fork/join pool (src/runtime/threadpool.c: one published job, chunks
 * claimed from one atomic ticket by every thread, the caller included;
 * brief spinning, then a condition variable) with its state in the
 * caller's PREFIX_context instead of the heap: N-1 workers in a fixed
 * array, no allocation, nothing global. PREFIX_run passes it to the
 * kernels as their loom_parallel_for, so a parallel loop is split exactly as
 * in the host artifact.
 *
 * PREFIX_context is opaque storage in PREFIX.h (the header then needs no
 * C11 atomics, so C++ can include it); PREFIX.c checks at compile time
 * that the pool fits, so a platform with larger pthread types fails to
 * build instead of overrunning it. */
#include "export/export.h"

/* Bytes of PREFIX_context: the pool's fixed part (two condition variables,
 * a mutex, the atomics: under 300 bytes on glibc's 64-bit targets) with
 * room to spare, and a pthread_t per worker. */
static int context_bytes(int threads) { return (512 + 16 * (threads - 1) + 63) / 64 * 64; }

void export_threads_api(const ExportModel *m, StrBuf *o) {
  const char *P = m->prefix, *U = m->upper;
  sb_printf(o,
            "\n/* ---- threads: the kernels' parallel loops run on %d threads ----\n"
            " * A %s_context is the worker pool's state, in the caller's memory (static,\n"
            " * stack or heap: %s never allocates). %s_context_init starts %d worker\n"
            " * thread(s), which with the thread calling %s_run make %d; pass the context\n"
            " * to %s_run; %s_context_destroy stops them. One context serves one %s_run\n"
            " * at a time: a second concurrent run on it is correct but runs its\n"
            " * parallel loops serially; give each concurrent caller its own. */\n"
            "#define %s_CONTEXT_BYTES %d\n"
            "typedef struct %s_context {\n"
            "  union {\n    long double align_ld;\n    long long align_ll;\n    void *align_p;\n"
            "    unsigned char bytes[%s_CONTEXT_BYTES];\n"
            "  } opaque; /* private: the pool (%s.c) */\n"
            "} %s_context;\n\n"
            "/* Returns %s_OK, or %s_ERR_THREADS with no thread left running (then\n"
            " * do not call %s_context_destroy). ctx must not move while started. */\n"
            "int %s_context_init(%s_context *ctx);\n"
            "/* Joins the workers; not while a %s_run uses ctx. Once per init. */\n"
            "void %s_context_destroy(%s_context *ctx);\n",
            m->threads, P, P, P, m->threads - 1, P, m->threads, P, P, P, U, context_bytes(m->threads), P, U, P, P,
            U, U, P, P, P, P, P, P);
}

/* The pool. Names carry the prefix: PREFIX.c's statics share one file
 * with the kernels. */
static const char k_pool[] =
    "struct P_pool {\n"
    "  pthread_mutex_t mu;\n"
    "  pthread_cond_t wake; /* workers sleep here waiting for a new generation */\n"
    "  pthread_cond_t done; /* the caller sleeps here waiting for the last chunk */\n"
    "  atomic_uint generation;\n"
    "  atomic_int sleeping_workers, caller_sleeping, stop, busy, chunks_done;\n"
    "  /* generation (32 bits) | chunk count (16) | next chunk (16): a worker that\n"
    "   * woke late for an old job can neither take a chunk of a newer one nor\n"
    "   * misread its size */\n"
    "  _Atomic uint64_t ticket;\n"
    "  /* the current job: written before the ticket, read after winning a chunk */\n"
    "  loom_parallel_body body;\n"
    "  void *closure;\n"
    "  int64_t n;\n"
    "  int n_chunks, started;\n"
    "  pthread_t workers[P_POOL_WORKERS];\n"
    "};\n"
    "_Static_assert(sizeof(struct P_pool) <= sizeof(P_context), \"P_context is too small for this platform's pthread "
    "types: raise U_CONTEXT_BYTES\");\n\n"
    "static struct P_pool *P_pool_of(P_context *ctx) { return (struct P_pool *)(void *)ctx->opaque.bytes; }\n\n"
    "static void P_pool_relax(void) {\n"
    "#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))\n"
    "  __builtin_ia32_pause();\n"
    "#elif defined(__GNUC__) && defined(__aarch64__)\n"
    "  __asm__ __volatile__(\"yield\");\n"
    "#endif\n"
    "}\n\n"
    "/* Takes and runs chunks of generation gen until none are left. */\n"
    "static void P_pool_run_chunks(struct P_pool *p, uint32_t gen) {\n"
    "  for (;;) {\n"
    "    uint64_t t = atomic_load(&p->ticket);\n"
    "    for (;;) {\n"
    "      if ((uint32_t)(t >> 32) != gen || (t & 0xffff) >= ((t >> 16) & 0xffff)) return;\n"
    "      if (atomic_compare_exchange_weak(&p->ticket, &t, t + 1)) break;\n"
    "    }\n"
    "    int c = (int)(t & 0xffff), n_chunks = (int)((t >> 16) & 0xffff);\n"
    "    int64_t base = p->n / n_chunks, extra = p->n % n_chunks;\n"
    "    int64_t begin = c * base + (c < extra ? c : extra);\n"
    "    p->body(p->closure, begin, begin + base + (c < extra ? 1 : 0));\n"
    "    if (atomic_fetch_add(&p->chunks_done, 1) + 1 == n_chunks && atomic_load(&p->caller_sleeping)) {\n"
    "      pthread_mutex_lock(&p->mu);\n"
    "      pthread_cond_signal(&p->done);\n"
    "      pthread_mutex_unlock(&p->mu);\n"
    "    }\n"
    "  }\n"
    "}\n\n"
    "static void *P_pool_worker(void *arg) {\n"
    "  struct P_pool *p = (struct P_pool *)arg;\n"
    "  uint32_t seen = atomic_load(&p->generation);\n"
    "  for (;;) {\n"
    "    uint32_t gen = atomic_load(&p->generation);\n"
    "    for (int i = 0; gen == seen && i < P_POOL_WORKER_SPIN && !atomic_load(&p->stop); i++) {\n"
    "      P_pool_relax();\n"
    "      gen = atomic_load(&p->generation);\n"
    "    }\n"
    "    if (gen == seen) {\n"
    "      pthread_mutex_lock(&p->mu);\n"
    "      /* count, then re-check: pairs with the caller's store of generation\n"
    "       * then load of sleeping_workers, so no wake-up is lost */\n"
    "      atomic_fetch_add(&p->sleeping_workers, 1);\n"
    "      while ((gen = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))\n"
    "        pthread_cond_wait(&p->wake, &p->mu);\n"
    "      atomic_fetch_sub(&p->sleeping_workers, 1);\n"
    "      pthread_mutex_unlock(&p->mu);\n"
    "    }\n"
    "    if (atomic_load(&p->stop)) return NULL;\n"
    "    seen = gen;\n"
    "    P_pool_run_chunks(p, gen);\n"
    "  }\n"
    "}\n\n"
    "/* The kernels' loom_parallel_for (loom/loom_kernel.h). */\n"
    "static void P_parallel_for(void *pool, int64_t n, loom_parallel_body body, void *closure) {\n"
    "  struct P_pool *p = (struct P_pool *)pool;\n"
    "  int idle = 0;\n"
    "  if (n <= 0) return;\n"
    "  if (n == 1 || !atomic_compare_exchange_strong(&p->busy, &idle, 1)) {\n"
    "    body(closure, 0, n);\n"
    "    return;\n"
    "  }\n"
    "  p->body = body;\n"
    "  p->closure = closure;\n"
    "  p->n = n;\n"
    "  p->n_chunks = (int)(n < (int64_t)U_THREADS * P_POOL_CHUNKS_PER_THREAD ? n : U_THREADS * P_POOL_CHUNKS_PER_THREAD);\n"
    "  atomic_store(&p->chunks_done, 0);\n"
    "  uint32_t gen = atomic_load(&p->generation) + 1;\n"
    "  atomic_store(&p->ticket, (uint64_t)gen << 32 | (uint64_t)p->n_chunks << 16);\n"
    "  atomic_store(&p->generation, gen);\n"
    "  if (atomic_load(&p->sleeping_workers) > 0) {\n"
    "    pthread_mutex_lock(&p->mu);\n"
    "    pthread_cond_broadcast(&p->wake);\n"
    "    pthread_mutex_unlock(&p->mu);\n"
    "  }\n"
    "  P_pool_run_chunks(p, gen);\n"
    "  for (int i = 0; atomic_load(&p->chunks_done) < p->n_chunks && i < P_POOL_CALLER_SPIN; i++) P_pool_relax();\n"
    "  if (atomic_load(&p->chunks_done) < p->n_chunks) {\n"
    "    pthread_mutex_lock(&p->mu);\n"
    "    atomic_store(&p->caller_sleeping, 1);\n"
    "    while (atomic_load(&p->chunks_done) < p->n_chunks) pthread_cond_wait(&p->done, &p->mu);\n"
    "    atomic_store(&p->caller_sleeping, 0);\n"
    "    pthread_mutex_unlock(&p->mu);\n"
    "  }\n"
    "  atomic_store(&p->busy, 0);\n"
    "}\n\n"
    "static void P_context_env(P_context *ctx, loom_kernel_env *env) {\n"
    "  env->parallel_for = P_parallel_for;\n"
    "  env->pool = P_pool_of(ctx);\n"
    "  env->num_threads = U_THREADS;\n"
    "}\n\n"
    "void P_context_destroy(P_context *ctx) {\n"
    "  if (!ctx) return;\n"
    "  struct P_pool *p = P_pool_of(ctx);\n"
    "  pthread_mutex_lock(&p->mu);\n"
    "  atomic_store(&p->stop, 1);\n"
    "  pthread_cond_broadcast(&p->wake);\n"
    "  pthread_mutex_unlock(&p->mu);\n"
    "  for (int i = 0; i < p->started; i++) pthread_join(p->workers[i], NULL);\n"
    "  p->started = 0;\n"
    "  pthread_mutex_destroy(&p->mu);\n"
    "  pthread_cond_destroy(&p->wake);\n"
    "  pthread_cond_destroy(&p->done);\n"
    "}\n\n"
    "int P_context_init(P_context *ctx) {\n"
    "  if (!ctx) return U_ERR_NULL;\n"
    "  memset(ctx, 0, sizeof *ctx);\n"
    "  struct P_pool *p = P_pool_of(ctx);\n"
    "  if (pthread_mutex_init(&p->mu, NULL) != 0) return U_ERR_THREADS;\n"
    "  if (pthread_cond_init(&p->wake, NULL) != 0) {\n"
    "    pthread_mutex_destroy(&p->mu);\n"
    "    return U_ERR_THREADS;\n"
    "  }\n"
    "  if (pthread_cond_init(&p->done, NULL) != 0) {\n"
    "    pthread_cond_destroy(&p->wake);\n"
    "    pthread_mutex_destroy(&p->mu);\n"
    "    return U_ERR_THREADS;\n"
    "  }\n"
    "  atomic_init(&p->generation, 0);\n"
    "  atomic_init(&p->sleeping_workers, 0);\n"
    "  atomic_init(&p->caller_sleeping, 0);\n"
    "  atomic_init(&p->stop, 0);\n"
    "  atomic_init(&p->busy, 0);\n"
    "  atomic_init(&p->chunks_done, 0);\n"
    "  atomic_init(&p->ticket, 0);\n"
    "  for (int i = 0; i < P_POOL_WORKERS; i++) {\n"
    "    if (pthread_create(&p->workers[i], NULL, P_pool_worker, p) != 0) {\n"
    "      P_context_destroy(ctx);\n"
    "      return U_ERR_THREADS;\n"
    "    }\n"
    "    p->started++;\n"
    "  }\n"
    "  return U_OK;\n"
    "}\n";

/* k_pool with P_ and U_ (at the start of an identifier) as the prefix. */
static void put_prefixed(StrBuf *o, const char *text, const ExportModel *m) {
  for (const char *p = text; *p; p++) {
    bool start = p == text || !((p[-1] >= 'a' && p[-1] <= 'z') || (p[-1] >= 'A' && p[-1] <= 'Z') ||
                               (p[-1] >= '0' && p[-1] <= '9') || p[-1] == '_');
    if (start && (p[0] == 'P' || p[0] == 'U') && p[1] == '_') {
      sb_puts(o, p[0] == 'P' ? m->prefix : m->upper);
      sb_putc(o, '_');
      p++;
    } else {
      sb_putc(o, *p);
    }
  }
}

void export_threads_source(const ExportModel *m, StrBuf *o) {
  sb_printf(o,
            "\n/* ---- the worker pool of %s_context (%s.h; Loom's runtime pool, in the\n"
            " * caller's memory) ---- */\n"
            "#include <pthread.h>\n#include <stdatomic.h>\n\n"
            "enum { %s_POOL_WORKERS = %d, %s_POOL_CHUNKS_PER_THREAD = 4, %s_POOL_WORKER_SPIN = 4096,\n"
            "       %s_POOL_CALLER_SPIN = 1 << 14 };\n\n",
            m->prefix, m->prefix, m->prefix, m->threads - 1, m->prefix, m->prefix, m->prefix);
  put_prefixed(o, k_pool, m);
}

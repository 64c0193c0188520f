/* For the default-schedule tests: a compute definition and its scheduled
 * form built into one module and run on the same random inputs. */
#ifndef LOOM_TEST_SCHEDULE_RUN_H
#define LOOM_TEST_SCHEDULE_RUN_H

#include "driver/driver.h"
#include "runtime/threadpool.h"
#include "tir/text.h"

#include <string.h>

typedef struct ScheduleRun {
  DriverModule *module; /* function 0: "reference", 1: "scheduled" */
  DriverTensors ref, sched;
  const float *want, *got; /* the last (output) tensor of each */
  size_t count;
} ScheduleRun;

static inline PrimFunc *schedule_run_renamed(Arena *a, const PrimFunc *f, const char *name) {
  PrimFunc *g = arena_memdup(a, f, sizeof *f);
  g->name = arena_strdup(a, name);
  return g;
}

/* Builds both (functions allocated in a); inputs from data_seed; the
 * scheduled one runs on a pool of `threads`. */
static inline void schedule_run(Arena *a, const PrimFunc *reference, const PrimFunc *scheduled, int threads,
                                uint64_t data_seed, ScheduleRun *r) {
  LoomError err = {0};
  const PrimFunc *funcs[2] = {schedule_run_renamed(a, reference, "reference"),
                              schedule_run_renamed(a, scheduled, "scheduled")};
  if (driver_build(a, funcs, 2, NULL, &r->module, &err)) fail_msg("build: %s", err.msg);
  Kernel kr, ks;
  assert_int_equal(driver_get_kernel(r->module, "reference", &kr, &err), LOOM_OK);
  assert_int_equal(driver_get_kernel(r->module, "scheduled", &ks, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(driver_lowered(r->module, 0), data_seed, &r->ref, &err), LOOM_OK);
  assert_int_equal(driver_tensors_alloc(driver_lowered(r->module, 1), data_seed, &r->sched, &err), LOOM_OK);
  ThreadPool *pool = NULL;
  assert_int_equal(threadpool_create(threads, &pool, &err), LOOM_OK);
  if (kernel_call(&kr, r->ref.ptrs, r->ref.n, NULL, NULL, &err)) fail_msg("reference: %s", err.msg);
  if (kernel_call(&ks, r->sched.ptrs, r->sched.n, pool, NULL, &err)) fail_msg("scheduled: %s", err.msg);
  threadpool_destroy(pool);
  int out = r->ref.n - 1;
  r->want = r->ref.tensors[out].data;
  r->got = r->sched.tensors[out].data;
  r->count = r->ref.bytes[out] / sizeof(float);
}

/* The caches of a buffer (allocations whose name starts with `prefix`:
 * "C_" for "C_local") in a lowered function: how many there are, how many
 * are register tiles (at most max_tile bytes), the largest one inside a
 * loop, and how many outside loops are bigger than a tile and how big the
 * largest of those is. */
typedef struct AllocBytes {
  const char *prefix; /* the block's caches: "<block>_..." */
  const char *pad;    /* except its padding stage, "<block>_pad" */
  int64_t max_tile, count, tiles, max_in_loop, big_outside, max_outside;
} AllocBytes;

static inline void schedule_alloc_bytes(const Stmt *s, bool in_loop, AllocBytes *out) {
  if (!s) return;
  switch (s->kind) {
    case STMT_FOR: {
      /* A blocked accumulator per thread's band sits under the band loop
       * only (parallel, or one band): that is still outside the tiling. */
      int64_t ext;
      bool band = s->loop.kind == FOR_PARALLEL || (expr_as_int(s->loop.extent, &ext) && ext == 1);
      schedule_alloc_bytes(s->loop.body, in_loop || !band, out);
      return;
    }
    case STMT_IF:
      schedule_alloc_bytes(s->if_.then_s, in_loop, out);
      schedule_alloc_bytes(s->if_.else_s, in_loop, out);
      return;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) schedule_alloc_bytes(s->seq.stmts[i], in_loop, out);
      return;
    case STMT_ALLOCATE: {
      int64_t bytes = 4, e;
      for (int d = 0; d < s->alloc.buffer->ndim; d++) bytes *= expr_as_int(s->alloc.buffer->shape[d], &e) ? e : 1 << 20;
      const char *name = s->alloc.buffer->name;
      if (!strncmp(name, out->prefix, strlen(out->prefix)) && strcmp(name, out->pad)) {
        out->count++;
        out->tiles += bytes <= out->max_tile;
        if (in_loop && bytes > out->max_in_loop) out->max_in_loop = bytes;
        if (!in_loop && bytes > out->max_tile) {
          out->big_outside++;
          if (bytes > out->max_outside) out->max_outside = bytes;
        }
      }
      schedule_alloc_bytes(s->alloc.body, in_loop, out);
      return;
    }
    default: return;
  }
}

/* The caches of the block `block` writes (NULL: the output, f's last
 * parameter) in `lowered` must be register tiles of at most max_tile_bytes,
 * plus at most one accumulator of the whole output (or of a thread's band
 * of it) outside the tile loops (input-channel or K blocking): a tile's
 * cache left bigger (a partial tile's guard, a tail sharing the main
 * loop's cache) fails. */
static inline void schedule_check_register_tiles(Arena *a, const PrimFunc *f, const char *block, const PrimFunc *lowered,
                                                 int64_t max_tile_bytes) {
  const Buffer *out = f->params[f->n_params - 1];
  int64_t out_bytes = 4, e;
  for (int d = 0; d < out->ndim; d++) out_bytes *= expr_as_int(out->shape[d], &e) ? e : 1;
  const char *b = block ? block : out->name;
  AllocBytes ab = {arena_printf(a, "%s_", b), arena_printf(a, "%s_pad", b), max_tile_bytes, 0, 0, 0, 0, 0};
  schedule_alloc_bytes(lowered->body, false, &ab);
  /* Two accumulators: the bands' loop and the partial band partitioning split off it. */
  if (ab.tiles == 0 || ab.max_in_loop > max_tile_bytes || ab.big_outside > 2 || ab.max_outside > out_bytes)
    fail_msg("a register tile left in memory (%lld tiles, largest in a loop %lld bytes, %lld caches outside loops "
             "up to %lld bytes):\n%s",
             (long long)ab.tiles, (long long)ab.max_in_loop, (long long)ab.big_outside, (long long)ab.max_outside,
             tir_print_func(lowered));
}

static inline void schedule_run_free(ScheduleRun *r) {
  driver_tensors_free(&r->ref);
  driver_tensors_free(&r->sched);
  driver_module_free(r->module);
}

#endif

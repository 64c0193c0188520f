/* Small pieces shared by the default schedules. */
#include "topi/topi_schedule.h"

#include "runtime/threadpool.h"
#include "tir/transform/transform.h"

#include <string.h>

#include <stdio.h>
#include <stdlib.h>

int topi_vector_registers(const Target *t) { return t->vector_registers > 0 ? t->vector_registers : 16; }

int topi_registers_per_vector(const Target *t, int64_t lanes) {
  int64_t bits = lanes * 32, reg = t->vector_bits > 0 ? t->vector_bits : 128;
  return bits <= reg ? 1 : (int)((bits + reg - 1) / reg);
}

int topi_gemv_accumulators(const Target *t) {
  int lanes = target_lanes(t, DT_F32);
  int units = t->flops_per_cycle / (2 * lanes), latency = t->fma_latency > 0 ? t->fma_latency : 1;
  int acc = latency * (units > 1 ? units : 1), room = topi_vector_registers(t) - 2;
  return acc < room ? acc : room > 1 ? room : 1;
}

int topi_gemv_panel_vectors(const Target *t) {
  int vecs = topi_gemv_accumulators(t) / GEMV_PANEL_STREAMS;
  return vecs > 2 ? vecs : 2;
}

int topi_gemv_streams(const Target *t, int64_t panels, int64_t panel_vecs, int num_threads) {
  int64_t room = (topi_vector_registers(t) - 2) / (panel_vecs > 1 ? panel_vecs : 1), threads = num_threads > 1 ? num_threads : 1;
  int streams = 1;
  for (int s = 2; s <= GEMV_MAX_STREAMS && s <= room; s *= 2)
    if (panels % s == 0 && panels / s % threads == 0) streams = s;
  return streams;
}

bool topi_parallel_pays(const Target *t, double flops, double bytes, int num_threads) {
  if (num_threads < 2) return false;
  double ghz = t->ghz > 0 ? t->ghz : 1, fpc = t->flops_per_cycle > 0 ? t->flops_per_cycle : 1;
  double bpc = t->l2_bytes_per_cycle > 0 ? t->l2_bytes_per_cycle : 1;
  double cycles = flops / fpc > bytes / bpc ? flops / fpc : bytes / bpc;
  return cycles / ghz * (1.0 - 1.0 / num_threads) > THREADPOOL_FORK_JOIN_NS;
}

bool topi_register_tile_fits(const Target *t, int64_t rows, int64_t vecs, int regs_per_vec) {
  return (rows * vecs + vecs) * regs_per_vec + 1 <= topi_vector_registers(t);
}

void topi_probs_favoring(double *probs, int n, int best, double p_best, const bool *allowed) {
  int others = 0;
  for (int i = 0; i < n; i++) others += i != best && (!allowed || allowed[i]);
  for (int i = 0; i < n; i++)
    probs[i] = i == best ? (others ? p_best : 1.0) : (!allowed || allowed[i]) ? (1.0 - p_best) / others : 0.0;
}

int64_t topi_loop_extent(const Schedule *s, SchRV loop) {
  const Stmt *l = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, loop));
  int64_t e;
  return l && expr_as_int(l->loop.extent, &e) ? e : -1;
}

void topi_fold_epilogue(Schedule *s, const char *epilogue) {
  if (!epilogue) return;
  SchRV e = sch_get_block(s, epilogue);
  if (e >= 0 && sch_reverse_compute_inline(s, e) != LOOM_OK) topi_schedule_note(s, "fold epilogue");
}

void topi_schedule_note(const Schedule *s, const char *step) {
  const char *debug = getenv("LOOM_DEBUG_SCHEDULE");
  if (debug && *debug && strcmp(debug, "0") != 0)
    fprintf(stderr, "loom: schedule of %s: %s refused: %s\n", sch_func(s)->name, step, sch_error(s));
}

void topi_unroll_tile_loops(Schedule *s, SchRV block, SchRV outer) {
  SchRV l[16];
  int n = sch_get_loops(s, block, l, 16);
  const Expr *ov = sch_loop_var(s, outer);
  int start = -1;
  for (int i = 0; i < n && i < 16; i++)
    if (sch_loop_var(s, l[i]) == ov) start = i + 1;
  if (start < 0) return;
  for (int i = start; i < n - 1 && i < 16; i++)
    if (sch_unroll(s, l[i]) != LOOM_OK) topi_schedule_note(s, "unroll tile loop");
}

loom_status topi_unroll_within_budget(Schedule *s, const SchRV *loops, int n) {
  if (n < 1) return LOOM_OK;
  const Stmt *inner = stmt_find_loop(sch_func(s)->body, sch_loop_var(s, loops[n - 1]));
  if (!inner) return LOOM_ERR_SCHEDULE;
  int64_t size = tir_code_size(inner->loop.body);
  for (int i = n - 1; i >= 0; i--) {
    int64_t ext = topi_loop_extent(s, loops[i]);
    if (i < n - 1 && (ext < 1 || tir_unroll_copies(ext, size) < ext)) return LOOM_OK;
    size = ext > 0 && size <= INT64_MAX / ext ? size * ext : INT64_MAX;
    if (sch_unroll(s, loops[i])) return LOOM_ERR_SCHEDULE;
  }
  return LOOM_OK;
}

loom_status topi_schedule_copy_stage(Schedule *s, SchRV blk, int num_threads) {
  SchRV l[8];
  int n = sch_get_loops(s, blk, l, 8);
  if (n < 1 || sch_vectorize(s, l[n - 1])) return LOOM_ERR_SCHEDULE;
  if (num_threads > 1 && n >= 3) {
    SchRV f = sch_fuse(s, l, n - 2);
    if (f < 0 || sch_parallel(s, f)) return LOOM_ERR_SCHEDULE;
  }
  return LOOM_OK;
}

SchRV topi_find_pad(Schedule *s, const char *block) {
  Arena *a = sch_arena(s);
  size_t n = strlen(block);
  const char *base = n > 5 && !strcmp(block + n - 5, "_conv") ? arena_strndup(a, block, n - 5) : block;
  const char *pad = arena_printf(a, "%s_pad", base);
  return stmt_find_block(sch_func(s)->body, pad) ? sch_get_block(s, pad) : -1;
}

loom_status topi_tile_accumulator(Schedule *s, SchRV block, const char *epilogue, SchRV tile_loop, SchRV reduce_loop,
                                  SchRV *init, SchRV *copy) {
  *copy = sch_cache_write(s, block, 0, SCOPE_LOCAL);
  if (*copy < 0) return LOOM_ERR_SCHEDULE;
  topi_fold_epilogue(s, epilogue);
  if (sch_reverse_compute_at(s, *copy, tile_loop)) return LOOM_ERR_SCHEDULE;
  *init = sch_decompose_reduction(s, block, reduce_loop);
  return *init < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK;
}

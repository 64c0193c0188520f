/* Scratchpad schedules (topi_schedule_scratchpad; docs/schedule.md
 * "Scratchpad targets") on a target with a local memory: a matmul and a
 * conv compute what their unscheduled definitions compute, both compiled
 * (the DMA hooks' memcpy defaults) and on the reference interpreter, whose
 * DMA counter must show the calls and bytes the sampled tiling implies;
 * the local buffers fit the declared size, with and without double
 * buffering (then every get is an asynchronous start and its wait, which
 * the interpreter runs as the slowest engine would: the copy at the wait,
 * the destination poisoned from the start). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver/driver.h"
#include "fixtures/op_funcs.h"
#include "schedule_run.h"
#include "tir/interp.h"
#include "tir/text.h"
#include "tir/transform/transform.h"
#include "topi/topi_schedule.h"

static Target scratchpad_target(int64_t local_mem, bool double_buffer) {
  Target t = target_host();
  t.local_mem_bytes = local_mem;
  t.dma_double_buffer = double_buffer;
  return t;
}

/* The tiles the schedule sampled, one per iterator in loop order: the
 * inner factor of each sample_perfect_tile in the trace. */
static int tiles_of(const Schedule *s, int64_t *tiles, int max) {
  char *text = trace_to_text(sch_trace(s));
  int n = 0;
  for (const char *p = text; (p = strstr(p, "sample_perfect_tile")) && n < max; p++) {
    const char *arrow = strstr(p, "-> [");
    long long outer, inner;
    if (!arrow || sscanf(arrow, "-> [%lld, %lld]", &outer, &inner) != 2) fail_msg("trace: %s", text);
    tiles[n++] = inner;
  }
  free(text);
  return n;
}

static bool count_dma(Visitor *v, const Stmt *s) {
  if (s->kind == STMT_DMA) ++*(int *)v->user;
  return true;
}

/* Runs the unscheduled f and the lowered scheduled g on the reference
 * interpreter over the same random inputs; the outputs (last parameter)
 * agree within 1e-4 of the largest; g's DMA traffic in *stats. */
static void interpret_both(const PrimFunc *f, const PrimFunc *g, TirDmaStats *stats) {
  int n = f->n_params;
  void *xa[8], *xb[8];
  int64_t count[8];
  assert_true(n <= 8);
  uint64_t seed = 5;
  for (int i = 0; i < n; i++) {
    count[i] = tir_buffer_elem_count(f->params[i]);
    xa[i] = calloc((size_t)count[i], sizeof(float));
    xb[i] = calloc((size_t)count[i], sizeof(float));
    for (int64_t k = 0; i < n - 1 && k < count[i]; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      ((float *)xa[i])[k] = ((float *)xb[i])[k] = (float)((seed >> 33) % 2001) / 1000.0f - 1.0f;
    }
  }
  LoomError err = {0};
  if (tir_interpret(f, xa, &err)) fail_msg("reference: %s", err.msg);
  TirInterpOptions opt = tir_interp_default_options();
  memset(stats, 0, sizeof *stats);
  opt.dma_stats = stats;
  if (tir_interpret_opts(g, xb, &opt, &err)) fail_msg("scheduled: %s", err.msg);
  const float *want = xa[n - 1], *got = xb[n - 1];
  double scale = 1.0;
  for (int64_t k = 0; k < count[n - 1]; k++) scale = fmax(scale, fabs(want[k]));
  for (int64_t k = 0; k < count[n - 1]; k++)
    if (fabs((double)want[k] - got[k]) > 1e-4 * scale) fail_msg("element %lld: %g, expected %g", (long long)k, got[k], want[k]);
  for (int i = 0; i < n; i++) free(xa[i]), free(xb[i]);
}

/* Compiled (memcpy DMA hooks) against the unscheduled definition. */
static void compiled_matches(Arena *a, const PrimFunc *f, const PrimFunc *scheduled) {
  ScheduleRun r = {0};
  schedule_run(a, f, scheduled, 1, 17, &r);
  double scale = 1.0;
  for (size_t i = 0; i < r.count; i++) scale = fmax(scale, fabs(r.want[i]));
  for (size_t i = 0; i < r.count; i++)
    if (fabs((double)r.want[i] - r.got[i]) > 1e-4 * scale)
      fail_msg("compiled, element %zu: %g, expected %g", i, r.got[i], r.want[i]);
  schedule_run_free(&r);
}

/* On a failure: f lowered by every step but the last (the verifier). */
static char *lowered_text(Arena *a, const PrimFunc *f) {
  LoomError err = {0};
  LowerOptions opt = lower_options_default();
  for (int i = 0; f && tir_lower_step(i + 1, NULL); i++) {
    const char *option;
    const TirPass *p = tir_lower_step(i, &option);
    bool local_mem = option && !strncmp(option, "local_mem", 9);
    if ((!local_mem || f->local_mem_bytes > 0) && (!option || local_mem || strcmp(option, "none")))
      f = p->run(a, f, &opt, &err);
  }
  return f ? tir_print_func(f) : NULL;
}

static const PrimFunc *schedule_and_lower(Arena *a, const PrimFunc *f, const char *block, const Target *t,
                                          Schedule **out) {
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  if (topi_schedule_scratchpad(s, block, t)) fail_msg("scratchpad schedule refused: %s", sch_error(s));
  sch_set_local_mem(s, t->local_mem_bytes, t->dma_double_buffer);
  LoomError err = {0};
  const PrimFunc *low = tir_lower(a, sch_func(s), NULL, &err);
  if (!low) fail_msg("lowering (with the scratchpad verifier): %s\n%s", err.msg, lowered_text(a, sch_func(s)));
  *out = s;
  return low;
}

static void check_matmul(int64_t M, int64_t N, int64_t K, int64_t local_mem, bool double_buffer) {
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, M, N, K, DT_F32, &err);
  assert_non_null(f);
  Target t = scratchpad_target(local_mem, double_buffer);
  Schedule *s;
  const PrimFunc *low = schedule_and_lower(a, f, "C", &t, &s);
  int64_t tile[3];
  assert_int_equal(tiles_of(s, tile, 3), 3);
  int64_t tm = tile[0], tn = tile[1], tk = tile[2];
  /* The tiles fit: A and B tiles (twice when double-buffered) and C's. */
  int64_t copies = double_buffer ? 2 : 1;
  assert_true(4 * (copies * (tm * tk + tk * tn) + tm * tn) <= local_mem);
  assert_true(M % tm == 0 && N % tn == 0 && K % tk == 0);
  /* One DMA statement per staged tile: A, B in, C out. */
  int dmas = 0;
  Visitor v = {count_dma, NULL, &dmas};
  visit_stmt(&v, low->body);
  /* Double-buffered over the K tiles (when there are several): each get
   * also in the prologue, before the loop. */
  assert_int_equal(dmas, double_buffer && K / tk >= 2 ? 5 : 3);

  TirDmaStats st;
  interpret_both(f, low, &st);
  int64_t tiles = (M / tm) * (N / tn) * (K / tk);
  assert_int_equal(st.gets, 2 * tiles);
  assert_int_equal(st.get_bytes, 4 * tiles * (tm * tk + tk * tn));
  /* Double-buffered, every get is a start (a ticket per tile and slot)
   * and its wait; the interpreter runs each copy at its wait. */
  bool async = double_buffer && K / tk >= 2;
  assert_int_equal(low->dma_tickets, async ? 4 : 0);
  assert_int_equal(st.waits, async ? 2 * tiles : 0);
  assert_int_equal(st.puts, (M / tm) * (N / tn));
  assert_int_equal(st.put_bytes, 4 * M * N);
  compiled_matches(a, f, sch_func(s));
  sch_free(s);
  arena_free(a);
}

static void test_matmul(void **state) {
  (void)state;
  check_matmul(64, 48, 32, 4096, false);
  check_matmul(30, 50, 17, 2048, false); /* no power-of-two tiles */
  check_matmul(128, 128, 128, 64 * 1024, false);
}

static void test_matmul_double_buffered(void **state) {
  (void)state;
  check_matmul(64, 48, 32, 4096, true);
  check_matmul(128, 128, 128, 64 * 1024, true);
}

static void check_conv(const OpfuncConv2d *p, int64_t local_mem, bool double_buffer) {
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_conv2d_nchwc(a, p, 8, 8, &err);
  if (!f) fail_msg("%s", err.msg);
  Target t = scratchpad_target(local_mem, double_buffer);
  Schedule *s;
  const PrimFunc *low = schedule_and_lower(a, f, "conv2d_NCHWc", &t, &s);
  TirDmaStats st;
  interpret_both(f, low, &st);
  int64_t oh = opfunc_conv_out_extent(p->H, p->R, p->stride, p->pad), ow = opfunc_conv_out_extent(p->W, p->S, p->stride, p->pad);
  assert_true(st.gets > 0 && st.puts > 0);
  assert_int_equal(st.waits, double_buffer ? st.gets : 0); /* double-buffered: every get started, then waited for */
  assert_int_equal(st.put_bytes, 4 * p->N * p->K * oh * ow); /* every output element leaves local memory once */
  assert_true(st.get_bytes >= 4 * p->K * p->C * p->R * p->S); /* every weight comes in at least once */
  compiled_matches(a, f, sch_func(s));
  sch_free(s);
  arena_free(a);
}

static void test_conv(void **state) {
  (void)state;
  static const OpfuncConv2d convs[] = {
      {1, 16, 14, 14, 32, 3, 3, 1, 1}, /* 3x3 same padding: the padded input staged */
      {1, 16, 15, 15, 16, 3, 3, 2, 1}, /* stride 2, odd size */
      {1, 32, 7, 7, 16, 1, 1, 1, 0},   /* 1x1, no pad stage */
  };
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
    check_conv(&convs[i], 16 * 1024, false);
    check_conv(&convs[i], 16 * 1024, true);
  }
}

/* A depthwise conv and a max pool (the depthwise_conv2d_nchwc and pool2d
 * rules stage through local memory too), sync and double-buffered: the
 * results, every output element out once, every get waited for. */
static void check_staged(PrimFunc *f, const char *block, int64_t out_elems, bool double_buffer) {
  Arena *a = arena_new();
  Target t = scratchpad_target(4096, double_buffer);
  Schedule *s;
  const PrimFunc *low = schedule_and_lower(a, f, block, &t, &s);
  TirDmaStats st;
  interpret_both(f, low, &st);
  assert_true(st.gets > 0);
  assert_int_equal(st.put_bytes, 4 * out_elems);
  assert_int_equal(st.waits, low->dma_tickets > 0 ? st.gets : 0);
  assert_true(tir_local_plan_bytes(low) > 0 && tir_local_plan_bytes(low) <= 4096);
  compiled_matches(a, f, sch_func(s));
  sch_free(s);
  arena_free(a);
}

static void test_depthwise_and_pool(void **state) {
  (void)state;
  for (int db = 0; db < 2; db++) {
    Arena *a = arena_new();
    LoomError err = {0};
    OpfuncConv2d dw = {1, 16, 14, 14, 16, 3, 3, 1, 1};
    PrimFunc *f = opfunc_depthwise_conv2d_nchw(a, &dw, &err);
    if (!f) fail_msg("%s", err.msg);
    check_staged(f, "depthwise_conv2d", 16 * 14 * 14, db);
    PrimFunc *g = opfunc_pool2d(a, TOPI_POOL_MAX, 1, 16, 12, 12, 2, 2, 0, false, &err);
    if (!g) fail_msg("%s", err.msg);
    check_staged(g, "pool", 16 * 6 * 6, db);
    arena_free(a);
  }
}

/* Too small for even a one-element tile of each: refused, nothing fits. */
static void test_too_small(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = opfunc_matmul(a, 8, 8, 8, DT_F32, &err);
  Target t = scratchpad_target(8, false);
  Schedule *s = sch_create(f, DECIDE_DEFAULT, 0);
  assert_int_equal(topi_schedule_scratchpad(s, "C", &t), LOOM_ERR_SCHEDULE);
  /* Marked anyway (what the group scheduler does), lowering reports it. */
  sch_set_local_mem(s, 8, false);
  assert_null(tir_lower(a, sch_func(s), NULL, &err));
  assert_non_null(strstr(err.msg, "stages nothing"));
  sch_free(s);
  arena_free(a);
}

/* Random tile decisions (a tuner's) stay within the local memory. */
static void test_random_decisions_fit(void **state) {
  (void)state;
  for (uint64_t seed = 1; seed <= 6; seed++) {
    Arena *a = arena_new();
    LoomError err = {0};
    PrimFunc *f = opfunc_matmul(a, 48, 40, 36, DT_F32, &err);
    Target t = scratchpad_target(3000, seed % 2 == 0);
    Schedule *s = sch_create(f, DECIDE_RANDOM, seed);
    if (topi_schedule_scratchpad(s, "C", &t)) fail_msg("refused: %s", sch_error(s));
    sch_set_local_mem(s, t.local_mem_bytes, t.dma_double_buffer);
    const PrimFunc *low = tir_lower(a, sch_func(s), NULL, &err);
    if (!low) fail_msg("seed %llu: %s\n%s", (unsigned long long)seed, err.msg, lowered_text(a, sch_func(s)));
    TirDmaStats st;
    interpret_both(f, low, &st);
    sch_free(s);
    arena_free(a);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_matmul_double_buffered),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_depthwise_and_pool),
      cmocka_unit_test(test_too_small),
      cmocka_unit_test(test_random_decisions_fit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Memory planning: random interval sets checked by brute force (no two
 * buffers live at once overlap unless one is the other's in-place
 * successor), alignment, arena <= sum, reuse along a chain, in-place
 * marking, and a whole conv network through fold_bn, layout and fusion. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/passes.h"
#include "unit/graph/graph_build.h"

static int64_t aligned(int64_t x) { return (x + GRAPH_MEM_ALIGN - 1) / GRAPH_MEM_ALIGN * GRAPH_MEM_ALIGN; }

/* Brute-force validity of a plan of n intervals. */
static void check_intervals(int n, const MemInterval *iv, const int64_t *off, const bool *inplace, int64_t arena) {
  for (int i = 0; i < n; i++) {
    if (iv[i].size <= 0) continue;
    assert_int_equal(off[i] % GRAPH_MEM_ALIGN, 0);
    assert_true(off[i] >= 0 && off[i] + iv[i].size <= arena);
    if (inplace[i]) {
      int j = iv[i].inplace_of;
      assert_true(j >= 0 && iv[j].end == iv[i].start);
      assert_int_equal(off[i], off[j]);
    }
    for (int j = 0; j < i; j++) {
      if (iv[j].size <= 0) continue;
      bool live_together = iv[i].start <= iv[j].end && iv[j].start <= iv[i].end;
      bool overlap = off[i] < off[j] + iv[j].size && off[j] < off[i] + iv[i].size;
      if (!live_together || !overlap) continue;
      /* Allowed only for an in-place handover at the meeting kernel. */
      bool handover = (inplace[i] && iv[i].inplace_of == j) || (inplace[j] && iv[j].inplace_of == i);
      if (!handover) fail_msg("intervals %d [%d, %d] and %d [%d, %d] overlap in memory", i, iv[i].start, iv[i].end, j,
                              iv[j].start, iv[j].end);
    }
  }
}

static void test_random_intervals(void **state) {
  (void)state;
  for (uint64_t trial = 0; trial < 300; trial++) {
    uint64_t seed = trial + 1;
    int n = 1 + (int)((gb_rand(&seed) + 1) * 20);
    int horizon = 2 + (int)((gb_rand(&seed) + 1) * 15);
    MemInterval iv[64];
    int64_t off[64], sum = 0;
    bool inplace[64];
    for (int i = 0; i < n; i++) {
      int s = (int)((gb_rand(&seed) + 1) / 2 * horizon);
      int len = (int)((gb_rand(&seed) + 1) / 2 * 5);
      int64_t size = (trial % 5 == 0) ? 64 * (1 + i % 3) : 1 + (int64_t)((gb_rand(&seed) + 1) * 3000);
      iv[i] = (MemInterval){size, s, s + len, -1};
      /* Hint: any earlier interval ending where this one starts, same size. */
      for (int j = 0; j < i; j++)
        if (iv[j].end == s && iv[j].start < s && aligned(iv[j].size) == aligned(size) && (gb_rand(&seed) > 0)) iv[i].inplace_of = j;
      sum += aligned(size);
    }
    int64_t arena = mem_plan_intervals(n, iv, off, inplace);
    assert_true(arena >= 0 && arena <= sum);
    check_intervals(n, iv, off, inplace, arena);
    /* A lower bound: the largest total live at any one time (no in-place). */
    bool any_inplace = false;
    for (int i = 0; i < n; i++) any_inplace |= inplace[i];
    if (!any_inplace) {
      for (int t = 0; t <= horizon + 5; t++) {
        int64_t live = 0;
        for (int i = 0; i < n; i++)
          if (iv[i].start <= t && t <= iv[i].end) live += aligned(iv[i].size);
        assert_true(arena >= live);
      }
    }
  }
}

/* A chain a -> b -> c -> d of equal sizes needs two buffers. */
static void test_chain_reuses(void **state) {
  (void)state;
  MemInterval iv[5];
  for (int i = 0; i < 5; i++) iv[i] = (MemInterval){1000, i, i + 1, -1};
  int64_t off[5];
  bool inplace[5];
  int64_t arena = mem_plan_intervals(5, iv, off, inplace);
  assert_int_equal(arena, 2 * aligned(1000));
  check_intervals(5, iv, off, inplace, arena);
  /* In place along the chain: one buffer. */
  for (int i = 1; i < 5; i++) iv[i].inplace_of = i - 1;
  arena = mem_plan_intervals(5, iv, off, inplace);
  assert_int_equal(arena, aligned(1000));
  for (int i = 1; i < 5; i++) assert_true(inplace[i]);
  check_intervals(5, iv, off, inplace, arena);
}

static void plan_graph(Graph *g, Arena *a, GraphFusionPlan *fp, GraphMemoryPlan *mp) {
  LoomError err = {0};
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  if (graph_pass_fuse(g, NULL, a, fp, &err)) fail_msg("%s", err.msg);
  if (graph_plan_memory(g, fp, a, mp, &err)) fail_msg("%s", err.msg);
}

/* Group-level brute force: values written or read by one kernel, or live
 * across it, never overlap unless marked in place. */
static void check_graph_plan(const Graph *g, const GraphFusionPlan *fp, const GraphMemoryPlan *mp) {
  int64_t sum = 0;
  for (int v = 0; v < g->nvalues; v++) {
    if (mp->offset[v] < 0) continue;
    assert_null(g->values[v].constant);
    for (int k = 0; k < g->noutputs; k++) assert_true(g->outputs[k] != v);
    sum += mp->size[v];
    assert_true(mp->offset[v] + mp->size[v] <= mp->arena_size);
  }
  assert_int_equal(sum, mp->intermediate_bytes);
  assert_true(mp->arena_size <= mp->intermediate_bytes + GRAPH_MEM_ALIGN * g->nvalues);
  int *first = malloc(sizeof(int) * (size_t)g->nvalues), *last = malloc(sizeof(int) * (size_t)g->nvalues);
  for (int v = 0; v < g->nvalues; v++) first[v] = last[v] = -1;
  for (int gi = 0; gi < fp->ngroups; gi++) {
    for (int k = 0; k < fp->groups[gi].noutputs; k++) first[fp->groups[gi].outputs[k]] = gi;
    for (int k = 0; k < fp->groups[gi].ninputs; k++) last[fp->groups[gi].inputs[k]] = gi;
  }
  for (int v = 0; v < g->nvalues; v++) {
    if (mp->offset[v] < 0) continue;
    assert_true(first[v] >= 0 && last[v] > first[v]);
    for (int u = 0; u < v; u++) {
      if (mp->offset[u] < 0) continue;
      bool live = first[u] <= last[v] && first[v] <= last[u];
      bool overlap = mp->offset[u] < mp->offset[v] + mp->size[v] && mp->offset[v] < mp->offset[u] + mp->size[u];
      if (live && overlap) assert_true(mp->inplace_of[v] == u || mp->inplace_of[u] == v);
    }
  }
  free(first);
  free(last);
}

/* softmax chains: opaque kernels, ping-pong between two buffers; a relu
 * between two softmaxes runs in place. */
static void test_graph_chain_and_inplace(void **state) {
  (void)state;
  Graph *g = graph_new("chain");
  int64_t d[2] = {4, 16};
  ValueId v = gb_input(g, "x", 2, d);
  ValueId s1 = gb_unary(g, GRAPH_OP_SOFTMAX, "s1", v);
  ValueId s2 = gb_unary(g, GRAPH_OP_SOFTMAX, "s2", s1);
  ValueId s3 = gb_unary(g, GRAPH_OP_SOFTMAX, "s3", s2);
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", s3);
  ValueId s4 = gb_unary(g, GRAPH_OP_SOFTMAX, "s4", r);
  gb_output(g, s4);
  Arena *a = arena_new();
  GraphFusionPlan fp;
  GraphMemoryPlan mp;
  plan_graph(g, a, &fp, &mp);
  assert_int_equal(fp.ngroups, 5);
  check_graph_plan(g, &fp, &mp);
  assert_int_equal(mp.intermediate_bytes, 4 * 256);
  assert_int_equal(mp.arena_size, 2 * 256);
  assert_int_equal(mp.inplace_of[r], s3);
  assert_int_equal(mp.offset[r], mp.offset[s3]);
  assert_int_equal(mp.offset[s1], mp.offset[s3]);
  assert_int_equal(mp.offset[v], -1);
  assert_int_equal(mp.offset[s4], -1);
  (void)s2;
  arena_free(a);
  graph_free(g);
}

/* A conv whose fused epilogue adds a value of its own shape writes over
 * that value (read only at the index written); when the conv itself reads
 * the value, it must not. */
static void test_conv_residual_inplace(void **state) {
  (void)state;
  uint64_t seed = 9;
  Graph *g = graph_new("residual");
  int64_t xd[4] = {1, 8, 6, 6};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId a1 = gb_unary(g, GRAPH_OP_RELU, "a1", gb_conv(g, "c1", x, 8, 8, 3, 1, 1, true, &seed));
  ValueId c3 = gb_conv(g, "c3", a1, 8, 8, 3, 1, 1, true, &seed);
  ValueId side = gb_conv(g, "side", a1, 8, 8, 1, 1, 1, true, &seed);
  /* The add fuses into one of the two convs; its epilogue alone reads the
   * other conv's output (which dies there): in place. */
  ValueId r1 = gb_unary(g, GRAPH_OP_RELU, "r1", gb_binary(g, GRAPH_OP_ADD, "add1", c3, side));
  /* c4 reads r1 and adds it too: not in place. */
  ValueId r2 = gb_unary(g, GRAPH_OP_RELU, "r2", gb_binary(g, GRAPH_OP_ADD, "add2", gb_conv(g, "c4", r1, 8, 8, 3, 1, 1, true, &seed), r1));
  gb_output(g, gb_unary(g, GRAPH_OP_SOFTMAX, "out", r2));
  Arena *a = arena_new();
  GraphFusionPlan fp;
  GraphMemoryPlan mp;
  plan_graph(g, a, &fp, &mp);
  check_graph_plan(g, &fp, &mp);
  assert_int_equal(fp.ngroups, 5);
  ValueId over = mp.inplace_of[r1];
  assert_true(over == c3 || over == side);
  assert_int_equal(mp.offset[r1], mp.offset[over]);
  assert_int_equal(mp.inplace_of[r2], -1);
  assert_true(mp.offset[r2] != mp.offset[r1]);
  arena_free(a);
  graph_free(g);
}

/* A small conv network through the whole pipeline. */
static void test_network_pipeline(void **state) {
  (void)state;
  uint64_t seed = 5;
  Graph *g = graph_new("net");
  int64_t xd[4] = {1, 3, 16, 16};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_unary(g, GRAPH_OP_RELU, "stem_relu", gb_bn(g, "stem_bn", gb_conv(g, "stem", x, 3, 16, 3, 2, 1, false, &seed), 16, &seed));
  for (int b = 0; b < 3; b++) {
    char n1[16], n2[16], n3[16], n4[16], n5[16];
    snprintf(n1, sizeof n1, "b%d_c1", b);
    snprintf(n2, sizeof n2, "b%d_r1", b);
    snprintf(n3, sizeof n3, "b%d_c2", b);
    snprintf(n4, sizeof n4, "b%d_add", b);
    snprintf(n5, sizeof n5, "b%d_r2", b);
    ValueId t = gb_unary(g, GRAPH_OP_RELU, n2, gb_conv(g, n1, c, 16, 16, 3, 1, 1, true, &seed));
    t = gb_conv(g, n3, t, 16, 16, 3, 1, 1, true, &seed);
    c = gb_unary(g, GRAPH_OP_RELU, n5, gb_binary(g, GRAPH_OP_ADD, n4, t, c));
  }
  gb_output(g, gb_unary(g, GRAPH_OP_FLATTEN, "flat", gb_unary(g, GRAPH_OP_GLOBAL_AVERAGE_POOL, "gap", c)));
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_fold_batchnorm(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_layout_nchwc(g, NULL, &err), LOOM_OK);
  assert_int_equal(graph_pass_dce(g, &err), LOOM_OK);
  Arena *a = arena_new();
  GraphFusionPlan fp;
  GraphMemoryPlan mp;
  plan_graph(g, a, &fp, &mp);
  check_graph_plan(g, &fp, &mp);
  if (getenv("LOOM_TEST_VERBOSE")) {
    StrBuf sb;
    sb_init(&sb);
    graph_fusion_plan_print(g, &fp, &sb);
    printf("%s arena %lld of %lld bytes\n", sb_cstr(&sb), (long long)mp.arena_size, (long long)mp.intermediate_bytes);
    sb_free(&sb);
  }
  /* stem + 3 blocks x 2 convs, each one kernel, plus transform, gap, flatten. */
  assert_true(fp.ngroups <= 10);
  assert_true(mp.arena_size < mp.intermediate_bytes);
  arena_free(a);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_intervals),
      cmocka_unit_test(test_chain_reuses),
      cmocka_unit_test(test_graph_chain_and_inplace), cmocka_unit_test(test_conv_residual_inplace),
      cmocka_unit_test(test_network_pipeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

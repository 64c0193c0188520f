/* Operator fusion: TVM's rules on hand-built graphs (conv + bias + relu,
 * residual blocks, injective chains, reduction prologues, graph outputs,
 * opaque ops, the size limit), the printer, and invariants over random
 * DAGs checked by brute force. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "graph/passes.h"
#include "unit/graph/graph_build.h"

typedef struct Fused {
  Arena *a;
  GraphFusionPlan p;
} Fused;

static Fused fuse(Graph *g, const GraphFuseOptions *opts) {
  LoomError err = {0};
  if (graph_pass_infer(g, &err)) fail_msg("%s", err.msg);
  Fused f = {arena_new(), {0}};
  if (graph_pass_fuse(g, opts, f.a, &f.p, &err)) fail_msg("%s", err.msg);
  return f;
}

static int group_of_value(const Graph *g, const Fused *f, ValueId v) { return f->p.group_of[g->values[v].producer]; }

static bool has_value(const ValueId *vs, int n, ValueId v) {
  for (int k = 0; k < n; k++)
    if (vs[k] == v) return true;
  return false;
}

/* Invariants every plan must satisfy, checked by brute force. */
static void check_plan(const Graph *g, const GraphFusionPlan *p, int max_size) {
  int *seen = calloc((size_t)g->nnodes + 1, sizeof(int));
  for (int gi = 0; gi < p->ngroups; gi++) {
    const GraphFusedGroup *grp = &p->groups[gi];
    assert_true(grp->nnodes >= 1 && grp->nnodes <= max_size);
    bool anchor_in = false;
    int heavy = 0;
    for (int m = 0; m < grp->nnodes; m++) {
      int i = grp->nodes[m];
      if (m) assert_true(grp->nodes[m - 1] < i);
      assert_int_equal(p->group_of[i], gi);
      seen[i]++;
      anchor_in |= i == grp->anchor;
      GraphOpPattern pat = graph_op_info(g->nodes[i].op)->pattern;
      if (pat == GRAPH_PATTERN_OPAQUE) assert_int_equal(grp->nnodes, 1);
      heavy += pat == GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE;
    }
    assert_true(anchor_in);
    assert_true(heavy <= 1);
    /* Inputs come from graph inputs, constants or earlier groups; every
     * value a member reads from outside is listed. */
    for (int m = 0; m < grp->nnodes; m++) {
      const GraphNode *n = &g->nodes[grp->nodes[m]];
      for (int k = 0; k < n->ninputs; k++) {
        ValueId v = n->inputs[k];
        if (v < 0) continue;
        int pr = g->values[v].producer;
        if (pr >= 0 && p->group_of[pr] == gi) continue;
        assert_true(has_value(grp->inputs, grp->ninputs, v));
        if (pr >= 0) assert_true(p->group_of[pr] < gi);
      }
    }
    /* Outputs: exactly the member values read elsewhere or returned. */
    for (int m = 0; m < grp->nnodes; m++) {
      const GraphNode *n = &g->nodes[grp->nodes[m]];
      for (int k = 0; k < n->noutputs; k++) {
        ValueId v = n->outputs[k];
        bool outside = false;
        for (int q = 0; q < g->noutputs; q++) outside |= g->outputs[q] == v;
        for (int j = 0; j < g->nnodes; j++)
          for (int q = 0; q < g->nodes[j].ninputs; q++)
            outside |= g->nodes[j].inputs[q] == v && p->group_of[j] != gi;
        assert_int_equal(outside, has_value(grp->outputs, grp->noutputs, v));
      }
    }
  }
  for (int i = 0; i < g->nnodes; i++) assert_int_equal(seen[i], 1);
  free(seen);
}

static void test_conv_bias_relu(void **state) {
  (void)state;
  uint64_t seed = 1;
  Graph *g = graph_new("cbr");
  int64_t xd[4] = {1, 3, 8, 8}, bd[3] = {8, 1, 1};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 3, 8, 3, 1, 1, false, &seed);
  ValueId b = gb_binary(g, GRAPH_OP_ADD, "bias", c, gb_const(g, "b", 3, bd, &seed, -1, 1));
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", b);
  ValueId cl = gb_node(g, GRAPH_OP_CLIP, "clip", &r, 1);
  gb_output(g, cl);
  Fused f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(f.p.ngroups, 1);
  const GraphFusedGroup *grp = &f.p.groups[0];
  assert_int_equal(grp->nnodes, 4);
  assert_int_equal(g->nodes[grp->anchor].op, GRAPH_OP_CONV);
  assert_int_equal(grp->pattern, GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE);
  assert_int_equal(grp->ninputs, 3); /* x, w, b */
  assert_int_equal(grp->noutputs, 1);
  assert_int_equal(grp->outputs[0], cl);
  StrBuf sb;
  sb_init(&sb);
  graph_fusion_plan_print(g, &f.p, &sb);
  const char *want = "group 0 anchor Conv \"conv\" (out_elemwise_fusable) [Conv \"conv\", Add \"bias\", Relu \"relu\", Clip \"clip\"]\n"
                     "    (%x: f32[1, 3, 8, 8], %conv_w: f32[8, 3, 3, 3], %b: f32[8, 1, 1]) -> (%clip: f32[1, 8, 8, 8])\n";
  assert_string_equal(sb_cstr(&sb), want);
  sb_free(&sb);
  arena_free(f.a);
  graph_free(g);
}

/* x -> conv1 -> relu -> conv2 -> add(x) -> relu: x's two users meet at the
 * add, through a conv: not elementwise, so the first relu is not pulled
 * in; the second conv takes the residual add and the relu. */
static void test_residual_block(void **state) {
  (void)state;
  uint64_t seed = 2;
  Graph *g = graph_new("res");
  int64_t xd[4] = {1, 4, 6, 6};
  ValueId x0 = gb_input(g, "x0", 4, xd);
  ValueId x = gb_unary(g, GRAPH_OP_RELU, "pre", x0);
  ValueId c1 = gb_conv(g, "conv1", x, 4, 4, 3, 1, 1, true, &seed);
  ValueId r1 = gb_unary(g, GRAPH_OP_RELU, "relu1", c1);
  ValueId c2 = gb_conv(g, "conv2", r1, 4, 4, 3, 1, 1, true, &seed);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "add", c2, x);
  ValueId r2 = gb_unary(g, GRAPH_OP_RELU, "relu2", a);
  gb_output(g, r2);
  Fused f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(f.p.ngroups, 3);
  assert_int_equal(group_of_value(g, &f, c1), group_of_value(g, &f, r1));
  assert_int_equal(group_of_value(g, &f, c2), group_of_value(g, &f, r2));
  assert_int_equal(group_of_value(g, &f, a), group_of_value(g, &f, r2));
  assert_true(group_of_value(g, &f, x) != group_of_value(g, &f, c1));
  assert_true(group_of_value(g, &f, c1) != group_of_value(g, &f, c2));
  arena_free(f.a);
  graph_free(g);
}

/* Injective chains fuse together and into an elementwise consumer;
 * elementwise ops fuse into a reduction after them (prologue); the
 * reduction does not take the op after it unless reduce_epilogue. */
static void test_injective_and_reduction(void **state) {
  (void)state;
  uint64_t seed = 3;
  Graph *g = graph_new("inj");
  int64_t xd[3] = {2, 3, 4}, perm[3] = {0, 2, 1}, axes = 2, shp[2] = {2, 12};
  ValueId x = gb_input(g, "x", 3, xd);
  ValueId t = gb_unary(g, GRAPH_OP_TRANSPOSE, "transpose", x);
  gb_ints_attr(g, t, "perm", perm, 3);
  ValueId e = gb_unary(g, GRAPH_OP_EXP, "exp", t);
  GraphTensor *at = graph_tensor_new(g->arena, DT_I64, 1, (int64_t[]){1});
  graph_tensor_set_i64(at, 0, axes);
  ValueId ax = graph_add_constant(g, "axes", at);
  ValueId s = gb_binary(g, GRAPH_OP_REDUCE_SUM, "sum", e, ax);
  ValueId n = gb_unary(g, GRAPH_OP_NEG, "neg", s);
  GraphTensor *st = graph_tensor_new(g->arena, DT_I64, 1, (int64_t[]){2});
  graph_tensor_set_i64(st, 0, shp[0]);
  graph_tensor_set_i64(st, 1, shp[1]);
  ValueId rs = gb_binary(g, GRAPH_OP_RESHAPE, "reshape", x, graph_add_constant(g, "shape", st));
  ValueId sg = gb_unary(g, GRAPH_OP_SIGMOID, "sig", rs);
  gb_output(g, n);
  gb_output(g, sg);
  (void)seed;
  Fused f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(group_of_value(g, &f, t), group_of_value(g, &f, s));
  assert_int_equal(group_of_value(g, &f, e), group_of_value(g, &f, s));
  assert_true(group_of_value(g, &f, n) != group_of_value(g, &f, s));
  assert_int_equal(group_of_value(g, &f, rs), group_of_value(g, &f, sg));
  int gs = group_of_value(g, &f, s);
  assert_int_equal(g->nodes[f.p.groups[gs].anchor].op, GRAPH_OP_REDUCE_SUM);
  assert_int_equal(f.p.ngroups, 3);
  arena_free(f.a);
  GraphFuseOptions o = {0, true};
  f = fuse(g, &o);
  check_plan(g, &f.p, 64);
  assert_int_equal(group_of_value(g, &f, n), group_of_value(g, &f, s));
  assert_int_equal(f.p.ngroups, 2);
  arena_free(f.a);
  graph_free(g);
}

/* A value that is a graph output is materialized: its producer does not
 * fuse into the consumer. Opaque ops stay alone. */
static void test_graph_output_and_opaque(void **state) {
  (void)state;
  uint64_t seed = 4;
  Graph *g = graph_new("outs");
  int64_t xd[4] = {1, 2, 5, 5};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c = gb_conv(g, "conv", x, 2, 2, 1, 1, 1, true, &seed);
  ValueId r = gb_unary(g, GRAPH_OP_RELU, "relu", c);
  ValueId s = gb_unary(g, GRAPH_OP_SIGMOID, "sig", r);
  ValueId sm = gb_unary(g, GRAPH_OP_SOFTMAX, "softmax", s);
  ValueId e = gb_unary(g, GRAPH_OP_EXP, "exp", sm);
  gb_output(g, r);
  gb_output(g, e);
  Fused f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(group_of_value(g, &f, c), group_of_value(g, &f, r));
  assert_true(group_of_value(g, &f, s) != group_of_value(g, &f, r));
  assert_int_equal(f.p.groups[group_of_value(g, &f, sm)].nnodes, 1);
  assert_true(group_of_value(g, &f, e) != group_of_value(g, &f, sm));
  arena_free(f.a);
  graph_free(g);
}

/* Two convolutions meeting at an add: only one of them takes it. */
static void test_two_convs_one_add(void **state) {
  (void)state;
  uint64_t seed = 5;
  Graph *g = graph_new("two");
  int64_t xd[4] = {1, 2, 4, 4};
  ValueId x = gb_input(g, "x", 4, xd);
  ValueId c1 = gb_conv(g, "c1", x, 2, 3, 1, 1, 1, false, &seed);
  ValueId c2 = gb_conv(g, "c2", x, 2, 3, 3, 1, 1, false, &seed);
  ValueId a = gb_binary(g, GRAPH_OP_ADD, "add", c1, c2);
  gb_output(g, a);
  Fused f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(f.p.ngroups, 2);
  assert_int_equal(group_of_value(g, &f, c1), group_of_value(g, &f, a));
  arena_free(f.a);
  graph_free(g);
}

/* A long elementwise chain respects the group size limit. */
static void test_max_group_size(void **state) {
  (void)state;
  Graph *g = graph_new("chain");
  int64_t d[1] = {8};
  ValueId v = gb_input(g, "x", 1, d);
  for (int i = 0; i < 10; i++) {
    char name[16];
    snprintf(name, sizeof name, "r%d", i);
    v = gb_unary(g, i % 2 ? GRAPH_OP_RELU : GRAPH_OP_TANH, name, v);
  }
  gb_output(g, v);
  GraphFuseOptions o = {4, false};
  Fused f = fuse(g, &o);
  check_plan(g, &f.p, 4);
  assert_int_equal(f.p.ngroups, 3);
  arena_free(f.a);
  f = fuse(g, NULL);
  check_plan(g, &f.p, 64);
  assert_int_equal(f.p.ngroups, 1);
  arena_free(f.a);
  graph_free(g);
}

/* Random DAGs mixing conv-like, elementwise, injective, reduction and
 * opaque ops on one shape: every plan satisfies the invariants. */
static void test_random_dags(void **state) {
  (void)state;
  const GraphOp ops[] = {GRAPH_OP_RELU, GRAPH_OP_ADD, GRAPH_OP_MUL, GRAPH_OP_MATMUL, GRAPH_OP_TRANSPOSE, GRAPH_OP_SOFTMAX,
                         GRAPH_OP_SIGMOID};
  for (uint64_t trial = 0; trial < 200; trial++) {
    uint64_t seed = trial * 7919 + 3;
    Graph *g = graph_new("rand");
    int64_t d[2] = {4, 4};
    ValueId vals[64];
    int nv = 0;
    vals[nv++] = gb_input(g, "a", 2, d);
    vals[nv++] = gb_input(g, "b", 2, d);
    int nodes = 5 + (int)((gb_rand(&seed) + 1) * 10);
    for (int i = 0; i < nodes; i++) {
      GraphOp op = ops[(int)((gb_rand(&seed) + 1) / 2 * 7) % 7];
      int back = nv < 5 ? nv : 5;
      ValueId p = vals[nv - 1 - (int)((gb_rand(&seed) + 1) / 2 * back) % back];
      ValueId q = vals[nv - 1 - (int)((gb_rand(&seed) + 1) / 2 * back) % back];
      char name[16];
      snprintf(name, sizeof name, "n%d", i);
      bool binary = op == GRAPH_OP_ADD || op == GRAPH_OP_MUL || op == GRAPH_OP_MATMUL;
      vals[nv++] = binary ? gb_binary(g, op, name, p, q) : gb_unary(g, op, name, p);
    }
    gb_output(g, vals[nv - 1]);
    if (trial % 3 == 0) gb_output(g, vals[nv - 3]);
    int max = trial % 4 == 0 ? 3 : 64;
    GraphFuseOptions o = {max, trial % 2 == 1};
    Fused f = fuse(g, &o);
    check_plan(g, &f.p, max);
    arena_free(f.a);
    graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_bias_relu),
      cmocka_unit_test(test_residual_block),
      cmocka_unit_test(test_injective_and_reduction),
      cmocka_unit_test(test_graph_output_and_opaque),
      cmocka_unit_test(test_two_convs_one_add),
      cmocka_unit_test(test_max_group_size),
      cmocka_unit_test(test_random_dags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

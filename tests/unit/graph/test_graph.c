/* Graph IR: registry, inference, constant folding (against brute-force
 * reference evaluation), simplification and the text form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "graph/graph.h"

static ValueId input(Graph *g, const char *name, DType t, int rank, const int64_t *dims) {
  ValueId v = graph_add_value(g, name);
  graph_set_type(g, v, t, rank, dims);
  ValueId *ins = ARENA_ARRAY(g->arena, ValueId, g->ninputs + 1);
  if (g->ninputs) memcpy(ins, g->inputs, sizeof(ValueId) * (size_t)g->ninputs);
  ins[g->ninputs++] = v;
  g->inputs = ins;
  return v;
}

static ValueId ints(Graph *g, const char *name, const int64_t *v, int n) {
  int64_t d = n;
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, &d);
  for (int k = 0; k < n; k++) graph_tensor_set_i64(t, k, v[k]);
  return graph_add_constant(g, name, t);
}

static ValueId node1(Graph *g, GraphOp op, const char *name, const ValueId *ins, int nins) {
  ValueId out = graph_add_value(g, name);
  graph_add_node(g, op, name, ins, nins, &out, 1);
  return out;
}

static void set_outputs(Graph *g, ValueId v) {
  g->outputs = ARENA_ARRAY(g->arena, ValueId, 1);
  g->outputs[0] = v;
  g->noutputs = 1;
}

static void set_int_attr(Graph *g, int node, const char *name, int64_t v) {
  GraphAttr a = {0};
  a.name = name;
  a.kind = GRAPH_ATTR_INT;
  a.i = v;
  graph_node_set_attr(g, &g->nodes[node], a);
}

static void set_ints_attr(Graph *g, int node, const char *name, const int64_t *v, int n) {
  GraphAttr a = {0};
  a.name = name;
  a.kind = GRAPH_ATTR_INTS;
  a.ints = arena_memdup(g->arena, v, sizeof(int64_t) * (size_t)n);
  a.n = n;
  graph_node_set_attr(g, &g->nodes[node], a);
}

static void expect_dims(const Graph *g, ValueId v, int rank, const int64_t *dims) {
  assert_int_equal(g->values[v].rank, rank);
  for (int k = 0; k < rank; k++) assert_int_equal(g->values[v].dims[k], dims[k]);
}

static void test_registry(void **state) {
  (void)state;
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    const GraphOpInfo *info = graph_op_info((GraphOp)k);
    assert_non_null(info->name);
    assert_non_null(info->infer);
    GraphOp back;
    assert_true(graph_op_lookup(info->name, &back));
    assert_int_equal(back, k);
  }
  GraphOp op;
  assert_false(graph_op_lookup("NoSuchOp", &op));
  assert_int_equal(graph_op_info(GRAPH_OP_CONV)->pattern, GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE);
  assert_int_equal(graph_op_info(GRAPH_OP_MATMUL)->pattern, GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE);
  assert_int_equal(graph_op_info(GRAPH_OP_ADD)->pattern, GRAPH_PATTERN_BROADCAST);
  assert_int_equal(graph_op_info(GRAPH_OP_RELU)->pattern, GRAPH_PATTERN_ELEMWISE);
  assert_int_equal(graph_op_info(GRAPH_OP_REDUCE_MEAN)->pattern, GRAPH_PATTERN_REDUCTION);
  assert_int_equal(graph_op_info(GRAPH_OP_RESHAPE)->pattern, GRAPH_PATTERN_INJECTIVE);
  assert_string_equal(graph_pattern_name(GRAPH_PATTERN_OPAQUE), "opaque");
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    const GraphOpInfo *info = graph_op_info((GraphOp)k);
    assert_true(info->min_inputs >= 0 && info->min_inputs <= info->max_inputs);
    assert_true(info->min_outputs >= 0 && info->min_outputs <= info->max_outputs);
    assert_non_null(info->attrs);
  }
  /* arity: ONNX's range over its opsets */
  assert_int_equal(graph_op_info(GRAPH_OP_CONV)->min_inputs, 2);
  assert_int_equal(graph_op_info(GRAPH_OP_CONV)->max_inputs, 3);
  assert_int_equal(graph_op_info(GRAPH_OP_SUM)->max_inputs, GRAPH_VARIADIC);
  assert_int_equal(graph_op_info(GRAPH_OP_SPLIT)->max_outputs, GRAPH_VARIADIC);
  /* compile-time inputs */
  assert_false(graph_op_input_is_const(GRAPH_OP_RESHAPE, 0));
  assert_true(graph_op_input_is_const(GRAPH_OP_RESHAPE, 1));
  assert_false(graph_op_input_is_const(GRAPH_OP_PAD, 2));
  assert_true(graph_op_input_is_const(GRAPH_OP_PAD, 3));
  assert_true(graph_op_input_is_const(GRAPH_OP_LOOP, 1));
  assert_false(graph_op_input_is_const(GRAPH_OP_LOOP, 2));
  assert_false(graph_op_input_is_const(GRAPH_OP_CONCAT, 40));
  /* attributes: kinds and ONNX defaults */
  const GraphAttrDef *d = graph_op_attr(GRAPH_OP_LEAKY_RELU, "alpha");
  assert_non_null(d);
  assert_int_equal(d->kind, GRAPH_ATTR_FLOAT);
  assert_int_equal(d->presence, GRAPH_ATTR_DEFAULT);
  assert_true(d->f == 0.01);
  assert_int_equal(graph_op_attr(GRAPH_OP_BIT_SHIFT, "direction")->presence, GRAPH_ATTR_REQUIRED);
  assert_null(graph_op_attr(GRAPH_OP_RELU, "alpha"));
}

/* graph_node_* read the node's attribute, else the op's declared default. */
static void test_attr_defaults(void **state) {
  (void)state;
  Graph *g = graph_new("defaults");
  ValueId x = graph_add_value(g, "x"), y = graph_add_value(g, "y"), z = graph_add_value(g, "z");
  int gelu = graph_add_node(g, GRAPH_OP_GELU, "gelu", &x, 1, &y, 1);
  int lrelu = graph_add_node(g, GRAPH_OP_LEAKY_RELU, "lrelu", &x, 1, &z, 1);
  assert_string_equal(graph_node_string(&g->nodes[gelu], "approximate"), "none");
  assert_true(graph_node_float(&g->nodes[lrelu], "alpha") == 0.01);
  GraphAttr a = {0};
  a.name = "alpha";
  a.kind = GRAPH_ATTR_FLOAT;
  a.f = 0.5;
  graph_node_set_attr(g, &g->nodes[lrelu], a);
  assert_true(graph_node_float(&g->nodes[lrelu], "alpha") == 0.5);
  graph_free(g);
}

/* Conv with SAME_UPPER: output extent ceil(224/2) = 112, total padding
 * (112-1)*2 + 7 - 224 = 5, split 2 before and 3 after. */
static void test_infer_conv_same(void **state) {
  (void)state;
  Graph *g = graph_new("conv");
  int64_t xd[] = {1, 3, 224, 224}, wd[] = {64, 3, 7, 7};
  ValueId x = input(g, "x", DT_F32, 4, xd);
  ValueId w = graph_add_constant(g, "w", graph_tensor_new(g->arena, DT_F32, 4, wd));
  ValueId ins[] = {x, w};
  ValueId y = node1(g, GRAPH_OP_CONV, "conv", ins, 2);
  int64_t strides[] = {2, 2};
  set_ints_attr(g, 0, "strides", strides, 2);
  GraphAttr ap = {0};
  ap.name = "auto_pad";
  ap.kind = GRAPH_ATTR_STRING;
  ap.s = "SAME_UPPER";
  graph_node_set_attr(g, &g->nodes[0], ap);
  set_outputs(g, y);
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  int64_t yd[] = {1, 64, 112, 112};
  expect_dims(g, y, 4, yd);
  const GraphAttr *pads = graph_node_attr(&g->nodes[0], "pads");
  assert_non_null(pads);
  int64_t expect_pads[] = {2, 2, 3, 3};
  for (int k = 0; k < 4; k++) assert_int_equal(pads->ints[k], expect_pads[k]);
  assert_string_equal(graph_attr_string(&g->nodes[0], "auto_pad", ""), "NOTSET");
  graph_free(g);
}

static void test_infer_pool_ceil(void **state) {
  (void)state;
  /* ceil_mode: ceil((112 + 2 - 3) / 2) + 1 = 57 (floor mode would give 56,
   * ResNet's pool); on 7 with no padding, kernel 2 stride 2: ceil(5/2)+1 = 4,
   * the last window starting at 6 < 7, so it is kept. */
  Graph *g = graph_new("pool");
  int64_t xd[] = {1, 8, 112, 7};
  ValueId x = input(g, "x", DT_F32, 4, xd);
  ValueId y = node1(g, GRAPH_OP_MAX_POOL, "pool", &x, 1);
  int64_t ks[] = {3, 2}, st[] = {2, 2}, pads[] = {1, 0, 1, 0};
  set_ints_attr(g, 0, "kernel_shape", ks, 2);
  set_ints_attr(g, 0, "strides", st, 2);
  set_ints_attr(g, 0, "pads", pads, 4);
  set_int_attr(g, 0, "ceil_mode", 1);
  set_outputs(g, y);
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  int64_t yd[] = {1, 8, 57, 4};
  expect_dims(g, y, 4, yd);
  graph_free(g);
}

static void test_infer_matmul_and_errors(void **state) {
  (void)state;
  Graph *g = graph_new("mm");
  int64_t ad[] = {2, 1, 3, 4}, bd[] = {5, 4, 6}, vd[] = {4};
  ValueId a = input(g, "a", DT_F32, 4, ad), b = input(g, "b", DT_F32, 3, bd), v = input(g, "v", DT_F32, 1, vd);
  ValueId i1[] = {a, b}, i2[] = {v, b}, i3[] = {b, v};
  ValueId y1 = node1(g, GRAPH_OP_MATMUL, "mm1", i1, 2);
  ValueId y2 = node1(g, GRAPH_OP_MATMUL, "mm2", i2, 2);
  ValueId y3 = node1(g, GRAPH_OP_MATMUL, "mm3", i3, 2);
  set_outputs(g, y1);
  LoomError err = {0};
  /* b is [5,4,6] and v is [4]: v x b = [5,6]; b x v needs 6 == 4. */
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "node \"mm3\" (MatMul)"));
  assert_non_null(strstr(err.msg, "inner extents differ"));
  int64_t e1[] = {2, 5, 3, 6}, e2[] = {5, 6};
  expect_dims(g, y1, 4, e1);
  expect_dims(g, y2, 2, e2);
  (void)y3;
  graph_free(g);

  g = graph_new("bcast");
  int64_t xd[] = {3, 4}, zd[] = {2, 4};
  ValueId x = input(g, "x", DT_F32, 2, xd), z = input(g, "z", DT_F32, 2, zd);
  ValueId ins[] = {x, z};
  set_outputs(g, node1(g, GRAPH_OP_ADD, "add_bad", ins, 2));
  assert_int_equal(graph_pass_infer(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "node \"add_bad\" (Add): cannot broadcast extent 3 with 2"));
  graph_free(g);
}

/* Reference Slice on one axis by enumeration, with the clamping the ONNX
 * spec (and ONNX Runtime) apply: for negative steps start is clamped into
 * [0, extent-1], so it differs from Python when start < -extent. */
static int ref_slice(int64_t extent, int64_t start, int64_t end, int64_t step, int64_t *out) {
  if (start < 0) start += extent;
  if (end < 0) end += extent;
  int n = 0;
  if (step > 0) {
    if (start < 0) start = 0;
    if (end > extent) end = extent;
    for (int64_t i = start; i < end; i += step) out[n++] = i;
  } else {
    if (start < 0) start = 0;
    if (start > extent - 1) start = extent - 1;
    if (end < -1) end = -1;
    for (int64_t i = start; i > end; i += step) out[n++] = i;
  }
  return n;
}

static uint64_t rng_next(uint64_t *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return *s >> 33;
}

static void test_fold_slice_random(void **state) {
  (void)state;
  uint64_t seed = 12345;
  for (int trial = 0; trial < 300; trial++) {
    Graph *g = graph_new("slice");
    int64_t extent = (int64_t)(rng_next(&seed) % 9) + 1;
    int64_t data[16];
    for (int k = 0; k < extent; k++) data[k] = 100 + k;
    int64_t start = (int64_t)(rng_next(&seed) % 25) - 12, end = (int64_t)(rng_next(&seed) % 25) - 12;
    int64_t step = (int64_t)(rng_next(&seed) % 7) - 3;
    if (step == 0) step = 1;
    if (trial % 10 == 0) end = step > 0 ? INT64_MAX : INT64_MIN; /* exporters use these for "to the end" */
    ValueId d = ints(g, "d", data, (int)extent);
    ValueId s = ints(g, "s", &start, 1), e = ints(g, "e", &end, 1), st = ints(g, "st", &step, 1);
    int64_t zero = 0;
    ValueId ax = ints(g, "ax", &zero, 1);
    ValueId ins[] = {d, s, e, ax, st};
    ValueId y = node1(g, GRAPH_OP_SLICE, "slice", ins, 5);
    set_outputs(g, y);
    LoomError err = {0};
    assert_int_equal(graph_pass_fold_constants(g, &err), LOOM_OK);
    assert_int_equal(g->nnodes, 0);
    const GraphTensor *t = graph_value_constant(g, y);
    assert_non_null(t);
    int64_t expect[32];
    int n = ref_slice(extent, start, end, step, expect);
    assert_int_equal(graph_tensor_numel(t), n);
    for (int k = 0; k < n; k++) assert_int_equal(graph_tensor_get_i64(t, k), 100 + expect[k]);
    graph_free(g);
  }
}

/* Shape -> Gather -> Unsqueeze -> Concat(-1) -> Reshape, for random input
 * shapes and gather indices: the target must fold to [dims[i], -1] and the
 * Reshape output must be [dims[i], numel / dims[i]]. */
static void test_fold_shape_chain_random(void **state) {
  (void)state;
  uint64_t seed = 99;
  for (int trial = 0; trial < 100; trial++) {
    Graph *g = graph_new("chain");
    int rank = (int)(rng_next(&seed) % 4) + 1;
    int64_t dims[4], numel = 1;
    for (int k = 0; k < rank; k++) numel *= dims[k] = (int64_t)(rng_next(&seed) % 5) + 1;
    int64_t idx = (int64_t)(rng_next(&seed) % (uint64_t)rank) - (trial % 2 ? rank : 0); /* negative indices too */
    ValueId x = input(g, "x", DT_F32, rank, dims);
    ValueId shp = node1(g, GRAPH_OP_SHAPE, "shape", &x, 1);
    ValueId gi[] = {shp, ints(g, "idx", &idx, 1)};
    g->values[gi[1]].constant->rank = 0; /* scalar index */
    g->values[gi[1]].rank = 0;
    ValueId n = node1(g, GRAPH_OP_GATHER, "gather", gi, 2);
    int64_t zero = 0, m1 = -1;
    ValueId ui[] = {n, ints(g, "axes", &zero, 1)};
    ValueId n1 = node1(g, GRAPH_OP_UNSQUEEZE, "unsq", ui, 2);
    ValueId ci[] = {n1, ints(g, "m1", &m1, 1)};
    ValueId target = node1(g, GRAPH_OP_CONCAT, "concat", ci, 2);
    set_int_attr(g, 3, "axis", 0);
    ValueId ri[] = {x, target};
    ValueId y = node1(g, GRAPH_OP_RESHAPE, "reshape", ri, 2);
    set_outputs(g, y);
    LoomError err = {0};
    assert_int_equal(graph_pass_fold_constants(g, &err), LOOM_OK);
    assert_int_equal(graph_pass_dce(g, &err), LOOM_OK);
    assert_int_equal(g->nnodes, 1);
    assert_int_equal(g->nodes[0].op, GRAPH_OP_RESHAPE);
    const GraphTensor *t = graph_value_constant(g, target);
    assert_non_null(t);
    int64_t picked = dims[idx < 0 ? idx + rank : idx];
    assert_int_equal(graph_tensor_get_i64(t, 0), picked);
    assert_int_equal(graph_tensor_get_i64(t, 1), -1);
    int64_t expect[] = {picked, numel / picked};
    expect_dims(g, y, 2, expect);
    graph_free(g);
  }
}

static void test_fold_arith_where_cast(void **state) {
  (void)state;
  /* Where(Equal(a, b), a * 2, Cast(b)) elementwise against a direct loop. */
  Graph *g = graph_new("arith");
  int64_t a[] = {1, 5, -3, 7, 0, 2}, b[] = {1, 4, -3, 8, 0, 9};
  ValueId va = ints(g, "a", a, 6), vb = ints(g, "b", b, 6);
  int64_t two = 2;
  ValueId c2 = ints(g, "two", &two, 1);
  ValueId e_in[] = {va, vb}, m_in[] = {va, c2};
  ValueId eq = node1(g, GRAPH_OP_EQUAL, "eq", e_in, 2);
  ValueId mul = node1(g, GRAPH_OP_MUL, "mul", m_in, 2);
  ValueId cast = node1(g, GRAPH_OP_CAST, "cast", &vb, 1);
  GraphAttr to = {0};
  to.name = "to";
  to.kind = GRAPH_ATTR_STRING;
  to.s = "i32";
  graph_node_set_attr(g, &g->nodes[2], to);
  ValueId cast_back = node1(g, GRAPH_OP_CAST, "cast_back", &cast, 1);
  to.s = "i64";
  graph_node_set_attr(g, &g->nodes[3], to);
  ValueId w_in[] = {eq, mul, cast_back};
  ValueId y = node1(g, GRAPH_OP_WHERE, "where", w_in, 3);
  set_outputs(g, y);
  LoomError err = {0};
  assert_int_equal(graph_pass_fold_constants(g, &err), LOOM_OK);
  assert_int_equal(g->nnodes, 0);
  const GraphTensor *t = graph_value_constant(g, y);
  assert_non_null(t);
  for (int k = 0; k < 6; k++) assert_int_equal(graph_tensor_get_i64(t, k), a[k] == b[k] ? a[k] * 2 : b[k]);
  graph_free(g);
}

static void test_fold_gather_out_of_range(void **state) {
  (void)state;
  Graph *g = graph_new("gather");
  int64_t d[] = {4, 5, 6}, bad = 3;
  ValueId ins[] = {ints(g, "d", d, 3), ints(g, "i", &bad, 1)};
  set_outputs(g, node1(g, GRAPH_OP_GATHER, "g0", ins, 2));
  LoomError err = {0};
  assert_int_equal(graph_pass_fold_constants(g, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "node \"g0\" (Gather): index 3 is out of range for extent 3"));
  graph_free(g);
}

static void test_identity_dce_print(void **state) {
  (void)state;
  Graph *g = graph_new("simp");
  int64_t xd[] = {2, 3};
  ValueId x = input(g, "x", DT_F32, 2, xd);
  ValueId r = node1(g, GRAPH_OP_RELU, "relu", &x, 1);
  ValueId id = node1(g, GRAPH_OP_IDENTITY, "id", &r, 1);
  ValueId dead = node1(g, GRAPH_OP_EXP, "dead", &id, 1);
  ValueId drop = node1(g, GRAPH_OP_DROPOUT, "drop", &id, 1);
  ValueId out = node1(g, GRAPH_OP_IDENTITY, "out_id", &drop, 1);
  (void)dead;
  set_outputs(g, out);
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_remove_identity(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_dce(g, &err), LOOM_OK);
  assert_int_equal(graph_verify(g, &err), LOOM_OK);
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  /* The Relu now writes the graph output directly. */
  assert_string_equal(sb_cstr(&sb),
                      "graph simp(%x: f32[2, 3]) {\n"
                      "  %out_id: f32[2, 3] = Relu(%x)  # \"relu\"\n"
                      "  return %out_id\n"
                      "}\n");
  sb_free(&sb);
  graph_free(g);
}

static void test_print_constants_and_attrs(void **state) {
  (void)state;
  Graph *g = graph_new("p");
  int64_t xd[] = {2, 6};
  ValueId x = input(g, "x", DT_F32, 2, xd);
  g->values[x].dims[0] = -1;
  const char **params = ARENA_ARRAY(g->arena, const char *, 2);
  params[0] = "batch";
  g->values[x].dim_params = params;
  int64_t shape[] = {0, 2, 3};
  ValueId s = ints(g, "shape", shape, 3);
  ValueId ins[] = {x, s};
  ValueId y = node1(g, GRAPH_OP_RESHAPE, "rs", ins, 2);
  set_int_attr(g, 0, "allowzero", 0);
  set_outputs(g, y);
  LoomError err = {0};
  assert_int_equal(graph_pass_infer(g, &err), LOOM_OK);
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  assert_string_equal(sb_cstr(&sb),
                      "graph p(%x: f32[batch, 6]) {\n"
                      "  %shape = const i64[3] [0, 2, 3]\n"
                      "  %rs: f32[?, 2, 3] = Reshape(%x, %shape) {allowzero=0}  # \"rs\"\n"
                      "  return %rs\n"
                      "}\n");
  sb_free(&sb);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry),
      cmocka_unit_test(test_attr_defaults),
      cmocka_unit_test(test_infer_conv_same),
      cmocka_unit_test(test_infer_pool_ceil),
      cmocka_unit_test(test_infer_matmul_and_errors),
      cmocka_unit_test(test_fold_slice_random),
      cmocka_unit_test(test_fold_shape_chain_random),
      cmocka_unit_test(test_fold_arith_where_cast),
      cmocka_unit_test(test_fold_gather_out_of_range),
      cmocka_unit_test(test_identity_dce_print),
      cmocka_unit_test(test_print_constants_and_attrs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

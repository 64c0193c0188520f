/* Specialization's decision (src/compile/specialize.c): exactly which given
 * inputs have their value compiled in. An input is compiled in only when a
 * compile-time operand (a shape, axes, a count, Resize's scales, Range's
 * bounds, If's condition, Loop's trip count) depends on its value; Shape,
 * Size, EyeLike and CastLike's target are barriers; parameters that decide
 * no shape (Clip's bounds, Pad's constant_value, Resize's roi, Dropout's
 * ratio) and data (an Add of two int64 inputs, Gather's indices) stay
 * runtime inputs, float or not. Each case builds a small graph, asks
 * compile_specialize_decide, and compares the whole decision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "compile/compile.h"
#include "unit/graph/graph_build.h"

enum { MAX_IN = 8 };

/* One graph input and the tensor given for it (only its shape and dtype
 * matter to the decision; the data is a zeroed buffer). */
typedef struct Given {
  const char *name;
  DType dt;
  int rank;
  int64_t dims[4];
} Given;

typedef struct Case {
  Graph *g;
  ValueId in[MAX_IN];
  Given given[MAX_IN];
  int n;
} Case;

static ValueId add_input(Case *c, const char *name, DType dt, int rank, const int64_t *dims) {
  ValueId v = gb_input(c->g, name, rank, dims);
  graph_set_type(c->g, v, dt, rank, dims);
  Given *gv = &c->given[c->n];
  gv->name = name;
  gv->dt = dt;
  gv->rank = rank;
  if (rank) memcpy(gv->dims, dims, sizeof(int64_t) * (size_t)rank);
  c->in[c->n++] = v;
  return v;
}

static ValueId in_f32(Case *c, const char *name, int rank, const int64_t *dims) {
  return add_input(c, name, DT_F32, rank, dims);
}
static ValueId in_i64(Case *c, const char *name, int rank, const int64_t *dims) {
  return add_input(c, name, DT_I64, rank, dims);
}

static ValueId const_i64s(Graph *g, const char *name, const int64_t *v, int n) {
  int64_t d = n;
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, &d);
  for (int k = 0; k < n; k++) graph_tensor_set_i64(t, k, v[k]);
  return graph_add_constant(g, name, t);
}

/* A node with several outputs (If, Loop): its first output. */
static ValueId node_n(Graph *g, GraphOp op, const char *name, const ValueId *ins, int nins, int nouts) {
  ValueId outs[4];
  for (int k = 0; k < nouts; k++) outs[k] = graph_add_value(g, arena_printf(g->arena, "%s_out%d", name, k));
  graph_add_node(g, op, name, ins, nins, outs, nouts);
  return outs[0];
}

static DLDataType to_dl(DType t) {
  DLDataType d = {(uint8_t)t.code, (uint8_t)(t.code == DT_BOOL ? 8 : t.bits), 1};
  return d;
}

/* Asserts the decision: `expect` lists the names compiled in, comma-separated. */
static void expect_bound(Case *c, const char *expect) {
  static char zeros[1 << 16];
  DLTensor t[MAX_IN];
  loom_input_value vals[MAX_IN];
  for (int i = 0; i < c->n; i++) {
    memset(&t[i], 0, sizeof t[i]);
    t[i].data = zeros;
    t[i].dtype = to_dl(c->given[i].dt);
    t[i].ndim = c->given[i].rank;
    t[i].shape = c->given[i].dims;
    vals[i] = (loom_input_value){c->given[i].name, &t[i]};
  }
  bool bind[MAX_IN];
  LoomError err = {0};
  assert_int_equal(compile_specialize_decide(c->g, vals, c->n, bind, &err), LOOM_OK);
  char got[256] = "";
  for (int i = 0; i < c->n; i++)
    if (bind[i]) snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", got[0] ? "," : "", c->given[i].name);
  if (strcmp(got, expect)) fail_msg("compiled in: \"%s\", expected \"%s\"", got, expect);
  graph_free(c->g);
}

static Case new_case(void) {
  Case c;
  memset(&c, 0, sizeof c);
  c.g = graph_new("specialize");
  return c;
}

static const int64_t d23[2] = {2, 3}, d234[3] = {2, 3, 4}, d1[1] = {1}, d2[1] = {2}, d4[1] = {4}, d8[1] = {8};

/* Reshape(data, shape): the int64 shape input is compiled in. */
static void test_reshape_shape_input(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "data", 2, d23), s = in_i64(&c, "shape", 1, d2);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "y", x, s));
  expect_bound(&c, "shape");
}

/* X -> Shape -> Gather -> Concat -> Reshape(Y, .): only X's SHAPE is used. */
static void test_shape_is_a_barrier(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "X", 3, d234), y = in_f32(&c, "Y", 2, (const int64_t[]){6, 4});
  ValueId sh = gb_unary(c.g, GRAPH_OP_SHAPE, "sh", x);
  ValueId g0 = gb_binary(c.g, GRAPH_OP_GATHER, "g0", sh, const_i64s(c.g, "zero", (const int64_t[]){0}, 1));
  ValueId cat = gb_binary(c.g, GRAPH_OP_CONCAT, "cat", g0, const_i64s(c.g, "m1", (const int64_t[]){-1}, 1));
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "r", y, cat));
  expect_bound(&c, "");
}

/* Size and EyeLike read shapes; CastLike's target only its dtype. */
static void test_size_eyelike_castlike_are_barriers(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "X", 2, d23), e = in_f32(&c, "E", 2, d23), like = in_i64(&c, "like", 1, d1);
  ValueId n = gb_unary(c.g, GRAPH_OP_SIZE, "n", x);
  ValueId n1 = gb_binary(c.g, GRAPH_OP_RESHAPE, "n1", n, const_i64s(c.g, "one", (const int64_t[]){1}, 1));
  ValueId eye = gb_unary(c.g, GRAPH_OP_EYE_LIKE, "eye", e);
  ValueId s = gb_binary(c.g, GRAPH_OP_CAST_LIKE, "s", n1, like);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "r", eye, s));
  expect_bound(&c, "");
}

/* Clip with float min/max inputs: runtime operands of the kernel. */
static void test_clip_bounds_stay_runtime(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[3] = {in_f32(&c, "x", 2, d23), in_f32(&c, "min", 0, NULL), in_f32(&c, "max", 0, NULL)};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_CLIP, "y", ins, 3));
  expect_bound(&c, "");
}

/* Pad: pads and axes are compiled in, constant_value is not. */
static void test_pad_constant_value_stays_runtime(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[4] = {in_f32(&c, "x", 2, d23), in_i64(&c, "pads", 1, d2), in_f32(&c, "value", 0, NULL),
                    in_i64(&c, "axes", 1, d1)};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_PAD, "y", ins, 4));
  expect_bound(&c, "pads,axes");
}

/* Expand(x, shape): the shape input is compiled in. */
static void test_expand_shape_input(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "x", 2, d23), s = in_i64(&c, "shape", 1, d2);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_EXPAND, "y", x, s));
  expect_bound(&c, "shape");
}

/* If: the condition is compiled in, a value the branches read is not. */
static void test_if_condition(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[2] = {add_input(&c, "cond", DT_BOOL1, 0, NULL), in_f32(&c, "x", 2, d23)};
  gb_output(c.g, node_n(c.g, GRAPH_OP_IF, "if", ins, 2, 1));
  expect_bound(&c, "cond");
}

/* Loop: trip count and condition are compiled in, the carried value not. */
static void test_loop_trip_count(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[3] = {in_i64(&c, "M", 0, NULL), add_input(&c, "cond", DT_BOOL1, 0, NULL), in_f32(&c, "v", 1, d4)};
  gb_output(c.g, node_n(c.g, GRAPH_OP_LOOP, "loop", ins, 3, 1));
  expect_bound(&c, "M,cond");
}

/* Integers used as data stay runtime: Add of two int64 tensors, Gather's
 * indices. */
static void test_integer_data_stays_runtime(void **state) {
  (void)state;
  Case c = new_case();
  ValueId a = in_i64(&c, "a", 1, d4), b = in_i64(&c, "b", 1, d4), t = in_f32(&c, "table", 2, d23);
  ValueId idx = in_i64(&c, "idx", 1, d2);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_ADD, "sum", a, b));
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_GATHER, "rows", t, idx));
  expect_bound(&c, "");
}

/* Resize: roi stays runtime; the float scales decide the output shape, so
 * they are compiled in (the one way float data is); sizes likewise. */
static void test_resize_roi_runtime_scales_bound(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "X", 3, d234), roi = in_f32(&c, "roi", 1, (const int64_t[]){6});
  ValueId ins[3] = {x, roi, in_f32(&c, "scales", 1, (const int64_t[]){3})};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_RESIZE, "y", ins, 3));
  ValueId ins2[4] = {x, roi, GRAPH_NO_VALUE, in_i64(&c, "sizes", 1, (const int64_t[]){3})};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_RESIZE, "z", ins2, 4));
  expect_bound(&c, "scales,sizes");
}

/* Range with float bounds: they decide the length, so they are compiled in. */
static void test_range_float_bounds(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[3] = {in_f32(&c, "start", 0, NULL), in_f32(&c, "limit", 0, NULL), in_f32(&c, "delta", 0, NULL)};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_RANGE, "r", ins, 3));
  expect_bound(&c, "start,limit,delta");
}

/* A float whose VALUE reaches a shape (cast to int64) truly decides it. */
static void test_float_value_cast_to_shape(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "x", 2, d23), f = in_f32(&c, "f", 1, d2);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "y", x, gb_unary(c.g, GRAPH_OP_CAST, "s", f)));
  expect_bound(&c, "f");
}

/* Dropout's ratio decides nothing. */
static void test_dropout_ratio_stays_runtime(void **state) {
  (void)state;
  Case c = new_case();
  ValueId ins[2] = {in_f32(&c, "x", 2, d23), in_f32(&c, "ratio", 0, NULL)};
  gb_output(c.g, gb_node(c.g, GRAPH_OP_DROPOUT, "y", ins, 2));
  expect_bound(&c, "");
}

/* Integer arithmetic on a shape input: followed back to the input. */
static void test_shape_arithmetic(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "x", 2, d23), s = in_i64(&c, "s", 1, d2), k = in_i64(&c, "k", 1, d1);
  ValueId s2 = gb_binary(c.g, GRAPH_OP_MUL, "s2", s, k);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "y", x, s2));
  expect_bound(&c, "s,k");
}

/* NonZero's extents depend on its input's values: a Shape of its output
 * that decides a Reshape needs them. */
static void test_data_dependent_extents(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "x", 1, d4), y = in_f32(&c, "y", 1, d8);
  ValueId nz = gb_unary(c.g, GRAPH_OP_NON_ZERO, "nz", x);
  ValueId sh = gb_unary(c.g, GRAPH_OP_SHAPE, "sh", nz);
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "r", y, sh));
  expect_bound(&c, "x");
}

/* A node whose result nothing uses decides nothing (DCE drops it); an input
 * over 4096 elements is never compiled in. */
static void test_dead_nodes_and_large_inputs(void **state) {
  (void)state;
  Case c = new_case();
  ValueId x = in_f32(&c, "x", 2, d23), dead = in_i64(&c, "dead", 1, d2), big = in_i64(&c, "big", 1, (const int64_t[]){5000});
  gb_binary(c.g, GRAPH_OP_RESHAPE, "unused", x, dead);
  ValueId top = gb_unary(c.g, GRAPH_OP_REDUCE_MAX, "top", big); /* keepdims: [1] */
  gb_output(c.g, gb_binary(c.g, GRAPH_OP_RESHAPE, "y", x, top));
  expect_bound(&c, "");
}

/* compile_specialize_inputs: the decided inputs become constants holding
 * the given data and leave the graph's inputs; the others take the shape. */
static void test_inputs_bound_as_constants(void **state) {
  (void)state;
  Graph *g = graph_new("bind");
  const int64_t unknown[2] = {-1, -1};
  ValueId x = gb_input(g, "data", 2, unknown), s = gb_input(g, "shape", 1, d2);
  graph_set_type(g, s, DT_I64, 1, d2);
  gb_output(g, gb_binary(g, GRAPH_OP_RESHAPE, "y", x, s));
  float xd[6] = {0};
  int64_t sd[2] = {3, 2}, xs[2] = {2, 3}, ss[1] = {2};
  DLTensor xt = {.data = xd, .dtype = {kDLFloat, 32, 1}, .ndim = 2, .shape = xs};
  DLTensor st = {.data = sd, .dtype = {kDLInt, 64, 1}, .ndim = 1, .shape = ss};
  loom_input_value vals[2] = {{"data", &xt}, {"shape", &st}};
  bool bound[2];
  LoomError err = {0};
  assert_int_equal(compile_specialize_inputs(g, vals, 2, NULL, bound, &err), LOOM_OK);
  assert_false(bound[0]);
  assert_true(bound[1]);
  assert_int_equal(g->ninputs, 1);
  assert_int_equal(g->inputs[0], x);
  assert_int_equal(g->values[x].dims[0], 2);
  assert_int_equal(g->values[x].dims[1], 3);
  const GraphTensor *t = graph_value_constant(g, s);
  assert_non_null(t);
  assert_int_equal(graph_tensor_get_i64(t, 0), 3);
  assert_int_equal(graph_tensor_get_i64(t, 1), 2);
  /* force compiles in an input the walk would keep */
  graph_free(g);
  g = graph_new("force");
  x = gb_input(g, "data", 2, xs);
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "y", x));
  bool force[1] = {true};
  assert_int_equal(compile_specialize_inputs(g, vals, 1, force, bound, &err), LOOM_OK);
  assert_true(bound[0]);
  assert_int_equal(g->ninputs, 0);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape_shape_input),
      cmocka_unit_test(test_shape_is_a_barrier),
      cmocka_unit_test(test_size_eyelike_castlike_are_barriers),
      cmocka_unit_test(test_clip_bounds_stay_runtime),
      cmocka_unit_test(test_pad_constant_value_stays_runtime),
      cmocka_unit_test(test_expand_shape_input),
      cmocka_unit_test(test_if_condition),
      cmocka_unit_test(test_loop_trip_count),
      cmocka_unit_test(test_integer_data_stays_runtime),
      cmocka_unit_test(test_resize_roi_runtime_scales_bound),
      cmocka_unit_test(test_range_float_bounds),
      cmocka_unit_test(test_float_value_cast_to_shape),
      cmocka_unit_test(test_dropout_ratio_stays_runtime),
      cmocka_unit_test(test_shape_arithmetic),
      cmocka_unit_test(test_data_dependent_extents),
      cmocka_unit_test(test_dead_nodes_and_large_inputs),
      cmocka_unit_test(test_inputs_bound_as_constants),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

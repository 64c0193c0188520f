/* Imports the models tests/models/make_models.py writes (directory in
 * LOOM_ONNX_MODELS; CTest runs the script first as a fixture) and checks
 * the prepared graphs, inferred shapes, folded constants and, for each bad
 * model, the error message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx.h"

static char *model_path(const char *name) {
  const char *dir = getenv("LOOM_ONNX_MODELS");
  if (!dir) fail_msg("LOOM_ONNX_MODELS is not set (run through ctest, which generates the models)");
  static char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return path;
}

static Graph *load(const char *name) {
  LoomError err = {0};
  Graph *g = onnx_import_file_prepared(model_path(name), &err);
  if (!g) fail_msg("%s: %s", name, err.msg);
  return g;
}

static char *dump(const Graph *g) {
  StrBuf sb;
  sb_init(&sb);
  graph_print(g, &sb);
  return sb_take(&sb);
}

static ValueId find_value(const Graph *g, const char *name) {
  for (int v = 0; v < g->nvalues; v++)
    if (!strcmp(g->values[v].name, name)) return v;
  fail_msg("no value \"%s\"", name);
  return -1;
}

static void expect_shape(const Graph *g, const char *name, int rank, const int64_t *dims) {
  const GraphValue *v = &g->values[find_value(g, name)];
  assert_int_equal(v->rank, rank);
  for (int k = 0; k < rank; k++) assert_int_equal(v->dims[k], dims[k]);
}

static void expect_error(const char *name, loom_status status, const char *needle) {
  LoomError err = {0};
  Graph *g = onnx_import_file_prepared(model_path(name), &err);
  if (g) fail_msg("%s imported, expected an error containing \"%s\"", name, needle);
  if (!strstr(err.msg, needle)) fail_msg("%s: message \"%s\" lacks \"%s\"", name, err.msg, needle);
  assert_int_equal(err.status, status);
}

static void test_conv_bn_relu(void **state) {
  (void)state;
  Graph *g = load("conv_bn_relu.onnx");
  char *text = dump(g);
  const char *expect_tail =
      "  %c: f32[1, 8, 16, 16] = Conv(%x, %w, %b) {pads=[1, 1, 1, 1], strides=[2, 2], auto_pad=\"NOTSET\", group=1}  # \"conv0\"\n"
      "  %n: f32[1, 8, 16, 16] = BatchNormalization(%c, %scale, %bias, %mean, %var) {epsilon=0.001}  # \"bn0\"\n"
      "  %y: f32[1, 8, 16, 16] = Relu(%n)  # \"relu0\"\n"
      "  return %y\n"
      "}\n";
  assert_non_null(strstr(text, "graph conv_bn_relu(%x: f32[1, 3, 32, 32]) {\n  %w = const f32[8, 3, 3, 3]\n"));
  assert_non_null(strstr(text, "  %b = const f32[8] [0, 1, 2, 3, 4, 5, 6, 7]\n"));
  assert_string_equal(text + strlen(text) - strlen(expect_tail), expect_tail);
  free(text);
  /* Weights match the generator (default_rng(0) normal): check one known
   * property that does not need the values: every one of 216 is finite and
   * not all are equal. */
  const GraphTensor *w = graph_value_constant(g, find_value(g, "w"));
  assert_int_equal(graph_tensor_numel(w), 216);
  assert_true(graph_tensor_get_f64(w, 0) != graph_tensor_get_f64(w, 1));
  graph_free(g);
}

static void test_mlp(void **state) {
  (void)state;
  Graph *g = load("mlp.onnx");
  char *text = dump(g);
  /* Dropout is gone; Gemm defaults are explicit; opset 13 Softmax axis -1. */
  assert_null(strstr(text, "Dropout"));
  assert_non_null(strstr(text, "  %h: f32[2, 8] = Gemm(%x, %w1, %b1) {alpha=1, beta=1, transA=0, transB=0}  # \"fc1\"\n"));
  assert_non_null(strstr(text, "  %y: f32[2, 4] = Gemm(%r, %w2) {alpha=2, transB=1, beta=1, transA=0}  # \"fc2\"\n"));
  assert_non_null(strstr(text, "  %p: f32[2, 4] = Softmax(%y) {axis=-1}  # \"sm\"\n"));
  /* float_data weights decoded. */
  const GraphTensor *w1 = graph_value_constant(g, find_value(g, "w1"));
  assert_int_equal(graph_tensor_numel(w1), 128);
  for (int k = 0; k < 128; k++) assert_true(graph_tensor_get_f64(w1, k) == 0.5);
  free(text);
  graph_free(g);
}

static void check_shape_chain(const char *name) {
  Graph *g = load(name);
  char *text = dump(g);
  assert_string_equal(text, "graph shape_chain(%x: f32[2, 3, 4, 5]) {\n"
                            "  %target = const i64[2] [2, -1]\n"
                            "  %y: f32[2, 60] = Reshape(%x, %target) {allowzero=0}  # \"reshape\"\n"
                            "  return %y\n"
                            "}\n");
  free(text);
  graph_free(g);
}

static void test_shape_chain(void **state) {
  (void)state;
  check_shape_chain("shape_chain.onnx");        /* Unsqueeze axes as input */
  check_shape_chain("shape_chain_opset11.onnx"); /* Unsqueeze axes as attribute */
}

/* A symbolic batch dim blocks folding until it is bound. */
static void test_shape_chain_dynamic(void **state) {
  (void)state;
  Graph *g = load("shape_chain_dynamic.onnx");
  char *text = dump(g);
  assert_non_null(strstr(text, "graph shape_chain(%x: f32[batch, 3, 4, 5]) {\n"));
  assert_non_null(strstr(text, "= Shape(%x)"));
  assert_non_null(strstr(text, "  %y: f32[?, ?] = Reshape(%x, %target)"));
  free(text);
  graph_free(g);

  LoomError err = {0};
  g = onnx_import_file(model_path("shape_chain_dynamic.onnx"), &err);
  assert_non_null(g);
  assert_int_equal(graph_bind_dim_param(g, "batch", 2), 1);
  assert_int_equal(graph_bind_dim_param(g, "other", 2), 0);
  assert_int_equal(graph_pass_fold_constants(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_remove_identity(g, &err), LOOM_OK);
  assert_int_equal(graph_pass_dce(g, &err), LOOM_OK);
  text = dump(g);
  assert_string_equal(text, "graph shape_chain(%x: f32[2, 3, 4, 5]) {\n"
                            "  %target = const i64[2] [2, -1]\n"
                            "  %y: f32[2, 60] = Reshape(%x, %target) {allowzero=0}  # \"reshape\"\n"
                            "  return %y\n"
                            "}\n");
  free(text);
  int64_t wrong[] = {2, 3, 4, 6};
  assert_int_equal(graph_set_input_shape(g, "x", 4, wrong, &err), LOOM_ERR_INVALID_ARG);
  assert_string_equal(err.msg, "graph input \"x\": extent 3 is 5 in the model, got 6");
  assert_int_equal(graph_set_input_shape(g, "nope", 4, wrong, &err), LOOM_ERR_INVALID_ARG);
  graph_free(g);
}

static void test_opset7(void **state) {
  (void)state;
  Graph *g = load("opset7.onnx");
  char *text = dump(g);
  assert_non_null(strstr(text, "  %slice.starts = const i64[1] [1]\n"));
  assert_non_null(strstr(text, "  %s: f32[1, 2, 6, 6] = Slice(%x, %slice.starts, %slice.ends, %slice.axes)  # \"slice\"\n"));
  assert_non_null(strstr(text, "  %p: f32[1, 2, 8, 8] = Pad(%s, %pad.pads, %pad.value) {mode=\"constant\"}  # \"pad\"\n"));
  assert_non_null(strstr(text, "  %c: f32[1, 2, 8, 8] = Clip(%p, %clip.min, %clip.max)  # \"clip\"\n"));
  assert_non_null(strstr(text, "  %u: f32[1, 2, 16, 16] = Resize(%c, _, %up.scales) {mode=\"nearest\", "
                               "coordinate_transformation_mode=\"asymmetric\", nearest_mode=\"floor\"}  # \"up\"\n"));
  assert_non_null(strstr(text, "  %m: f32[1, 2, 1, 1] = ReduceMean(%u, %mean.axes)"));
  assert_non_null(strstr(text, "  %z: f32[1, 2] = Softmax(%y) {axis=1, coerce_2d=1}  # \"sm\"\n"));
  free(text);
  graph_free(g);
}

static void test_opset17(void **state) {
  (void)state;
  Graph *g = load("opset17.onnx");
  int64_t s[] = {1, 2, 6, 6}, p[] = {1, 2, 8, 8}, m[] = {1, 2, 8, 1}, q[] = {1, 2, 8}, y0[] = {1, 2, 3}, y1[] = {1, 2, 5};
  expect_shape(g, "s", 4, s);
  expect_shape(g, "p", 4, p);
  expect_shape(g, "ln", 4, p);
  expect_shape(g, "m", 4, m);
  expect_shape(g, "q", 3, q);
  expect_shape(g, "y0", 3, y0);
  expect_shape(g, "y1", 3, y1);
  char *text = dump(g);
  assert_non_null(strstr(text, "LayerNormalization(%c, %ln_scale, %ln_bias) {axis=-1, epsilon=1e-05, stash_type=1}"));
  free(text);
  graph_free(g);
}

static void test_external_data(void **state) {
  (void)state;
  Graph *g = load("external.onnx");
  const GraphTensor *w = graph_value_constant(g, find_value(g, "w"));
  assert_non_null(w);
  assert_int_equal(graph_tensor_numel(w), 12);
  for (int k = 0; k < 12; k++) assert_true(graph_tensor_get_f64(w, k) == k);
  int64_t y[] = {2, 4};
  expect_shape(g, "y", 2, y);
  graph_free(g);
  expect_error("external_escape.onnx", LOOM_ERR_INVALID_ARG,
               "initializer \"w\": external data location \"../external.bin\" must be a relative path inside the model directory");
}

static void test_bert_like(void **state) {
  (void)state;
  Graph *g = load("bert_like.onnx");
  char *text = dump(g);
  /* Shape -> Slice -> Concat folded into the reshape target. */
  assert_non_null(strstr(text, "  %newshape = const i64[4] [1, 5, 2, 4]\n"));
  assert_null(strstr(text, "Shape("));
  assert_null(strstr(text, "Concat("));
  int64_t heads[] = {1, 5, 2, 4}, ht[] = {1, 2, 5, 4}, sc[] = {1, 2, 5, 5}, mu[] = {1, 5, 1}, mask[] = {1, 1, 1, 5};
  expect_shape(g, "heads", 4, heads);
  expect_shape(g, "ht", 4, ht);
  expect_shape(g, "scores", 4, sc);
  expect_shape(g, "y", 4, sc);
  expect_shape(g, "mu", 3, mu);
  expect_shape(g, "is0", 4, mask);
  assert_true(dtype_eq(g->values[find_value(g, "is0e")].dtype, DT_BOOL1));
  assert_true(dtype_eq(g->values[find_value(g, "maskf")].dtype, DT_F32));
  free(text);
  graph_free(g);
}

/* FlexAttention expands into default-domain ops; its score_mod is inlined
 * (reading the graph's initializer "bias"). */
static void test_flex_attention(void **state) {
  (void)state;
  Graph *g = load("flex_gqa.onnx");
  expect_shape(g, "y", 4, (int64_t[]){1, 4, 3, 6});
  char *text = dump(g);
  if (!strstr(text, "Softmax")) fail_msg("no Softmax in:\n%s", text);
  free(text);
  graph_free(g);
  expect_error("flex_rank3.onnx", LOOM_ERR_INVALID_ARG, "FlexAttention (node \"flex_rank3\"): input 0 has rank 3");
  expect_error("flex_bad_mod.onnx", LOOM_ERR_INVALID_ARG,
               "FlexAttention (node \"flex_bad_mod\"): prob_mod must be a graph with one input and one output");
}

static void test_bad_models(void **state) {
  (void)state;
  expect_error("unsupported.onnx", LOOM_ERR_UNSUPPORTED,
               "2 nodes use unsupported operators: FancyOp (node \"fancy1\"), StringNormalizer (node \"strnorm1\")");
  expect_error("cycle.onnx", LOOM_ERR_INVALID_ARG, "the graph has a cycle: node \"cyc_");
  expect_error("dangling.onnx", LOOM_ERR_INVALID_ARG,
               "node \"dangling_add\" (Add): input \"nowhere\" is not a graph input, an initializer or the output of any node");
  expect_error("bad_attr.onnx", LOOM_ERR_INVALID_ARG, "node \"bad_concat\" (Concat): attribute \"axis\" has type FLOAT, expected INT");
  expect_error("bad_arity.onnx", LOOM_ERR_INVALID_ARG, "node \"bad_relu\" (Relu): expected 1 input, got 2");
  expect_error("opset29.onnx", LOOM_ERR_UNSUPPORTED, "ONNX opset 29 is not supported (supported: 1 to 28)");
  expect_error("string_input.onnx", LOOM_ERR_UNSUPPORTED, "graph input \"s\": data type STRING (8) is not supported");
  expect_error("shape_mismatch.onnx", LOOM_ERR_INVALID_ARG, "node \"mm_bad\" (MatMul): inner extents differ: \"x\" gives 4, \"w\" gives 5");
  expect_error("garbage.onnx", LOOM_ERR_PARSE, "protobuf: at byte 0:");
  expect_error("truncated.onnx", LOOM_ERR_PARSE, "protobuf: at byte");
  expect_error("empty.onnx", LOOM_ERR_PARSE, "ONNX model has no graph");
  expect_error("no_such_file.onnx", LOOM_ERR_IO, "cannot open");
}


/* Differential check of shape/dtype inference: random single-op branches
 * (random shapes, axes, pads, strides, dilations, auto_pad, ceil_mode...),
 * compared with ONNX's own shape inference, which make_models.py wrote to
 * random_ops.shapes as "name dtype d0,d1,..." lines. */
static void test_random_ops_vs_onnx_inference(void **state) {
  (void)state;
  Graph *g = load("random_ops.onnx");
  FILE *f = fopen(model_path("random_ops.shapes"), "r");
  assert_non_null(f);
  char line[1024];
  int checked = 0, mismatches = 0;
  while (fgets(line, sizeof line, f)) {
    char name[256], dt[16], dims_text[512];
    if (sscanf(line, "%255s %15s %511s", name, dt, dims_text) != 3) continue;
    const GraphValue *v = &g->values[find_value(g, name)];
    int64_t dims[16];
    int rank = 0;
    if (strcmp(dims_text, "-")) {
      for (char *p = dims_text; *p && rank < 16;) {
        dims[rank++] = strtoll(p, &p, 10);
        if (*p == ',') p++;
      }
    }
    char buf[16];
    bool ok = v->rank == rank && !strcmp(v->dtype.bits ? dtype_str(v->dtype, buf) : "?", dt);
    for (int k = 0; ok && k < rank; k++) ok = v->dims[k] == dims[k];
    if (!ok) {
      StrBuf sb;
      sb_init(&sb);
      graph_print_value_type(g, find_value(g, name), &sb);
      print_error("%s: loom %s, onnx %s", name, sb_cstr(&sb), line);
      sb_free(&sb);
      mismatches++;
    }
    checked++;
  }
  fclose(f);
  assert_true(checked >= 200);
  assert_int_equal(mismatches, 0);

  /* Shape (with start/end), Range and ConstantOfShape fold to constants
   * whose values numpy computed (random_ops.values: "name v0,v1,..."). */
  f = fopen(model_path("random_ops.values"), "r");
  assert_non_null(f);
  int folded = 0;
  while (fgets(line, sizeof line, f)) {
    char name[256], vals[768];
    if (sscanf(line, "%255s %767s", name, vals) != 2) continue;
    const GraphTensor *t = graph_value_constant(g, find_value(g, name));
    if (!t) fail_msg("%s was not folded", name);
    int64_t k = 0;
    if (strcmp(vals, "-")) {
      for (char *p = vals; *p; k++) {
        int64_t expect = strtoll(p, &p, 10);
        if (*p == ',') p++;
        assert_true(k < graph_tensor_numel(t));
        if (graph_tensor_get_i64(t, k) != expect) fail_msg("%s[%lld]: %lld, expected %lld", name, (long long)k,
                                                           (long long)graph_tensor_get_i64(t, k), (long long)expect);
      }
    }
    assert_int_equal(k, graph_tensor_numel(t));
    folded++;
  }
  fclose(f);
  assert_true(folded >= 20);
  graph_free(g);
}

/* onnx_input_names (what `loom run MODEL.onnx` reads instead of importing)
 * agrees with the importer's graph inputs, initializers listed among the
 * inputs (old exporters, opset 7) left out; a bad file gets an error. */
static void test_input_names(void **state) {
  (void)state;
  static const char *const models[] = {"conv_bn_relu.onnx", "mlp.onnx", "shape_chain_dynamic.onnx", "opset7.onnx",
                                       "opset17.onnx", "external.onnx", "bert_like.onnx"};
  for (size_t m = 0; m < sizeof models / sizeof models[0]; m++) {
    LoomError err = {0};
    Graph *g = onnx_import_file(model_path(models[m]), &err);
    if (!g) fail_msg("%s: %s", models[m], err.msg);
    Arena *a = arena_new();
    const char **names = NULL;
    int n = onnx_input_names(model_path(models[m]), a, &names, NULL, &err);
    if (n != g->ninputs) fail_msg("%s: %d input names, the importer has %d inputs (%s)", models[m], n, g->ninputs, err.msg);
    for (int k = 0; k < n; k++) assert_string_equal(names[k], g->values[g->inputs[k]].name);
    arena_free(a);
    graph_free(g);
  }
  LoomError err = {0};
  Arena *a = arena_new();
  const char **names = NULL;
  assert_int_equal(onnx_input_names(model_path("no_such_model.onnx"), a, &names, NULL, &err), -1);
  assert_non_null(strstr(err.msg, "cannot open"));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_bn_relu), cmocka_unit_test(test_mlp),          cmocka_unit_test(test_shape_chain),
      cmocka_unit_test(test_shape_chain_dynamic),
      cmocka_unit_test(test_opset7),       cmocka_unit_test(test_opset17),      cmocka_unit_test(test_external_data),
      cmocka_unit_test(test_bert_like),    cmocka_unit_test(test_bad_models),
      cmocka_unit_test(test_flex_attention),      cmocka_unit_test(test_input_names),
      cmocka_unit_test(test_random_ops_vs_onnx_inference),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

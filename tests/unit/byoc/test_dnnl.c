/* The oneDNN back end's build-time half (src/byoc/backend_dnnl.c): a chain
 * of convolutions merges into one region, one blob of several primitives,
 * and codegen reports the workspace oneDNN's planner (in the runtime
 * library, loaded into codegen's child) asks for: at least the tensor
 * between the two convolutions, which lives there, not in a buffer of
 * oneDNN's. A runtime library that cannot be found is an error naming it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "byoc/backends/dnnl_blob.h"
#include "byoc/byoc.h"
#include "unit/graph/graph_build.h"

/* x[1, 16, 14, 14] -> Conv -> Relu -> Conv -> Relu -> y, partitioned by
 * dnnl; region 0's codegen into k. */
static loom_status generate(ByocKernel *k, LoomError *err, Graph **graph, ByocSession **session) {
  Graph *g = graph_new("t");
  uint64_t seed = 7;
  int64_t d[4] = {1, 16, 14, 14};
  ValueId x = gb_input(g, "x", 4, d);
  ValueId h = gb_unary(g, GRAPH_OP_RELU, "relu1", gb_conv(g, "conv1", x, 16, 16, 3, 1, 1, true, &seed));
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu2", gb_conv(g, "conv2", h, 16, 16, 3, 1, 1, true, &seed)));
  assert_int_equal(graph_pass_infer(g, err), LOOM_OK);
  ByocSession *s = byoc_session_new(1);
  assert_int_equal(byoc_session_add(s, byoc_dnnl_plugin(), "dnnl", NULL, err), LOOM_OK);
  assert_int_equal(byoc_partition(s, g, err), LOOM_OK);
  assert_int_equal(s->nregions, 1);
  assert_int_equal(s->regions[0].view.ncomposites, 2); /* merged: conv+relu, conv+relu */
  *graph = g;
  *session = s;
  return byoc_codegen(s, 0, "k0_dnnl", k, err);
}

static void test_chain_workspace(void **state) {
  (void)state;
  ByocKernel k;
  LoomError err = {0};
  Graph *g;
  ByocSession *s;
  if (generate(&k, &err, &g, &s)) fail_msg("%s", err.msg);
  assert_string_equal(k.runtime_entry, DNNL_RUNTIME_ENTRY);
  DnnlBlobHeader h;
  assert_true(k.blob_size >= sizeof h);
  memcpy(&h, k.blob, sizeof h);
  assert_int_equal(h.version, DNNL_BLOB_VERSION);
  assert_int_equal(h.nops, 2);
  assert_int_equal(h.nvalues, 3); /* x, the tensor between the convolutions, y */
  assert_int_equal(k.blob_size, dnnl_blob_size(h.nvalues, h.nops));
  assert_true(h.plan_threads >= 1);
  assert_int_equal(k.workspace_bytes, h.workspace_bytes);
  assert_true(k.workspace_bytes >= 16 * 14 * 14 * sizeof(float));
  byoc_session_free(s);
  graph_free(g);
}

static void test_missing_runtime(void **state) {
  (void)state;
  ByocKernel k;
  LoomError err = {0};
  Graph *g;
  ByocSession *s;
  setenv("LOOM_BYOC_DNNL_RUNTIME", "/nonexistent/libloom_byoc_dnnl_rt.so", 1);
  loom_status st = generate(&k, &err, &g, &s);
  unsetenv("LOOM_BYOC_DNNL_RUNTIME");
  assert_int_not_equal(st, LOOM_OK);
  assert_non_null(strstr(err.msg, "BYOC back end \"dnnl\": codegen of region 0"));
  assert_non_null(strstr(err.msg, "cannot load the runtime library \"/nonexistent/libloom_byoc_dnnl_rt.so\""));
  byoc_session_free(s);
  graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_workspace),
      cmocka_unit_test(test_missing_runtime),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

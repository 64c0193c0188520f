/* A BYOC plugin that misbehaves in one way per build (BAD_MODE_<mode>,
 * tests/CMakeLists.txt), for tests/byoc/test_byoc.py: each must end in a
 * `loom: error:` naming the plugin, never a dead compiler.
 *
 *   abi      reports the previous ABI version
 *   nosym    exports no loom_byoc_register
 *   crash    dies in codegen (a write through a null pointer)
 *   badc     returns text that is not C
 *   veto     vetoes every node
 *   runtime  names $LOOM_TEST_BYOC_RUNTIME as its runtime library (the
 *            test deletes it before running the artifact)
 *   blob     a good one in the other form: a blob (the element count) and
 *            a runtime entry in this very library, whose init fails when
 *            $LOOM_TEST_BYOC_INIT_FAIL is set
 * Otherwise it claims Relu over f32 and emits a correct loop. With
 * $LOOM_TEST_BYOC_EXPECT_THREADS set (at codegen for the C form, at load
 * for the blob form) the kernel fails unless the model runs on that many
 * threads: the model's thread count must reach the back end. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include <loom/loom_byoc.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int relu_f32(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  return loom_byoc_is_f32(&g->tensors[g->nodes[node].outputs[0]]);
}

static int supports(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)g, (void)node, (void)user;
#ifdef BAD_MODE_veto
  return 0;
#else
  return 1;
#endif
}

static int codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)errbuf, (void)errlen, (void)user;
#ifdef BAD_MODE_crash
  volatile int *p = NULL;
  *p = 1;
#endif
  const loom_byoc_node *n = &r->graph.nodes[0];
  long count = (long)loom_byoc_numel(&r->graph.tensors[n->outputs[0]]);
#ifdef BAD_MODE_blob
  int64_t *blob = malloc(sizeof *blob);
  if (!blob) return 1;
  *blob = count;
  out->blob = blob;
  out->blob_size = sizeof *blob;
  out->runtime_entry = "bad_relu_runtime";
  return 0;
#endif
  char *text = malloc(512);
  if (!text) return 1;
#ifdef BAD_MODE_badc
  snprintf(text, 512, "this is not C { %s %ld", r->symbol, count);
#else
  const char *expect = getenv("LOOM_TEST_BYOC_EXPECT_THREADS");
  snprintf(text, 512,
           "static int32_t %s(void *const *data, void *workspace, int32_t num_threads) {\n"
           "  (void)workspace;\n"
           "  if (num_threads %s %d) return 1;\n"
           "  const float *x = data[%d];\n  float *y = data[%d];\n"
           "  for (long i = 0; i < %ldL; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;\n"
           "  return 0;\n}\n",
           r->symbol, expect ? "!=" : "<", expect ? atoi(expect) : 1, (int)loom_byoc_param(r, n->inputs[0]),
           (int)loom_byoc_param(r, n->outputs[0]), count);
#endif
  out->c_source = text;
  return 0;
}

static const loom_byoc_step k_relu[] = {{.ops = "Relu", .where = relu_f32}, {0}};
static const loom_byoc_pattern k_patterns[] = {{"bad.relu", k_relu}, {NULL, NULL}};

static loom_byoc_plugin k_plugin = {
#ifdef BAD_MODE_abi
    .abi_version = LOOM_BYOC_ABI_VERSION - 1, /* built against the previous version */
#else
    .abi_version = LOOM_BYOC_ABI_VERSION,
#endif
    .name = "bad",
    .patterns = k_patterns,
    .supports = supports,
    .codegen = codegen,
};

#ifdef BAD_MODE_blob
/* The run-time half: state = the element count from the blob. */
static int rt_init(const void *blob, size_t size, const void *const *weights, int32_t nparams, int32_t num_threads,
                   void **state) {
  (void)weights;
  const char *expect = getenv("LOOM_TEST_BYOC_EXPECT_THREADS");
  if (num_threads < 1 || (expect && num_threads != atoi(expect))) return 9;
  if (size != sizeof(int64_t) || nparams != 2 || getenv("LOOM_TEST_BYOC_INIT_FAIL")) return 7;
  int64_t *count = malloc(sizeof *count);
  if (!count) return 1;
  memcpy(count, blob, sizeof *count);
  *state = count;
  return 0;
}

static int rt_run(void *state, void *const *data, void *workspace) {
  (void)workspace;
  const float *x = data[0];
  float *y = data[1];
  for (int64_t i = 0; i < *(const int64_t *)state; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  return 0;
}

static const loom_byoc_runtime k_runtime = {LOOM_BYOC_ABI_VERSION, rt_init, rt_run, free};

const loom_byoc_runtime *bad_relu_runtime(void);
const loom_byoc_runtime *bad_relu_runtime(void) { return &k_runtime; }
#endif

#ifdef BAD_MODE_nosym
const loom_byoc_plugin *loom_byoc_register_v0(void);
const loom_byoc_plugin *loom_byoc_register_v0(void) { return &k_plugin; }
#else
const loom_byoc_plugin *loom_byoc_register(void);
const loom_byoc_plugin *loom_byoc_register(void) {
#ifdef BAD_MODE_runtime
  k_plugin.runtime_library = getenv("LOOM_TEST_BYOC_RUNTIME");
#endif
#ifdef BAD_MODE_blob
  Dl_info self; /* this library is its own runtime library */
  if (dladdr(&k_plugin, &self) && self.dli_fname) k_plugin.runtime_library = self.dli_fname;
#endif
  return &k_plugin;
}
#endif

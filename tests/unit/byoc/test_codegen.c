/* A plugin's codegen runs in a child process (src/byoc/codegen.c): whatever
 * it does, the compiler gets either its code or an error naming the back
 * end and the region, never a crash of its own. One Relu region per case;
 * each codegen misbehaves (or behaves) in its own way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "byoc/byoc.h"
#include "unit/graph/graph_build.h"

static int cg_c(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)errbuf, (void)errlen, (void)user;
  char *text = malloc(256);
  snprintf(text, 256, "static int32_t %s(void *const *data, void *workspace, int32_t num_threads) { return 0; }",
           r->symbol);
  out->c_source = text;
  out->workspace_bytes = 128;
  return 0;
}

static int cg_blob(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)errbuf, (void)errlen, (void)user;
  out->blob = malloc(3);
  memcpy(out->blob, "abc", 3);
  out->blob_size = 3;
  out->runtime_entry = "my_runtime";
  return 0;
}

static int cg_refuse(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)user;
  snprintf(errbuf, errlen, "no thanks");
  return 1;
}

static int cg_empty(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)errbuf, (void)errlen, (void)user;
  return 0;
}

static int cg_abort(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)errbuf, (void)errlen, (void)user;
  abort();
}

static int cg_exit(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)r, (void)out, (void)errbuf, (void)errlen, (void)user;
  _exit(5); /* not exit: no atexit handlers (cmocka's, the leak checker's) in the child */
}

static const loom_byoc_step k_relu[] = {{.ops = "Relu"}, {0}};
static const loom_byoc_pattern k_patterns[] = {{"t.relu", k_relu}, {NULL, NULL}};

typedef int (*CodegenFn)(const loom_byoc_region *, loom_byoc_code *, char *, size_t, void *);

/* Partitions x -> Relu -> y with a plugin using `cg` and generates the
 * region's kernel; returns the status, the kernel and message in out/err. */
static Graph *g_graph; /* the region's graph: the kernel's node names point into it until done() */

static loom_status generate(CodegenFn cg, const char *runtime_library, ByocKernel *out, LoomError *err,
                            ByocSession **session) {
  loom_byoc_plugin *p = calloc(1, sizeof *p); /* freed by done() */
  *p = (loom_byoc_plugin){LOOM_BYOC_ABI_VERSION, "t", k_patterns, NULL, 0, runtime_library, cg, NULL};
  Graph *g = graph_new("t");
  int64_t d[2] = {2, 3};
  gb_output(g, gb_unary(g, GRAPH_OP_RELU, "relu", gb_input(g, "x", 2, d)));
  assert_int_equal(graph_pass_infer(g, err), LOOM_OK);
  ByocSession *s = byoc_session_new(1);
  assert_int_equal(byoc_session_add(s, p, "t", NULL, err), LOOM_OK);
  assert_int_equal(byoc_partition(s, g, err), LOOM_OK);
  assert_int_equal(s->nregions, 1);
  memset(err, 0, sizeof *err);
  loom_status st = byoc_codegen(s, 0, "k0_t", out, err);
  g_graph = g;
  *session = s;
  return st;
}

static void done(ByocSession *s) {
  const loom_byoc_plugin *p = s->backends[0].plugin;
  byoc_session_free(s);
  free((void *)p);
  graph_free(g_graph);
  g_graph = NULL;
}

static void expect_error(CodegenFn cg, const char *runtime_library, const char *part) {
  ByocKernel k;
  LoomError err = {0};
  ByocSession *s;
  assert_int_not_equal(generate(cg, runtime_library, &k, &err, &s), LOOM_OK);
  assert_non_null(strstr(err.msg, "BYOC back end \"t\": codegen of region 0 (kernel k0_t)"));
  if (!strstr(err.msg, part)) fail_msg("expected \"%s\" in: %s", part, err.msg);
  done(s);
}

static void test_c_source(void **state) {
  (void)state;
  ByocKernel k;
  LoomError err = {0};
  ByocSession *s;
  assert_int_equal(generate(cg_c, NULL, &k, &err, &s), LOOM_OK);
  assert_string_equal(k.name, "k0_t");
  assert_string_equal(k.backend, "t");
  assert_non_null(strstr(k.source, "static int32_t k0_t_body(void *const *data, void *workspace, int32_t num_threads)"));
  assert_int_equal(k.workspace_bytes, 128);
  assert_null(k.runtime_entry);
  assert_int_equal(k.num_nodes, 1);
  assert_string_equal(k.nodes[0], "relu");
  assert_int_equal(k.flops, 6);
  done(s);
}

static void test_blob(void **state) {
  (void)state;
  ByocKernel k;
  LoomError err = {0};
  ByocSession *s;
  assert_int_equal(generate(cg_blob, "libm.so.6", &k, &err, &s), LOOM_OK);
  assert_string_equal(k.runtime_entry, "my_runtime");
  assert_int_equal(k.blob_size, 3);
  assert_memory_equal(k.blob, "abc", 3);
  assert_non_null(strstr(k.source, "loom_external_slot k0_t_external;"));
  done(s);
}

static void test_misbehaving(void **state) {
  (void)state;
  expect_error(cg_refuse, NULL, "failed: no thanks");
  expect_error(cg_empty, NULL, "returned nothing");
  expect_error(cg_blob, NULL, "names no runtime_library");
  expect_error(cg_abort, NULL, "crashed: signal 6");
  expect_error(cg_exit, NULL, "ended without a result (exit status 5)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_c_source),
      cmocka_unit_test(test_blob),
      cmocka_unit_test(test_misbehaving),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The pipelines as tables (compile_model.c's graph steps, lower.c's
 * lowering steps): the order `--dump-list-passes` prints and the dumps
 * follow is the order the passes run; tir_lower calls its dump hook around
 * exactly the steps it runs, and the hook changes nothing; pass lists with
 * unknown names are refused naming the valid ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "loom/loom_compile.h"
#include "support/arena.h"
#include "tir/text.h"
#include "tir/transform/transform.h"

static const char *const k_graph_steps[] = {
    "fold_empty", "fold_batchnorm", "canonicalize", "partition",  "split_gemv", "pack_matmul",
    "pack_rnn",   "cse",        "dce",            "layout_nchwc", "winograd",   "dce",
    "infer",      "attach_extents", "materialize_outputs", "fuse", "plan_memory",
};
static const char *const k_lowering_steps[] = {
    "simplify",        "lower_blocks",    "simplify",        "loop_partition", "simplify",
    "compact_buffers", "flatten_buffers", "legalize_narrow", "simplify",       "vectorize",
    "unroll",          "storage_rewrite", "simplify",        "inject_dma",     "verify_scratchpad",
    "plan_local_mem",
};
enum {
  NGRAPH = sizeof k_graph_steps / sizeof k_graph_steps[0],
  NLOWER = sizeof k_lowering_steps / sizeof k_lowering_steps[0],
  NSCRATCHPAD = 3, /* the last steps run on scratchpad kernels only */
};

static void test_pipeline_order(void **state) {
  (void)state;
  loom_pass_info info;
  int i = 0;
  for (; loom_compile_pass_info(i, &info); i++) {
    assert_true(i < NGRAPH + NLOWER);
    bool graph = i < NGRAPH;
    assert_string_equal(info.name, graph ? k_graph_steps[i] : k_lowering_steps[i - NGRAPH]);
    assert_string_equal(info.level, graph ? "graph" : "lowering");
  }
  assert_int_equal(i, NGRAPH + NLOWER);
  assert_int_equal(loom_compile_pass_info(-1, &info), 0);
  /* The conditions the listing prints. */
  assert_true(loom_compile_pass_info(0, &info));
  assert_null(info.condition); /* fold_empty: always */
  assert_true(loom_compile_pass_info(5, &info));
  assert_string_equal(info.condition, "opt level >= 2"); /* pack_matmul */
  assert_true(loom_compile_pass_info(3, &info));
  assert_null(info.condition); /* partition (BYOC): always, a no-op without --byoc */
  assert_true(loom_compile_pass_info(1, &info));
  assert_string_equal(info.condition, "opt level >= 1"); /* fold_batchnorm */
  assert_true(loom_compile_pass_info(NGRAPH + 3, &info));
  assert_string_equal(info.condition, "partition_loops");
  assert_true(loom_compile_pass_info(NGRAPH + 11, &info));
  assert_string_equal(info.condition, "storage_rewrite");
  assert_true(loom_compile_pass_info(NGRAPH + NLOWER - 1, &info));
  assert_non_null(strstr(info.condition, "local_mem")); /* plan_local_mem */
}

static void test_tir_pass_table(void **state) {
  (void)state;
  static const char *const names[] = {"simplify",        "lower_blocks",    "loop_partition",
                                      "compact_buffers", "flatten_buffers", "legalize_narrow",
                                      "vectorize",       "unroll",          "storage_rewrite",
                                      "inject_dma",      "verify_scratchpad", "plan_local_mem"};
  int n = -1;
  const TirPass *list = tir_pass_list(&n);
  assert_int_equal(n, (int)(sizeof names / sizeof names[0]));
  for (int i = 0; i < n; i++) {
    assert_string_equal(list[i].name, names[i]);
    assert_non_null(list[i].run);
    assert_ptr_equal(tir_pass_find(names[i]), &list[i]);
  }
  assert_null(tir_pass_find("fold_batchnorm"));
  assert_null(tir_pass_find(""));
  assert_null(tir_pass_find(NULL));
  /* Every step runs a pass of the list. */
  for (int i = 0; i < NLOWER; i++) {
    const TirPass *p = tir_lower_step(i, NULL);
    assert_non_null(p);
    assert_true(p >= list && p < list + n);
  }
  assert_null(tir_lower_step(NLOWER, NULL));
  assert_null(tir_lower_step(-1, NULL));
}

/* Graph and lowering names are one namespace for --dump-after. */
static void test_names_unambiguous(void **state) {
  (void)state;
  for (int i = 0; i < NGRAPH; i++)
    for (int k = 0; k < NLOWER; k++) assert_string_not_equal(k_graph_steps[i], k_lowering_steps[k]);
}

/* B = A * 2 + 1 over 30 elements, split by 8 (imperfect: a predicate), the
 * inner loop vectorized (docs/transform.md's example). */
static const char k_func[] = "func split_ew(A: f32[30], B: f32[30]) {\n"
                             "  block root() {\n"
                             "    for io in 0:4 {\n"
                             "      for ii in 0:8 vectorized {\n"
                             "        block B(vi: spatial[0:30] = ((io * 8) + ii)) where (((io * 8) + ii) < 30) {\n"
                             "          writes B[0:30]\n"
                             "          B[vi] = ((A[vi] * 2.0f32) + 1.0f32)\n"
                             "        }\n"
                             "      }\n"
                             "    }\n"
                             "  }\n"
                             "}\n";

typedef struct Calls {
  char log[2048];
  const PrimFunc *last_after; /* what the previous step returned */
  bool chained;               /* each step received what the one before returned */
} Calls;

static void record(void *user, const char *pass, int step, bool after, const PrimFunc *f) {
  Calls *c = user;
  size_t n = strlen(c->log);
  snprintf(c->log + n, sizeof c->log - n, "%s%s:%d:%s", n ? " " : "", after ? "after" : "before", step, pass);
  if (!after && c->last_after && c->last_after != f) c->chained = false;
  if (after) c->last_after = f;
}

/* The hook's log of one tir_lower run, checked against the unhooked result. */
static void lower_logged(const LowerOptions *base, Calls *calls) {
  Arena *a = arena_new();
  LoomError err = {0};
  const PrimFunc *f = tir_parse_func(a, k_func, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  memset(calls, 0, sizeof *calls);
  calls->chained = true;
  LowerOptions hooked = *base;
  hooked.dump = record;
  hooked.dump_user = calls;
  const PrimFunc *with = tir_lower(a, f, &hooked, &err);
  const PrimFunc *without = tir_lower(a, f, base, &err);
  assert_non_null(with);
  assert_non_null(without);
  assert_true(tir_func_equal(with, without));
  assert_ptr_equal(calls->last_after, with);
  assert_true(calls->chained);
  arena_free(a);
}

static void test_lower_hook_sees_every_step(void **state) {
  (void)state;
  Calls calls;
  LowerOptions opt = lower_options_default();
  lower_logged(&opt, &calls);
  char want[2048] = "";
  for (int i = 0; i < NLOWER - NSCRATCHPAD; i++) { /* not a scratchpad kernel */
    size_t n = strlen(want);
    snprintf(want + n, sizeof want - n, "%sbefore:%d:%s after:%d:%s", i ? " " : "", i + 1, k_lowering_steps[i], i + 1,
             k_lowering_steps[i]);
  }
  assert_string_equal(calls.log, want);

  /* Options that turn steps off take them out of the hook's sight too;
   * the others keep their step numbers. */
  opt.partition_loops = false;
  opt.storage_rewrite = false;
  opt.compact_buffers = false;
  lower_logged(&opt, &calls);
  assert_null(strstr(calls.log, "loop_partition"));
  assert_null(strstr(calls.log, "compact_buffers"));
  assert_null(strstr(calls.log, "storage_rewrite"));
  assert_null(strstr(calls.log, ":5:simplify"));
  assert_non_null(strstr(calls.log, "after:3:simplify before:7:flatten_buffers"));
  assert_non_null(strstr(calls.log, "after:11:unroll before:13:simplify after:13:simplify"));
}

static void test_check_pass_list(void **state) {
  (void)state;
  char msg[1024];
  assert_int_equal(loom_compile_check_pass_list(NULL, msg, sizeof msg), LOOM_OK);
  assert_int_equal(loom_compile_check_pass_list("all", msg, sizeof msg), LOOM_OK);
  assert_int_equal(loom_compile_check_pass_list("fold_batchnorm,vectorize,dce", msg, sizeof msg), LOOM_OK);

  assert_int_equal(loom_compile_check_pass_list("fuse,fusion", msg, sizeof msg), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(msg, "unknown pass \"fusion\""));
  /* Every name once, in order, graph then lowering. */
  const char *first = strstr(msg, "fold_empty"), *last = strstr(msg, "storage_rewrite");
  assert_non_null(first);
  assert_non_null(last);
  assert_true(first < strstr(msg, "plan_memory") && strstr(msg, "plan_memory") < strstr(msg, "simplify") &&
              strstr(msg, "simplify") < last);
  assert_null(strstr(strstr(msg, "dce") + 3, "dce"));
  assert_null(strstr(strstr(msg, "simplify") + 8, "simplify"));

  assert_int_equal(loom_compile_check_pass_list("dce,,cse", msg, sizeof msg), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(msg, "empty pass name"));
  assert_int_equal(loom_compile_check_pass_list("", msg, sizeof msg), LOOM_ERR_INVALID_ARG);
  assert_int_equal(loom_compile_check_pass_list("vectorize,", msg, sizeof msg), LOOM_ERR_INVALID_ARG);
  /* A prefix of a name is not the name. */
  assert_int_equal(loom_compile_check_pass_list("vector", msg, sizeof msg), LOOM_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pipeline_order),
      cmocka_unit_test(test_tir_pass_table),
      cmocka_unit_test(test_names_unambiguous),
      cmocka_unit_test(test_lower_hook_sees_every_step),
      cmocka_unit_test(test_check_pass_list),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

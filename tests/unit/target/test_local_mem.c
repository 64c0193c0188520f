/* A scratchpad target (--target-opt local_mem=SIZE[,dma=sync|double]):
 * sizes with units, clear refusals, the description `loom target` prints,
 * and what the C back end emits for DMA statements (calls of the hooks,
 * whose memcpy defaults it compiles in unless LOOM_DMA_HOOKS is defined). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "target/codegen_c.h"
#include "target/target.h"
#include "tir/text.h"

static void test_local_mem_option(void **state) {
  (void)state;
  LoomError err = {0};
  Target t = target_host();
  assert_int_equal(t.local_mem_bytes, 0); /* never the host's own */
  assert_int_equal(target_apply_options(&t, "local_mem=64KiB", &err), LOOM_OK);
  assert_int_equal(t.local_mem_bytes, 64 * 1024);
  assert_false(t.dma_double_buffer);
  assert_int_equal(target_apply_options(&t, "dma=double,local_mem=256K", &err), LOOM_OK); /* any order */
  assert_int_equal(t.local_mem_bytes, 256 * 1024);
  assert_true(t.dma_double_buffer);
  assert_int_equal(target_apply_options(&t, "local_mem=2048,dma=sync", &err), LOOM_OK);
  assert_int_equal(t.local_mem_bytes, 2048);
  assert_false(t.dma_double_buffer);
  Target a;
  assert_int_equal(target_parse("aarch64", &a, &err), LOOM_OK);
  assert_int_equal(target_apply_options(&a, "local_mem=1MiB", &err), LOOM_OK);
  assert_int_equal(a.local_mem_bytes, 1024 * 1024);
}

static void test_bad_values(void **state) {
  (void)state;
  const char *bad[][2] = {{"local_mem=", "local_mem="},          {"local_mem=64QB", "from 1KiB to 1GiB"},
                          {"local_mem=512", "from 1KiB to 1GiB"}, {"local_mem=2GiB", "from 1KiB to 1GiB"},
                          {"local_mem=-4K", "such as 64KiB"},     {"local_mem=64KiB,dma=async", "expected sync"},
                          {"dma=double", "add local_mem=SIZE"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    LoomError err = {0};
    Target t = target_host();
    assert_int_equal(target_apply_options(&t, bad[i][0], &err), LOOM_ERR_INVALID_ARG);
    if (!strstr(err.msg, bad[i][1])) fail_msg("%s: %s", bad[i][0], err.msg);
  }
}

static void test_description(void **state) {
  (void)state;
  LoomError err = {0};
  Target t = target_host();
  char buf[2048];
  target_describe(&t, buf, sizeof buf);
  assert_null(strstr(buf, "local memory"));
  assert_int_equal(target_apply_options(&t, "local_mem=64KiB,dma=double", &err), LOOM_OK);
  target_describe(&t, buf, sizeof buf);
  assert_non_null(strstr(buf, "local memory: 64 KiB"));
  assert_non_null(strstr(buf, "DMA: loom_dma_get/loom_dma_put"));
  assert_non_null(strstr(buf, "double-buffered"));
}

/* A contiguous and a strided copy become calls of the hooks with byte
 * sizes; the default definitions come with them. */
static void test_codegen_calls(void **state) {
  (void)state;
  Arena *a = arena_new();
  LoomError err = {0};
  const char *ok = "func k(A: f32[64], B: f32[64]) local_mem(1024) {\n"
                   "  allocate T: f32[16] local {\n"
                   "    for t in 0:4 {\n"
                   "      dma_get(T[0], A[t * 16], 16, 1, 16, 16)\n"
                   "      dma_put(B[t * 16], T[0], 16, 1, 16, 16)\n"
                   "      dma_get(T[0], A[t], 1, 4, 4, 16)\n"
                   "    }\n"
                   "  }\n"
                   "}\n";
  PrimFunc *f = tir_parse_func(a, ok, &err);
  if (!f) fail_msg("%s", err.msg);
  assert_int_equal(tir_verify(f, &err), LOOM_OK);
  StrBuf out;
  sb_init(&out);
  if (codegen_c_func(&out, f, &err)) fail_msg("%s", err.msg);
  const char *c = sb_cstr(&out);
  assert_non_null(strstr(c, "loom_dma_get(&T[0], &A[(t * 16)], (size_t)(16) * 4);"));
  assert_non_null(strstr(c, "loom_dma_put(&B[(t * 16)], &T[0], (size_t)(16) * 4);"));
  assert_non_null(strstr(c, "loom_dma_get2d(&T[0], &A[t], (size_t)(1) * 4, (size_t)(4), (size_t)(4) * 4, (size_t)(16) * 4);"));
  assert_non_null(strstr(c, "#ifndef LOOM_DMA_HOOKS"));
  sb_free(&out);
  /* A wrong dma statement is a parse error naming what was expected. */
  assert_null(tir_parse_func(a, "func k(A: f32[4, 4], B: f32[16]) {\n  dma_get(B[0], A[0, 0], 4, 1, 4, 4)\n}\n", &err));
  assert_non_null(strstr(err.msg, "element of a 1-d buffer"));
  assert_null(tir_parse_func(a, "func k(A: f32[16], B: f32[16]) {\n  dma_get(B[0], A[0], 4)\n}\n", &err));
  assert_non_null(strstr(err.msg, "6 arguments"));
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_local_mem_option),
      cmocka_unit_test(test_bad_values),
      cmocka_unit_test(test_description),
      cmocka_unit_test(test_codegen_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

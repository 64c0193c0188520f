/* The allocation hook: unarmed it is libc; armed it counts every call and
 * fails exactly the chosen one; the arena's chunks go through it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "support/alloc.h"
#include "support/arena.h"

static void test_unarmed_is_libc(void **state) {
  (void)state;
  loom_alloc_test_disarm();
  char *s = loom_strdup("loom");
  assert_string_equal(s, "loom");
  int *z = loom_calloc(4, sizeof(int));
  assert_int_equal(z[0] + z[3], 0);
  z = loom_realloc(z, 64 * sizeof(int));
  assert_non_null(z);
  void *a = loom_aligned_alloc(64, 128);
  assert_int_equal((uintptr_t)a % 64, 0);
  loom_free(a);
  loom_free(z);
  loom_free(s);
  loom_free(NULL);
}

static void test_counts_bytes_and_calls(void **state) {
  (void)state;
  loom_alloc_test_arm(0);
  void *a = loom_malloc(10), *b = loom_calloc(3, 4);
  char *s = loom_strdup("abc"); /* 4 bytes with the NUL */
  size_t bytes = 0, count = 0;
  loom_alloc_test_stats(&bytes, &count);
  loom_alloc_test_disarm();
  assert_int_equal(count, 3);
  assert_int_equal(bytes, 10 + 12 + 4);
  assert_false(loom_alloc_test_failed());
  loom_free(a);
  loom_free(b);
  loom_free(s);
}

static void test_fails_only_the_chosen_call(void **state) {
  (void)state;
  loom_alloc_test_arm(2);
  void *a = loom_malloc(8);
  assert_false(loom_alloc_test_failed());
  void *b = loom_malloc(8);
  assert_true(loom_alloc_test_failed());
  void *c = loom_malloc(8);
  loom_alloc_test_disarm();
  assert_non_null(a);
  assert_null(b);
  assert_non_null(c);
  loom_free(a);
  loom_free(c);
}

/* A new arena allocates its header, then a chunk on the first request. */
static void test_arena_chunks_go_through_the_hook(void **state) {
  (void)state;
  loom_alloc_test_arm(0);
  Arena *ar = arena_new();
  (void)arena_alloc(ar, 100);
  (void)arena_alloc(ar, 100); /* same chunk */
  size_t bytes = 0, count = 0;
  loom_alloc_test_stats(&bytes, &count);
  loom_alloc_test_disarm();
  arena_free(ar);
  assert_int_equal(count, 2);
  assert_true(bytes >= 64 * 1024);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_unarmed_is_libc),
      cmocka_unit_test(test_counts_bytes_and_calls),
      cmocka_unit_test(test_fails_only_the_chosen_call),
      cmocka_unit_test(test_arena_chunks_go_through_the_hook),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

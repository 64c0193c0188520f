/* Shared helpers of the public-API tests: a context set up for tests (a
 * test cache directory, generated code compiled with -Werror), assertions on
 * the context's last failure, and 64-byte aligned DLTensors. */
#ifndef LOOM_TESTS_API_UTIL_H
#define LOOM_TESTS_API_UTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom/loom.h"

static inline loom_ctx *test_ctx(void) {
  loom_ctx *ctx = loom_ctx_create();
  assert_non_null(ctx);
  const char *dir = getenv("LOOM_TEST_CACHE_DIR");
  assert_int_equal(loom_ctx_set_cache_dir(ctx, dir && *dir ? dir : "/tmp/loom-test-cache"), LOOM_OK);
  assert_int_equal(loom_ctx_set_cflags(ctx, "-Wall -Wextra -Werror"), LOOM_OK);
  return ctx;
}

/* The last failure has `status` and its message contains every fragment. */
#define expect_error(ctx, st, ...) expect_error_impl((ctx), (st), __FILE__, __LINE__, __VA_ARGS__, NULL)
static inline void expect_error_impl(loom_ctx *ctx, loom_status st, const char *file, int line, ...) {
  const char *msg = loom_ctx_error(ctx);
  if (loom_ctx_status(ctx) != st)
    fail_msg("%s:%d: expected status %d, got %d (\"%s\")", file, line, (int)st,
             (int)loom_ctx_status(ctx), msg);
  va_list ap;
  va_start(ap, line);
  for (const char *frag = va_arg(ap, const char *); frag; frag = va_arg(ap, const char *))
    if (!strstr(msg, frag)) fail_msg("%s:%d: message \"%s\" lacks \"%s\"", file, line, msg, frag);
  va_end(ap);
  loom_ctx_clear_error(ctx);
}

/* Fails the test with the context's message when `ok` is false. */
#define must(ctx, ok)                                                                    \
  do {                                                                                   \
    if (!(ok)) fail_msg("%s:%d: %s failed: %s", __FILE__, __LINE__, #ok, loom_ctx_error(ctx)); \
  } while (0)

typedef struct TestTensor {
  DLTensor dl;
  int64_t shape[8];
  void *data;
} TestTensor;

static inline void test_tensor_init(TestTensor *t, loom_dtype dt, int ndim, const int64_t *shape,
                                    size_t elem_bytes) {
  size_t n = 1;
  for (int d = 0; d < ndim; d++) {
    t->shape[d] = shape[d];
    n *= (size_t)shape[d];
  }
  t->data = aligned_alloc(64, (n * elem_bytes + 63) / 64 * 64);
  assert_non_null(t->data);
  memset(t->data, 0, n * elem_bytes);
  t->dl = loom_dltensor(t->data, dt, ndim, t->shape);
}

static inline float test_rand_f32(uint64_t *s) {
  *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
  return (float)((*s >> 40) & 0xffff) / 32768.0f - 1.0f;
}

#endif

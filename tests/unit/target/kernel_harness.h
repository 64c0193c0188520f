/* Helpers shared by the target tests: build hand-written lowered PrimFuncs,
 * compile them through the real cache and compiler, call them on DLTensors. */
#ifndef LOOM_TESTS_KERNEL_HARNESS_H
#define LOOM_TESTS_KERNEL_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/module.h"
#include "target/build.h"
#include "target/codegen_c.h"

/* Generated code must compile cleanly under the strictest flags we use. */
static inline BuildOptions harness_build_options(void) {
  BuildOptions o = {0};
  const char *dir = getenv("LOOM_TEST_CACHE_DIR");
  o.cache_dir = dir && *dir ? dir : "/tmp/loom-test-cache";
  o.include_dir = LOOM_SOURCE_DIR "/include";
  o.extra_flags = "-Wall -Wextra -Werror";
  return o;
}

static inline const Expr *h_i(Arena *a, int64_t v) { return expr_i64(a, v); }
static inline const Buffer *h_buf(Arena *a, const char *name, DType t, int64_t n) {
  const Expr *s = expr_i64(a, n);
  return buffer_new(a, name, t, 1, &s);
}
static inline const Expr *h_ld(Arena *a, const Buffer *b, const Expr *i) { return expr_load(a, b, &i, 1); }
static inline const Stmt *h_st(Arena *a, const Buffer *b, const Expr *i, const Expr *v) {
  return stmt_store(a, b, v, &i, 1);
}
static inline const Stmt *h_for(Arena *a, const Expr *var, int64_t ext, ForKind k, const Stmt *body) {
  return stmt_for(a, var, expr_i64(a, 0), expr_i64(a, ext), k, body);
}
static inline const Expr *h_ramp(Arena *a, const Expr *base, int lanes) {
  return expr_ramp(a, base, expr_i64(a, 1), lanes);
}

/* Generates C for n functions into one source and builds it with `cflags`
 * (NULL: the host's defaults; a Target's cflags build for its ISA level);
 * fails the test on error. *source_out (may be NULL) receives the text
 * (caller frees). */
static inline Module *harness_compile_cflags(PrimFunc *const *fs, int n, const char *cflags, char **source_out) {
  StrBuf sb;
  sb_init(&sb);
  codegen_c_prelude(&sb);
  LoomError err = {0};
  for (int i = 0; i < n; i++) {
    loom_status st = codegen_c_func(&sb, fs[i], &err);
    if (st) fprintf(stderr, "codegen of %s: %s\n", fs[i]->name, err.msg);
    assert_int_equal(st, LOOM_OK);
  }
  BuildOptions o = harness_build_options();
  o.cflags = cflags;
  BuildResult r;
  loom_status st = build_shared_object(sb_cstr(&sb), &o, &r, &err);
  if (st) fprintf(stderr, "build: %s\n--- source ---\n%s\n", err.msg, sb_cstr(&sb));
  assert_int_equal(st, LOOM_OK);
  Module *m = NULL;
  st = module_load(r.so_path, &m, &err);
  if (st) fprintf(stderr, "load: %s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  if (source_out)
    *source_out = sb_take(&sb);
  else
    sb_free(&sb);
  return m;
}

/* The same with the host's default flags. */
static inline Module *harness_compile(PrimFunc *const *fs, int n, char **source_out) {
  return harness_compile_cflags(fs, n, NULL, source_out);
}

static inline Kernel harness_kernel(Module *m, const char *name) {
  Kernel k;
  LoomError err = {0};
  loom_status st = module_get_kernel(m, name, &k, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  return k;
}

static inline DLTensor harness_tensor(void *data, uint8_t code, uint8_t bits, int ndim, int64_t *shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  return t;
}

#endif

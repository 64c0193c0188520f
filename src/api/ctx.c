/* The context: arena, last error, build and thread settings, and the list of
 * schedules and modules it must release. Plus the handle checks every entry
 * point starts with. */
#include "api/api_internal.h"
#include "support/alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_ctx *loom_ctx_create(void) {
  loom_ctx *ctx = loom_calloc(1, sizeof *ctx);
  if (!ctx) return NULL;
  ctx->magic = API_CTX;
  ctx->arena = arena_new();
  return ctx;
}

void loom_ctx_destroy(loom_ctx *ctx) {
  if (!api_ctx_ok(ctx)) return;
  for (loom_sched *s = ctx->scheds; s; s = s->next) sch_free(s->s);
  for (loom_module *m = ctx->modules; m; m = m->next) driver_module_free(m->m);
  threadpool_destroy(ctx->pool);
  arena_free(ctx->arena);
  ctx->magic = API_DEAD;
  loom_free(ctx);
}

bool api_ctx_ok(const loom_ctx *ctx) { return ctx && ctx->magic == API_CTX; }

const char *loom_ctx_error(const loom_ctx *ctx) {
  if (!api_ctx_ok(ctx)) return "loom_ctx_error: NULL or invalid context";
  return ctx->err.status == LOOM_OK ? "" : ctx->err.msg;
}

loom_status loom_ctx_status(const loom_ctx *ctx) {
  if (!api_ctx_ok(ctx)) return LOOM_ERR_INVALID_ARG;
  return ctx->err.status;
}

void loom_ctx_clear_error(loom_ctx *ctx) {
  if (api_ctx_ok(ctx)) err_clear(&ctx->err);
}

loom_status api_fail(loom_ctx *ctx, loom_status st, const char *fn, const char *fmt, ...) {
  if (!api_ctx_ok(ctx)) return st;
  char msg[sizeof ctx->err.msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx->err_count++;
  return err_set(&ctx->err, st, "%s: %s", fn, msg);
}

loom_status api_fail_err(loom_ctx *ctx, const char *fn, const LoomError *err) {
  loom_status st = err->status != LOOM_OK ? err->status : LOOM_ERR_INTERNAL;
  return api_fail(ctx, st, fn, "%s", err->msg[0] ? err->msg : "failed without a message");
}

static const char *kind_name(uint32_t kind) {
  switch (kind) {
  case API_CTX: return "context";
  case API_TENSOR: return "tensor";
  case API_EXPR: return "expression";
  case API_FUNC: return "function";
  case API_SCHED: return "schedule";
  case API_MODULE: return "module";
  default: return "handle";
  }
}

bool api_check(loom_ctx *ctx, const void *h, uint32_t kind, const char *fn, const char *arg) {
  if (!h) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "argument %s is NULL, expected a %s", arg,
             kind_name(kind));
    return false;
  }
  const ApiHead *head = h;
  if (head->magic == API_DEAD) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "argument %s is a %s that was already freed", arg,
             kind_name(kind));
    return false;
  }
  if (head->magic != kind) {
    const char *got = kind_name(head->magic);
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "argument %s is a %s, expected a %s", arg,
             strcmp(got, "handle") ? got : "pointer to something else", kind_name(kind));
    return false;
  }
  if (ctx && head->ctx != ctx) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "argument %s belongs to another context", arg);
    return false;
  }
  return true;
}

loom_ctx *api_ctx_of(const void *h, uint32_t kind) {
  const ApiHead *head = h;
  if (!head || head->magic != kind || !api_ctx_ok(head->ctx)) return NULL;
  return head->ctx;
}

loom_status loom_ctx_set_num_threads(loom_ctx *ctx, int n) {
  if (!api_ctx_ok(ctx)) return LOOM_ERR_INVALID_ARG;
  if (n < 0)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_num_threads",
                    "n is %d, expected >= 1 or 0 for the default", n);
  ctx->num_threads = n;
  return LOOM_OK;
}

static loom_status set_string(loom_ctx *ctx, const char **slot, const char *value) {
  if (!api_ctx_ok(ctx)) return LOOM_ERR_INVALID_ARG;
  *slot = value ? arena_strdup(ctx->arena, value) : NULL;
  return LOOM_OK;
}

loom_status loom_ctx_set_cache_dir(loom_ctx *ctx, const char *dir) {
  if (api_ctx_ok(ctx) && dir && !*dir)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_cache_dir",
                    "dir is empty, expected a path or NULL");
  return set_string(ctx, ctx ? &ctx->cache_dir : NULL, dir);
}

loom_status loom_ctx_set_include_dir(loom_ctx *ctx, const char *dir) {
  if (api_ctx_ok(ctx) && dir && !*dir)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, "loom_ctx_set_include_dir",
                    "dir is empty, expected a path or NULL");
  return set_string(ctx, ctx ? &ctx->include_dir : NULL, dir);
}

loom_status loom_ctx_set_cflags(loom_ctx *ctx, const char *extra_flags) {
  return set_string(ctx, ctx ? &ctx->cflags : NULL, extra_flags);
}

/* ---- dtypes ---- */

bool api_dtype(loom_dtype t, DType *out) {
  switch (t) {
  case LOOM_F32: *out = DT_F32; return true;
  case LOOM_F64: *out = DT_F64; return true;
  case LOOM_I8: *out = DT_I8; return true;
  case LOOM_I32: *out = DT_I32; return true;
  case LOOM_I64: *out = DT_I64; return true;
  case LOOM_U8: *out = DT_U8; return true;
  case LOOM_BOOL: *out = DT_BOOL1; return true;
  }
  return false;
}

loom_dtype api_dtype_public(DType t) {
  static const loom_dtype all[] = {LOOM_F32, LOOM_F64, LOOM_I8, LOOM_I32,
                                   LOOM_I64, LOOM_U8,  LOOM_BOOL};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
    DType d;
    if (api_dtype(all[i], &d) && dtype_eq(d, t)) return all[i];
  }
  return (loom_dtype)-1;
}

const char *loom_dtype_name(loom_dtype t) {
  DType d;
  char buf[16];
  if (!api_dtype(t, &d)) return "?";
  /* lanes == 1: dtype_str returns a static string */
  return dtype_str(d, buf);
}

/* Internals of the public API (include/loom/loom.h): the structs behind the
 * opaque handles and the helpers every entry point uses to validate them.
 *
 * Every handle starts with an ApiHead: a magic number naming its kind (so a
 * handle of the wrong kind, a freed one or a stray pointer is reported
 * rather than dereferenced as something else) and its context. Handles live
 * in the context's arena; freeing a schedule or module only flips its magic
 * to API_DEAD, so a later use is caught too. */
#ifndef LOOM_API_INTERNAL_H
#define LOOM_API_INTERNAL_H

#include "loom/loom.h"

#include "driver/driver.h"
#include "runtime/threadpool.h"
#include "support/arena.h"
#include "support/error.h"
#include "te/te.h"
#include "tir/schedule/schedule.h"

#include <stdbool.h>

enum {
  API_CTX = 0x4c43545au,
  API_TENSOR = 0x4c54454eu,
  API_EXPR = 0x4c455850u,
  API_FUNC = 0x4c46554eu,
  API_SCHED = 0x4c534348u,
  API_MODULE = 0x4c4d4f44u,
  API_DEAD = 0xdeaddeadu,
};

typedef struct ApiHead {
  uint32_t magic;
  loom_ctx *ctx;
} ApiHead;

struct loom_ctx {
  uint32_t magic;
  Arena *arena;
  LoomError err;
  uint64_t err_count; /* bumped by every failure: tells a callback's failure from an old one */
  int num_threads;    /* 0: default */
  ThreadPool *pool;   /* created on first run, rebuilt when num_threads changes */
  int pool_threads;
  const char *cache_dir, *include_dir, *cflags;
  loom_sched *scheds;   /* every schedule created, for loom_ctx_destroy */
  loom_module *modules; /* every module built */
};

struct loom_tensor {
  ApiHead h;
  TeTensor *t;
};

struct loom_expr {
  ApiHead h;
  const Expr *e;
  const IterVar *axis; /* reduce axes only */
};

struct loom_func {
  ApiHead h;
  const PrimFunc *f;
};

struct loom_sched {
  ApiHead h;
  Schedule *s;      /* NULL once released */
  bool funcs_taken; /* loom_sched_func handed out IR living in s's arena */
  loom_sched *next;
};

struct loom_module {
  ApiHead h;
  DriverModule *m; /* NULL once freed */
  loom_module *next;
};

/* Records a failure in ctx ("fn: message") and returns status. */
loom_status api_fail(loom_ctx *ctx, loom_status st, const char *fn, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Records an internal layer's error, prefixed with the API function. */
loom_status api_fail_err(loom_ctx *ctx, const char *fn, const LoomError *err);

/* Handle checks: true when h is a live handle of `kind` (and, when ctx is
 * given, of that context). Otherwise record why (when a context is known)
 * naming the function and the argument. */
bool api_check(loom_ctx *ctx, const void *h, uint32_t kind, const char *fn, const char *arg);
/* The context of a handle of `kind`, or NULL when h is not one. */
loom_ctx *api_ctx_of(const void *h, uint32_t kind);
bool api_ctx_ok(const loom_ctx *ctx);

/* A function handle for f (which must outlive ctx's use of it). */
loom_func *api_wrap_func(loom_ctx *ctx, const PrimFunc *f);

/* loom_dtype <-> DType. api_dtype fails (false) for values outside the enum. */
bool api_dtype(loom_dtype t, DType *out);
loom_dtype api_dtype_public(DType t);

#endif

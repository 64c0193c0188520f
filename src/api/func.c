/* Functions (PrimFuncs of blocks) and building them: the API's path through
 * te_create_primfunc / the text parser, tir_lower + C codegen, and the build
 * driver to a loaded module whose kernels run on DLPack tensors. */
#include "api/api_internal.h"

#include "support/alloc.h"
#include "support/strbuf.h"
#include "target/codegen_c.h"
#include "tir/text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#ifndef LOOM_API_DEFAULT_INCLUDE_DIR
#define LOOM_API_DEFAULT_INCLUDE_DIR NULL
#endif

static loom_func *wrap_func(loom_ctx *ctx, const PrimFunc *f) {
  loom_func *x = ARENA_NEW(ctx->arena, loom_func);
  x->h.magic = API_FUNC;
  x->h.ctx = ctx;
  x->f = f;
  return x;
}

loom_func *api_wrap_func(loom_ctx *ctx, const PrimFunc *f) { return wrap_func(ctx, f); }

static bool is_c_identifier(const char *s) {
  if (!s || !(isalpha((unsigned char)*s) || *s == '_')) return false;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_')) return false;
  return true;
}

loom_func *loom_func_create(loom_ctx *ctx, const char *name, loom_tensor *const *args, int n) {
  const char *fn = "loom_func_create";
  if (!api_ctx_ok(ctx)) return NULL;
  if (!is_c_identifier(name)) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "name \"%s\" is not a C identifier",
             name ? name : "(NULL)");
    return NULL;
  }
  if (n < 1 || !args) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "function \"%s\": %d arguments%s, expected >= 1",
             name, n, args ? "" : " (args is NULL)");
    return NULL;
  }
  TeTensor **ts = ARENA_ARRAY(ctx->arena, TeTensor *, n);
  for (int i = 0; i < n; i++) {
    if (!api_check(ctx, args[i], API_TENSOR, fn, "args[]")) {
      err_prefix(&ctx->err, "function \"%s\", argument %d: ", name, i);
      return NULL;
    }
    for (int j = 0; j < i; j++)
      if (args[j] == args[i]) {
        api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
                 "function \"%s\": tensor \"%s\" is argument %d and %d, expected once", name,
                 args[i]->t->name, j, i);
        return NULL;
      }
    ts[i] = args[i]->t;
  }
  LoomError err = {0};
  PrimFunc *f = te_create_primfunc(ctx->arena, name, ts, n, &err);
  if (!f) {
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  return wrap_func(ctx, f);
}

loom_func *loom_func_parse(loom_ctx *ctx, const char *text) {
  const char *fn = "loom_func_parse";
  if (!api_ctx_ok(ctx)) return NULL;
  if (!text) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "text is NULL");
    return NULL;
  }
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(ctx->arena, text, &err);
  if (f && tir_verify(f, &err) != LOOM_OK) f = NULL;
  if (!f) {
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  return wrap_func(ctx, f);
}

static const char *arena_take(loom_ctx *ctx, char *s) {
  const char *r = arena_strdup(ctx->arena, s ? s : "");
  loom_free(s);
  return r;
}

const char *loom_func_text(loom_ctx *ctx, const loom_func *f) {
  if (!api_ctx_ok(ctx) || !api_check(ctx, f, API_FUNC, "loom_func_text", "f")) return NULL;
  return arena_take(ctx, tir_print_func(f->f));
}

const char *loom_func_c_source(loom_ctx *ctx, const loom_func *f) {
  const char *fn = "loom_func_c_source";
  if (!api_ctx_ok(ctx) || !api_check(ctx, f, API_FUNC, fn, "f")) return NULL;
  LoomError err = {0};
  const PrimFunc *low = tir_lower(ctx->arena, f->f, NULL, &err);
  if (!low) {
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  StrBuf sb;
  sb_init(&sb);
  codegen_c_prelude(&sb);
  if (codegen_c_func(&sb, low, &err) != LOOM_OK) {
    sb_free(&sb);
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  return arena_take(ctx, sb_take(&sb));
}

const char *loom_func_name(const loom_func *f) {
  return api_ctx_of(f, API_FUNC) ? f->f->name : NULL;
}

int loom_func_num_params(const loom_func *f) {
  return api_ctx_of(f, API_FUNC) ? f->f->n_params : -1;
}

/* ---- parameters ---- */

typedef struct StoreSearch {
  const Buffer *param;
  bool found;
} StoreSearch;

/* Stores name the parameter by pointer, or by name after a primitive
 * rebuilt the buffer node (names are unique in a function). */
static bool find_store(Visitor *v, const Stmt *s) {
  StoreSearch *q = v->user;
  if (q->found) return false;
  if (s->kind == STMT_STORE &&
      (s->store.buffer == q->param || !strcmp(s->store.buffer->name, q->param->name)))
    q->found = true;
  return !q->found;
}

loom_status loom_func_param(loom_ctx *ctx, const loom_func *f, int i, loom_param *out) {
  const char *fn = "loom_func_param";
  if (!api_ctx_ok(ctx)) return LOOM_ERR_INVALID_ARG;
  if (!api_check(ctx, f, API_FUNC, fn, "f")) return LOOM_ERR_INVALID_ARG;
  const PrimFunc *pf = f->f;
  if (!out) return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "out is NULL");
  if (i < 0 || i >= pf->n_params)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn,
                    "function \"%s\" has %d parameters, got index %d", pf->name, pf->n_params, i);
  const Buffer *b = pf->params[i];
  loom_dtype dt = api_dtype_public(b->dtype);
  if ((int)dt < 0) {
    char buf[16];
    return api_fail(ctx, LOOM_ERR_UNSUPPORTED, fn,
                    "function \"%s\", parameter \"%s\": dtype %s has no loom_dtype", pf->name,
                    b->name, dtype_str(b->dtype, buf));
  }
  int64_t *shape = ARENA_ARRAY(ctx->arena, int64_t, b->ndim > 0 ? b->ndim : 1);
  for (int d = 0; d < b->ndim; d++) {
    if (b->shape[d]->kind != EXPR_INT)
      return api_fail(ctx, LOOM_ERR_UNSUPPORTED, fn,
                      "function \"%s\", parameter \"%s\": dimension %d is %s, expected a "
                      "constant",
                      pf->name, b->name, d, expr_to_string(ctx->arena, b->shape[d]));
    shape[d] = b->shape[d]->int_value;
  }
  StoreSearch q = {b, false};
  Visitor v = {.visit_stmt = find_store, .user = &q};
  visit_stmt(&v, pf->body);
  int elem = dtype_bytes(dtype_element(b->dtype));
  *out = (loom_param){.name = b->name,
                      .dtype = dt,
                      .ndim = b->ndim,
                      .shape = shape,
                      .align = b->align > elem ? b->align : elem,
                      .written = q.found};
  return LOOM_OK;
}

/* ---- build and run ---- */

loom_module *loom_build(loom_ctx *ctx, loom_func *const *funcs, int n) {
  const char *fn = "loom_build";
  if (!api_ctx_ok(ctx)) return NULL;
  if (n < 1 || !funcs) {
    api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "%d functions%s, expected >= 1", n,
             funcs ? "" : " (funcs is NULL)");
    return NULL;
  }
  const PrimFunc **fs = ARENA_ARRAY(ctx->arena, const PrimFunc *, n);
  for (int i = 0; i < n; i++) {
    if (!api_check(ctx, funcs[i], API_FUNC, fn, "funcs[]")) {
      err_prefix(&ctx->err, "function %d: ", i);
      return NULL;
    }
    fs[i] = funcs[i]->f;
    if (!is_c_identifier(fs[i]->name)) {
      api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "function %d is named \"%s\", expected a C identifier",
               i, fs[i]->name);
      return NULL;
    }
  }
  BuildOptions bo = {0};
  bo.cache_dir = ctx->cache_dir;
  bo.include_dir = ctx->include_dir;
  if (!bo.include_dir && !getenv("LOOM_INCLUDE_DIR")) bo.include_dir = LOOM_API_DEFAULT_INCLUDE_DIR;
  bo.extra_flags = ctx->cflags;
  DriverOptions opt = {.lower = NULL, .build = &bo};
  LoomError err = {0};
  DriverModule *dm = NULL;
  if (driver_build(ctx->arena, fs, n, &opt, &dm, &err) != LOOM_OK) {
    api_fail_err(ctx, fn, &err);
    return NULL;
  }
  loom_module *m = ARENA_NEW(ctx->arena, loom_module);
  m->h.magic = API_MODULE;
  m->h.ctx = ctx;
  m->m = dm;
  m->next = ctx->modules;
  ctx->modules = m;
  return m;
}

void loom_module_free(loom_module *m) {
  if (!api_ctx_of(m, API_MODULE)) return;
  driver_module_free(m->m);
  m->m = NULL;
  m->h.magic = API_DEAD;
}

const char *loom_module_source(loom_module *m) {
  loom_ctx *ctx = api_ctx_of(m, API_MODULE);
  if (!ctx) return NULL;
  return driver_source(m->m);
}

/* The context's pool, (re)created for its current thread setting. */
static loom_status ctx_pool(loom_ctx *ctx, ThreadPool **out) {
  int want = ctx->num_threads > 0 ? ctx->num_threads : threadpool_default_threads();
  if (!ctx->pool || ctx->pool_threads != want) {
    threadpool_destroy(ctx->pool);
    ctx->pool = NULL;
    LoomError err = {0};
    if (threadpool_create(want, &ctx->pool, &err) != LOOM_OK)
      return api_fail_err(ctx, "loom_module_run", &err);
    ctx->pool_threads = want;
  }
  *out = ctx->pool;
  return LOOM_OK;
}

loom_status loom_module_run(loom_module *m, const char *name, DLTensor *const *args, int n) {
  const char *fn = "loom_module_run";
  loom_ctx *ctx = m ? ((ApiHead *)m)->ctx : NULL;
  if (!api_ctx_ok(ctx)) return LOOM_ERR_INVALID_ARG;
  if (!api_check(ctx, m, API_MODULE, fn, "m")) return ctx->err.status;
  if (!name)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "name is NULL, expected a kernel name");
  if (n < 0 || (n > 0 && !args))
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "kernel \"%s\": %d arguments%s", name, n,
                    args ? "" : " (args is NULL)");
  int nf = driver_num_funcs(m->m), params = -1;
  for (int i = 0; i < nf; i++) {
    const PrimFunc *f = driver_lowered(m->m, i);
    if (!strcmp(f->name, name)) params = f->n_params;
  }
  if (params < 0)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "the module has no kernel named \"%s\"", name);
  if (n != params)
    return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "kernel \"%s\" takes %d tensors, got %d", name,
                    params, n);
  for (int i = 0; i < n; i++)
    if (!args[i] || !args[i]->data)
      return api_fail(ctx, LOOM_ERR_INVALID_ARG, fn, "kernel \"%s\": args[%d]%s is NULL", name, i,
                      args[i] ? "->data" : "");
  LoomError err = {0};
  Kernel k;
  if (driver_get_kernel(m->m, name, &k, &err) != LOOM_OK) return api_fail_err(ctx, fn, &err);
  ThreadPool *pool = NULL;
  loom_status st = ctx_pool(ctx, &pool);
  if (st != LOOM_OK) return st;
  if (kernel_call(&k, args, n, pool, NULL, &err) != LOOM_OK) return api_fail_err(ctx, fn, &err);
  return LOOM_OK;
}

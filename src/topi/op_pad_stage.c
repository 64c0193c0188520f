/* Constant padding as its own compute stage, as TVM's topi.nn.pad does: the
 * consumer then reads a plain tensor, and compute_inline can fold the select
 * back into it when a schedule prefers that. The windowed ops (op_nn.c,
 * op_conv_nd.c, op_pool.c, op_winograd.c) pad their input with it; ONNX's
 * Pad operator itself is topi_pad_onnx (op_transform.c: modes, negative
 * pads, no schedule rule). */
#include "topi/op_internal.h"

#include <string.h>

typedef struct PadArgs {
  const TeTensor *data;
  const int64_t *before, *after;
  const Expr *value;
} PadArgs;

static const Expr *pad_body(Arena *a, const Expr *const *ax, void *user) {
  PadArgs *p = user;
  int n = p->data->ndim;
  const Expr **idx = ARENA_ARRAY(a, const Expr *, n);
  const Expr *cond = NULL;
  for (int d = 0; d < n; d++) {
    idx[d] = p->before[d] ? expr_sub(a, ax[d], expr_i64(a, p->before[d])) : ax[d];
    if (p->before[d] == 0 && p->after[d] == 0) continue;
    const Expr *lo = expr_binary(a, EXPR_GE, ax[d], expr_i64(a, p->before[d]));
    const Expr *hi = expr_lt(a, ax[d], expr_i64(a, p->before[d] + p->data->shape[d]));
    const Expr *c = expr_and(a, lo, hi);
    cond = cond ? expr_and(a, cond, c) : c;
  }
  const Expr *load = te_load(a, p->data, idx);
  return cond ? expr_select(a, cond, load, p->value) : load;
}

TeTensor *topi_pad(Arena *a, const char *name, const TeTensor *data, const int64_t *before,
                   const int64_t *after, const Expr *pad_value, LoomError *err) {
  int n = data->ndim;
  int64_t *shape = ARENA_ARRAY(a, int64_t, n);
  for (int d = 0; d < n; d++) {
    if (before[d] < 0 || after[d] < 0) {
      err_set(err, LOOM_ERR_INVALID_ARG, "pad of \"%s\": negative padding on dimension %d",
              data->name, d);
      return NULL;
    }
    shape[d] = data->shape[d] + before[d] + after[d];
  }
  if (!dtype_eq(pad_value->dtype, data->dtype)) {
    char b1[16], b2[16];
    err_set(err, LOOM_ERR_INVALID_ARG, "pad of \"%s\": pad value has dtype %s, expected %s",
            data->name, dtype_str(pad_value->dtype, b1), dtype_str(data->dtype, b2));
    return NULL;
  }
  PadArgs p = {data, arena_memdup(a, before, sizeof(int64_t) * (size_t)n),
               arena_memdup(a, after, sizeof(int64_t) * (size_t)n), pad_value};
  /* NCHW and NCHWc get their usual axis names; anything else the defaults. */
  const char *const names[5] = {"n", "c", "h", "w", "cb"};
  /* Rule "pad": a stage of its own, never inlined (a select in its
   * consumer's hot loop); the consumer's schedule places it. */
  return te_set_schedule_rule(te_compute_named(a, name, n, shape, n == 4 || n == 5 ? names : NULL, pad_body, &p, err),
                              "pad");
}

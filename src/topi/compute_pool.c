/* 2-D max and average pooling over NCHW. */
#include "topi/topi.h"

typedef struct PoolArgs {
  const TeTensor *data; /* padded */
  const TeTensor *sum;  /* avg: the window sums */
  IterVar rh, rw;
  int64_t kernel, stride, pad, H, W;
  bool count_include_pad;
} PoolArgs;

static const Expr *pool_window_body(Arena *a, const Expr *const *ax, void *user, ReduceOp op) {
  PoolArgs *p = user;
  const Expr *st = expr_i64(a, p->stride);
  const Expr *idx[4] = {ax[0], ax[1], expr_add(a, expr_mul(a, ax[2], st), p->rh.var),
                        expr_add(a, expr_mul(a, ax[3], st), p->rw.var)};
  IterVar axes[2] = {p->rh, p->rw};
  return expr_reduce(a, op, te_load(a, p->data, idx), axes, 2, NULL);
}
static const Expr *pool_max_body(Arena *a, const Expr *const *ax, void *user) {
  return pool_window_body(a, ax, user, REDUCE_MAX);
}
static const Expr *pool_sum_body(Arena *a, const Expr *const *ax, void *user) {
  return pool_window_body(a, ax, user, REDUCE_SUM);
}

/* Number of in-bounds input rows covered by output row o:
 * min(o*st - pad + k, H) - max(o*st - pad, 0). */
static const Expr *valid_count(Arena *a, const Expr *o, const PoolArgs *p, int64_t extent) {
  const Expr *start = expr_sub(a, expr_mul(a, o, expr_i64(a, p->stride)), expr_i64(a, p->pad));
  const Expr *end = expr_min(a, expr_add(a, start, expr_i64(a, p->kernel)), expr_i64(a, extent));
  return expr_sub(a, end, expr_max(a, start, expr_i64(a, 0)));
}

static const Expr *pool_avg_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  const Expr *count;
  if (p->count_include_pad)
    count = expr_i64(a, p->kernel * p->kernel);
  else
    count = expr_mul(a, valid_count(a, ax[2], p, p->H), valid_count(a, ax[3], p, p->W));
  const Expr *div = expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax), expr_cast(a, DT_F32, count));
  return div;
}

PrimFunc *topi_pool2d(Arena *a, TopiPoolKind kind, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t kernel, int64_t stride, int64_t pad, bool count_include_pad,
                      LoomError *err) {
  const char *op = kind == TOPI_POOL_MAX ? "max_pool2d" : "avg_pool2d";
  if (kernel < 1 || stride < 1 || pad < 0 || pad >= kernel) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: kernel %lld and stride %lld must be >= 1, pad %lld in [0, kernel)", op,
            (long long)kernel, (long long)stride, (long long)pad);
    return NULL;
  }
  int64_t OH = topi_conv_out_extent(H, kernel, stride, pad);
  int64_t OW = topi_conv_out_extent(W, kernel, stride, pad);
  if (OH < 1 || OW < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel %lld does not fit the padded input %lldx%lld",
            op, (long long)kernel, (long long)(H + 2 * pad), (long long)(W + 2 * pad));
    return NULL;
  }
  TeTensor *data = te_placeholder(a, "data", DT_F32, 4, (int64_t[]){N, C, H, W}, err);
  if (!data) return NULL;
  const TeTensor *padded = data;
  if (pad > 0) {
    int64_t before[4] = {0, 0, pad, pad};
    const Expr *v = kind == TOPI_POOL_MAX ? reduce_identity(a, REDUCE_MAX, DT_F32)
                                          : expr_float(a, DT_F32, 0.0);
    padded = topi_pad(a, "pad", data, before, before, v, err);
    if (!padded) return NULL;
  }
  PoolArgs p = {padded, NULL, te_reduce_axis(a, "rh", kernel), te_reduce_axis(a, "rw", kernel),
                kernel, stride, pad, H, W, count_include_pad};
  int64_t oshape[4] = {N, C, OH, OW};
  const char *names[4] = {"n", "c", "oh", "ow"};
  TeTensor *out;
  if (kind == TOPI_POOL_MAX) {
    out = te_set_schedule_rule(te_compute_named(a, "pool_max", 4, oshape, names, pool_max_body, &p, err), "pool2d");
  } else {
    p.sum = te_set_schedule_rule(te_compute_named(a, "pool_sum", 4, oshape, names, pool_sum_body, &p, err), "pool2d");
    if (!p.sum) return NULL;
    out = te_compute_named(a, "pool_avg", 4, oshape, names, pool_avg_body, &p, err);
  }
  if (!out) return NULL;
  return te_create_primfunc(a, op, (TeTensor *[]){data, out}, 2, err);
}

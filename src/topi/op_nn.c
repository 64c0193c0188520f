/* Convolution and pooling with ONNX's attributes (asymmetric pads, strides,
 * dilations, groups, ceil_mode, count_include_pad), NCHW and the blocked
 * NCHWc layout. Padding is a stage of its own ("<name>_pad", as TVM's
 * topi.nn.pad) so the reduction reads a plain tensor and compute_inline can
 * fold the select back in when a schedule prefers that. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

typedef struct ConvDims {
  int64_t sh, sw, dh, dw, group;
  int64_t pt, pl, pb, pr;
  int64_t oh, ow;
} ConvDims;

static int64_t or_one(int64_t v) { return v == 0 ? 1 : v; }

/* Fills d from p and the input / kernel extents; false with a message. */
static bool conv_dims(const char *on, const TopiConvParams *p, int64_t H, int64_t W, int64_t R,
                      int64_t S, ConvDims *d, LoomError *err) {
  TopiConvParams zero;
  memset(&zero, 0, sizeof zero);
  if (!p) p = &zero;
  d->sh = or_one(p->strides[0]), d->sw = or_one(p->strides[1]);
  d->dh = or_one(p->dilations[0]), d->dw = or_one(p->dilations[1]);
  d->group = or_one(p->group);
  d->pt = p->pads[0], d->pl = p->pads[1], d->pb = p->pads[2], d->pr = p->pads[3];
  if (d->sh < 1 || d->sw < 1 || d->dh < 1 || d->dw < 1 || d->group < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: strides, dilations and group must be >= 1", on);
    return false;
  }
  if (d->pt < 0 || d->pl < 0 || d->pb < 0 || d->pr < 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: pads must be >= 0", on);
    return false;
  }
  int64_t spanh = H + d->pt + d->pb - d->dh * (R - 1) - 1;
  int64_t spanw = W + d->pl + d->pr - d->dw * (S - 1) - 1;
  if (spanh < 0 || spanw < 0) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: kernel %lldx%lld (dilated) is larger than the padded input %lldx%lld", on,
            (long long)R, (long long)S, (long long)(H + d->pt + d->pb),
            (long long)(W + d->pl + d->pr));
    return false;
  }
  d->oh = spanh / d->sh + 1;
  d->ow = spanw / d->sw + 1;
  return true;
}

/* The padded input, or x itself when there is no padding. dims: the index
 * of the H axis (W follows). */
static const TeTensor *pad_hw(Arena *a, const char *name, const TeTensor *x, int hdim, int64_t pt,
                              int64_t pl, int64_t pb, int64_t pr, const Expr *value,
                              LoomError *err) {
  if (pt == 0 && pl == 0 && pb == 0 && pr == 0) return x;
  int64_t before[TOPI_MAX_RANK] = {0}, after[TOPI_MAX_RANK] = {0};
  before[hdim] = pt, before[hdim + 1] = pl;
  after[hdim] = pb, after[hdim + 1] = pr;
  return topi_pad(a, op_stage(a, name, "pad"), x, before, after, value, err);
}

typedef struct ConvArgs {
  const TeTensor *x, *w, *bias, *conv;
  ConvDims d;
  int64_t cg, kg; /* input / output channels per group */
  int64_t kb;     /* NCHWc output block */
  IterVar rc, ry, rx, rci;
} ConvArgs;

static const Expr *bias_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *k = ax[1];
  if (c->kb) k = expr_add(a, expr_mul(a, ax[1], expr_i64(a, c->kb)), ax[4]);
  return expr_add(a, te_load(a, c->conv, ax), te_load(a, c->bias, &k));
}

static bool check_bias(const char *on, const TeTensor *bias, int64_t K, LoomError *err) {
  if (!bias) return true;
  if (!op_check_float(on, "B", bias, err)) return false;
  if (bias->ndim != 1 || bias->shape[0] != K) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Conv: bias B (\"%s\") must have shape [%lld]", bias->name,
            (long long)K);
    return false;
  }
  return true;
}

static const char *const nchw_names[4] = {"n", "c", "h", "w"};
static const char *const nchwc_names[5] = {"n", "c", "h", "w", "cb"};

/* 2-D NCHW: the N-D convolution (op_conv_nd.c) with two spatial axes. */
TeTensor *topi_conv2d_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                           const TeTensor *bias, const TopiConvParams *p, LoomError *err) {
  TopiWindowParams wp;
  memset(&wp, 0, sizeof wp);
  wp.nsp = 2;
  if (p) {
    memcpy(wp.strides, p->strides, sizeof p->strides);
    memcpy(wp.dilations, p->dilations, sizeof p->dilations);
    memcpy(wp.pads, p->pads, sizeof p->pads);
    wp.group = p->group;
  }
  return topi_conv_nd_onnx(a, name, x, w, bias, &wp, err);
}

static const Expr *conv_nchwc_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *ih = expr_add(a, expr_mul(a, ax[2], expr_i64(a, c->d.sh)),
                            expr_mul(a, c->ry.var, expr_i64(a, c->d.dh)));
  const Expr *iw = expr_add(a, expr_mul(a, ax[3], expr_i64(a, c->d.sw)),
                            expr_mul(a, c->rx.var, expr_i64(a, c->d.dw)));
  /* Grouped: the input blocks of output block ko's group (cg, kg: input
   * and output blocks per group). */
  const Expr *co = c->rc.var;
  if (c->d.group > 1)
    co = expr_add(a, expr_mul(a, expr_floordiv(a, ax[1], expr_i64(a, c->kg)), expr_i64(a, c->cg)), co);
  const Expr *xi[5] = {ax[0], co, ih, iw, c->rci.var};
  const Expr *wi[6] = {ax[1], c->rc.var, c->ry.var, c->rx.var, c->rci.var, ax[4]};
  const Expr *prod = expr_mul(a, te_load(a, c->x, xi), te_load(a, c->w, wi));
  IterVar axes[4] = {c->rc, c->ry, c->rx, c->rci};
  return te_sum(a, prod, axes, 4, NULL);
}

TeTensor *topi_conv2d_nchwc_onnx(Arena *a, const char *name, const TeTensor *x,
                                 const TeTensor *w, const TeTensor *bias, const TopiConvParams *p, LoomError *err) {
  const char *on = "Conv(NCHWc)";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) ||
      !op_check_float(on, "W", w, err))
    return NULL;
  if (x->ndim != 5 || w->ndim != 6) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X must be [N, C/cb, H, W, cb] and W [K/kb, C/cb, R, S, cb, kb] (got ranks %d and %d)",
            on, x->ndim, w->ndim);
    return NULL;
  }
  int64_t group = p && p->group > 1 ? p->group : 1;
  if (w->shape[1] * group != x->shape[1] || w->shape[4] != x->shape[4] || w->shape[0] % group != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: W's input blocks [%lld, .., %lld] (per group, %lld groups) do not match X's [%lld, .., %lld], or its "
            "%lld output blocks are not a multiple of the groups",
            on, (long long)w->shape[1], (long long)w->shape[4], (long long)group, (long long)x->shape[1],
            (long long)x->shape[4], (long long)w->shape[0]);
    return NULL;
  }
  ConvDims d;
  if (!conv_dims(on, p, x->shape[2], x->shape[3], w->shape[2], w->shape[3], &d, err)) return NULL;
  int64_t kb = w->shape[5], K = w->shape[0] * kb;
  if (!check_bias(on, bias, K, err)) return NULL;
  const TeTensor *px = pad_hw(a, name, x, 2, d.pt, d.pl, d.pb, d.pr, op_const(a, x->dtype, 0), err);
  if (!px) return NULL;
  ConvArgs c = {.x = px, .w = w, .bias = bias, .d = d, .kb = kb, .cg = w->shape[1], .kg = w->shape[0] / group,
                .rc = te_reduce_axis(a, "rc", w->shape[1]), .ry = te_reduce_axis(a, "ry", w->shape[2]),
                .rx = te_reduce_axis(a, "rx", w->shape[3]), .rci = te_reduce_axis(a, "rci", x->shape[4])};
  int64_t oshape[5] = {x->shape[0], w->shape[0], d.oh, d.ow, kb};
  TeTensor *conv = te_set_schedule_rule(te_compute_named(a, bias ? op_stage(a, name, "conv") : name, 5, oshape,
                                                         nchwc_names, conv_nchwc_body, &c, err),
                                        "conv2d_nchwc");
  if (!conv || !bias) return conv;
  c.conv = conv;
  return te_compute_named(a, name, 5, oshape, nchwc_names, bias_body, &c, err);
}

static const Expr *dw_nchwc_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *ih = expr_add(a, expr_mul(a, ax[2], expr_i64(a, c->d.sh)),
                            expr_mul(a, c->ry.var, expr_i64(a, c->d.dh)));
  const Expr *iw = expr_add(a, expr_mul(a, ax[3], expr_i64(a, c->d.sw)),
                            expr_mul(a, c->rx.var, expr_i64(a, c->d.dw)));
  const Expr *zero = expr_i64(a, 0);
  const Expr *xi[5] = {ax[0], ax[1], ih, iw, ax[4]};
  const Expr *wi[6] = {ax[1], zero, c->ry.var, c->rx.var, zero, ax[4]};
  IterVar axes[2] = {c->ry, c->rx};
  return te_sum(a, expr_mul(a, te_load(a, c->x, xi), te_load(a, c->w, wi)), axes, 2, NULL);
}

TeTensor *topi_depthwise_conv2d_nchwc_onnx(Arena *a, const char *name, const TeTensor *x, const TeTensor *w,
                                           const TopiConvParams *p, LoomError *err) {
  const char *on = "Conv(NCHWc, depthwise)";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) || !op_check_float(on, "W", w, err))
    return NULL;
  if (x->ndim != 5 || w->ndim != 6 || w->shape[1] != 1 || w->shape[4] != 1 || w->shape[0] != x->shape[1] ||
      w->shape[5] != x->shape[4]) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: X must be [N, C/c, H, W, c] and W [C/c, 1, R, S, 1, c] with the same blocks", on);
    return NULL;
  }
  ConvDims d;
  if (!conv_dims(on, p, x->shape[2], x->shape[3], w->shape[2], w->shape[3], &d, err)) return NULL;
  const TeTensor *px = pad_hw(a, name, x, 2, d.pt, d.pl, d.pb, d.pr, op_const(a, x->dtype, 0), err);
  if (!px) return NULL;
  ConvArgs c = {.x = px, .w = w, .d = d, .ry = te_reduce_axis(a, "ry", w->shape[2]),
                .rx = te_reduce_axis(a, "rx", w->shape[3])};
  int64_t oshape[5] = {x->shape[0], x->shape[1], d.oh, d.ow, x->shape[4]};
  return te_set_schedule_rule(te_compute_named(a, name, 5, oshape, nchwc_names, dw_nchwc_body, &c, err),
                              "depthwise_conv2d_nchwc");
}

typedef struct LayoutArgs {
  const TeTensor *x;
  int64_t cb, kb;
} LayoutArgs;

static const Expr *to_nchwc_body(Arena *a, const Expr *const *ax, void *user) {
  LayoutArgs *l = user;
  const Expr *c = expr_add(a, expr_mul(a, ax[1], expr_i64(a, l->cb)), ax[4]);
  const Expr *i[4] = {ax[0], c, ax[2], ax[3]};
  return te_load(a, l->x, i);
}

static const Expr *to_nchw_body(Arena *a, const Expr *const *ax, void *user) {
  LayoutArgs *l = user;
  const Expr *cb = expr_i64(a, l->cb);
  const Expr *i[5] = {ax[0], expr_floordiv(a, ax[1], cb), ax[2], ax[3], expr_floormod(a, ax[1], cb)};
  return te_load(a, l->x, i);
}

static const Expr *to_kcrsck_body(Arena *a, const Expr *const *ax, void *user) {
  LayoutArgs *l = user;
  const Expr *k = expr_add(a, expr_mul(a, ax[0], expr_i64(a, l->kb)), ax[5]);
  const Expr *c = expr_add(a, expr_mul(a, ax[1], expr_i64(a, l->cb)), ax[4]);
  const Expr *i[4] = {k, c, ax[2], ax[3]};
  return te_load(a, l->x, i);
}

TeTensor *topi_nchw_to_nchwc(Arena *a, const char *name, const TeTensor *x, int64_t cb,
                             LoomError *err) {
  if (!op_check_name("layout_transform", name, err) ||
      !op_check_tensor("layout_transform", "X", x, err))
    return NULL;
  if (x->ndim != 4 || cb < 1 || x->shape[1] % cb != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "layout_transform NCHW->NCHWc: X (\"%s\") must be rank 4 with channels divisible by "
            "the block %lld",
            x->name, (long long)cb);
    return NULL;
  }
  LayoutArgs l = {x, cb, 0};
  int64_t s[5] = {x->shape[0], x->shape[1] / cb, x->shape[2], x->shape[3], cb};
  return te_compute_named(a, name, 5, s, nchwc_names, to_nchwc_body, &l, err);
}

TeTensor *topi_nchwc_to_nchw(Arena *a, const char *name, const TeTensor *x, LoomError *err) {
  if (!op_check_name("layout_transform", name, err) ||
      !op_check_tensor("layout_transform", "X", x, err))
    return NULL;
  if (x->ndim != 5) {
    err_set(err, LOOM_ERR_INVALID_ARG, "layout_transform NCHWc->NCHW: X (\"%s\") has rank %d, expected 5",
            x->name, x->ndim);
    return NULL;
  }
  LayoutArgs l = {x, x->shape[4], 0};
  int64_t s[4] = {x->shape[0], x->shape[1] * x->shape[4], x->shape[2], x->shape[3]};
  return te_compute_named(a, name, 4, s, nchw_names, to_nchw_body, &l, err);
}

TeTensor *topi_weight_to_kcrsck(Arena *a, const char *name, const TeTensor *w, int64_t cb,
                                int64_t kb, LoomError *err) {
  if (!op_check_name("layout_transform", name, err) ||
      !op_check_tensor("layout_transform", "W", w, err))
    return NULL;
  if (w->ndim != 4 || cb < 1 || kb < 1 || w->shape[0] % kb != 0 || w->shape[1] % cb != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "layout_transform KCRS->KCRSck: W (\"%s\") must be rank 4 with K divisible by %lld "
            "and C by %lld",
            w->name, (long long)kb, (long long)cb);
    return NULL;
  }
  LayoutArgs l = {w, cb, kb};
  int64_t s[6] = {w->shape[0] / kb, w->shape[1] / cb, w->shape[2], w->shape[3], cb, kb};
  return te_compute(a, name, 6, s, to_kcrsck_body, &l, err);
}

/* ---- pooling ---- */

/* Global pools (2-D windows: op_pool.c). */
typedef struct PoolArgs {
  const TeTensor *x, *sum;
  int nsp; /* number of spatial axes */
  IterVar rsp[TOPI_MAX_RANK];
  int64_t count;
} PoolArgs;

static const Expr *global_load(Arena *a, PoolArgs *p, const Expr *const *ax) {
  const Expr *i[TOPI_MAX_RANK];
  i[0] = ax[0], i[1] = ax[1];
  for (int d = 0; d < p->nsp; d++) i[2 + d] = p->rsp[d].var;
  return te_load(a, p->x, i);
}

static const Expr *global_max_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  return te_max(a, global_load(a, p, ax), p->rsp, p->nsp, NULL);
}

static const Expr *global_sum_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  return te_sum(a, global_load(a, p, ax), p->rsp, p->nsp, NULL);
}

static const Expr *global_avg_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  return expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax),
                     expr_float(a, p->sum->dtype, (double)p->count));
}

TeTensor *topi_global_pool(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                           LoomError *err) {
  const char *on = kind == TOPI_POOL_MAX ? "GlobalMaxPool" : "GlobalAveragePool";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err)) return NULL;
  if (x->ndim < 3) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") has rank %d, expected >= 3 (N, C, spatial...)",
            on, x->name, x->ndim);
    return NULL;
  }
  PoolArgs p = {.x = x, .nsp = x->ndim - 2, .count = 1};
  int64_t oshape[TOPI_MAX_RANK];
  oshape[0] = x->shape[0], oshape[1] = x->shape[1];
  for (int d = 0; d < p.nsp; d++) {
    p.rsp[d] = te_reduce_axis(a, d == 0 ? "ry" : d == 1 ? "rx" : "rz", x->shape[2 + d]);
    p.count *= x->shape[2 + d];
    oshape[2 + d] = 1;
  }
  const char *const *names = x->ndim == 4 ? nchw_names : NULL;
  if (kind == TOPI_POOL_MAX)
    return te_compute_named(a, name, x->ndim, oshape, names, global_max_body, &p, err);
  TeTensor *sum = te_compute_named(a, op_stage(a, name, "sum"), x->ndim, oshape, names,
                                   global_sum_body, &p, err);
  if (!(p.sum = sum)) return NULL;
  return te_compute_named(a, name, x->ndim, oshape, names, global_avg_body, &p, err);
}

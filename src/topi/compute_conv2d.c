/* 2-D convolutions: NCHW, blocked NCHWc (x86 layout) and depthwise. Each
 * pads in a separate "pad" stage (skipped when pad == 0) and then reduces
 * over input channels and the kernel window. */
#include "topi/topi.h"

int64_t topi_conv_out_extent(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  if (in < 1 || kernel < 1 || stride < 1 || pad < 0 || in + 2 * pad < kernel) return 0;
  return (in + 2 * pad - kernel) / stride + 1;
}

static bool conv_check(const char *op, const TopiConv2d *p, bool depthwise, int64_t *OH,
                       int64_t *OW, LoomError *err) {
  if (p->N < 1 || p->C < 1 || p->H < 1 || p->W < 1 || (!depthwise && p->K < 1) || p->R < 1 ||
      p->S < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: every extent (N, C, H, W, K, R, S) must be >= 1", op);
    return false;
  }
  if (p->stride < 1 || p->pad < 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: stride %lld must be >= 1 and pad %lld >= 0", op,
            (long long)p->stride, (long long)p->pad);
    return false;
  }
  *OH = topi_conv_out_extent(p->H, p->R, p->stride, p->pad);
  *OW = topi_conv_out_extent(p->W, p->S, p->stride, p->pad);
  if (*OH < 1 || *OW < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: kernel %lldx%lld is larger than the padded input %lldx%lld", op,
            (long long)p->R, (long long)p->S, (long long)(p->H + 2 * p->pad),
            (long long)(p->W + 2 * p->pad));
    return false;
  }
  return true;
}

/* Pads the spatial dims (h at dim 2, w at dim 3) of a 4-D or 5-D tensor. */
static const TeTensor *pad_spatial(Arena *a, const TeTensor *data, int64_t pad, LoomError *err) {
  if (pad == 0) return data;
  int64_t before[5] = {0, 0, pad, pad, 0}, after[5] = {0, 0, pad, pad, 0};
  return topi_pad(a, "pad", data, before, after, expr_float(a, data->dtype, 0.0), err);
}

typedef struct ConvArgs {
  const TeTensor *data, *weight;
  IterVar rc, rc2, rr, rs;
  int64_t stride;
} ConvArgs;

static const Expr *win(Arena *a, const Expr *o, int64_t stride, const Expr *r) {
  const Expr *base = stride == 1 ? o : expr_mul(a, o, expr_i64(a, stride));
  return expr_add(a, base, r);
}

static const Expr *conv_nchw_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *rc = c->rc.var, *rr = c->rr.var, *rs = c->rs.var;
  const Expr *di[4] = {ax[0], rc, win(a, ax[2], c->stride, rr), win(a, ax[3], c->stride, rs)};
  const Expr *wi[4] = {ax[1], rc, rr, rs};
  IterVar axes[3] = {c->rc, c->rr, c->rs};
  return te_sum(a, expr_mul(a, te_load(a, c->data, di), te_load(a, c->weight, wi)), axes, 3, NULL);
}

PrimFunc *topi_conv2d_nchw(Arena *a, const TopiConv2d *p, LoomError *err) {
  int64_t OH, OW;
  if (!conv_check("conv2d_nchw", p, false, &OH, &OW, err)) return NULL;
  TeTensor *data = te_placeholder(a, "data", DT_F32, 4, (int64_t[]){p->N, p->C, p->H, p->W}, err);
  TeTensor *weight = te_placeholder(a, "weight", DT_F32, 4, (int64_t[]){p->K, p->C, p->R, p->S}, err);
  const TeTensor *padded = pad_spatial(a, data, p->pad, err);
  if (!padded) return NULL;
  ConvArgs c = {padded, weight, te_reduce_axis(a, "rc", p->C), {0}, te_reduce_axis(a, "rh", p->R),
                te_reduce_axis(a, "rw", p->S), p->stride};
  TeTensor *out = te_compute_named(a, "conv2d", 4, (int64_t[]){p->N, p->K, OH, OW},
                                   (const char *[]){"n", "k", "oh", "ow"}, conv_nchw_body, &c, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "conv2d_nchw", (TeTensor *[]){data, weight, out}, 3, err);
}

/* out[n, ko, oh, ow, ki] = sum_{ico, ici, r, s}
 *   pad[n, ico, oh*st + r, ow*st + s, ici] * weight[ko, ico, r, s, ici, ki] */
static const Expr *conv_nchwc_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *ico = c->rc.var, *ici = c->rc2.var, *rr = c->rr.var, *rs = c->rs.var;
  const Expr *di[5] = {ax[0], ico, win(a, ax[2], c->stride, rr), win(a, ax[3], c->stride, rs), ici};
  const Expr *wi[6] = {ax[1], ico, rr, rs, ici, ax[4]};
  IterVar axes[4] = {c->rc, c->rr, c->rs, c->rc2}; /* input-channel block innermost */
  return te_sum(a, expr_mul(a, te_load(a, c->data, di), te_load(a, c->weight, wi)), axes, 4, NULL);
}

PrimFunc *topi_conv2d_nchwc(Arena *a, const TopiConv2d *p, int64_t cb, int64_t kb,
                            LoomError *err) {
  int64_t OH, OW;
  if (!conv_check("conv2d_NCHWc", p, false, &OH, &OW, err)) return NULL;
  if (cb < 1 || kb < 1 || p->C % cb != 0 || p->K % kb != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "conv2d_NCHWc: channel blocks must divide the channels (C = %lld, cb = %lld, K = "
            "%lld, kb = %lld)",
            (long long)p->C, (long long)cb, (long long)p->K, (long long)kb);
    return NULL;
  }
  int64_t CO = p->C / cb, KO = p->K / kb;
  TeTensor *data = te_placeholder(a, "data", DT_F32, 5, (int64_t[]){p->N, CO, p->H, p->W, cb}, err);
  TeTensor *weight =
      te_placeholder(a, "weight", DT_F32, 6, (int64_t[]){KO, CO, p->R, p->S, cb, kb}, err);
  const TeTensor *padded = pad_spatial(a, data, p->pad, err);
  if (!padded) return NULL;
  ConvArgs c = {padded, weight, te_reduce_axis(a, "ico", CO), te_reduce_axis(a, "ici", cb),
                te_reduce_axis(a, "rh", p->R), te_reduce_axis(a, "rw", p->S), p->stride};
  TeTensor *out = te_set_schedule_rule(
      te_compute_named(a, "conv2d_NCHWc", 5, (int64_t[]){p->N, KO, OH, OW, kb},
                       (const char *[]){"n", "ko", "oh", "ow", "ki"}, conv_nchwc_body, &c, err),
      "conv2d_nchwc");
  if (!out) return NULL;
  return te_create_primfunc(a, "conv2d_nchwc", (TeTensor *[]){data, weight, out}, 3, err);
}

static const Expr *dwconv_body(Arena *a, const Expr *const *ax, void *user) {
  ConvArgs *c = user;
  const Expr *rr = c->rr.var, *rs = c->rs.var;
  const Expr *di[4] = {ax[0], ax[1], win(a, ax[2], c->stride, rr), win(a, ax[3], c->stride, rs)};
  const Expr *wi[4] = {ax[1], expr_i64(a, 0), rr, rs};
  IterVar axes[2] = {c->rr, c->rs};
  return te_sum(a, expr_mul(a, te_load(a, c->data, di), te_load(a, c->weight, wi)), axes, 2, NULL);
}

PrimFunc *topi_depthwise_conv2d_nchw(Arena *a, const TopiConv2d *p, LoomError *err) {
  int64_t OH, OW;
  if (!conv_check("depthwise_conv2d_nchw", p, true, &OH, &OW, err)) return NULL;
  TeTensor *data = te_placeholder(a, "data", DT_F32, 4, (int64_t[]){p->N, p->C, p->H, p->W}, err);
  TeTensor *weight = te_placeholder(a, "weight", DT_F32, 4, (int64_t[]){p->C, 1, p->R, p->S}, err);
  const TeTensor *padded = pad_spatial(a, data, p->pad, err);
  if (!padded) return NULL;
  ConvArgs c = {padded, weight, {0}, {0}, te_reduce_axis(a, "rh", p->R),
                te_reduce_axis(a, "rw", p->S), p->stride};
  TeTensor *out = te_compute_named(a, "depthwise_conv2d", 4, (int64_t[]){p->N, p->C, OH, OW},
                                   (const char *[]){"n", "c", "oh", "ow"}, dwconv_body, &c, err);
  if (!out) return NULL;
  return te_create_primfunc(a, "depthwise_conv2d_nchw", (TeTensor *[]){data, weight, out}, 3, err);
}

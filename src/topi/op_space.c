/* Rearrangements with ONNX semantics: DepthToSpace, SpaceToDepth,
 * ReverseSequence and CenterCropPad. Each is one injective stage whose
 * body loads its input at a remapped index. */
#include "topi/op_internal.h"

typedef struct SpaceArgs {
  const TeTensor *x, *lens;
  int64_t b, c; /* block; output (DepthToSpace) or input (SpaceToDepth) channels */
  bool crd;
  int batch, time;
  int64_t off[TOPI_MAX_RANK]; /* CenterCropPad: input index = output index + off */
  bool pad[TOPI_MAX_RANK];    /* CenterCropPad: the axis grows (zeros around) */
} SpaceArgs;

static bool check_nchw(const char *on, const char *name, const TeTensor *x, int64_t block, LoomError *err) {
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return false;
  if (x->ndim != 4 || block < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: input (\"%s\") must be [N, C, H, W] and blocksize >= 1 (rank %d, block %lld)",
            on, x->name, x->ndim, (long long)block);
    return false;
  }
  return true;
}

static const Expr *depth_to_space_body(Arena *a, const Expr *const *ax, void *user) {
  SpaceArgs *s = user;
  const Expr *b = expr_i64(a, s->b);
  const Expr *bh = expr_floormod(a, ax[2], b), *bw = expr_floormod(a, ax[3], b);
  const Expr *blk = expr_add(a, expr_mul(a, bh, b), bw);
  const Expr *ch = s->crd ? expr_add(a, expr_mul(a, ax[1], expr_i64(a, s->b * s->b)), blk)
                          : expr_add(a, expr_mul(a, blk, expr_i64(a, s->c)), ax[1]);
  const Expr *i[4] = {ax[0], ch, expr_floordiv(a, ax[2], b), expr_floordiv(a, ax[3], b)};
  return te_load(a, s->x, i);
}

TeTensor *topi_depth_to_space(Arena *a, const char *name, const TeTensor *x, int64_t block, bool crd,
                              LoomError *err) {
  const char *on = "DepthToSpace";
  if (!check_nchw(on, name, x, block, err)) return NULL;
  if (x->shape[1] % (block * block) != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: %lld channels do not divide by blocksize^2 = %lld", on,
            (long long)x->shape[1], (long long)(block * block));
    return NULL;
  }
  SpaceArgs s = {.x = x, .b = block, .c = x->shape[1] / (block * block), .crd = crd};
  int64_t shape[4] = {x->shape[0], s.c, x->shape[2] * block, x->shape[3] * block};
  return te_compute(a, name, 4, shape, depth_to_space_body, &s, err);
}

static const Expr *space_to_depth_body(Arena *a, const Expr *const *ax, void *user) {
  SpaceArgs *s = user;
  const Expr *b = expr_i64(a, s->b), *c = expr_i64(a, s->c);
  const Expr *blk = expr_floordiv(a, ax[1], c);
  const Expr *h = expr_add(a, expr_mul(a, ax[2], b), expr_floordiv(a, blk, b));
  const Expr *w = expr_add(a, expr_mul(a, ax[3], b), expr_floormod(a, blk, b));
  const Expr *i[4] = {ax[0], expr_floormod(a, ax[1], c), h, w};
  return te_load(a, s->x, i);
}

TeTensor *topi_space_to_depth(Arena *a, const char *name, const TeTensor *x, int64_t block, LoomError *err) {
  const char *on = "SpaceToDepth";
  if (!check_nchw(on, name, x, block, err)) return NULL;
  if (x->shape[2] % block != 0 || x->shape[3] % block != 0) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: H and W (%lld, %lld) must divide by blocksize %lld", on,
            (long long)x->shape[2], (long long)x->shape[3], (long long)block);
    return NULL;
  }
  SpaceArgs s = {.x = x, .b = block, .c = x->shape[1]};
  int64_t shape[4] = {x->shape[0], x->shape[1] * block * block, x->shape[2] / block, x->shape[3] / block};
  return te_compute(a, name, 4, shape, space_to_depth_body, &s, err);
}

static const Expr *reverse_sequence_body(Arena *a, const Expr *const *ax, void *user) {
  SpaceArgs *s = user;
  int64_t T = s->x->shape[s->time];
  const Expr *len = te_load(a, s->lens, &ax[s->batch]);
  if (!dtype_eq(len->dtype, DT_I64)) len = expr_cast(a, DT_I64, len);
  len = expr_min(a, expr_max(a, len, expr_i64(a, 0)), expr_i64(a, T));
  const Expr *t = ax[s->time];
  const Expr *rev = expr_sub(a, expr_sub(a, len, expr_i64(a, 1)), t);
  const Expr *i[TOPI_MAX_RANK];
  for (int d = 0; d < s->x->ndim; d++) i[d] = ax[d];
  i[s->time] = expr_select(a, expr_lt(a, t, len), rev, t);
  return te_load(a, s->x, i);
}

TeTensor *topi_reverse_sequence(Arena *a, const char *name, const TeTensor *x, const TeTensor *seq_lens,
                                int64_t batch_axis, int64_t time_axis, LoomError *err) {
  const char *on = "ReverseSequence";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err) ||
      !op_check_tensor(on, "sequence_lens", seq_lens, err))
    return NULL;
  SpaceArgs s = {.x = x, .lens = seq_lens};
  if (x->ndim < 2 || !op_axis(on, "batch_axis", batch_axis, x->ndim, false, &s.batch, err) ||
      !op_axis(on, "time_axis", time_axis, x->ndim, false, &s.time, err)) {
    if (x->ndim < 2) err_set(err, LOOM_ERR_INVALID_ARG, "%s: input must have rank >= 2", on);
    return NULL;
  }
  if (s.batch == s.time || s.batch > 1 || s.time > 1 || !dtype_is_int(seq_lens->dtype) || seq_lens->ndim != 1 ||
      seq_lens->shape[0] != x->shape[s.batch]) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: batch_axis and time_axis must be 0 and 1 in some order, sequence_lens an integer [batch] tensor", on);
    return NULL;
  }
  return te_compute(a, name, x->ndim, x->shape, reverse_sequence_body, &s, err);
}

static const Expr *center_crop_pad_body(Arena *a, const Expr *const *ax, void *user) {
  SpaceArgs *s = user;
  const Expr *i[TOPI_MAX_RANK] = {0}, *inside = NULL;
  for (int d = 0; d < s->x->ndim; d++) {
    i[d] = s->off[d] ? expr_add(a, ax[d], expr_i64(a, s->off[d])) : ax[d];
    if (!s->pad[d]) continue; /* a crop (or nothing): always inside */
    int64_t dim = s->x->shape[d];
    const Expr *c = expr_and(a, expr_binary(a, EXPR_GE, i[d], expr_i64(a, 0)), expr_lt(a, i[d], expr_i64(a, dim)));
    inside = inside ? expr_and(a, inside, c) : c;
    i[d] = expr_min(a, expr_max(a, i[d], expr_i64(a, 0)), expr_i64(a, dim - 1));
  }
  const Expr *ld = te_load(a, s->x, i);
  return inside ? expr_select(a, inside, ld, op_const(a, s->x->dtype, 0)) : ld;
}

TeTensor *topi_center_crop_pad(Arena *a, const char *name, const TeTensor *x, const int64_t *shape,
                               const int64_t *axes, int n, LoomError *err) {
  const char *on = "CenterCropPad";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "input", x, err)) return NULL;
  if (n != (axes ? n : x->ndim) || n < 0 || n > x->ndim || (n > 0 && !shape)) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: shape has %d entries for rank %d", on, n, x->ndim);
    return NULL;
  }
  SpaceArgs s = {.x = x};
  int64_t out[TOPI_MAX_RANK];
  bool seen[TOPI_MAX_RANK] = {false};
  for (int d = 0; d < x->ndim; d++) out[d] = x->shape[d];
  for (int k = 0; k < n; k++) {
    int ax;
    if (!op_axis(on, "axes entry", axes ? axes[k] : k, x->ndim, false, &ax, err)) return NULL;
    if (seen[ax] || shape[k] < 1) {
      err_set(err, seen[ax] ? LOOM_ERR_INVALID_ARG : LOOM_ERR_UNSUPPORTED,
              "%s: axis %d is listed twice or gets extent %lld", on, ax, (long long)shape[k]);
      return NULL;
    }
    seen[ax] = true;
    out[ax] = shape[k];
    /* The centre: the odd element of a crop or pad goes to the end. */
    s.off[ax] = x->shape[ax] >= shape[k] ? (x->shape[ax] - shape[k]) / 2 : -((shape[k] - x->shape[ax]) / 2);
    s.pad[ax] = shape[k] > x->shape[ax];
  }
  return te_compute(a, name, x->ndim, out, center_crop_pad_body, &s, err);
}

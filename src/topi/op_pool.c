/* MaxPool / AveragePool / LpPool with ONNX's attributes over any number of
 * spatial axes, on [N, C, d1..dn] and on the blocked NCHWc layout [N, C/c,
 * H, W, c] (so a network whose convolutions run blocked keeps its pools
 * blocked too: no LayoutTransform around every pool). One implementation:
 * the blocked form only adds the innermost channel-block axis, which is what
 * lets a schedule vectorize across it. Also MaxPool's Indices output and
 * MaxUnpool, its inverse. */
#include "topi/op_internal.h"

#include <math.h>
#include <string.h>

enum { MS = TOPI_MAX_SPATIAL };

typedef struct PoolArgs {
  const TeTensor *x, *sum, *maxv; /* x: the padded input */
  int nsp;
  int64_t k[MS], s[MS], d[MS], pb[MS], pe[MS], n[MS];
  int64_t C;
  bool include_pad;
  int64_t fixed_count; /* > 0: every window counts this many (no clipping) */
  bool blocked;        /* a trailing channel-block axis */
  int64_t p;           /* LpPool */
  int storage_order;   /* Indices */
  IterVar r[MS];
} PoolArgs;

static int64_t or_one(int64_t v) { return v == 0 ? 1 : v; }

/* Axis names: NCHW's for 2-D (so existing schedules and dumps read the
 * same), n, c, w for 1-D, n, c, d, h, w for 3-D; defaults beyond. */
static const char *const *pool_axis_names(int nsp) {
  static const char *const n1[] = {"n", "c", "w", "cb"}, *const n2[] = {"n", "c", "h", "w", "cb"},
                           *const n3[] = {"n", "c", "d", "h", "w", "cb"};
  return nsp == 1 ? n1 : nsp == 2 ? n2 : nsp == 3 ? n3 : NULL;
}

static const char *reduce_name(Arena *a, int nsp, int i) {
  static const char *const names[3] = {"rz", "ry", "rx"};
  return nsp <= 3 ? names[3 - nsp + i] : arena_printf(a, "r%d", i);
}

/* Position along spatial axis i of window element r_i: o * s + r * d (in
 * the padded input). */
static const Expr *window_pos(Arena *a, const PoolArgs *p, const Expr *const *ax, int i) {
  return expr_add(a, expr_mul(a, ax[2 + i], expr_i64(a, p->s[i])), expr_mul(a, p->r[i].var, expr_i64(a, p->d[i])));
}

static const Expr *window_load(Arena *a, const PoolArgs *p, const Expr *const *ax) {
  const Expr *idx[TOPI_MAX_RANK];
  idx[0] = ax[0], idx[1] = ax[1];
  for (int i = 0; i < p->nsp; i++) idx[2 + i] = window_pos(a, p, ax, i);
  if (p->blocked) idx[2 + p->nsp] = ax[2 + p->nsp];
  return te_load(a, p->x, idx);
}

static const Expr *max_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  return te_max(a, window_load(a, p, ax), p->r, p->nsp, NULL);
}

static const Expr *sum_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  const Expr *v = window_load(a, p, ax);
  if (p->p == 2) v = expr_mul(a, v, v);
  else if (p->p > 0) v = expr_call(a, CALL_FABS, v->dtype, &v, 1);
  if (p->p > 2) v = expr_call(a, CALL_POW, v->dtype, (const Expr *[]){v, expr_float(a, v->dtype, (double)p->p)}, 2);
  return te_sum(a, v, p->r, p->nsp, NULL);
}

/* Window elements inside [lo, hi) along one axis (dilated windows count
 * every d-th position): ONNX Runtime's and PyTorch's rule clips a window
 * to the padded input when padding counts, to the input itself otherwise. */
static const Expr *window_count(Arena *a, const Expr *o, const PoolArgs *p, int i) {
  const Expr *start = expr_sub(a, expr_mul(a, o, expr_i64(a, p->s[i])), expr_i64(a, p->pb[i]));
  int64_t lo = p->include_pad ? -p->pb[i] : 0, hi = p->n[i] + (p->include_pad ? p->pe[i] : 0), d = p->d[i];
  if (d == 1) {
    const Expr *end = expr_add(a, start, expr_i64(a, p->k[i]));
    const Expr *first = p->include_pad ? start : expr_max(a, start, expr_i64(a, 0));
    return expr_sub(a, expr_min(a, end, expr_i64(a, hi)), first);
  }
  const Expr *rlo = expr_max(a, expr_floordiv(a, expr_sub(a, expr_i64(a, lo + d - 1), start), expr_i64(a, d)),
                             expr_i64(a, 0));
  const Expr *rhi = expr_min(a, expr_floordiv(a, expr_sub(a, expr_i64(a, hi - 1), start), expr_i64(a, d)),
                             expr_i64(a, p->k[i] - 1));
  return expr_max(a, expr_add(a, expr_sub(a, rhi, rlo), expr_i64(a, 1)), expr_i64(a, 0));
}

static const Expr *avg_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  DType t = p->sum->dtype;
  if (p->fixed_count > 0)
    return expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax), expr_float(a, t, (double)p->fixed_count));
  const Expr *cnt = NULL;
  for (int i = 0; i < p->nsp; i++) {
    const Expr *c = window_count(a, ax[2 + i], p, i);
    cnt = cnt ? expr_mul(a, cnt, c) : c;
  }
  return expr_binary(a, EXPR_DIV, te_load(a, p->sum, ax), expr_cast(a, t, cnt));
}

static const Expr *lp_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  const Expr *s = te_load(a, p->sum, ax);
  if (p->p == 1) return s;
  if (p->p == 2) return expr_call(a, CALL_SQRT, s->dtype, &s, 1);
  return expr_call(a, CALL_POW, s->dtype, (const Expr *[]){s, expr_float(a, s->dtype, 1.0 / (double)p->p)}, 2);
}

/* True when no window along axis i is clipped by the counting rule, so
 * every window counts k elements (DenseNet's 2x2 / 2 transitions,
 * Inception's explicitly padded 3x3 / 1 pools): the division is then by a
 * constant instead of a min/max expression per output. */
static bool window_never_clipped(const PoolArgs *p, int64_t o, int i) {
  int64_t last_end = (o - 1) * p->s[i] - p->pb[i] + (p->k[i] - 1) * p->d[i] + 1;
  if (p->include_pad) return last_end <= p->n[i] + p->pe[i];
  return p->pb[i] == 0 && last_end <= p->n[i];
}

static int64_t out_extent(int64_t n, int64_t pb, int64_t pe, int64_t eff, int64_t s, bool ceil_mode) {
  int64_t span = n + pb + pe - eff;
  if (span < 0) return 0;
  if (!ceil_mode) return span / s + 1;
  int64_t o = (span + s - 1) / s + 1;
  if ((o - 1) * s >= n + pb) o--; /* the last window would start in the end padding */
  return o;
}

typedef enum { POOL_MAX, POOL_AVG, POOL_LP, POOL_INDICES } PoolOp;

/* Checks, output shape and the padded input (stage "<name>_pad"). */
static bool pool_setup(Arena *a, const char *on, const char *name, PoolOp op, const TeTensor *x,
                       const TopiWindowParams *wp, bool blocked, PoolArgs *p, int64_t *oshape, LoomError *err) {
  if (!op_check_name(on, name, err)) return false;
  if (op == POOL_MAX || op == POOL_INDICES) {
    if (!op_check_tensor(on, "X", x, err)) return false;
    /* f16/bf16 compare in f32 after tir_legalize_narrow */
    if (dtype_is_bool(x->dtype) || (dtype_is_float(x->dtype) && x->dtype.bits < 16)) {
      char b[16];
      err_set(err, LOOM_ERR_UNSUPPORTED, "%s: input X (\"%s\") has dtype %s, expected a float of 16 bits or more or an integer", on,
              x->name, dtype_str(x->dtype, b));
      return false;
    }
  } else if (!op_check_float(on, "X", x, err)) {
    return false;
  }
  if (!wp) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel_shape is required", on);
    return false;
  }
  int nsp = wp->nsp, rank = 2 + nsp + (blocked ? 1 : 0);
  if (nsp < 1 || nsp > MS || x->ndim != rank) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X (\"%s\") has rank %d, expected %d%s", on, x->name, x->ndim, rank,
            blocked ? " (N, C/c, H, W, c)" : " (N, C, spatial...)");
    return false;
  }
  memset(p, 0, sizeof *p);
  p->x = x, p->nsp = nsp, p->blocked = blocked, p->include_pad = wp->count_include_pad, p->C = x->shape[1];
  int64_t before[TOPI_MAX_RANK] = {0}, after[TOPI_MAX_RANK] = {0};
  bool padded = false;
  p->fixed_count = 1;
  oshape[0] = x->shape[0], oshape[1] = x->shape[1];
  if (blocked) oshape[rank - 1] = x->shape[rank - 1];
  for (int i = 0; i < nsp; i++) {
    p->k[i] = wp->kernel[i], p->s[i] = or_one(wp->strides[i]), p->d[i] = or_one(wp->dilations[i]);
    p->pb[i] = wp->pads[i], p->pe[i] = wp->pads[nsp + i], p->n[i] = x->shape[2 + i];
    if (p->k[i] < 1 || p->s[i] < 1 || p->d[i] < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel_shape, strides and dilations must be >= 1", on);
      return false;
    }
    int64_t eff = p->d[i] * (p->k[i] - 1) + 1;
    if (p->pb[i] < 0 || p->pe[i] < 0 || p->pb[i] >= eff || p->pe[i] >= eff) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: pads must be >= 0 and smaller than the kernel", on);
      return false;
    }
    int64_t o = out_extent(p->n[i], p->pb[i], p->pe[i], eff, p->s[i], wp->ceil_mode);
    if (o < 1) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: kernel %lld (spatial axis %d) is larger than the padded input", on,
              (long long)p->k[i], i);
      return false;
    }
    oshape[2 + i] = o;
    /* ceil_mode windows may run past the end padding: pad that far too. */
    int64_t end = (o - 1) * p->s[i] + eff - p->n[i] - p->pb[i];
    before[2 + i] = p->pb[i], after[2 + i] = end > p->pe[i] ? end : p->pe[i];
    padded |= before[2 + i] || after[2 + i];
    if (window_never_clipped(p, o, i)) p->fixed_count *= p->k[i];
    else p->fixed_count = 0;
  }
  if (padded) {
    const Expr *padv = op == POOL_AVG || op == POOL_LP ? op_const(a, x->dtype, 0)
                                                     : reduce_identity(a, REDUCE_MAX, x->dtype);
    p->x = topi_pad(a, op_stage(a, name, "pad"), x, before, after, padv, err);
    if (!p->x) return false;
  }
  for (int i = 0; i < nsp; i++) p->r[i] = te_reduce_axis(a, reduce_name(a, nsp, i), p->k[i]);
  return true;
}

TeTensor *topi_pool_nd_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                            const TopiWindowParams *wp, bool blocked, LoomError *err) {
  const char *on = kind == TOPI_POOL_MAX ? (blocked ? "MaxPoolNCHWc" : "MaxPool")
                                         : (blocked ? "AveragePoolNCHWc" : "AveragePool");
  PoolArgs p;
  int64_t oshape[TOPI_MAX_RANK];
  if (!pool_setup(a, on, name, kind == TOPI_POOL_MAX ? POOL_MAX : POOL_AVG, x, wp, blocked, &p, oshape, err))
    return NULL;
  const char *const *names = pool_axis_names(p.nsp);
  const char *rule = p.nsp == 2 ? "pool2d" : NULL; /* the window reduction: the 2-D pools have a schedule */
  if (kind == TOPI_POOL_MAX)
    return te_set_schedule_rule(te_compute_named(a, name, x->ndim, oshape, names, max_body, &p, err), rule);
  TeTensor *sum = te_set_schedule_rule(
      te_compute_named(a, op_stage(a, name, "sum"), x->ndim, oshape, names, sum_body, &p, err), rule);
  if (!(p.sum = sum)) return NULL;
  return te_compute_named(a, name, x->ndim, oshape, names, avg_body, &p, err);
}

TeTensor *topi_lp_pool_nd(Arena *a, const char *name, const TeTensor *x, const TopiWindowParams *wp,
                          LoomError *err) {
  const char *on = "LpPool";
  PoolArgs p;
  int64_t oshape[TOPI_MAX_RANK];
  if (!pool_setup(a, on, name, POOL_LP, x, wp, false, &p, oshape, err)) return NULL;
  if (wp->p < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: p = %lld (expected >= 1)", on, (long long)wp->p);
    return NULL;
  }
  p.p = wp->p;
  const char *const *names = pool_axis_names(p.nsp);
  TeTensor *sum = te_set_schedule_rule(
      te_compute_named(a, op_stage(a, name, "sum"), x->ndim, oshape, names, sum_body, &p, err),
      p.nsp == 2 ? "pool2d" : NULL);
  if (!(p.sum = sum)) return NULL;
  return te_compute_named(a, name, x->ndim, oshape, names, lp_body, &p, err);
}

/* The first window element equal to the maximum, as a flat offset into
 * the unpadded input (pad positions never match). */
static const Expr *indices_body(Arena *a, const Expr *const *ax, void *user) {
  PoolArgs *p = user;
  const Expr *cond = expr_binary(a, EXPR_EQ, window_load(a, p, ax), te_load(a, p->maxv, ax));
  const Expr *flat = expr_add(a, expr_mul(a, ax[0], expr_i64(a, p->C)), ax[1]);
  const Expr *col = expr_i64(a, 0);
  int64_t stride = 1;
  for (int i = 0; i < p->nsp; i++) {
    const Expr *pos = expr_sub(a, window_pos(a, p, ax, i), expr_i64(a, p->pb[i]));
    if (p->pb[i] || p->pe[i]) {
      const Expr *in = expr_and(a, expr_binary(a, EXPR_GE, pos, expr_i64(a, 0)), expr_lt(a, pos, expr_i64(a, p->n[i])));
      cond = expr_and(a, cond, in);
    }
    flat = expr_add(a, expr_mul(a, flat, expr_i64(a, p->n[i])), pos);
    col = expr_add(a, col, expr_mul(a, pos, expr_i64(a, stride)));
    stride *= p->n[i];
  }
  if (p->storage_order == 1) /* spatial axes column-major */
    flat = expr_add(a, expr_mul(a, expr_add(a, expr_mul(a, ax[0], expr_i64(a, p->C)), ax[1]), expr_i64(a, stride)), col);
  return te_min(a, flat, p->r, p->nsp, cond);
}

TeTensor *topi_max_pool_indices(Arena *a, const char *name, const TeTensor *x, const TeTensor *maxv,
                                const TopiWindowParams *wp, int storage_order, LoomError *err) {
  const char *on = "MaxPool(Indices)";
  PoolArgs p;
  int64_t oshape[TOPI_MAX_RANK];
  if (!pool_setup(a, on, name, POOL_INDICES, x, wp, false, &p, oshape, err)) return NULL;
  bool ok = maxv && maxv->ndim == x->ndim && dtype_eq(maxv->dtype, x->dtype);
  for (int d = 0; ok && d < x->ndim; d++) ok = maxv->shape[d] == oshape[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: the pooled output does not match X and the window", on);
    return NULL;
  }
  p.maxv = maxv, p.storage_order = storage_order;
  return te_compute_named(a, name, x->ndim, oshape, pool_axis_names(p.nsp), indices_body, &p, err);
}

/* The 2-D entry points (the graph's blocked pools, the tests). */
static TopiWindowParams window_2d(const TopiPoolParams *pp) {
  TopiWindowParams w;
  memset(&w, 0, sizeof w);
  w.nsp = 2;
  memcpy(w.kernel, pp->kernel, sizeof pp->kernel);
  memcpy(w.strides, pp->strides, sizeof pp->strides);
  memcpy(w.dilations, pp->dilations, sizeof pp->dilations);
  w.pads[0] = pp->pads[0], w.pads[1] = pp->pads[1], w.pads[2] = pp->pads[2], w.pads[3] = pp->pads[3];
  w.ceil_mode = pp->ceil_mode;
  w.count_include_pad = pp->count_include_pad;
  return w;
}

TeTensor *topi_pool2d_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                           const TopiPoolParams *pp, LoomError *err) {
  TopiWindowParams w = pp ? window_2d(pp) : (TopiWindowParams){0};
  return topi_pool_nd_onnx(a, name, kind, x, pp ? &w : NULL, false, err);
}

TeTensor *topi_pool2d_nchwc_onnx(Arena *a, const char *name, TopiPoolKind kind, const TeTensor *x,
                                 const TopiPoolParams *pp, LoomError *err) {
  TopiWindowParams w = pp ? window_2d(pp) : (TopiWindowParams){0};
  return topi_pool_nd_onnx(a, name, kind, x, pp ? &w : NULL, true, err);
}

/* ---------------- MaxUnpool ---------------- */

typedef struct UnpoolArgs {
  const TeTensor *x, *idx;
  int nsp;
  int64_t C, out[MS], index[MS];
  IterVar r[MS];
} UnpoolArgs;

/* out[n, c, o...] = the x[n, c, i...] whose index names o, a flat offset
 * into the unpooled shape `index` (which out extends with zeros at the
 * end). Overlapping windows that chose the same element repeat it with the
 * same value, so a max over the matches gives it once. */
static const Expr *unpool_body(Arena *a, const Expr *const *ax, void *user) {
  UnpoolArgs *u = user;
  const Expr *flat = expr_add(a, expr_mul(a, ax[0], expr_i64(a, u->C)), ax[1]), *inside = NULL;
  for (int i = 0; i < u->nsp; i++) {
    flat = expr_add(a, expr_mul(a, flat, expr_i64(a, u->index[i])), ax[2 + i]);
    if (u->out[i] > u->index[i]) {
      const Expr *c = expr_lt(a, ax[2 + i], expr_i64(a, u->index[i]));
      inside = inside ? expr_and(a, inside, c) : c;
    }
  }
  const Expr *xi[TOPI_MAX_RANK];
  xi[0] = ax[0], xi[1] = ax[1];
  for (int i = 0; i < u->nsp; i++) xi[2 + i] = u->r[i].var;
  const Expr *ix = te_load(a, u->idx, xi);
  if (!dtype_eq(ix->dtype, DT_I64)) ix = expr_cast(a, DT_I64, ix);
  const Expr *match = expr_binary(a, EXPR_EQ, ix, flat);
  return te_max(a, te_load(a, u->x, xi), u->r, u->nsp, inside ? expr_and(a, inside, match) : match);
}

typedef struct UnpoolFinal {
  const TeTensor *m;
} UnpoolFinal;

/* Positions no index names stay 0 (the max's identity marks them). */
static const Expr *unpool_final_body(Arena *a, const Expr *const *ax, void *user) {
  UnpoolFinal *f = user;
  const Expr *v = te_load(a, f->m, ax);
  const Expr *none = reduce_identity(a, REDUCE_MAX, v->dtype);
  return expr_select(a, expr_binary(a, EXPR_EQ, v, none), op_const(a, v->dtype, 0), v);
}

TeTensor *topi_max_unpool(Arena *a, const char *name, const TeTensor *x, const TeTensor *indices,
                          const int64_t *index_spatial, const int64_t *out_spatial, LoomError *err) {
  const char *on = "MaxUnpool";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "X", x, err) || !op_check_tensor(on, "I", indices, err))
    return NULL;
  int nsp = x->ndim - 2;
  bool ok = nsp >= 1 && nsp <= MS && indices->ndim == x->ndim && dtype_is_int(indices->dtype) && out_spatial &&
            index_spatial &&
            !dtype_is_bool(x->dtype);
  for (int d = 0; ok && d < x->ndim; d++) ok = indices->shape[d] == x->shape[d];
  if (!ok) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: X [N, C, spatial...] and integer indices I of X's shape expected", on);
    return NULL;
  }
  UnpoolArgs u = {.x = x, .idx = indices, .nsp = nsp, .C = x->shape[1]};
  int64_t oshape[TOPI_MAX_RANK] = {x->shape[0], x->shape[1]};
  for (int i = 0; i < nsp; i++) {
    if (index_spatial[i] < 1 || out_spatial[i] < index_spatial[i]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: output extent %lld on spatial axis %d (the unpooled extent is %lld)", on,
              (long long)out_spatial[i], i, (long long)index_spatial[i]);
      return NULL;
    }
    u.out[i] = oshape[2 + i] = out_spatial[i];
    u.index[i] = index_spatial[i];
    u.r[i] = te_reduce_axis(a, reduce_name(a, nsp, i), x->shape[2 + i]);
  }
  TeTensor *m = te_compute_named(a, op_stage(a, name, "hit"), x->ndim, oshape, pool_axis_names(nsp), unpool_body, &u,
                                 err);
  if (!m) return NULL;
  UnpoolFinal f = {m};
  return te_compute_named(a, name, x->ndim, oshape, pool_axis_names(nsp), unpool_final_body, &f, err);
}

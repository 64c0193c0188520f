/* 3x3 stride-1 convolution by Winograd's minimal filtering F(2x2, 3x3)
 * (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
 * 2016), in the blocked NCHWc layout. Per 2x2 output tile and channel pair
 * it multiplies 16 times instead of 36:
 *
 *   Y = A^T [ U .* (B^T d B) ] A,   U = G g G^T (the kernel g transformed)
 *
 * U is computed at compile time (graph_pass_winograd), so the op takes the
 * transformed weights u [4, 4, K/kb, C/cb, cb, kb]. Stages, N the batch:
 *
 *   <name>_pad        x padded so that whole 4x4 input tiles fit
 *   <name>_transform  V[e*N + n, co, th, tw, ci] = (B^T d B)[xi, nu] of the
 *                     input tile at (2 th, 2 tw), e = 4 xi + nu
 *   <name>_gemm       M[e*N + n, ko, th, tw, ki] =
 *                       sum over co, ci of V[e*N + n, co, th, tw, ci] * u[xi, nu, ko, co, ci, ki]
 *                     with the loops of a 1x1 conv in NCHWc over a batch of
 *                     16 N (reduction axes co, rh, rw, ci; rh and rw of
 *                     extent 1), so the conv schedule's register tiling
 *                     applies to it as it is
 *   name              Y[n, ko, oh, ow, ki] = (A^T M A)[oh % 2, ow % 2] of
 *                     tile (oh / 2, ow / 2)
 *
 * B^T and A^T hold only 0 and +-1, so both transforms are sums and
 * differences of loads; which terms, and their signs, are index arithmetic
 * and selects on xi, nu and oh % 2, ow % 2, which fold to constants once
 * the schedule unrolls those loops (topi_schedule_conv2d_winograd_cpu). */
#include "topi/op_internal.h"

typedef struct Wino {
  const TeTensor *pad, *v, *u, *m;
  int64_t n; /* batch */
  IterVar co, rh, rw, ci;
} Wino;

static const Expr *i64(Arena *a, int64_t v) { return expr_i64(a, v); }

static const Expr *eq(Arena *a, const Expr *x, int64_t v) { return expr_binary(a, EXPR_EQ, x, i64(a, v)); }

/* The transform point e = 4 xi + nu of a fused index nf = e * N + n. */
static const Expr *point_of(Arena *a, const Wino *w, const Expr *nf) {
  return w->n == 1 ? nf : expr_floordiv(a, nf, i64(a, w->n));
}

/* Row xi of B^T d = d[lo(xi)] + d[hi(xi)] when xi == 1, else
 * d[lo(xi)] - d[hi(xi)], with lo = {0, 1, 2, 1} and hi = {2, 2, 1, 3}. */
static const Expr *bt_lo(Arena *a, const Expr *xi) {
  return expr_sub(a, xi, expr_mul(a, i64(a, 2), expr_floordiv(a, xi, i64(a, 3))));
}
static const Expr *bt_hi(Arena *a, const Expr *xi) {
  return expr_add(a, expr_sub(a, i64(a, 2), expr_floordiv(a, xi, i64(a, 2))),
                  expr_mul(a, i64(a, 2), expr_floordiv(a, xi, i64(a, 3))));
}
static const Expr *bt_combine(Arena *a, const Expr *xi, const Expr *lo, const Expr *hi) {
  return expr_select(a, eq(a, xi, 1), expr_add(a, lo, hi), expr_sub(a, lo, hi));
}

typedef struct TileLoad {
  const Wino *w;
  const Expr *n, *co, *th, *tw, *ci;
} TileLoad;

static const Expr *input_at(Arena *a, const TileLoad *t, const Expr *i, const Expr *j) {
  const Expr *h = expr_add(a, expr_mul(a, i64(a, 2), t->th), i);
  const Expr *wd = expr_add(a, expr_mul(a, i64(a, 2), t->tw), j);
  return te_load(a, t->w->pad, (const Expr *[]){t->n, t->co, h, wd, t->ci});
}

/* (d B)[i, nu]: row i of the tile times column nu of B. */
static const Expr *row_times_b(Arena *a, const TileLoad *t, const Expr *i, const Expr *nu) {
  return bt_combine(a, nu, input_at(a, t, i, bt_lo(a, nu)), input_at(a, t, i, bt_hi(a, nu)));
}

static const Expr *transform_body(Arena *a, const Expr *const *ax, void *user) {
  const Wino *w = user;
  const Expr *e = point_of(a, w, ax[0]), *n = w->n == 1 ? i64(a, 0) : expr_floormod(a, ax[0], i64(a, w->n));
  const Expr *xi = expr_floordiv(a, e, i64(a, 4)), *nu = expr_floormod(a, e, i64(a, 4));
  TileLoad t = {w, n, ax[1], ax[2], ax[3], ax[4]};
  return bt_combine(a, xi, row_times_b(a, &t, bt_lo(a, xi), nu), row_times_b(a, &t, bt_hi(a, xi), nu));
}

static const Expr *gemm_body(Arena *a, const Expr *const *ax, void *user) {
  const Wino *w = user;
  const Expr *e = point_of(a, w, ax[0]);
  const Expr *xi = expr_floordiv(a, e, i64(a, 4)), *nu = expr_floormod(a, e, i64(a, 4));
  const Expr *vi[5] = {ax[0], w->co.var, expr_add(a, ax[2], w->rh.var), expr_add(a, ax[3], w->rw.var), w->ci.var};
  const Expr *ui[6] = {xi, nu, ax[1], w->co.var, w->ci.var, ax[4]};
  IterVar axes[4] = {w->co, w->rh, w->rw, w->ci};
  return te_sum(a, expr_mul(a, te_load(a, w->v, vi), te_load(a, w->u, ui)), axes, 4, NULL);
}

/* Row r of A^T s (r = 0 or 1, s indexed by k = 0..3): s[0] + s[1] + s[2] or
 * s[1] - s[2] - s[3], that is s[r] +- s[r + 1] +- s[r + 2]. */
typedef const Expr *(*PointFn)(Arena *a, const void *ctx, const Expr *k);

static const Expr *at_row(Arena *a, const Expr *r, PointFn at, const void *ctx) {
  const Expr *s0 = at(a, ctx, r), *s1 = at(a, ctx, expr_add(a, r, i64(a, 1))),
             *s2 = at(a, ctx, expr_add(a, r, i64(a, 2)));
  return expr_select(a, eq(a, r, 0), expr_add(a, expr_add(a, s0, s1), s2), expr_sub(a, expr_sub(a, s0, s1), s2));
}

typedef struct OutCtx {
  const Wino *w;
  const Expr *n, *ko, *th, *tw, *ki, *b, *xi;
} OutCtx;

/* M at transform point (xi, nu) of this output's tile. */
static const Expr *m_at(Arena *a, const void *ctx, const Expr *nu) {
  const OutCtx *c = ctx;
  const Expr *e = expr_add(a, expr_mul(a, c->xi, i64(a, 4)), nu);
  const Expr *nf = c->w->n == 1 ? e : expr_add(a, expr_mul(a, e, i64(a, c->w->n)), c->n);
  return te_load(a, c->w->m, (const Expr *[]){nf, c->ko, c->th, c->tw, c->ki});
}

/* (M A)[xi, b]: row xi of M times column b of A. */
static const Expr *m_times_a(Arena *a, const void *ctx, const Expr *xi) {
  OutCtx c = *(const OutCtx *)ctx;
  c.xi = xi;
  return at_row(a, c.b, m_at, &c);
}

static const Expr *output_body(Arena *a, const Expr *const *ax, void *user) {
  const Wino *w = user;
  const Expr *two = i64(a, 2);
  OutCtx c = {w, ax[0], ax[1], expr_floordiv(a, ax[2], two), expr_floordiv(a, ax[3], two), ax[4],
              expr_floormod(a, ax[3], two), NULL};
  return at_row(a, expr_floormod(a, ax[2], two), m_times_a, &c);
}

TeTensor *topi_conv2d_nchwc_winograd(Arena *a, const char *name, const TeTensor *x, const TeTensor *u,
                                     const int64_t pads[4], LoomError *err) {
  const char *on = "Conv(NCHWc, Winograd F(2x2, 3x3))";
  if (!op_check_name(on, name, err) || !op_check_float(on, "X", x, err) || !op_check_float(on, "U", u, err))
    return NULL;
  if (x->ndim != 5 || u->ndim != 6 || u->shape[0] != 4 || u->shape[1] != 4 || u->shape[3] != x->shape[1] ||
      u->shape[4] != x->shape[4]) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "%s: X must be [N, C/cb, H, W, cb] and U [4, 4, K/kb, C/cb, cb, kb] with X's channel blocks", on);
    return NULL;
  }
  for (int k = 0; k < 4; k++)
    if (pads[k] < 0 || pads[k] > 2) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: pads must be 0, 1 or 2 (pad %d is %lld)", on, k, (long long)pads[k]);
      return NULL;
    }
  int64_t N = x->shape[0], CO = x->shape[1], H = x->shape[2], W = x->shape[3], cb = x->shape[4];
  int64_t KO = u->shape[2], kb = u->shape[5];
  int64_t OH = H + pads[0] + pads[2] - 2, OW = W + pads[1] + pads[3] - 2;
  if (OH < 1 || OW < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: the 3x3 window exceeds the padded %lldx%lld input", on,
            (long long)(H + pads[0] + pads[2]), (long long)(W + pads[1] + pads[3]));
    return NULL;
  }
  int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2;
  /* Whole tiles read rows up to 2 TH + 1 of the padded input. */
  int64_t before[5] = {0, 0, pads[0], pads[1], 0};
  int64_t after[5] = {0, 0, 2 * TH + 2 - H - pads[0], 2 * TW + 2 - W - pads[1], 0};
  Wino w = {.u = u, .n = N};
  w.pad = topi_pad(a, op_stage(a, name, "pad"), x, before, after, op_const(a, x->dtype, 0), err);
  if (!w.pad) return NULL;
  static const char *const names[5] = {"n", "c", "h", "w", "cb"};
  w.v = te_set_schedule_rule(te_compute_named(a, op_stage(a, name, "transform"), 5,
                                              (int64_t[]){16 * N, CO, TH, TW, cb}, names, transform_body, &w, err),
                             "conv2d_winograd_transform");
  if (!w.v) return NULL;
  w.co = te_reduce_axis(a, "rc", CO);
  w.rh = te_reduce_axis(a, "ry", 1);
  w.rw = te_reduce_axis(a, "rx", 1);
  w.ci = te_reduce_axis(a, "rci", cb);
  w.m = te_set_schedule_rule(te_compute_named(a, op_stage(a, name, "gemm"), 5, (int64_t[]){16 * N, KO, TH, TW, kb},
                                              names, gemm_body, &w, err),
                             "conv2d_winograd");
  if (!w.m) return NULL;
  return te_compute_named(a, name, 5, (int64_t[]){N, KO, OH, OW, kb}, names, output_body, &w, err);
}

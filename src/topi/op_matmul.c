/* Gemm and numpy-style MatMul. The reduction is a stage of its own so that
 * bias, scaling and activations after it are separate elementwise stages the
 * fuser can attach (TVM's out-elementwise-fusable pattern). */
#include "topi/op_internal.h"

#include <string.h>

typedef struct GemmArgs {
  const TeTensor *A, *B, *C, *prod;
  bool ta, tb;
  double alpha, beta;
  IterVar k;
  int nb, ra, rb; /* MatMul: batch rank, operand ranks */
} GemmArgs;

static const Expr *gemm_prod_body(Arena *a, const Expr *const *ax, void *user) {
  GemmArgs *g = user;
  const Expr *ai[2] = {g->ta ? g->k.var : ax[0], g->ta ? ax[0] : g->k.var};
  const Expr *bi[2] = {g->tb ? ax[1] : g->k.var, g->tb ? g->k.var : ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, g->A, ai), te_load(a, g->B, bi)), &g->k, 1, NULL);
}

static const Expr *gemm_out_body(Arena *a, const Expr *const *ax, void *user) {
  GemmArgs *g = user;
  DType t = g->prod->dtype;
  const Expr *v = te_load(a, g->prod, ax);
  if (g->alpha != 1.0) v = expr_mul(a, op_const(a, t, g->alpha), v);
  if (g->C) {
    const Expr *c = op_load_broadcast(a, g->C, ax, 2);
    if (g->beta != 1.0) c = expr_mul(a, op_const(a, t, g->beta), c);
    v = expr_add(a, v, c);
  }
  return v;
}

TeTensor *topi_gemm(Arena *a, const char *name, const TeTensor *A, const TeTensor *B,
                    const TeTensor *C, double alpha, double beta, bool trans_a, bool trans_b,
                    LoomError *err) {
  const char *on = "Gemm";
  if (!op_check_name(on, name, err) || !op_check_float(on, "A", A, err) ||
      !op_check_float(on, "B", B, err) || (C && !op_check_float(on, "C", C, err)))
    return NULL;
  if (A->ndim != 2 || B->ndim != 2) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Gemm: A and B must be 2-D (got ranks %d and %d)", A->ndim,
            B->ndim);
    return NULL;
  }
  if (!dtype_eq(A->dtype, B->dtype) || (C && !dtype_eq(C->dtype, A->dtype))) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Gemm: A, B and C must share one dtype");
    return NULL;
  }
  int64_t M = trans_a ? A->shape[1] : A->shape[0], K = trans_a ? A->shape[0] : A->shape[1];
  int64_t KB = trans_b ? B->shape[1] : B->shape[0], N = trans_b ? B->shape[0] : B->shape[1];
  if (K != KB) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Gemm: inner extents differ (A gives K = %lld, B gives %lld)",
            (long long)K, (long long)KB);
    return NULL;
  }
  int64_t oshape[2] = {M, N};
  if (C) {
    bool ok = C->ndim <= 2;
    for (int d = 0; ok && d < C->ndim; d++) {
      int64_t want = oshape[d + 2 - C->ndim];
      ok = C->shape[d] == 1 || C->shape[d] == want;
    }
    if (!ok) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Gemm: C (\"%s\") does not broadcast to [%lld, %lld]",
              C->name, (long long)M, (long long)N);
      return NULL;
    }
  }
  GemmArgs g = {.A = A, .B = B, .C = C, .ta = trans_a, .tb = trans_b, .alpha = alpha,
                .beta = beta, .k = te_reduce_axis(a, "k", K)};
  bool plain = alpha == 1.0 && !C;
  TeTensor *prod = te_set_schedule_rule(
      te_compute(a, plain ? name : op_stage(a, name, "matmul"), 2, oshape, gemm_prod_body, &g, err), "matmul");
  if (!prod || plain) return prod;
  g.prod = prod;
  return te_compute(a, name, 2, oshape, gemm_out_body, &g, err);
}

static const Expr *matmul_body(Arena *a, const Expr *const *ax, void *user) {
  GemmArgs *g = user;
  const Expr *ai[TOPI_MAX_RANK], *bi[TOPI_MAX_RANK];
  const Expr *m = g->ra >= 2 ? ax[g->nb] : NULL;
  const Expr *n = g->rb >= 2 ? ax[g->nb + (g->ra >= 2)] : NULL;
  int abatch = g->ra > 2 ? g->ra - 2 : 0, bbatch = g->rb > 2 ? g->rb - 2 : 0;
  for (int d = 0; d < abatch; d++)
    ai[d] = g->A->shape[d] == 1 ? expr_i64(a, 0) : ax[d + g->nb - abatch];
  for (int d = 0; d < bbatch; d++)
    bi[d] = g->B->shape[d] == 1 ? expr_i64(a, 0) : ax[d + g->nb - bbatch];
  int na = abatch, nbi = bbatch;
  if (m) ai[na++] = m;
  ai[na++] = g->k.var;
  bi[nbi++] = g->k.var;
  if (n) bi[nbi++] = n;
  return te_sum(a, expr_mul(a, te_load(a, g->A, ai), te_load(a, g->B, bi)), &g->k, 1, NULL);
}

TeTensor *topi_matmul_nd(Arena *a, const char *name, const TeTensor *A, const TeTensor *B,
                         LoomError *err) {
  const char *on = "MatMul";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "A", A, err) ||
      !op_check_tensor(on, "B", B, err))
    return NULL;
  char b1[16], b2[16];
  DType t = A->dtype;
  /* f16/bf16 accumulate in f32 (te_compute's narrow reductions) */
  if (!dtype_eq(t, B->dtype) || !(dtype_eq(t, DT_F32) || dtype_eq(t, DT_F64) || dtype_eq(t, DT_F16) ||
                                  dtype_eq(t, DT_BF16) || dtype_eq(t, DT_I32) || dtype_eq(t, DT_I64))) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "MatMul: A is %s and B is %s; expected both f32, f64, f16, bf16, i32 or i64",
            dtype_str(t, b1), dtype_str(B->dtype, b2));
    return NULL;
  }
  if (A->ndim < 1 || B->ndim < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "MatMul: operands must have rank >= 1 (got %d and %d)",
            A->ndim, B->ndim);
    return NULL;
  }
  int64_t K = A->shape[A->ndim - 1];
  int64_t KB = B->ndim >= 2 ? B->shape[B->ndim - 2] : B->shape[0];
  if (K != KB) {
    err_set(err, LOOM_ERR_INVALID_ARG, "MatMul: inner extents differ (A \"%s\" has K = %lld, B \"%s\" has %lld)",
            A->name, (long long)K, B->name, (long long)KB);
    return NULL;
  }
  int64_t oshape[TOPI_MAX_RANK + 2];
  int nb = 0;
  int abatch = A->ndim > 2 ? A->ndim - 2 : 0, bbatch = B->ndim > 2 ? B->ndim - 2 : 0;
  if (!topi_broadcast_shape(on, abatch, A->shape, bbatch, B->shape, &nb, oshape, err)) return NULL;
  int r = nb;
  if (A->ndim >= 2) oshape[r++] = A->shape[A->ndim - 2];
  if (B->ndim >= 2) oshape[r++] = B->shape[B->ndim - 1];
  if (r > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "MatMul: result rank %d is above %d", r, TOPI_MAX_RANK);
    return NULL;
  }
  GemmArgs g = {.A = A, .B = B, .k = te_reduce_axis(a, "k", K), .nb = nb, .ra = A->ndim,
                .rb = B->ndim};
  return te_set_schedule_rule(te_compute(a, name, r, oshape, matmul_body, &g, err), "matmul");
}

/* MatMulPacked (graph/infer_matmul_packed.c): B in column panels Bp
 * [P, K, b]; column j of B is lane j % b of panel j / b. */
typedef struct PackedArgs {
  const TeTensor *A, *Bp;
  IterVar k;
  int64_t width;
} PackedArgs;

static const Expr *matmul_packed_body(Arena *a, const Expr *const *ax, void *user) {
  PackedArgs *p = user;
  int r = p->A->ndim;
  const Expr *ai[TOPI_MAX_RANK];
  for (int d = 0; d < r - 1; d++) ai[d] = ax[d];
  ai[r - 1] = p->k.var;
  const Expr *j = ax[r - 1], *w = expr_i64(a, p->width);
  const Expr *bi[3] = {expr_floordiv(a, j, w), p->k.var, expr_floormod(a, j, w)};
  return te_sum(a, expr_mul(a, te_load(a, p->A, ai), te_load(a, p->Bp, bi)), &p->k, 1, NULL);
}

static const Expr *packed_slice_body(Arena *a, const Expr *const *ax, void *user) { return te_load(a, user, ax); }

TeTensor *topi_matmul_packed(Arena *a, const char *name, const TeTensor *A, const TeTensor *Bp, int64_t n,
                             LoomError *err) {
  const char *on = "MatMulPacked";
  if (!op_check_name(on, name, err) || !op_check_tensor(on, "A", A, err) || !op_check_tensor(on, "Bp", Bp, err))
    return NULL;
  char b1[16], b2[16];
  if (!dtype_eq(A->dtype, DT_F32) || !dtype_eq(Bp->dtype, DT_F32)) {
    err_set(err, LOOM_ERR_UNSUPPORTED, "MatMulPacked: A is %s and Bp is %s; expected both f32", dtype_str(A->dtype, b1),
            dtype_str(Bp->dtype, b2));
    return NULL;
  }
  if (A->ndim < 2 || A->ndim > TOPI_MAX_RANK || Bp->ndim != 3) {
    err_set(err, LOOM_ERR_INVALID_ARG, "MatMulPacked: A must have rank 2 to %d and Bp rank 3 (got %d and %d)",
            TOPI_MAX_RANK, A->ndim, Bp->ndim);
    return NULL;
  }
  int64_t K = A->shape[A->ndim - 1], panels = Bp->shape[0], width = Bp->shape[2];
  if (Bp->shape[1] != K || width < 1 || n < 1 || panels < (n + width - 1) / width) {
    err_set(err, LOOM_ERR_INVALID_ARG,
            "MatMulPacked: Bp \"%s\" is [%lld, %lld, %lld], expected [ceil(%lld / b) or more, %lld, b] for A \"%s\"", Bp->name,
            (long long)panels, (long long)Bp->shape[1], (long long)width, (long long)n, (long long)K, A->name);
    return NULL;
  }
  int64_t oshape[TOPI_MAX_RANK];
  memcpy(oshape, A->shape, sizeof(int64_t) * (size_t)A->ndim);
  oshape[A->ndim - 1] = n;
  PackedArgs p = {.A = A, .Bp = Bp, .k = te_reduce_axis(a, "k", K), .width = width};
  /* A matrix-vector product whose panels pad N (ResNet's classifier: 1000
   * columns in 128-column panels) computes the zero-padded columns too and
   * keeps the first n: every column tile is then a whole panel, with no
   * partial tile (a guarded, serial one after the parallel loop: 0.75 of
   * OpenBLAS's sgemv at 2 threads) for the price of the padding's FMAs. */
  bool pad = op_numel(A->ndim, A->shape) == K && panels * width > n;
  if (!pad) return te_set_schedule_rule(te_compute(a, name, A->ndim, oshape, matmul_packed_body, &p, err), "matmul");
  oshape[A->ndim - 1] = panels * width;
  TeTensor *padded = te_set_schedule_rule(
      te_compute(a, op_stage(a, name, "padded"), A->ndim, oshape, matmul_packed_body, &p, err), "matmul");
  if (!padded) return NULL;
  oshape[A->ndim - 1] = n;
  return te_compute(a, name, A->ndim, oshape, packed_slice_body, padded, err);
}

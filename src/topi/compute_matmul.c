/* Dense products: matmul and batch_matmul. */
#include "topi/topi.h"

typedef struct MatmulArgs {
  const TeTensor *A, *B;
  IterVar k;
  bool batched;
} MatmulArgs;

static const Expr *matmul_body(Arena *a, const Expr *const *ax, void *user) {
  MatmulArgs *m = user;
  const Expr *k = m->k.var;
  if (m->batched) {
    const Expr *ia[3] = {ax[0], ax[1], k}, *ib[3] = {ax[0], k, ax[2]};
    return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
  }
  const Expr *ia[2] = {ax[0], k}, *ib[2] = {k, ax[1]};
  return te_sum(a, expr_mul(a, te_load(a, m->A, ia), te_load(a, m->B, ib)), &m->k, 1, NULL);
}

static bool check_dtype(const char *op, DType dt, LoomError *err) {
  if (dtype_eq(dt, DT_F32) || dtype_eq(dt, DT_I32)) return true;
  char buf[16];
  err_set(err, LOOM_ERR_UNSUPPORTED, "%s: dtype %s not supported (expected f32 or i32)", op,
          dtype_str(dt, buf));
  return false;
}

PrimFunc *topi_matmul(Arena *a, int64_t M, int64_t N, int64_t K, DType dt, LoomError *err) {
  if (!check_dtype("matmul", dt, err)) return NULL;
  TeTensor *A = te_placeholder(a, "A", dt, 2, (int64_t[]){M, K}, err);
  TeTensor *B = A ? te_placeholder(a, "B", dt, 2, (int64_t[]){K, N}, err) : NULL;
  if (!B) return NULL;
  if (K < 1) {
    err_set(err, LOOM_ERR_INVALID_ARG, "matmul: K = %lld, expected >= 1", (long long)K);
    return NULL;
  }
  MatmulArgs m = {A, B, te_reduce_axis(a, "k", K), false};
  TeTensor *C = te_set_schedule_rule(
      te_compute_named(a, "C", 2, (int64_t[]){M, N}, (const char *[]){"i", "j"}, matmul_body, &m, err), "matmul");
  if (!C) return NULL;
  return te_create_primfunc(a, "matmul", (TeTensor *[]){A, B, C}, 3, err);
}

PrimFunc *topi_batch_matmul(Arena *a, int64_t Bt, int64_t M, int64_t N, int64_t K,
                            LoomError *err) {
  TeTensor *A = te_placeholder(a, "A", DT_F32, 3, (int64_t[]){Bt, M, K}, err);
  TeTensor *B = A ? te_placeholder(a, "B", DT_F32, 3, (int64_t[]){Bt, K, N}, err) : NULL;
  if (!B) return NULL;
  MatmulArgs m = {A, B, te_reduce_axis(a, "k", K), true};
  TeTensor *C = te_set_schedule_rule(te_compute_named(a, "C", 3, (int64_t[]){Bt, M, N},
                                                     (const char *[]){"b", "i", "j"}, matmul_body, &m, err),
                                    "matmul");
  if (!C) return NULL;
  return te_create_primfunc(a, "batch_matmul", (TeTensor *[]){A, B, C}, 3, err);
}

/* Einsum: the equation names every axis of every operand with a letter;
 * letters kept in the output are its axes (in the output's order), the
 * others are summed. The whole contraction is one te stage: out[output
 * letters] = sum over the other letters of the product of the operands,
 * each loaded at its letters' variables (a letter repeated within one
 * operand reads its diagonal; an extent-1 axis broadcasts). The equation is
 * the explicit, letters-only form graph inference writes back ("..." and
 * implicit outputs resolved). */
#include "topi/op_internal.h"

#include <ctype.h>
#include <string.h>

enum { EIN_LABELS = 52, EIN_MAX_OPERANDS = 16 };

typedef struct EinTerm {
  int labels[TOPI_MAX_RANK];
  int n;
} EinTerm;

typedef struct EinArgs {
  const TeTensor *const *xs;
  int nx;
  EinTerm in[EIN_MAX_OPERANDS];
  int slot[EIN_LABELS]; /* label -> output axis (>= 0) or reduce axis (-2 - k) */
  IterVar r[TOPI_MAX_RANK * 2];
  int nr;
} EinArgs;

/* Letters up to `stop` (',', '-' or the end) into t; the end of the term. */
static const char *parse_term(const char *s, EinTerm *t, const char *eq, LoomError *err) {
  t->n = 0;
  for (; *s && *s != ',' && *s != '-'; s++) {
    if (!isalpha((unsigned char)*s) || t->n == TOPI_MAX_RANK) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: equation \"%s\" is not of the explicit letters-only form (\"ij,jk->ik\")",
              eq);
      return NULL;
    }
    t->labels[t->n++] = islower((unsigned char)*s) ? *s - 'a' : 26 + (*s - 'A');
  }
  return s;
}

static const Expr *einsum_body(Arena *a, const Expr *const *ax, void *user) {
  EinArgs *m = user;
  const Expr *prod = NULL;
  for (int i = 0; i < m->nx; i++) {
    const TeTensor *x = m->xs[i];
    const Expr *idx[TOPI_MAX_RANK];
    for (int d = 0; d < x->ndim; d++) {
      int s = m->slot[m->in[i].labels[d]];
      const Expr *v = s >= 0 ? ax[s] : m->r[-2 - s].var;
      idx[d] = x->shape[d] == 1 ? expr_i64(a, 0) : v; /* a broadcast "..." axis */
    }
    const Expr *ld = te_load(a, x, idx);
    prod = prod ? expr_mul(a, prod, ld) : ld;
  }
  return m->nr ? te_sum(a, prod, m->r, m->nr, NULL) : prod;
}

TeTensor *topi_einsum(Arena *a, const char *name, const char *equation, const TeTensor *const *xs, int n,
                      LoomError *err) {
  const char *on = "Einsum";
  if (!op_check_name(on, name, err)) return NULL;
  if (!equation || n < 1 || n > EIN_MAX_OPERANDS || !xs) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: needs an equation and 1..%d inputs", on, EIN_MAX_OPERANDS);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    if (!op_check_tensor(on, "inputs", xs[i], err)) return NULL;
    if (!dtype_eq(xs[i]->dtype, xs[0]->dtype) || dtype_is_bool(xs[0]->dtype)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: inputs must share one numeric dtype (input %d differs)", on, i);
      return NULL;
    }
  }
  EinArgs e = {.xs = xs, .nx = n};
  int count[EIN_LABELS] = {0};
  int64_t extent[EIN_LABELS];
  for (int l = 0; l < EIN_LABELS; l++) extent[l] = 1;
  const char *p = equation;
  for (int i = 0; i < n; i++) {
    if (!(p = parse_term(p, &e.in[i], equation, err))) return NULL;
    if (*p != (i == n - 1 ? '-' : ',') || e.in[i].n != xs[i]->ndim) {
      err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: term %d of \"%s\" does not match input %d (rank %d)", i, equation, i,
              xs[i]->ndim);
      return NULL;
    }
    p++;
    for (int d = 0; d < xs[i]->ndim; d++) {
      int l = e.in[i].labels[d];
      int64_t ext = xs[i]->shape[d];
      if (ext != extent[l] && extent[l] != 1 && ext != 1) {
        err_set(err, LOOM_ERR_INVALID_ARG, "%s: axis '%c' has extents %lld and %lld", on, l < 26 ? 'a' + l : 'A' + l - 26,
                (long long)extent[l], (long long)ext);
        return NULL;
      }
      if (ext > extent[l]) extent[l] = ext;
      count[l]++;
    }
  }
  EinTerm out;
  if (*p != '>') {
    err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: equation \"%s\" has no explicit output", equation);
    return NULL;
  }
  if (!(p = parse_term(p + 1, &out, equation, err))) return NULL;
  if (*p) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: equation \"%s\" has more than one output", equation);
    return NULL;
  }
  for (int l = 0; l < EIN_LABELS; l++) e.slot[l] = -1;
  int64_t oshape[TOPI_MAX_RANK];
  for (int d = 0; d < out.n; d++) {
    int l = out.labels[d];
    if (e.slot[l] != -1 || !count[l]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: output axis %d is repeated or not in any input", on, d);
      return NULL;
    }
    e.slot[l] = d;
    oshape[d] = extent[l];
  }
  for (int l = 0; l < EIN_LABELS; l++) {
    if (!count[l] || e.slot[l] != -1) continue;
    if (e.nr == TOPI_MAX_RANK * 2) {
      err_set(err, LOOM_ERR_UNSUPPORTED, "%s: more than %d summed axes", on, TOPI_MAX_RANK * 2);
      return NULL;
    }
    e.slot[l] = -2 - e.nr;
    e.r[e.nr] = te_reduce_axis(a, arena_printf(a, "r%d", e.nr), extent[l]);
    e.nr++;
  }
  /* A contraction of two operands is a (batched) matrix product: the
   * matmul schedule takes it when its body is one product of two loads. */
  TeTensor *t = te_compute(a, name, out.n, oshape, einsum_body, &e, err);
  return e.nr > 0 && n == 2 ? te_set_schedule_rule(t, "matmul") : t;
}

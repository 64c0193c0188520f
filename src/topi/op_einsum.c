/* Einsum (numpy.einsum semantics): the equation names every axis of every
 * operand with a letter; letters kept in the output are its axes (in the
 * output's order), the others are summed. The whole contraction is one te
 * stage: out[output letters] = sum over the other letters of the product
 * of the operands, each loaded at its letters' variables (a letter repeated
 * within one operand reads its diagonal). "..." stands for the same
 * broadcast batch axes in every term. */
#include "topi/op_internal.h"

#include <ctype.h>
#include <string.h>

enum { EIN_LETTERS = 52, EIN_LABELS = EIN_LETTERS + TOPI_MAX_RANK, EIN_MAX_OPERANDS = 16 };

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

static int letter_label(char c) { return islower((unsigned char)c) ? c - 'a' : 26 + (c - 'A'); }

/* One term ("ij", "...ii"): labels with the ellipsis expanded for a rank-r
 * operand whose ellipsis spans e axes (labels EIN_LETTERS + ne - e ...). */
static bool parse_term(const char *s, size_t len, int rank, int *ne, EinTerm *t, bool output, LoomError *err) {
  int letters = 0;
  bool ell = false;
  for (size_t k = 0; k < len; k++) {
    if (s[k] == '.') {
      if (ell || k + 2 >= len || s[k + 1] != '.' || s[k + 2] != '.') goto bad;
      ell = true;
      k += 2;
    } else if (isalpha((unsigned char)s[k])) {
      letters++;
    } else {
      goto bad;
    }
  }
  int e = output ? *ne : rank - letters;
  if (!ell) e = 0;
  if (e < 0 || (!output && !ell && letters != rank) || letters + e > TOPI_MAX_RANK) {
    err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: term \"%.*s\" does not match an operand of rank %d", (int)len, s,
            rank);
    return false;
  }
  if (!output && e > *ne) *ne = e;
  t->n = 0;
  for (size_t k = 0; k < len; k++) {
    if (s[k] == '.') {
      for (int j = 0; j < e; j++) t->labels[t->n++] = EIN_LETTERS + TOPI_MAX_RANK - e + j;
      k += 2;
    } else {
      t->labels[t->n++] = letter_label(s[k]);
    }
  }
  return true;
bad:
  err_set(err, LOOM_ERR_INVALID_ARG, "Einsum: cannot parse term \"%.*s\"", (int)len, s);
  return false;
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
  /* The equation without spaces. */
  size_t len = strlen(equation);
  char *eq = arena_alloc(a, len + 1);
  size_t m = 0;
  for (size_t k = 0; k < len; k++)
    if (!isspace((unsigned char)equation[k])) eq[m++] = equation[k];
  eq[m] = 0;
  const char *arrow = strstr(eq, "->");
  size_t lhs_len = arrow ? (size_t)(arrow - eq) : m;

  EinArgs e = {.xs = xs, .nx = n};
  int ne = 0, count[EIN_LABELS] = {0};
  int64_t extent[EIN_LABELS];
  for (int l = 0; l < EIN_LABELS; l++) extent[l] = 1;
  const char *p = eq;
  for (int i = 0; i < n; i++) {
    const char *end = memchr(p, ',', lhs_len - (size_t)(p - eq));
    bool last = i == n - 1;
    if (last != (end == NULL)) {
      err_set(err, LOOM_ERR_INVALID_ARG, "%s: equation \"%s\" has a different number of terms than %d inputs", on,
              equation, n);
      return NULL;
    }
    size_t tl = last ? lhs_len - (size_t)(p - eq) : (size_t)(end - p);
    if (!parse_term(p, tl, xs[i]->ndim, &ne, &e.in[i], false, err)) return NULL;
    for (int d = 0; d < xs[i]->ndim; d++) {
      int l = e.in[i].labels[d];
      int64_t ext = xs[i]->shape[d];
      bool batch = l >= EIN_LETTERS;
      if (ext != extent[l] && extent[l] != 1 && !(batch && ext == 1)) {
        err_set(err, LOOM_ERR_INVALID_ARG, "%s: axis \"%c\" has extents %lld and %lld", on,
                batch ? '.' : (l < 26 ? 'a' + l : 'A' + l - 26), (long long)extent[l], (long long)ext);
        return NULL;
      }
      if (ext != 1 || !count[l]) extent[l] = ext > extent[l] ? ext : extent[l];
      count[l]++;
    }
    p = last ? p : end + 1;
  }
  /* The output: explicit, or numpy's implicit one ("..." then the letters
   * used once, alphabetically). */
  EinTerm out = {.n = 0};
  if (arrow) {
    if (!parse_term(arrow + 2, strlen(arrow + 2), 0, &ne, &out, true, err)) return NULL;
  } else {
    for (int j = 0; j < ne; j++) out.labels[out.n++] = EIN_LETTERS + TOPI_MAX_RANK - ne + j;
    for (int l = 0; l < EIN_LETTERS; l++) {
      int ll = l < 26 ? 26 + l : l - 26; /* uppercase sorts first in ASCII */
      if (count[ll] == 1 && out.n < TOPI_MAX_RANK) out.labels[out.n++] = ll;
    }
  }
  for (int l = 0; l < EIN_LABELS; l++) e.slot[l] = -1;
  int64_t oshape[TOPI_MAX_RANK];
  for (int d = 0; d < out.n; d++) {
    int l = out.labels[d];
    if (e.slot[l] != -1 || (!count[l] && l < EIN_LETTERS)) {
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
  return te_compute(a, name, out.n, oshape, einsum_body, &e, err);
}

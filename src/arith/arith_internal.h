/* Internals shared by the files of the arithmetic module. */
#ifndef LOOM_ARITH_ARITH_INTERNAL_H
#define LOOM_ARITH_ARITH_INTERNAL_H

#include "arith/arith.h"

/* What is known about one bound variable. The constant bound is computed at
 * bind time, so a range that mentions other variables never recurses. */
typedef struct VarRange {
  const Expr *min, *extent;
  IntBound bound;
} VarRange;

struct Analyzer {
  Arena *arena;
  PtrMap ranges; /* Var -> VarRange* */
};

/* INT64_MIN / INT64_MAX stand for -inf / +inf in bounds. */
#define ARITH_NEG_INF INT64_MIN
#define ARITH_POS_INF INT64_MAX

int64_t arith_sat_add(int64_t x, int64_t y);
int64_t arith_sat_mul(int64_t x, int64_t y);
int64_t arith_floordiv_i64(int64_t x, int64_t y); /* y != 0, no INT64_MIN/-1 */
int64_t arith_floormod_i64(int64_t x, int64_t y);

/* Normalizes v to the value set of integer dtype t (wraps to the bit width;
 * unsigned values are kept as their bit pattern, bool as 0/1). */
int64_t arith_wrap_int(DType t, int64_t v);
/* The whole value range of an integer dtype (unbounded for 64-bit unsigned). */
IntBound arith_dtype_bound(DType t);
/* Are index-style rules (bounds, division rewrites) valid for this dtype?
 * Only for scalar int64: narrower types wrap, so interval reasoning over
 * their sums would be unsound. */
bool arith_is_index_type(DType t);

/* Constant bound where variables in `dom` (Var -> IntSet*, may be NULL) take
 * their (constant) set, others their bound range. */
IntBound arith_bound_in(Analyzer *az, const Expr *e, const PtrMap *dom);

/* Structural total order used for canonical term order. */
int arith_expr_order(const Expr *x, const Expr *y);

/* Canonical affine form: sum of coef * monomial + constant (canonical.c). */
typedef struct ArithTerm {
  int64_t coef;
  const Expr *const *atoms; /* sorted by arith_expr_order */
  int n_atoms;
} ArithTerm;

typedef struct ArithSum {
  DType dtype;
  ArithTerm *terms; /* sorted, no zero coefficients, no duplicate monomials */
  int n;
  int64_t constant;
} ArithSum;

/* Parses an (already simplified) integer expression into a sum. */
ArithSum arith_sum_of(Analyzer *az, const Expr *e);
ArithSum arith_sum_add(Analyzer *az, ArithSum x, ArithSum y, int64_t y_scale);
ArithSum arith_sum_scale(Analyzer *az, ArithSum x, int64_t k);
/* Product; false when it would be too large to distribute. */
bool arith_sum_mul(Analyzer *az, ArithSum x, ArithSum y, ArithSum *out);
const Expr *arith_sum_to_expr(Analyzer *az, ArithSum s);
const Expr *arith_term_monomial(Analyzer *az, DType t, const ArithTerm *term);
IntBound arith_sum_bound(Analyzer *az, ArithSum s, const PtrMap *dom);

#endif

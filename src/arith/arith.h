/* The arithmetic module: simplification, bounds and iterator maps.
 * (DESIGN.md principle 5: most compiler bugs live here, so it has its own
 * randomized tests against brute-force evaluation.)
 *
 * An Analyzer carries what is known about variables (their ranges) and
 * allocates results in its arena. All index arithmetic is int64. */
#ifndef LOOM_ARITH_ARITH_H
#define LOOM_ARITH_ARITH_H

#include "ir/expr.h"
#include "support/error.h"
#include "support/ptrmap.h"

typedef struct Analyzer Analyzer;

Analyzer *arith_analyzer_new(Arena *a);
Arena *arith_arena(Analyzer *az);
/* var ranges over [min, min + extent); min/extent may be symbolic. Binding
 * again overrides the earlier range. */
void arith_bind_range(Analyzer *az, const Expr *var, const Expr *min, const Expr *extent);
void arith_bind_const_range(Analyzer *az, const Expr *var, int64_t min, int64_t extent);

/* Simplifies to a canonical form: constants folded; integer sums of products
 * in an affine canonical order (so equal affine expressions print equal);
 * floordiv/floormod rewritten with the known ranges (e.g.
 * floordiv(i*8 + j, 8) -> i when 0 <= j < 8); min/max/select/comparisons
 * decided where bounds allow; float expressions only constant-folded
 * (no reassociation, so results stay bit-exact). Never changes the value. */
const Expr *arith_simplify(Analyzer *az, const Expr *e);

/* Inclusive constant bounds of an integer expression under the bound ranges;
 * INT64_MIN / INT64_MAX where unbounded. */
typedef struct IntBound {
  int64_t min, max;
} IntBound;
IntBound arith_const_bound(Analyzer *az, const Expr *e);

/* True only if cond (bool) holds for every value of the bound variables. */
bool arith_can_prove(Analyzer *az, const Expr *cond);
bool arith_can_prove_equal(Analyzer *az, const Expr *x, const Expr *y);

/* Symbolic interval [min, max] (inclusive) that e takes when each variable
 * in `dom` (Var -> const IntSet*) ranges over its set; variables not in dom
 * are kept symbolic (a point). NULL min/max = unbounded. Used for region
 * inference by compute_at and friends. */
typedef struct IntSet {
  const Expr *min, *max;
} IntSet;
IntSet arith_eval_set(Analyzer *az, const Expr *e, const PtrMap *dom);
IntSet intset_point(const Expr *e);
IntSet intset_range(Analyzer *az, const Expr *min, const Expr *extent); /* [min, min+extent-1] */
IntSet intset_union(Analyzer *az, IntSet x, IntSet y);

/* Iterator-map detection (TensorIR's affine binding check).
 *
 * Given index expressions over loop iterators (each loop var with its
 * [min, min+extent) range in `loops`), decide whether the indices are affine
 * compositions of splits and fusions of the loop iterators, and — when
 * `require_bijective` — whether the map from the loop domain (restricted by
 * `predicate`, which may be NULL) onto the product of the index extents is
 * a bijection: every loop iterator is used exactly once, the pieces do not
 * overlap, and index k covers exactly [0, extents[k]) (after subtracting its
 * minimum, reported in mins[k]).
 *
 * On success returns true and fills out_extents/out_mins (arrays of n,
 * caller-allocated; may be NULL). On failure returns false with a message in
 * err naming the offending index expression. */
bool arith_detect_iter_map(Analyzer *az, const Expr *const *indices, int n, const IterVar *loops,
                           int n_loops, const Expr *predicate, bool require_bijective,
                           const Expr **out_extents, const Expr **out_mins, LoomError *err);

/* Evaluates an integer or bool scalar expression at a point: `values` maps
 * Var -> const int64_t*. Integer results wrap to their dtype (unsigned kept
 * as the bit pattern). False on division by zero, an unbound variable, or a
 * node it cannot evaluate (loads, floats, vectors). */
bool arith_eval_int(const Expr *e, const PtrMap *values, int64_t *out);

#endif

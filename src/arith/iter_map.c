/* Iterator-map detection: first version accepts indices that are plain loop
 * variables or constants (each loop used at most once). */
#include "arith/arith_internal.h"

bool arith_detect_iter_map(Analyzer *az, const Expr *const *indices, int n, const IterVar *loops,
                           int n_loops, const Expr *predicate, bool require_bijective,
                           const Expr **out_extents, const Expr **out_mins, LoomError *err) {
  bool *used = ARENA_ARRAY(az->arena, bool, n_loops);
  for (int k = 0; k < n; k++) {
    const Expr *e = arith_simplify(az, indices[k]);
    int found = -1;
    for (int l = 0; l < n_loops; l++)
      if (loops[l].var == e) found = l;
    if (found < 0) {
      for (int l = 0; l < n_loops; l++)
        if (expr_uses_var(e, loops[l].var)) {
          err_set(err, LOOM_ERR_INVALID_ARG, "index %d (%s) is not a supported iterator map", k, expr_to_string(az->arena, indices[k]));
          return false;
        }
      if (out_extents) out_extents[k] = expr_i64(az->arena, 1);
      if (out_mins) out_mins[k] = e;
      continue;
    }
    if (used[found]) {
      err_set(err, LOOM_ERR_INVALID_ARG, "index %d (%s) uses loop variable %s twice", k, expr_to_string(az->arena, indices[k]), loops[found].var->var.name);
      return false;
    }
    used[found] = true;
    if (out_extents) out_extents[k] = loops[found].extent;
    if (out_mins) out_mins[k] = loops[found].min;
  }
  (void)predicate;
  (void)require_bijective;
  return true;
}

/* fuse: directly nested loops l_0 > l_1 > ... > l_{n-1} become one loop f of
 * extent e_0 * ... * e_{n-1}; l_k = min_k + floormod(floordiv(f, e_{k+1} *
 * ... * e_{n-1}), e_k). Every l_{k+1} must be the only child of l_k, so the
 * fused loop visits exactly the iterations of the nest, in the same order. */
#include "support/ptrmap.h"
#include "support/strbuf.h"
#include "tir/schedule/schedule_internal.h"

#include <string.h>

SchRV sch_fuse(Schedule *s, const SchRV *loop_rvs, int n) {
  if (n < 1 || !loop_rvs) {
    sch_fail(s, "fuse: expected at least one loop, got %d", n);
    return -1;
  }
  Arena *a = s->arena;
  const Stmt **loops = ARENA_ARRAY(a, const Stmt *, n);
  for (int i = 0; i < n; i++) {
    loops[i] = sch_lookup_loop(s, loop_rvs[i]);
    if (!loops[i]) return -1;
    for (int j = 0; j < i; j++)
      if (loops[j] == loops[i]) {
        sch_fail(s, "fuse: loop %s appears twice", sch_loop_name(loops[i]));
        return -1;
      }
    if (loops[i]->loop.kind != FOR_SERIAL) {
      sch_fail(s, "fuse: loop %s is %s; only serial loops can be fused", sch_loop_name(loops[i]),
               for_kind_name(loops[i]->loop.kind));
      return -1;
    }
  }
  for (int i = 0; i + 1 < n; i++)
    if (loops[i]->loop.body != loops[i + 1]) {
      sch_fail(s, "fuse: loop %s is not directly nested in loop %s as its only child (loops must be "
                  "given outer first, each the only statement in the previous one)",
               sch_loop_name(loops[i + 1]), sch_loop_name(loops[i]));
      return -1;
    }
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (expr_uses_var(loops[j]->loop.min, loops[i]->loop.var) ||
          expr_uses_var(loops[j]->loop.extent, loops[i]->loop.var)) {
        sch_fail(s, "fuse: the range of loop %s depends on loop %s", sch_loop_name(loops[j]),
                 sch_loop_name(loops[i]));
        return -1;
      }

  StrBuf sb;
  sb_init(&sb);
  for (int i = 0; i < n; i++) sb_printf(&sb, "%s_", sch_loop_name(loops[i]));
  sb_puts(&sb, "fused");
  const Expr *f = sch_new_loop_var(s, sb_cstr(&sb));
  sb_free(&sb);

  /* inner[k] = e_{k+1} * ... * e_{n-1} */
  const Expr **inner = ARENA_ARRAY(a, const Expr *, n);
  const Expr *extent = NULL;
  for (int i = n - 1; i >= 0; i--) {
    inner[i] = extent ? extent : expr_i64(a, 1);
    extent = extent ? expr_mul(a, loops[i]->loop.extent, extent) : loops[i]->loop.extent;
  }
  int64_t ce;
  if (!expr_as_int(extent, &ce)) {
    bool all_const = true;
    int64_t prod = 1;
    for (int i = 0; i < n && all_const; i++) {
      int64_t e;
      all_const = expr_as_int(loops[i]->loop.extent, &e) && !__builtin_mul_overflow(prod, e, &prod);
    }
    if (all_const) extent = expr_i64(a, prod);
  }
  PtrMap vmap;
  ptrmap_init(&vmap, a);
  for (int i = 0; i < n; i++) {
    const Expr *v = f;
    if (i + 1 < n) v = expr_floordiv(a, v, inner[i]);
    if (i > 0) v = expr_floormod(a, v, loops[i]->loop.extent);
    if (!expr_is_int(loops[i]->loop.min, 0)) v = expr_add(a, loops[i]->loop.min, v);
    ptrmap_put(&vmap, loops[i]->loop.var, (void *)v);
  }
  const Stmt *body = stmt_substitute(a, loops[n - 1]->loop.body, &vmap);
  const Stmt *nl = stmt_for(a, f, expr_i64(a, 0), extent, FOR_SERIAL, body);
  const Stmt *root = stmt_replace(a, s->func->body, loops[0], nl);
  sch_set_body(s, sch_simplify_bindings(s, root, &f, 1));

  SchRV out = sch_new_loop_rv(s, f);
  Inst in = {.kind = INST_FUSE, .inputs = loop_rvs, .n_inputs = n, .outputs = &out, .n_outputs = 1};
  sch_record(s, &in);
  return out;
}

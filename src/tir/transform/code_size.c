/* Code size: how much code a statement becomes, so that every pass or
 * schedule that multiplies code (unrolling, the C compiler's unroll pragma,
 * vector chunks, loop partitioning) can stop before the generated C takes
 * the system compiler minutes. A MaxPool whose 60x80 window and 7-column
 * tile were all marked unrolled became 33,600 statements in one basic block,
 * and clang ran for minutes on that one kernel: loop extents alone (each of
 * 60, 80 and 7 looked harmless) cannot bound the product.
 *
 * The unit is one operation or statement on at most one 512-bit vector:
 * roughly one machine instruction or less (index arithmetic folds into
 * addressing, the C compiler shares common subexpressions). Constants and
 * variables are operands and count nothing. Loops count their body once,
 * except that an unrolled loop counts it once per copy it will become and a
 * vectorized loop once per vector register of each of its chunks. The count
 * saturates (at TIR_CODE_SIZE_MAX), so a huge tree costs little to measure. */
#include "tir/transform/transform.h"

/* Far above any budget: once there, nobody needs the exact figure. */
enum { TIR_CODE_SIZE_MAX = 1 << 28 };

static int64_t sat_add(int64_t x, int64_t y) { return x + y > TIR_CODE_SIZE_MAX ? TIR_CODE_SIZE_MAX : x + y; }
static int64_t sat_mul(int64_t x, int64_t y) {
  return y > 0 && x > TIR_CODE_SIZE_MAX / y ? TIR_CODE_SIZE_MAX : x * y;
}

int64_t tir_vector_registers(DType t) {
  int64_t bits = (int64_t)(t.bits < 8 ? 8 : t.bits) * (t.lanes ? t.lanes : 1);
  return bits <= 512 ? 1 : (bits + 511) / 512;
}

typedef struct SizeWalk {
  int64_t n;
} SizeWalk;

static bool count_expr_cb(Visitor *v, const Expr *e) {
  SizeWalk *w = v->user;
  if (w->n >= TIR_CODE_SIZE_MAX) return false; /* saturated: skip the rest */
  switch (e->kind) {
    /* Immediates and variables are operands, not instructions. */
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return false;
    case EXPR_SELECT:
      /* A decided select (a Winograd transform's zero taps) is folded by
       * the C compiler: only its taken branch becomes code. */
      if (e->select.cond->kind == EXPR_INT) {
        visit_expr(v, e->select.cond->int_value ? e->select.t : e->select.f);
        return false;
      }
      break;
    default: break;
  }
  w->n = sat_add(w->n, tir_vector_registers(e->dtype));
  return true;
}

int64_t tir_expr_code_size(const Expr *e) {
  if (!e) return 0;
  SizeWalk w = {0};
  Visitor v = {NULL, count_expr_cb, &w};
  visit_expr(&v, e);
  return w.n;
}

static int64_t exprs_size(const Expr *const *es, int n) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total = sat_add(total, tir_expr_code_size(es[i]));
  return total;
}

int64_t tir_unroll_copies(int64_t extent, int64_t body_size) {
  if (extent <= 1) return 1;
  if (body_size < 1) body_size = 1;
  int64_t fit = TIR_CODE_BUDGET / body_size;
  if (fit > TIR_MAX_UNROLL_COPIES) fit = TIR_MAX_UNROLL_COPIES;
  if (fit >= extent) return extent;
  /* A divisor of the extent leaves the C compiler no remainder loop (one
   * more copy of the body) when one is not much smaller. */
  for (int64_t d = fit; d > 1 && 2 * d >= fit; d--)
    if (extent % d == 0) return d;
  return fit < 1 ? 1 : fit;
}

/* Copies of a vectorized loop's body: power-of-two chunks (vectorize.c), each
 * taking one node per 16 lanes (a 512-bit vector of 32-bit elements). */
static int64_t vector_copies(const Stmt *s) {
  int64_t ext;
  if (!expr_as_int(s->loop.extent, &ext) || ext < 2 || ext > 64) return 1;
  int64_t copies = 0;
  for (int64_t chunk = 64; chunk >= 1; chunk /= 2)
    if (ext & chunk) copies += chunk > 16 ? chunk / 16 : 1;
  return copies;
}

int64_t tir_code_size(const Stmt *s) {
  if (!s) return 0;
  switch (s->kind) {
    case STMT_FOR: {
      int64_t body = tir_code_size(s->loop.body), ext;
      int64_t head = sat_add(1, sat_add(tir_expr_code_size(s->loop.min), tir_expr_code_size(s->loop.extent)));
      if (s->loop.kind == FOR_UNROLLED) {
        /* Symbolic extents: the C compiler's unroll pragma (codegen) takes
         * TIR_SYMBOLIC_UNROLL copies at most. */
        if (!expr_as_int(s->loop.extent, &ext)) ext = TIR_SYMBOLIC_UNROLL;
        return sat_add(head, sat_mul(body, tir_unroll_copies(ext, body)));
      }
      if (s->loop.kind == FOR_VECTORIZED) return sat_add(head, sat_mul(body, vector_copies(s)));
      return sat_add(head, body);
    }
    case STMT_BLOCK_REALIZE: {
      const Block *b = s->realize.block;
      int64_t n = sat_add(tir_expr_code_size(s->realize.predicate), exprs_size(s->realize.iter_values, s->realize.n));
      return sat_add(n, sat_add(tir_code_size(b->init), tir_code_size(b->body)));
    }
    case STMT_STORE:
      return sat_add(1, sat_add(tir_expr_code_size(s->store.value), exprs_size(s->store.indices, s->store.n)));
    case STMT_SEQ: {
      int64_t n = 0;
      for (int i = 0; i < s->seq.n; i++) n = sat_add(n, tir_code_size(s->seq.stmts[i]));
      return n;
    }
    case STMT_IF:
      return sat_add(1, sat_add(tir_expr_code_size(s->if_.cond),
                                sat_add(tir_code_size(s->if_.then_s), tir_code_size(s->if_.else_s))));
    case STMT_EVALUATE: return tir_expr_code_size(s->eval.value);
    case STMT_ALLOCATE: return tir_code_size(s->alloc.body);
    case STMT_DMA: return 1; /* one call */
    case STMT_DMA_WAIT: return 1;
    default: return 1;
  }
}

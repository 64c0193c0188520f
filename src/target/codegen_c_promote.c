/* Register promotion of local tiles.
 *
 * After unrolling, a register tile (a conv or matmul accumulator that
 * tir_compact_buffers shrank to MR x NR) is a small local array read and
 * written only at constant offsets. Emitted as an array of vectors, GCC
 * keeps it in memory: its scalar replacement gives up on arrays of vector
 * stores, so the micro-kernel's accumulators live on the stack and every
 * FMA loads and stores one (BERT's 6 x 4-vector matmul tile ran at half of
 * oneDNN's speed). Emitted as one C variable per vector, the same code
 * keeps all of them in registers. */
#include "target/codegen_c_internal.h"
#include "tir/transform/transform.h"

#include <string.h>

/* Tiles up to this many 512-bit registers are promoted; more cannot all sit
 * in the 32 vector registers anyway, and GCC spills variables no worse than
 * arrays. Counted in registers, not slots: a tile of wide vectors (64 lanes
 * of f64 per slot, 8 registers each) multiplies the live values the C
 * compiler's register allocator juggles through an unrolled body, which is
 * what its time grows with (docs/transform.md "Code size"). */
enum { PROMOTE_MAX_REGISTERS = 64 };

typedef struct Promoted {
  int lanes;
  int64_t n_slots;
  const char **names;
} Promoted;

typedef struct Scan {
  const Buffer *buf;
  int64_t n_elems;
  int lanes; /* the vector width of the accesses; 1 while all are scalar */
  bool ok;
} Scan;

/* The element offset of a flat access with `lanes` lanes, when it is a
 * constant (a dense ramp's base for a vector). */
static bool const_offset(const Expr *const *idx, int n, int lanes, int64_t *off) {
  if (n != 1) return false;
  const Expr *i = idx[0];
  if (lanes == 1) return i->dtype.lanes == 1 && expr_as_int(i, off);
  return i->kind == EXPR_RAMP && i->ramp.lanes == lanes && expr_is_int(i->ramp.stride, 1) &&
         expr_as_int(i->ramp.base, off);
}

/* Scalar accesses may sit anywhere (a lane of a slot); vector ones must all
 * have one width and cover exactly one slot. */
static void scan_access(Scan *sc, const Expr *const *idx, int n, int lanes) {
  int64_t off;
  if (lanes > 1 && sc->lanes == 1) sc->lanes = lanes;
  if ((lanes > 1 && lanes != sc->lanes) || !const_offset(idx, n, lanes, &off) || off % lanes || off < 0 ||
      off + lanes > sc->n_elems)
    sc->ok = false;
}

static bool scan_expr(Visitor *v, const Expr *e) {
  Scan *sc = v->user;
  if (sc->ok && e->kind == EXPR_LOAD && e->load.buffer == sc->buf)
    scan_access(sc, e->load.indices, e->load.n, e->dtype.lanes);
  return sc->ok;
}

static bool scan_stmt(Visitor *v, const Stmt *s) {
  Scan *sc = v->user;
  /* An outlined parallel body would need the variables in its closure. */
  if (s->kind == STMT_FOR && s->loop.kind == FOR_PARALLEL) sc->ok = false;
  /* A DMA copy needs the buffer's address: it stays an array. */
  if (s->kind == STMT_DMA && (s->dma.dst->load.buffer == sc->buf || s->dma.src->load.buffer == sc->buf)) sc->ok = false;
  if (sc->ok && s->kind == STMT_STORE && s->store.buffer == sc->buf)
    scan_access(sc, s->store.indices, s->store.n, s->store.value->dtype.lanes);
  return sc->ok;
}

bool cg_promote_alloc(CodegenC *cg, StrBuf *sb, const Buffer *b, int64_t n_elems, const Stmt *body, int ind) {
  if (b->ndim != 1 || b->strides || b->dtype.lanes != 1 || dtype_is_bool(b->dtype) || n_elems < 1) return false;
  Scan sc = {.buf = b, .n_elems = n_elems, .lanes = 1, .ok = true};
  Visitor v = {.visit_stmt = scan_stmt, .visit_expr = scan_expr, .user = &sc};
  visit_stmt(&v, body);
  DType t = b->dtype;
  t.lanes = (uint16_t)sc.lanes;
  if (!sc.ok || n_elems % sc.lanes || n_elems / sc.lanes * tir_vector_registers(t) > PROMOTE_MAX_REGISTERS) return false;
  Promoted *p = arena_alloc(cg->arena, sizeof *p);
  p->lanes = sc.lanes;
  p->n_slots = n_elems / sc.lanes;
  p->names = arena_alloc(cg->arena, (size_t)p->n_slots * sizeof *p->names);
  const char *ty = cg_type(cg, t, b->name);
  const char *base = cg_name_of(cg, b, b->name);
  for (int64_t k = 0; k < p->n_slots; k++) {
    p->names[k] = cg_fresh_name(cg, arena_printf(cg->arena, "%s_%lld", base, (long long)k));
    sb_indent(sb, ind);
    /* Zero-initialized: a slot read before any write (never, in a
     * well-formed tile) would be as undefined as the array's element. */
    sb_printf(sb, "%s %s = {0};\n", ty, p->names[k]);
  }
  ptrmap_put(&cg->promoted, b, p);
  return true;
}

const char *cg_promoted_slot(CodegenC *cg, const Buffer *b, const Expr *const *idx, int n, int lanes) {
  const Promoted *p = ptrmap_get(&cg->promoted, b);
  int64_t off;
  if (!p) return NULL;
  if ((lanes > 1 && lanes != p->lanes) || !const_offset(idx, n, lanes, &off)) {
    cg_fail(cg, LOOM_ERR_INTERNAL, "C codegen of \"%s\": promoted tile \"%s\" accessed at a non-constant offset",
            cg->func_name, b->name);
    return "0";
  }
  const char *slot = p->names[off / p->lanes];
  /* A scalar access to a vector slot is one of its lanes (GCC's vector
   * subscript, an lvalue too). */
  return lanes == p->lanes ? slot : arena_printf(cg->arena, "%s[%lld]", slot, (long long)(off % p->lanes));
}

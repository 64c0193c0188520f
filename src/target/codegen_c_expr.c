/* Expressions -> C. Scalars map to C operators and the prelude's helpers
 * (floor division, min/max). Vectors use GCC/Clang vector types: arithmetic
 * and comparisons are native, contiguous loads/stores go through memcpy
 * (unaligned-safe; compiles to one vmovups), and what has no vector form
 * (gather, math calls, floor division, min/max) becomes a small lane-wise
 * helper the compiler can still vectorize. */
#include "target/codegen_c_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void cg_fail(CodegenC *cg, loom_status st, const char *fmt, ...) {
  if (cg->status != LOOM_OK) return;
  va_list ap;
  va_start(ap, fmt);
  err_vset(cg->err, st, fmt, ap);
  va_end(ap);
  cg->status = st;
}

/* ---- names ---- */

static bool name_taken(const CodegenC *cg, const char *s) {
  for (int i = 0; i < cg->taken.n; i++)
    if (strcmp(cg->taken.items[i], s) == 0) return true;
  return false;
}

const char *cg_fresh_name(CodegenC *cg, const char *hint) {
  size_t n = hint ? strlen(hint) : 0;
  char *base = arena_alloc(cg->arena, n + 3);
  size_t k = 0;
  if (n == 0 || (hint[0] >= '0' && hint[0] <= '9')) base[k++] = 'v';
  for (size_t i = 0; i < n; i++) {
    char c = hint[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    base[k++] = ok ? c : '_';
  }
  base[k] = '\0';
  /* Our helpers and types own these prefixes; reserved C identifiers too. */
  bool type_like = (strncmp(base, "int", 3) == 0 || strncmp(base, "uint", 4) == 0 || strncmp(base, "float", 5) == 0 ||
                    strncmp(base, "bfloat", 6) == 0) &&
                   strchr(base, 'x');
  if (strncmp(base, "loom_", 5) == 0 || strncmp(base, "LOOM_", 5) == 0 || base[0] == '_' || type_like)
    base = arena_printf(cg->arena, "v%s", base);
  const char *name = base;
  for (int i = 1; name_taken(cg, name); i++) name = arena_printf(cg->arena, "%s_%d", base, i);
  VEC_PUSH(cg->arena, cg->taken, name);
  return name;
}

const char *cg_name_of(CodegenC *cg, const void *node, const char *hint) {
  const char *s = ptrmap_get(&cg->names, node);
  if (s) return s;
  s = cg_fresh_name(cg, hint);
  ptrmap_put(&cg->names, node, (void *)s);
  return s;
}

bool cg_in_scope(const CodegenC *cg, const void *node) {
  for (int i = cg->scope.n - 1; i >= 0; i--)
    if (cg->scope.items[i] == node) return true;
  return false;
}

/* ---- types ---- */

const char *cg_scalar_type(CodegenC *cg, DType t, const char *what) {
  const char *s = dtype_c_type(dtype_element(t));
  if (!s) {
    char buf[16];
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": dtype %s of %s has no C type yet", cg->func_name,
            dtype_str(t, buf), what);
    return "int";
  }
  return s;
}

static bool helper_done(CodegenC *cg, const char *name) {
  for (int i = 0; i < cg->helpers_done.n; i++)
    if (strcmp(cg->helpers_done.items[i], name) == 0) return true;
  VEC_PUSH(cg->arena, cg->helpers_done, arena_strdup(cg->arena, name));
  return false;
}

const char *cg_vector_type(CodegenC *cg, DType t) {
  if (dtype_is_bool(t)) t = dtype_make(DT_INT, 32, t.lanes);
  const char *elem = cg_scalar_type(cg, t, "a vector");
  const char *kind = t.code == DT_INT ? "int" : t.code == DT_UINT ? "uint" : t.code == DT_BFLOAT ? "bfloat" : "float";
  const char *name = arena_printf(cg->arena, "%s%dx%d", kind, t.bits, t.lanes);
  if (dtype_is_narrow_float_code(t.code)) {
    /* f8e4m3fn -> float8e4m3fnx16: the storage bytes of the lanes */
    char buf[16];
    name = arena_printf(cg->arena, "float%sx%d", dtype_str(dtype_element(t), buf) + 1, t.lanes);
  }
  if (t.lanes & (t.lanes - 1)) {
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": vector %s has %d lanes, expected a power of two",
            cg->func_name, name, t.lanes);
    return name;
  }
  if (!helper_done(cg, name))
    sb_printf(&cg->decls, "#ifndef LOOM_T_%s\n#define LOOM_T_%s\ntypedef %s %s __attribute__((vector_size(%d)));\n#endif\n",
              name, name, elem, name, dtype_bytes(t));
  return name;
}

const char *cg_type(CodegenC *cg, DType t, const char *what) {
  if (t.lanes > 1) return cg_vector_type(cg, t);
  return cg_scalar_type(cg, t, what);
}

/* ---- helpers ---- */

/* Emits `static inline` helper `name` once (guarded across functions of one
 * file by a macro). body is the full definition. */
void cg_put_helper(CodegenC *cg, const char *name, const char *def) {
  if (helper_done(cg, name)) return;
  sb_printf(&cg->decls, "#ifndef LOOM_H_%s\n#define LOOM_H_%s\n%s#endif\n", name, name, def);
}

/* A helper applying `scalar` (a printf format with %s for each operand) lane
 * by lane. */
static const char *lanewise_helper(CodegenC *cg, const char *op, DType t, int arity, const char *scalar_a,
                                   const char *scalar_ab) {
  const char *vt = cg_vector_type(cg, t);
  const char *name = arena_printf(cg->arena, "loom_%s_%s", op, vt);
  if (helper_done(cg, name)) return name;
  StrBuf d;
  sb_init(&d);
  if (arity == 1) {
    sb_printf(&d, "LOOM_HELPER %s %s(%s a) {\n  %s r;\n  for (int l = 0; l < %d; ++l) r[l] = ", vt, name, vt, vt,
              t.lanes);
    sb_printf(&d, scalar_a, "a[l]");
  } else {
    sb_printf(&d, "LOOM_HELPER %s %s(%s a, %s b) {\n  %s r;\n  for (int l = 0; l < %d; ++l) r[l] = ", vt, name, vt,
              vt, vt, t.lanes);
    sb_printf(&d, scalar_ab, "a[l]", "b[l]");
  }
  sb_puts(&d, ";\n  return r;\n}\n");
  sb_printf(&cg->decls, "#ifndef LOOM_H_%s\n#define LOOM_H_%s\n%s#endif\n", name, name, sb_cstr(&d));
  sb_free(&d);
  return name;
}

/* The C spelling of a scalar op that is not a plain operator, as a format
 * with two %s (operands); NULL when the operator form applies. */
static const char *scalar_special(CodegenC *cg, ExprKind k, DType t) {
  char buf[16];
  const char *sfx = dtype_str(dtype_element(t), buf);
  bool f = dtype_is_float(t), f32 = f && t.bits == 32;
  switch (k) {
    case EXPR_MIN:
      return arena_printf(cg->arena, "loom_min_%s(%%s, %%s)", sfx);
    case EXPR_MAX:
      return arena_printf(cg->arena, "loom_max_%s(%%s, %%s)", sfx);
    case EXPR_MOD:
      return f ? (f32 ? "fmodf(%s, %s)" : "fmod(%s, %s)") : NULL;
    case EXPR_FLOORDIV:
    case EXPR_FLOORMOD: {
      const char *op = k == EXPR_FLOORDIV ? "floordiv" : "floormod";
      if (f) return arena_printf(cg->arena, "loom_%s_%s(%%s, %%s)", op, f32 ? "f32" : "f64");
      if (t.code == DT_UINT) return k == EXPR_FLOORDIV ? "(%s / %s)" : "(%s %% %s)";
      if (t.bits == 64) return arena_printf(cg->arena, "loom_%s_i64(%%s, %%s)", op);
      if (t.bits == 32) return arena_printf(cg->arena, "loom_%s_i32(%%s, %%s)", op);
      return arena_printf(cg->arena, "((%s)loom_%s_i32(%%s, %%s))", cg_scalar_type(cg, t, "floor division"), op);
    }
    default:
      return NULL;
  }
}

static const char *binop_token(ExprKind k) {
  switch (k) {
    case EXPR_ADD: return "+";
    case EXPR_SUB: return "-";
    case EXPR_MUL: return "*";
    case EXPR_DIV: return "/";
    case EXPR_MOD: return "%";
    case EXPR_EQ: return "==";
    case EXPR_NE: return "!=";
    case EXPR_LT: return "<";
    case EXPR_LE: return "<=";
    case EXPR_GT: return ">";
    case EXPR_GE: return ">=";
    default: return NULL;
  }
}

/* Call name for element type t ("expf" for f32, "exp" for f64). */
static const char *call_c_name(CodegenC *cg, CallOp op, DType t) {
  const char *f32 = call_op_c_name(op);
  if (t.code == DT_FLOAT && t.bits == 32) return f32;
  if (t.code == DT_FLOAT && t.bits == 64) return arena_strndup(cg->arena, f32, strlen(f32) - 1);
  char buf[16];
  cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": call %s on dtype %s, expected f32 or f64", cg->func_name,
          call_op_name(op), dtype_str(t, buf));
  return f32;
}

/* ---- expressions ---- */

static void emit_int(StrBuf *sb, DType t, int64_t v) {
  if (dtype_is_bool(t)) {
    sb_puts(sb, v ? "1" : "0");
  } else if (t.code == DT_INT && t.bits == 64 && v == INT64_MIN) {
    sb_puts(sb, "INT64_MIN");
  } else if (t.code == DT_INT && (t.bits == 64 || t.bits == 32) && v >= INT32_MIN + 1 && v <= INT32_MAX) {
    sb_printf(sb, v < 0 ? "(%lld)" : "%lld", (long long)v);
  } else if (t.code == DT_INT && t.bits == 64) {
    sb_printf(sb, "INT64_C(%lld)", (long long)v);
  } else {
    sb_printf(sb, "((%s)%lld)", dtype_c_type(dtype_element(t)) ? dtype_c_type(dtype_element(t)) : "int64_t",
              (long long)v);
  }
}

static void emit_float(StrBuf *sb, DType t, double v) {
  bool f32 = t.bits == 32;
  if (isnan(v)) {
    sb_puts(sb, f32 ? "NAN" : "((double)NAN)");
    return;
  }
  if (isinf(v)) {
    sb_puts(sb, v < 0 ? (f32 ? "(-INFINITY)" : "(-(double)INFINITY)") : (f32 ? "INFINITY" : "((double)INFINITY)"));
    return;
  }
  char buf[48];
  snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  bool has_point = strpbrk(buf, ".e") != NULL;
  sb_printf(sb, "%s%s%s%s%s", v < 0 ? "(" : "", buf, has_point ? "" : ".0", f32 ? "f" : "", v < 0 ? ")" : "");
}

static char *expr_text(CodegenC *cg, const Expr *e) {
  StrBuf t;
  sb_init(&t);
  cg_emit_expr(cg, &t, e);
  char *s = arena_strdup(cg->arena, sb_cstr(&t));
  sb_free(&t);
  return s;
}

/* `(x - (vt){0})`: broadcast by GCC's scalar-vector rule. Subtracting zero
 * (not adding) keeps -0.0 intact. */
static void emit_broadcast_text(CodegenC *cg, StrBuf *sb, DType vt, const char *scalar) {
  const char *name = cg_vector_type(cg, vt);
  if (dtype_is_bool(vt))
    sb_printf(sb, "((%s){0} - (int32_t)(%s))", name, scalar);
  else
    sb_printf(sb, "((%s) - (%s){0})", scalar, name);
}

static void emit_mask_of_compare(CodegenC *cg, StrBuf *sb, const Expr *e) {
  const char *mt = cg_vector_type(cg, e->dtype);
  sb_printf(sb, "__builtin_convertvector((%s %s %s), %s)", expr_text(cg, e->bin.a), binop_token(e->kind),
            expr_text(cg, e->bin.b), mt);
}

static void emit_binary(CodegenC *cg, StrBuf *sb, const Expr *e) {
  DType t = e->bin.a->dtype;
  bool vec = t.lanes > 1;
  if (e->kind == EXPR_AND || e->kind == EXPR_OR) {
    const char *op = vec ? (e->kind == EXPR_AND ? "&" : "|") : (e->kind == EXPR_AND ? "&&" : "||");
    sb_printf(sb, "(%s %s %s)", expr_text(cg, e->bin.a), op, expr_text(cg, e->bin.b));
    return;
  }
  if (expr_is_compare(e->kind) && vec) {
    emit_mask_of_compare(cg, sb, e);
    return;
  }
  const char *special = scalar_special(cg, e->kind, t);
  if (special) {
    if (vec) {
      const char *op = e->kind == EXPR_MIN ? "min" : e->kind == EXPR_MAX ? "max" : e->kind == EXPR_MOD ? "mod"
                     : e->kind == EXPR_FLOORDIV ? "floordiv" : "floormod";
      const char *h = lanewise_helper(cg, op, t, 2, NULL, special);
      sb_printf(sb, "%s(%s, %s)", h, expr_text(cg, e->bin.a), expr_text(cg, e->bin.b));
    } else {
      sb_printf(sb, special, expr_text(cg, e->bin.a), expr_text(cg, e->bin.b));
    }
    return;
  }
  const char *tok = binop_token(e->kind);
  if (!tok) {
    cg_fail(cg, LOOM_ERR_INTERNAL, "C codegen: unhandled binary %s", expr_kind_name(e->kind));
    return;
  }
  /* Two int literals would be multiplied in `int`: widen the left one. */
  int64_t dummy;
  bool both_const = expr_as_int(e->bin.a, &dummy) && expr_as_int(e->bin.b, &dummy) && !vec;
  sb_printf(sb, "(%s%s %s %s)", both_const ? "(int64_t)" : "", expr_text(cg, e->bin.a), tok, expr_text(cg, e->bin.b));
}

/* A conversion to or from a narrow type (f16, bf16, fp8, fp4, int4...):
 * after tir_legalize_narrow only S -> f32/i32 and f32/f64/ints -> S are
 * left, done by loom_convert.h (vectors lane by lane). */
static void emit_narrow_cast(CodegenC *cg, StrBuf *sb, DType to, DType from, const char *x) {
  char b1[16], b2[16];
  DType te = dtype_element(to), fe = dtype_element(from);
  const char *fn = NULL;
  if (dtype_is_narrow(fe) && dtype_eq(dtype_compute_type(fe), te))
    fn = dtype_is_int(fe) ? arena_printf(cg->arena, "(%s)", cg_scalar_type(cg, te, "a cast"))
                          : arena_printf(cg->arena, "loom_%s_to_f32", dtype_str(fe, b1));
  else if (dtype_is_narrow(te) && dtype_is_int(te) && dtype_is_int(fe) && !dtype_is_narrow(fe))
    fn = arena_printf(cg->arena, "loom_i64_to_%s", dtype_str(te, b1));
  else if (dtype_is_narrow(te) && !dtype_is_int(te) && fe.code == DT_FLOAT &&
           (fe.bits == 32 || (fe.bits == 64 && te.code == DT_FLOAT && te.bits == 16)))
    fn = arena_printf(cg->arena, "loom_%s_to_%s", dtype_str(fe, b2), dtype_str(te, b1));
  if (!fn) {
    cg_fail(cg, LOOM_ERR_INTERNAL, "C codegen of \"%s\": cast from %s to %s; narrow types need tir_legalize_narrow first",
            cg->func_name, dtype_str(from, b1), dtype_str(to, b2));
    return;
  }
  cg_put_helper(cg, "loom_convert", "#include \"loom/loom_convert.h\"\n");
  if (to.lanes == 1) {
    sb_printf(sb, "%s(%s)", fn, x);
    return;
  }
  const char *tv = cg_vector_type(cg, to), *fv = cg_vector_type(cg, from);
  const char *name = arena_printf(cg->arena, "loom_cvt_%s_%s", tv, fv);
  bool f16 = (te.code == DT_FLOAT && te.bits == 16 && dtype_eq(fe, DT_F32)) ||
             (fe.code == DT_FLOAT && fe.bits == 16 && dtype_eq(te, DT_F32));
  if (f16) /* whole-vector F16C conversions (loom_convert.h) */
    cg_put_helper(cg, name,
                  arena_printf(cg->arena,
                               "LOOM_HELPER %s %s(%s a) {\n  %s r;\n  %s_n((const %s *)&a, (%s *)&r, %d);\n  return r;\n}\n",
                               tv, name, fv, tv, fn, cg_scalar_type(cg, fe, "a cast"), cg_scalar_type(cg, te, "a cast"),
                               to.lanes));
  else
    cg_put_helper(cg, name,
                  arena_printf(cg->arena,
                               "LOOM_HELPER %s %s(%s a) {\n  %s r;\n  for (int l = 0; l < %d; ++l) r[l] = %s(a[l]);\n"
                               "  return r;\n}\n",
                               tv, name, fv, tv, to.lanes, fn));
  sb_printf(sb, "%s(%s)", name, x);
}

static void emit_cast(CodegenC *cg, StrBuf *sb, const Expr *e) {
  DType to = e->dtype, from = e->un.a->dtype;
  const char *x = expr_text(cg, e->un.a);
  if (dtype_is_narrow(to) || dtype_is_narrow(from)) {
    emit_narrow_cast(cg, sb, to, from, x);
    return;
  }
  if (to.lanes == 1) {
    sb_printf(sb, "((%s)%s)", cg_scalar_type(cg, to, "a cast"), x);
    return;
  }
  const char *vt = cg_vector_type(cg, to);
  if (dtype_is_bool(from) && dtype_is_bool(to))
    sb_puts(sb, x);
  else if (dtype_is_bool(from)) /* mask -1 -> 1 */
    sb_printf(sb, "__builtin_convertvector(-%s, %s)", x, vt);
  else if (dtype_is_bool(to))
    sb_printf(sb, "__builtin_convertvector((%s != 0), %s)", x, vt);
  else
    sb_printf(sb, "__builtin_convertvector(%s, %s)", x, vt);
}

static void emit_select(CodegenC *cg, StrBuf *sb, const Expr *e) {
  const char *c = expr_text(cg, e->select.cond), *t = expr_text(cg, e->select.t), *f = expr_text(cg, e->select.f);
  if (e->select.cond->dtype.lanes == 1) {
    sb_printf(sb, "(%s ? %s : %s)", c, t, f);
    return;
  }
  /* C has no vector ?: (only C++ does): blend through the integer view. */
  DType vt = e->dtype;
  const char *vname = cg_vector_type(cg, vt);
  DType it = dtype_make(DT_INT, dtype_is_bool(vt) ? 32 : vt.bits, vt.lanes);
  const char *iname = cg_vector_type(cg, it);
  const char *mname = cg_vector_type(cg, e->select.cond->dtype);
  const char *name = arena_printf(cg->arena, "loom_select_%s", vname);
  cg_put_helper(cg, name,
             arena_printf(cg->arena,
                          "LOOM_HELPER %s %s(%s m, %s t, %s f) {\n"
                          "  %s mm = __builtin_convertvector(m, %s);\n"
                          "  return (%s)((mm & (%s)t) | (~mm & (%s)f));\n}\n",
                          vname, name, mname, vname, vname, iname, iname, vname, iname, iname));
  sb_printf(sb, "%s(%s, %s, %s)", name, c, t, f);
}

/* Bitwise intrinsics as C operators. Scalars are cast back to their type
 * (C promotes narrow operands to int); vector types do not promote. */
static void emit_bitwise(CodegenC *cg, StrBuf *sb, const Expr *e) {
  DType t = e->dtype;
  if (t.code != DT_INT && t.code != DT_UINT) {
    char buf[16];
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": call %s on dtype %s, expected an integer", cg->func_name,
            call_op_name(e->call.op), dtype_str(t, buf));
    return;
  }
  static const char *const ops[] = {"&", "|", "^", "~", "<<", ">>"};
  const char *op = ops[e->call.op - CALL_BITAND];
  const char *x = expr_text(cg, e->call.args[0]);
  const char *v = e->call.n == 1 ? arena_printf(cg->arena, "%s%s", op, x)
                                 : arena_printf(cg->arena, "%s %s %s", x, op, expr_text(cg, e->call.args[1]));
  if (t.lanes > 1) sb_printf(sb, "(%s)", v);
  else sb_printf(sb, "((%s)(%s))", cg_scalar_type(cg, t, "a bitwise operation"), v);
}

/* reinterpret<T>(x): x's bits as T (same width). Scalars through memcpy
 * (no aliasing or union rules to trip on), vectors by a vector cast, which
 * is a bit cast for vector types of one size. Bool is a 1-byte 0/1 value
 * in memory but a lane mask in vectors: only scalar. */
static void emit_reinterpret(CodegenC *cg, StrBuf *sb, const Expr *e) {
  DType t = e->dtype, s = e->call.args[0]->dtype;
  int tb = dtype_is_bool(t) ? 8 : t.bits, sbits = dtype_is_bool(s) ? 8 : s.bits;
  if (tb != sbits || t.lanes != s.lanes || (t.lanes > 1 && (dtype_is_bool(t) || dtype_is_bool(s)))) {
    char b1[16], b2[16];
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": reinterpret of %s as %s (the widths differ)", cg->func_name,
            dtype_str(s, b1), dtype_str(t, b2));
    return;
  }
  const char *x = expr_text(cg, e->call.args[0]);
  if (t.lanes > 1) {
    sb_printf(sb, "((%s)(%s))", cg_vector_type(cg, t), x);
    return;
  }
  const char *tn = cg_scalar_type(cg, t, "a reinterpret"), *sn = cg_scalar_type(cg, s, "a reinterpret");
  char b1[16], b2[16];
  const char *name = arena_printf(cg->arena, "loom_reinterpret_%s_%s", dtype_str(s, b1), dtype_str(t, b2));
  cg_put_helper(cg, name,
                arena_printf(cg->arena, "LOOM_HELPER %s %s(%s x) {\n  %s r;\n  __builtin_memcpy(&r, &x, sizeof r);\n  return r;\n}\n",
                             tn, name, sn, tn));
  sb_printf(sb, "%s(%s)", name, x);
}

static void emit_call(CodegenC *cg, StrBuf *sb, const Expr *e) {
  DType t = e->dtype;
  if (e->call.n != call_op_arity(e->call.op)) {
    cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": call %s with %d arguments, expected %d", cg->func_name,
            call_op_name(e->call.op), e->call.n, call_op_arity(e->call.op));
    return;
  }
  if (e->call.op == CALL_REINTERPRET) {
    emit_reinterpret(cg, sb, e);
    return;
  }
  if (call_op_is_bitwise(e->call.op)) {
    emit_bitwise(cg, sb, e);
    return;
  }
  const char *fn = call_c_name(cg, e->call.op, t);
  if (t.lanes > 1) {
    const char *vm = cg_vector_math(cg, e->call.op, t);
    if (vm) {
      fn = vm;
    } else {
      const char *f1 = arena_printf(cg->arena, "%s(%%s)", fn), *f2 = arena_printf(cg->arena, "%s(%%s, %%s)", fn);
      fn = lanewise_helper(cg, fn, t, e->call.n, f1, f2);
    }
  }
  sb_printf(sb, "%s(", fn);
  for (int i = 0; i < e->call.n; i++) sb_printf(sb, "%s%s", i ? ", " : "", expr_text(cg, e->call.args[i]));
  sb_putc(sb, ')');
}

const Expr *cg_flat_index(CodegenC *cg, const Buffer *b, const Expr *const *idx, int n) {
  if (n != b->ndim) {
    cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": buffer \"%s\" accessed with %d indices, expected %d",
            cg->func_name, b->name, n, b->ndim);
    return idx[0];
  }
  if (n == 1 && !b->strides) return idx[0];
  Arena *a = cg->arena;
  int lanes = 1;
  for (int k = 0; k < n; k++)
    if (idx[k]->dtype.lanes > 1) lanes = idx[k]->dtype.lanes;
  const Expr *flat = NULL, *stride = expr_i64(a, 1);
  for (int k = n - 1; k >= 0; k--) {
    const Expr *s = b->strides ? b->strides[k] : stride;
    const Expr *i = idx[k];
    if (lanes > 1 && i->dtype.lanes == 1) i = expr_broadcast(a, i, lanes);
    const Expr *term = expr_mul(a, i, lanes > 1 ? expr_broadcast(a, s, lanes) : s);
    flat = flat ? expr_add(a, term, flat) : term;
    stride = expr_mul(a, stride, b->shape[k]);
  }
  return flat;
}

/* ramp(base, 1, lanes): a contiguous access. */
static bool is_dense_ramp(const Expr *idx) {
  return idx->kind == EXPR_RAMP && expr_is_int(idx->ramp.stride, 1);
}

static const char *index_vector(CodegenC *cg, const Expr *idx) {
  const char *s = expr_text(cg, idx);
  if (idx->dtype.code == DT_INT && idx->dtype.bits == 64) return s;
  return arena_printf(cg->arena, "__builtin_convertvector(%s, %s)", s,
                      cg_vector_type(cg, dtype_make(DT_INT, 64, idx->dtype.lanes)));
}

static void emit_load(CodegenC *cg, StrBuf *sb, const Expr *e) {
  const Buffer *b = e->load.buffer;
  if (!cg_in_scope(cg, b)) {
    cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": buffer \"%s\" is read but is neither a parameter nor allocated here",
            cg->func_name, b->name);
    return;
  }
  const char *slot = cg_promoted_slot(cg, b, e->load.indices, e->load.n, e->dtype.lanes);
  if (slot) {
    sb_puts(sb, slot);
    return;
  }
  const char *bn = cg_name_of(cg, b, b->name);
  const Expr *idx = cg_flat_index(cg, b, e->load.indices, e->load.n);
  if (e->dtype.lanes == 1) {
    sb_printf(sb, "%s[%s]", bn, expr_text(cg, idx));
    return;
  }
  if (dtype_is_bool(e->dtype)) {
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": vector load of bool buffer \"%s\"", cg->func_name, b->name);
    return;
  }
  const char *vt = cg_vector_type(cg, e->dtype);
  const char *et = cg_scalar_type(cg, e->dtype, b->name);
  if (idx->kind == EXPR_BROADCAST) {
    emit_broadcast_text(cg, sb, e->dtype, arena_printf(cg->arena, "%s[%s]", bn, expr_text(cg, idx->broadcast.value)));
  } else if (is_dense_ramp(idx)) {
    const char *name = arena_printf(cg->arena, "loom_vload_%s", vt);
    cg_put_helper(cg, name,
               arena_printf(cg->arena, "LOOM_HELPER %s %s(const %s *p) {\n  %s v;\n  memcpy(&v, p, sizeof v);\n  return v;\n}\n",
                            vt, name, et, vt));
    sb_printf(sb, "%s(%s + %s)", name, bn, expr_text(cg, idx->ramp.base));
  } else {
    const char *name = arena_printf(cg->arena, "loom_gather_%s", vt);
    const char *it = cg_vector_type(cg, dtype_make(DT_INT, 64, e->dtype.lanes));
    cg_put_helper(cg, name,
               arena_printf(cg->arena,
                            "LOOM_HELPER %s %s(const %s *p, %s i) {\n  %s v;\n"
                            "  for (int l = 0; l < %d; ++l) v[l] = p[i[l]];\n  return v;\n}\n",
                            vt, name, et, it, vt, e->dtype.lanes));
    sb_printf(sb, "%s(%s, %s)", name, bn, index_vector(cg, idx));
  }
}

void cg_emit_store(CodegenC *cg, StrBuf *sb, const Stmt *s) {
  const Buffer *b = s->store.buffer;
  if (!cg_in_scope(cg, b)) {
    cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": buffer \"%s\" is written but is neither a parameter nor allocated here",
            cg->func_name, b->name);
    return;
  }
  const Expr *v = s->store.value;
  const char *slot = cg_promoted_slot(cg, b, s->store.indices, s->store.n, v->dtype.lanes);
  if (slot) {
    sb_printf(sb, "%s = %s;\n", slot, expr_text(cg, v));
    return;
  }
  const char *bn = cg_name_of(cg, b, b->name);
  const Expr *idx = cg_flat_index(cg, b, s->store.indices, s->store.n);
  if (v->dtype.lanes != idx->dtype.lanes) {
    cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": store to \"%s\" of %d lanes at an index of %d lanes",
            cg->func_name, b->name, v->dtype.lanes, idx->dtype.lanes);
    return;
  }
  if (v->dtype.lanes == 1) {
    sb_printf(sb, "%s[%s] = %s;\n", bn, expr_text(cg, idx), expr_text(cg, v));
    return;
  }
  if (dtype_is_bool(v->dtype)) {
    cg_fail(cg, LOOM_ERR_UNSUPPORTED, "C codegen of \"%s\": vector store to bool buffer \"%s\"", cg->func_name, b->name);
    return;
  }
  const char *vt = cg_vector_type(cg, v->dtype);
  const char *et = cg_scalar_type(cg, v->dtype, b->name);
  if (is_dense_ramp(idx)) {
    const char *name = arena_printf(cg->arena, "loom_vstore_%s", vt);
    cg_put_helper(cg, name,
               arena_printf(cg->arena, "LOOM_HELPER void %s(%s *p, %s v) {\n  memcpy(p, &v, sizeof v);\n}\n", name,
                            et, vt));
    sb_printf(sb, "%s(%s + %s, %s);\n", name, bn, expr_text(cg, idx->ramp.base), expr_text(cg, v));
  } else {
    /* Lanes are stored in order, so a broadcast index keeps the last lane,
     * as a serial loop would. */
    const char *name = arena_printf(cg->arena, "loom_scatter_%s", vt);
    const char *it = cg_vector_type(cg, dtype_make(DT_INT, 64, v->dtype.lanes));
    cg_put_helper(cg, name,
               arena_printf(cg->arena,
                            "LOOM_HELPER void %s(%s *p, %s i, %s v) {\n"
                            "  for (int l = 0; l < %d; ++l) p[i[l]] = v[l];\n}\n",
                            name, et, it, vt, v->dtype.lanes));
    const char *ix = idx->kind == EXPR_BROADCAST ? arena_printf(cg->arena, "(%s - (%s){0})", expr_text(cg, idx->broadcast.value), it)
                                                 : index_vector(cg, idx);
    sb_printf(sb, "%s(%s, %s, %s);\n", name, bn, ix, expr_text(cg, v));
  }
}

void cg_emit_expr(CodegenC *cg, StrBuf *sb, const Expr *e) {
  if (cg->status != LOOM_OK) return;
  if (dtype_is_narrow(e->dtype) && e->kind != EXPR_LOAD && e->kind != EXPR_CAST && e->kind != EXPR_BROADCAST) {
    char buf[16];
    cg_fail(cg, LOOM_ERR_INTERNAL, "C codegen of \"%s\": %s of narrow dtype %s; run tir_legalize_narrow first",
            cg->func_name, expr_kind_name(e->kind), dtype_str(e->dtype, buf));
    return;
  }
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT: {
      StrBuf s;
      sb_init(&s);
      if (e->kind == EXPR_INT)
        emit_int(&s, e->dtype, e->int_value);
      else
        emit_float(&s, e->dtype, e->float_value);
      if (e->dtype.lanes > 1)
        emit_broadcast_text(cg, sb, e->dtype, sb_cstr(&s));
      else
        sb_puts(sb, sb_cstr(&s));
      sb_free(&s);
      return;
    }
    case EXPR_VAR:
      if (!cg_in_scope(cg, e)) {
        cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": variable \"%s\" is used outside the loop or shape that defines it",
                cg->func_name, e->var.name);
        return;
      }
      sb_puts(sb, cg_name_of(cg, e, e->var.name));
      return;
    case EXPR_NOT:
      sb_printf(sb, e->dtype.lanes > 1 ? "(~%s)" : "(!%s)", expr_text(cg, e->un.a));
      return;
    case EXPR_CAST: emit_cast(cg, sb, e); return;
    case EXPR_SELECT: emit_select(cg, sb, e); return;
    case EXPR_LOAD: emit_load(cg, sb, e); return;
    case EXPR_CALL: emit_call(cg, sb, e); return;
    case EXPR_RAMP: {
      const char *vt = cg_vector_type(cg, e->dtype);
      sb_printf(sb, "(%s + %s * (%s){", expr_text(cg, e->ramp.base), expr_text(cg, e->ramp.stride), vt);
      for (int l = 0; l < e->ramp.lanes; l++) sb_printf(sb, "%s%d", l ? ", " : "", l);
      sb_puts(sb, "})");
      return;
    }
    case EXPR_BROADCAST:
      emit_broadcast_text(cg, sb, e->dtype, expr_text(cg, e->broadcast.value));
      return;
    case EXPR_REDUCE:
      cg_fail(cg, LOOM_ERR_INVALID_ARG, "C codegen of \"%s\": reduce expression left in a lowered function",
              cg->func_name);
      return;
    default:
      if (expr_is_binary(e->kind)) {
        emit_binary(cg, sb, e);
        return;
      }
      cg_fail(cg, LOOM_ERR_INTERNAL, "C codegen: unhandled expression %s", expr_kind_name(e->kind));
  }
}

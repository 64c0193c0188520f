#include "ir/expr.h"

#include "support/error.h"
#include "support/strbuf.h"

#include <float.h>
#include <math.h>
#include <string.h>

static Expr *expr_node(Arena *a, ExprKind k, DType t) {
  Expr *e = ARENA_NEW(a, Expr);
  e->kind = k;
  e->dtype = t;
  return e;
}

const Expr *expr_int(Arena *a, DType t, int64_t v) {
  Expr *e = expr_node(a, EXPR_INT, t);
  e->int_value = v;
  return e;
}

const Expr *expr_i64(Arena *a, int64_t v) { return expr_int(a, DT_I64, v); }
const Expr *expr_bool(Arena *a, bool v) { return expr_int(a, DT_BOOL1, v ? 1 : 0); }

const Expr *expr_float(Arena *a, DType t, double v) {
  Expr *e = expr_node(a, EXPR_FLOAT, t);
  e->float_value = v;
  return e;
}

const Expr *expr_var(Arena *a, const char *name, DType t) {
  Expr *e = expr_node(a, EXPR_VAR, t);
  e->var.name = arena_strdup(a, name);
  return e;
}

bool expr_is_compare(ExprKind k) { return k >= EXPR_EQ && k <= EXPR_GE; }
bool expr_is_binary(ExprKind k) { return k >= EXPR_ADD && k <= EXPR_OR; }

const Expr *expr_binary(Arena *a, ExprKind k, const Expr *x, const Expr *y) {
  LOOM_ASSERT(expr_is_binary(k) && x && y);
  DType t = (expr_is_compare(k) || k == EXPR_AND || k == EXPR_OR)
                ? dtype_with_lanes(DT_BOOL1, x->dtype.lanes)
                : x->dtype;
  Expr *e = expr_node(a, k, t);
  e->bin.a = x;
  e->bin.b = y;
  return e;
}

const Expr *expr_add(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_ADD, x, y); }
const Expr *expr_sub(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_SUB, x, y); }
const Expr *expr_mul(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_MUL, x, y); }
const Expr *expr_floordiv(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_FLOORDIV, x, y); }
const Expr *expr_floormod(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_FLOORMOD, x, y); }
const Expr *expr_min(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_MIN, x, y); }
const Expr *expr_max(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_MAX, x, y); }
const Expr *expr_lt(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_LT, x, y); }
const Expr *expr_and(Arena *a, const Expr *x, const Expr *y) { return expr_binary(a, EXPR_AND, x, y); }

const Expr *expr_not(Arena *a, const Expr *x) {
  Expr *e = expr_node(a, EXPR_NOT, x->dtype);
  e->un.a = x;
  return e;
}

const Expr *expr_cast(Arena *a, DType t, const Expr *x) {
  Expr *e = expr_node(a, EXPR_CAST, t);
  e->un.a = x;
  return e;
}

const Expr *expr_select(Arena *a, const Expr *c, const Expr *t, const Expr *f) {
  Expr *e = expr_node(a, EXPR_SELECT, t->dtype);
  e->select.cond = c;
  e->select.t = t;
  e->select.f = f;
  return e;
}

const Expr *expr_load(Arena *a, const Buffer *b, const Expr *const *idx, int n) {
  Expr *e = expr_node(a, EXPR_LOAD, b->dtype);
  e->load.buffer = b;
  e->load.indices = arena_memdup(a, idx, sizeof(*idx) * (size_t)n);
  e->load.n = n;
  /* A vector index (ramp) loads a vector. */
  for (int i = 0; i < n; i++)
    if (idx[i]->dtype.lanes > 1) e->dtype = dtype_with_lanes(b->dtype, idx[i]->dtype.lanes);
  return e;
}

const Expr *expr_call(Arena *a, CallOp op, DType t, const Expr *const *args, int n) {
  Expr *e = expr_node(a, EXPR_CALL, t);
  e->call.op = op;
  e->call.args = arena_memdup(a, args, sizeof(*args) * (size_t)n);
  e->call.n = n;
  return e;
}

const Expr *expr_ramp(Arena *a, const Expr *base, const Expr *stride, int lanes) {
  Expr *e = expr_node(a, EXPR_RAMP, dtype_with_lanes(base->dtype, lanes));
  e->ramp.base = base;
  e->ramp.stride = stride;
  e->ramp.lanes = lanes;
  return e;
}

const Expr *expr_broadcast(Arena *a, const Expr *v, int lanes) {
  Expr *e = expr_node(a, EXPR_BROADCAST, dtype_with_lanes(v->dtype, lanes));
  e->broadcast.value = v;
  e->broadcast.lanes = lanes;
  return e;
}

const Expr *expr_reduce(Arena *a, ReduceOp op, const Expr *src, const IterVar *axes, int n_axes,
                        const Expr *cond) {
  Expr *e = expr_node(a, EXPR_REDUCE, src->dtype);
  e->reduce.op = op;
  e->reduce.source = src;
  e->reduce.axes = arena_memdup(a, axes, sizeof(*axes) * (size_t)n_axes);
  e->reduce.n_axes = n_axes;
  e->reduce.cond = cond;
  return e;
}

Buffer *buffer_new(Arena *a, const char *name, DType t, int ndim, const Expr *const *shape) {
  Buffer *b = ARENA_NEW(a, Buffer);
  b->name = arena_strdup(a, name);
  b->dtype = t;
  b->ndim = ndim;
  b->shape = arena_memdup(a, shape, sizeof(*shape) * (size_t)ndim);
  b->scope = SCOPE_GLOBAL;
  return b;
}

bool expr_as_int(const Expr *e, int64_t *v) {
  if (e->kind != EXPR_INT) return false;
  *v = e->int_value;
  return true;
}

static const char *const kind_names[EXPR_KIND_COUNT] = {
    [EXPR_INT] = "int",         [EXPR_FLOAT] = "float",       [EXPR_VAR] = "var",
    [EXPR_ADD] = "add",         [EXPR_SUB] = "sub",           [EXPR_MUL] = "mul",
    [EXPR_DIV] = "div",         [EXPR_MOD] = "mod",           [EXPR_FLOORDIV] = "floordiv",
    [EXPR_FLOORMOD] = "floormod", [EXPR_MIN] = "min",         [EXPR_MAX] = "max",
    [EXPR_EQ] = "eq",           [EXPR_NE] = "ne",             [EXPR_LT] = "lt",
    [EXPR_LE] = "le",           [EXPR_GT] = "gt",             [EXPR_GE] = "ge",
    [EXPR_AND] = "and",         [EXPR_OR] = "or",             [EXPR_NOT] = "not",
    [EXPR_CAST] = "cast",       [EXPR_SELECT] = "select",     [EXPR_LOAD] = "load",
    [EXPR_CALL] = "call",       [EXPR_RAMP] = "ramp",         [EXPR_BROADCAST] = "broadcast",
    [EXPR_REDUCE] = "reduce",
};

const char *expr_kind_name(ExprKind k) { return (unsigned)k < EXPR_KIND_COUNT ? kind_names[k] : "?"; }

static const struct {
  const char *name, *c_name;
  int arity;
} call_ops[] = {
#define X(e, name, cfn, nargs) {name, cfn, nargs},
    LOOM_CALL_OPS(X)
#undef X
};

const char *call_op_name(CallOp op) { return call_ops[op].name; }
const char *call_op_c_name(CallOp op) { return call_ops[op].c_name; }
int call_op_arity(CallOp op) { return call_ops[op].arity; }
bool call_op_is_bitwise(CallOp op) { return op >= CALL_BITAND && op <= CALL_SHR; }

bool call_op_parse(const char *name, CallOp *out) {
  for (int i = 0; i < CALL_OP_COUNT; i++)
    if (strcmp(call_ops[i].name, name) == 0) {
      *out = (CallOp)i;
      return true;
    }
  return false;
}

const char *reduce_op_name(ReduceOp op) {
  switch (op) {
    case REDUCE_SUM: return "sum";
    case REDUCE_MAX: return "max";
    case REDUCE_MIN: return "min";
    case REDUCE_PROD: return "prod";
  }
  return "?";
}

static const Expr *extreme_value(Arena *a, DType t, bool lowest) {
  if (dtype_is_float(t)) return expr_float(a, t, lowest ? -INFINITY : INFINITY);
  if (t.code == DT_BOOL) return expr_int(a, t, lowest ? 0 : 1);
  if (t.code == DT_UINT) return expr_int(a, t, lowest ? 0 : (t.bits >= 64 ? -1 : (int64_t)((1ULL << t.bits) - 1)));
  int64_t maxv = t.bits >= 64 ? INT64_MAX : (int64_t)((1ULL << (t.bits - 1)) - 1);
  return expr_int(a, t, lowest ? -maxv - 1 : maxv);
}

const Expr *reduce_identity(Arena *a, ReduceOp op, DType t) {
  switch (op) {
    case REDUCE_SUM: return dtype_is_float(t) ? expr_float(a, t, 0.0) : expr_int(a, t, 0);
    case REDUCE_PROD: return dtype_is_float(t) ? expr_float(a, t, 1.0) : expr_int(a, t, 1);
    case REDUCE_MAX: return extreme_value(a, t, true);
    case REDUCE_MIN: return extreme_value(a, t, false);
  }
  return NULL;
}

const Expr *reduce_combine(Arena *a, ReduceOp op, const Expr *acc, const Expr *x) {
  switch (op) {
    case REDUCE_SUM: return expr_add(a, acc, x);
    case REDUCE_PROD: return expr_mul(a, acc, x);
    case REDUCE_MAX: return expr_max(a, acc, x);
    case REDUCE_MIN: return expr_min(a, acc, x);
  }
  return NULL;
}

bool expr_equal(const Expr *x, const Expr *y) {
  if (x == y) return true;
  if (!x || !y || x->kind != y->kind || !dtype_eq(x->dtype, y->dtype)) return false;
  switch (x->kind) {
    case EXPR_INT: return x->int_value == y->int_value;
    case EXPR_FLOAT:
      return x->float_value == y->float_value || (isnan(x->float_value) && isnan(y->float_value));
    case EXPR_VAR: return false; /* pointer identity, checked above */
    case EXPR_NOT:
    case EXPR_CAST: return expr_equal(x->un.a, y->un.a);
    case EXPR_SELECT:
      return expr_equal(x->select.cond, y->select.cond) && expr_equal(x->select.t, y->select.t) &&
             expr_equal(x->select.f, y->select.f);
    case EXPR_LOAD:
      if (x->load.buffer != y->load.buffer || x->load.n != y->load.n) return false;
      for (int i = 0; i < x->load.n; i++)
        if (!expr_equal(x->load.indices[i], y->load.indices[i])) return false;
      return true;
    case EXPR_CALL:
      if (x->call.op != y->call.op || x->call.n != y->call.n) return false;
      for (int i = 0; i < x->call.n; i++)
        if (!expr_equal(x->call.args[i], y->call.args[i])) return false;
      return true;
    case EXPR_RAMP:
      return x->ramp.lanes == y->ramp.lanes && expr_equal(x->ramp.base, y->ramp.base) &&
             expr_equal(x->ramp.stride, y->ramp.stride);
    case EXPR_BROADCAST:
      return x->broadcast.lanes == y->broadcast.lanes && expr_equal(x->broadcast.value, y->broadcast.value);
    case EXPR_REDUCE:
      if (x->reduce.op != y->reduce.op || x->reduce.n_axes != y->reduce.n_axes) return false;
      for (int i = 0; i < x->reduce.n_axes; i++)
        if (x->reduce.axes[i].var != y->reduce.axes[i].var) return false;
      if ((x->reduce.cond == NULL) != (y->reduce.cond == NULL)) return false;
      if (x->reduce.cond && !expr_equal(x->reduce.cond, y->reduce.cond)) return false;
      return expr_equal(x->reduce.source, y->reduce.source);
    default:
      LOOM_ASSERT(expr_is_binary(x->kind));
      return expr_equal(x->bin.a, y->bin.a) && expr_equal(x->bin.b, y->bin.b);
  }
}

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  return h;
}

uint64_t expr_hash(const Expr *e) {
  uint64_t h = mix((uint64_t)e->kind, (uint64_t)e->dtype.code << 24 | (uint64_t)e->dtype.bits << 16 | e->dtype.lanes);
  switch (e->kind) {
    case EXPR_INT: return mix(h, (uint64_t)e->int_value);
    case EXPR_FLOAT: {
      uint64_t bits;
      double v = isnan(e->float_value) ? NAN : e->float_value;
      if (v == 0) v = 0; /* -0 == 0 under expr_equal */
      memcpy(&bits, &v, sizeof bits);
      return mix(h, bits);
    }
    case EXPR_VAR: return mix(h, (uint64_t)(uintptr_t)e);
    case EXPR_NOT:
    case EXPR_CAST: return mix(h, expr_hash(e->un.a));
    case EXPR_SELECT:
      return mix(mix(mix(h, expr_hash(e->select.cond)), expr_hash(e->select.t)), expr_hash(e->select.f));
    case EXPR_LOAD:
      h = mix(h, (uint64_t)(uintptr_t)e->load.buffer);
      for (int i = 0; i < e->load.n; i++) h = mix(h, expr_hash(e->load.indices[i]));
      return h;
    case EXPR_CALL:
      h = mix(h, (uint64_t)e->call.op);
      for (int i = 0; i < e->call.n; i++) h = mix(h, expr_hash(e->call.args[i]));
      return h;
    case EXPR_RAMP: return mix(mix(h, expr_hash(e->ramp.base)), expr_hash(e->ramp.stride));
    case EXPR_BROADCAST: return mix(h, expr_hash(e->broadcast.value));
    case EXPR_REDUCE: return mix(mix(h, (uint64_t)e->reduce.op), expr_hash(e->reduce.source));
    default: return mix(mix(h, expr_hash(e->bin.a)), expr_hash(e->bin.b));
  }
}

bool expr_uses_var(const Expr *e, const Expr *v) {
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT: return false;
    case EXPR_VAR: return e == v;
    case EXPR_NOT:
    case EXPR_CAST: return expr_uses_var(e->un.a, v);
    case EXPR_SELECT:
      return expr_uses_var(e->select.cond, v) || expr_uses_var(e->select.t, v) || expr_uses_var(e->select.f, v);
    case EXPR_LOAD:
      for (int i = 0; i < e->load.n; i++)
        if (expr_uses_var(e->load.indices[i], v)) return true;
      return false;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++)
        if (expr_uses_var(e->call.args[i], v)) return true;
      return false;
    case EXPR_RAMP: return expr_uses_var(e->ramp.base, v) || expr_uses_var(e->ramp.stride, v);
    case EXPR_BROADCAST: return expr_uses_var(e->broadcast.value, v);
    case EXPR_REDUCE:
      return expr_uses_var(e->reduce.source, v) || (e->reduce.cond && expr_uses_var(e->reduce.cond, v));
    default: return expr_uses_var(e->bin.a, v) || expr_uses_var(e->bin.b, v);
  }
}

bool expr_reads_buffer(const Expr *e, const Buffer *b) {
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return false;
    case EXPR_NOT:
    case EXPR_CAST: return expr_reads_buffer(e->un.a, b);
    case EXPR_SELECT:
      return expr_reads_buffer(e->select.cond, b) || expr_reads_buffer(e->select.t, b) ||
             expr_reads_buffer(e->select.f, b);
    case EXPR_LOAD:
      if (e->load.buffer == b) return true;
      for (int i = 0; i < e->load.n; i++)
        if (expr_reads_buffer(e->load.indices[i], b)) return true;
      return false;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++)
        if (expr_reads_buffer(e->call.args[i], b)) return true;
      return false;
    case EXPR_RAMP: return expr_reads_buffer(e->ramp.base, b) || expr_reads_buffer(e->ramp.stride, b);
    case EXPR_BROADCAST: return expr_reads_buffer(e->broadcast.value, b);
    case EXPR_REDUCE:
      return expr_reads_buffer(e->reduce.source, b) || (e->reduce.cond && expr_reads_buffer(e->reduce.cond, b));
    default: return expr_reads_buffer(e->bin.a, b) || expr_reads_buffer(e->bin.b, b);
  }
}

/* ---- printer ---- */

typedef struct Printer {
  StrBuf *sb;
  const ExprPrintHooks *h;
} Printer;

static void print_rec(Printer *p, const Expr *e);

static const char *infix_op(ExprKind k) {
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
    case EXPR_AND: return "&&";
    case EXPR_OR: return "||";
    default: return NULL;
  }
}

static void print_args(Printer *p, const Expr *const *args, int n) {
  for (int i = 0; i < n; i++) {
    if (i) sb_puts(p->sb, ", ");
    print_rec(p, args[i]);
  }
}

static void print_rec(Printer *p, const Expr *e) {
  StrBuf *sb = p->sb;
  char buf[16];
  switch (e->kind) {
    case EXPR_INT:
      if (e->dtype.code == DT_BOOL) sb_puts(sb, e->int_value ? "true" : "false");
      else if (dtype_eq(e->dtype, DT_I64)) sb_printf(sb, "%lld", (long long)e->int_value);
      else sb_printf(sb, "%lld%s", (long long)e->int_value, dtype_str(e->dtype, buf));
      return;
    case EXPR_FLOAT: {
      double v = e->float_value;
      if (isnan(v)) sb_printf(sb, "%s(nan)", dtype_str(e->dtype, buf));
      else if (isinf(v)) sb_printf(sb, "%s(%sinf)", dtype_str(e->dtype, buf), v < 0 ? "-" : "");
      else {
        char num[40];
        snprintf(num, sizeof num, "%.17g", v);
        /* keep a '.' or exponent so the literal reads as a float */
        if (!strpbrk(num, ".e")) strcat(num, ".0");
        sb_printf(sb, "%s%s", num, dtype_str(e->dtype, buf));
      }
      return;
    }
    case EXPR_VAR:
      sb_puts(sb, p->h->var ? p->h->var(p->h->ctx, e) : e->var.name);
      return;
    case EXPR_NOT:
      sb_puts(sb, "!");
      print_rec(p, e->un.a);
      return;
    case EXPR_CAST:
      sb_printf(sb, "cast(%s, ", dtype_str(e->dtype, buf));
      print_rec(p, e->un.a);
      sb_puts(sb, ")");
      return;
    case EXPR_SELECT:
      sb_puts(sb, "select(");
      print_rec(p, e->select.cond);
      sb_puts(sb, ", ");
      print_rec(p, e->select.t);
      sb_puts(sb, ", ");
      print_rec(p, e->select.f);
      sb_puts(sb, ")");
      return;
    case EXPR_LOAD:
      sb_printf(sb, "%s[", p->h->buffer ? p->h->buffer(p->h->ctx, e->load.buffer) : e->load.buffer->name);
      print_args(p, e->load.indices, e->load.n);
      sb_puts(sb, "]");
      return;
    case EXPR_CALL:
      sb_puts(sb, call_op_name(e->call.op));
      if (e->call.n == 0 || !dtype_eq(e->dtype, e->call.args[0]->dtype)) sb_printf(sb, "<%s>", dtype_str(e->dtype, buf));
      sb_putc(sb, '(');
      print_args(p, e->call.args, e->call.n);
      sb_puts(sb, ")");
      return;
    case EXPR_RAMP:
      sb_puts(sb, "ramp(");
      print_rec(p, e->ramp.base);
      sb_puts(sb, ", ");
      print_rec(p, e->ramp.stride);
      sb_printf(sb, ", %d)", e->ramp.lanes);
      return;
    case EXPR_BROADCAST:
      sb_puts(sb, "broadcast(");
      print_rec(p, e->broadcast.value);
      sb_printf(sb, ", %d)", e->broadcast.lanes);
      return;
    case EXPR_REDUCE:
      if (p->h->reduce) {
        p->h->reduce(p->h->ctx, sb, e);
        return;
      }
      sb_printf(sb, "reduce_%s(", reduce_op_name(e->reduce.op));
      print_rec(p, e->reduce.source);
      for (int i = 0; i < e->reduce.n_axes; i++) {
        sb_puts(sb, ", [");
        print_rec(p, e->reduce.axes[i].var);
        sb_puts(sb, ", ");
        print_rec(p, e->reduce.axes[i].min);
        sb_puts(sb, ", ");
        print_rec(p, e->reduce.axes[i].extent);
        sb_puts(sb, "]");
      }
      if (e->reduce.cond) {
        sb_puts(sb, ", where=");
        print_rec(p, e->reduce.cond);
      }
      sb_puts(sb, ")");
      return;
    default: {
      const char *op = infix_op(e->kind);
      if (op) {
        sb_puts(sb, "(");
        print_rec(p, e->bin.a);
        sb_printf(sb, " %s ", op);
        print_rec(p, e->bin.b);
        sb_puts(sb, ")");
      } else {
        sb_printf(sb, "%s(", expr_kind_name(e->kind));
        print_rec(p, e->bin.a);
        sb_puts(sb, ", ");
        print_rec(p, e->bin.b);
        sb_puts(sb, ")");
      }
      return;
    }
  }
}

void expr_print_hooks(StrBuf *sb, const Expr *e, const ExprPrintHooks *hooks) {
  static const ExprPrintHooks none = {0};
  Printer p = {sb, hooks ? hooks : &none};
  print_rec(&p, e);
}

void expr_print_named(StrBuf *sb, const Expr *e, VarNameFn name_var, void *ctx) {
  ExprPrintHooks h = {name_var, NULL, NULL, ctx};
  expr_print_hooks(sb, e, &h);
}

void expr_print(StrBuf *sb, const Expr *e) { expr_print_named(sb, e, NULL, NULL); }

const char *expr_to_string(Arena *a, const Expr *e) {
  StrBuf sb;
  sb_init(&sb);
  expr_print(&sb, e);
  const char *s = arena_strdup(a, sb_cstr(&sb));
  sb_free(&sb);
  return s;
}

/* Reference interpreter (see interp.h for the contract).
 *
 * Values are evaluated one lane at a time: every expression kind is
 * element-wise except ramp/broadcast, whose lane k is computable directly, so
 * a vector expression is just its scalar form run `lanes` times. Stores
 * evaluate all lanes before writing any, as a vector store does. */
#include "tir/interp.h"

#include "support/alloc.h"
#include "support/ptrmap.h"

#include <math.h>
#include <string.h>

typedef union Scalar {
  int64_t i; /* ints and bools (unsigned held as their bit pattern) */
  double f;  /* floats; f32 values are exactly representable floats */
} Scalar;

typedef struct Slot {
  Scalar v;
  bool bound;
} Slot;

typedef struct BufState {
  const Buffer *buffer;
  char *data;
  int64_t n_elems;
  int elem_bytes;
  int64_t *shape, *strides; /* ndim each */
  bool *written;            /* temporaries only (uninit check) */
  bool owned;
} BufState;

/* An asynchronous DMA copy in flight (below). */
typedef struct DmaCopy {
  const Stmt *s;
  BufState *dst, *src;
  int64_t d0, s0, row_elems, rows, dst_stride, src_stride;
} DmaCopy;

typedef struct Interp {
  Arena *a;
  LoomError *err;
  TirInterpOptions opts;
  PtrMap vars; /* Var -> Slot* */
  PtrMap bufs; /* Buffer -> BufState* (NULL = not live) */
  DmaCopy *pending; /* per DMA ticket: the asynchronous copy in flight (s NULL: none) */
  int n_tickets;
  bool failed;
  loom_status status;
} Interp;

TirInterpOptions tir_interp_default_options(void) {
  TirInterpOptions o = {true, true, NULL};
  return o;
}

static bool fail(Interp *in, loom_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(Interp *in, loom_status st, const char *fmt, ...) {
  if (!in->failed) {
    va_list ap;
    va_start(ap, fmt);
    err_vset(in->err, st, fmt, ap);
    va_end(ap);
    in->status = st;
  }
  in->failed = true;
  return false;
}

/* f32, and the narrow floats (f16, bf16, fp8, fp4), which compute in f32
 * and round to their format after each operation. */
static bool is_f32(DType t) { return (t.code == DT_FLOAT && t.bits == 32) || (dtype_is_float(t) && dtype_is_narrow(t)); }
static bool is_float(DType t) { return dtype_is_float(t); }

static bool dtype_supported(DType t) {
  if (dtype_is_narrow(t)) return true;
  if (t.code == DT_FLOAT) return t.bits == 32 || t.bits == 64;
  if (t.code == DT_INT || t.code == DT_UINT)
    return t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64;
  return t.code == DT_BOOL;
}

/* Brings an integer result to the range of its dtype, as C's conversion to a
 * fixed-width type does. */
static int64_t wrap_int(DType t, int64_t v) {
  if (t.code == DT_BOOL) return v != 0;
  if (t.bits >= 64) return v;
  uint64_t u = (uint64_t)v & ((1ULL << t.bits) - 1);
  if (t.code == DT_UINT) return (int64_t)u;
  uint64_t sign = 1ULL << (t.bits - 1);
  return (int64_t)(u ^ sign) - (int64_t)sign;
}

static double round_float(DType t, double v) {
  if (dtype_is_narrow(t)) return dtype_narrow_round(dtype_element(t), v);
  return is_f32(t) ? (double)(float)v : v;
}

static bool is_u64(DType t) { return t.code == DT_UINT && t.bits == 64; }

/* ------------------------------------------------------------------ memory */

static int64_t const_of(const Expr *e, bool *ok) {
  int64_t v = 0;
  if (!expr_as_int(e, &v)) *ok = false;
  return v;
}

/* Element strides: explicit ones, else compact row-major with the
 * storage_align padding of align_axis (TVM's rule: stride += (factor +
 * offset - stride % factor) % factor). */
static bool buffer_layout(const Buffer *b, int64_t *shape, int64_t *strides, int64_t *count) {
  bool ok = true;
  for (int d = 0; d < b->ndim; d++) shape[d] = const_of(b->shape[d], &ok);
  if (!ok) return false;
  if (b->strides) {
    for (int d = 0; d < b->ndim; d++) strides[d] = const_of(b->strides[d], &ok);
    if (!ok) return false;
  } else {
    int64_t s = 1;
    for (int d = b->ndim - 1; d >= 0; d--) {
      if (d == b->align_axis && b->align_factor > 0 && d != b->ndim - 1) {
        int64_t f = b->align_factor, off = b->align_offset;
        s += (((f + off - s % f) % f) + f) % f;
      }
      strides[d] = s;
      s *= shape[d];
    }
  }
  int64_t n = 1;
  for (int d = 0; d < b->ndim; d++) {
    if (shape[d] <= 0) return (*count = 0), true;
    n += (shape[d] - 1) * strides[d];
  }
  *count = n;
  return true;
}

int64_t tir_buffer_elem_count(const Buffer *b) {
  int64_t shape[b->ndim > 0 ? b->ndim : 1], strides[b->ndim > 0 ? b->ndim : 1], n;
  if (!buffer_layout(b, shape, strides, &n)) return -1;
  return n;
}

static BufState *bufstate_new(Interp *in, const Buffer *b, void *data) {
  char tb[16];
  if (!dtype_supported(dtype_element(b->dtype))) {
    fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: buffer \"%s\" has unsupported dtype %s", b->name,
         dtype_str(b->dtype, tb));
    return NULL;
  }
  BufState *st = ARENA_NEW(in->a, BufState);
  st->buffer = b;
  st->shape = ARENA_ARRAY(in->a, int64_t, b->ndim);
  st->strides = ARENA_ARRAY(in->a, int64_t, b->ndim);
  if (!buffer_layout(b, st->shape, st->strides, &st->n_elems)) {
    fail(in, LOOM_ERR_INVALID_ARG, "interpreter: buffer \"%s\" needs a constant shape and strides",
         b->name);
    return NULL;
  }
  st->elem_bytes = dtype_bytes(dtype_element(b->dtype));
  if (data) {
    st->data = data;
    return st;
  }
  size_t n = (size_t)(st->n_elems > 0 ? st->n_elems : 1);
  st->data = loom_calloc(n, (size_t)st->elem_bytes);
  st->written = in->opts.check_uninit ? loom_calloc(n, 1) : NULL;
  if (!st->data || (in->opts.check_uninit && !st->written)) {
    loom_free(st->data);
    loom_free(st->written);
    fail(in, LOOM_ERR_RUNTIME, "interpreter: cannot allocate %lld elements for buffer \"%s\"",
         (long long)st->n_elems, b->name);
    return NULL;
  }
  st->owned = true;
  return st;
}

static void bufstate_free(BufState *st) {
  if (st && st->owned) {
    loom_free(st->data);
    loom_free(st->written);
    st->data = NULL;
    st->written = NULL;
  }
}

static Scalar elem_read(const BufState *st, int64_t k) {
  DType t = dtype_element(st->buffer->dtype);
  const char *p = st->data + k * st->elem_bytes;
  Scalar v = {0};
  if (dtype_is_narrow(t)) {
    if (dtype_is_int(t)) v.i = t.code == DT_INT ? *(const int8_t *)p : *(const uint8_t *)p;
    else v.f = dtype_narrow_load(t, p);
    return v;
  }
  switch (t.code) {
    case DT_FLOAT:
      if (t.bits == 32) { float x; memcpy(&x, p, 4); v.f = x; }
      else memcpy(&v.f, p, 8);
      break;
    case DT_BOOL: v.i = *(const unsigned char *)p != 0; break;
    case DT_INT:
      switch (t.bits) {
        case 8: { int8_t x; memcpy(&x, p, 1); v.i = x; break; }
        case 16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
        case 32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
        default: memcpy(&v.i, p, 8); break;
      }
      break;
    default:
      switch (t.bits) {
        case 8: { uint8_t x; memcpy(&x, p, 1); v.i = x; break; }
        case 16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
        case 32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
        default: memcpy(&v.i, p, 8); break;
      }
      break;
  }
  return v;
}

static void elem_write(BufState *st, int64_t k, Scalar v) {
  DType t = dtype_element(st->buffer->dtype);
  char *p = st->data + k * st->elem_bytes;
  if (dtype_is_narrow(t)) {
    if (dtype_is_int(t)) *(int8_t *)p = (int8_t)dtype_narrow_wrap(t, v.i);
    else dtype_narrow_store(t, p, v.f);
  } else if (t.code == DT_FLOAT) {
    if (t.bits == 32) { float x = (float)v.f; memcpy(p, &x, 4); }
    else memcpy(p, &v.f, 8);
  } else if (t.code == DT_BOOL) {
    *(unsigned char *)p = v.i != 0;
  } else {
    switch (t.bits) {
      case 8: { uint8_t x = (uint8_t)v.i; memcpy(p, &x, 1); break; }
      case 16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
      case 32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
      default: memcpy(p, &v.i, 8); break;
    }
  }
  if (st->written) st->written[k] = true;
}

static BufState *buf_lookup(Interp *in, const Buffer *b, const char *what) {
  BufState *st = ptrmap_get(&in->bufs, b);
  if (!st)
    fail(in, LOOM_ERR_RUNTIME,
         "interpreter: %s buffer \"%s\", which is neither a parameter nor allocated here", what,
         b->name);
  return st;
}

static const char *index_str(Interp *in, const int64_t *idx, int n) {
  char buf[256];
  int len = 0;
  for (int d = 0; d < n && len < 200; d++)
    len += snprintf(buf + len, sizeof buf - (size_t)len, "%s%lld", d ? ", " : "", (long long)idx[d]);
  return arena_strdup(in->a, buf);
}

/* Flat element offset of idx, checked per dimension against the shape. */
static bool buf_offset(Interp *in, BufState *st, const int64_t *idx, int n, const char *what,
                       int64_t *out) {
  const Buffer *b = st->buffer;
  if (n != b->ndim)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: %s of buffer \"%s\" with %d indices, expected %d",
                what, b->name, n, b->ndim);
  int64_t k = 0;
  for (int d = 0; d < n; d++) {
    if (idx[d] < 0 || idx[d] >= st->shape[d]) {
      return fail(in, LOOM_ERR_RUNTIME,
                  "interpreter: out-of-bounds %s %s[%s]: index %lld of dimension %d is outside "
                  "[0, %lld)",
                  what, b->name, index_str(in, idx, n), (long long)idx[d], d,
                  (long long)st->shape[d]);
    }
    k += idx[d] * st->strides[d];
  }
  *out = k;
  return true;
}

/* ------------------------------------------------------------- expressions */

static bool eval(Interp *in, const Expr *e, int lane, Scalar *out);

static Slot *slot_of(Interp *in, const Expr *var) {
  Slot *s = ptrmap_get(&in->vars, var);
  if (!s) {
    s = ARENA_NEW(in->a, Slot);
    ptrmap_put(&in->vars, var, s);
  }
  return s;
}

/* Bitwise intrinsics on integers; a shift count outside [0, bits) is an
 * error, as in C. */
static bool eval_bitwise(Interp *in, const Expr *e, int lane, Scalar *out) {
  char tb[16];
  DType t = e->dtype;
  if (t.code != DT_INT && t.code != DT_UINT)
    return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: %s on dtype %s is not supported",
                call_op_name(e->call.op), dtype_str(t, tb));
  Scalar x[2] = {{0}, {0}};
  for (int i = 0; i < e->call.n && i < 2; i++)
    if (!eval(in, e->call.args[i], lane, &x[i])) return false;
  uint64_t a = (uint64_t)x[0].i, b = (uint64_t)x[1].i, r;
  int bits = dtype_element(t).bits;
  if ((e->call.op == CALL_SHL || e->call.op == CALL_SHR) && b >= (uint64_t)bits)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: shift count %lld out of range in %s", (long long)x[1].i,
                expr_to_string(in->a, e));
  switch (e->call.op) {
    case CALL_BITAND: r = a & b; break;
    case CALL_BITOR: r = a | b; break;
    case CALL_BITXOR: r = a ^ b; break;
    case CALL_BITNOT: r = ~a; break;
    case CALL_SHL: r = a << b; break;
    default: r = t.code == DT_UINT ? a >> b : (uint64_t)(x[0].i >> b); break;
  }
  out->i = wrap_int(t, (int64_t)r);
  return true;
}

/* reinterpret<T>(x): the bits of x (same width) as T. */
static bool eval_reinterpret(Interp *in, const Expr *e, int lane, Scalar *out) {
  char tb[16], sb[16];
  DType t = dtype_element(e->dtype), s = dtype_element(e->call.args[0]->dtype);
  int tbits = dtype_is_bool(t) ? 8 : t.bits, sbits = dtype_is_bool(s) ? 8 : s.bits;
  bool ok = tbits == sbits && (tbits == 8 || tbits == 16 || tbits == 32 || tbits == 64) &&
            (!is_float(t) || t.bits >= 32) && (!is_float(s) || s.bits >= 32);
  if (!ok)
    return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: reinterpret of %s as %s is not supported", dtype_str(s, sb),
                dtype_str(t, tb));
  Scalar x;
  if (!eval(in, e->call.args[0], lane, &x)) return false;
  uint64_t bits;
  if (is_float(s) && s.bits == 32) {
    float f = (float)x.f;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
  } else if (is_float(s)) {
    memcpy(&bits, &x.f, 8);
  } else {
    bits = sbits == 64 ? (uint64_t)x.i : (uint64_t)x.i & ((1ULL << sbits) - 1);
  }
  if (is_float(t) && t.bits == 32) {
    uint32_t u = (uint32_t)bits;
    float f;
    memcpy(&f, &u, 4);
    out->f = f;
  } else if (is_float(t)) {
    memcpy(&out->f, &bits, 8);
  } else {
    out->i = wrap_int(t, (int64_t)bits);
  }
  return true;
}

static bool eval_call(Interp *in, const Expr *e, int lane, Scalar *out) {
  char tb[16];
  DType t = e->dtype;
  if (call_op_is_bitwise(e->call.op)) return eval_bitwise(in, e, lane, out);
  if (e->call.op == CALL_REINTERPRET) return eval_reinterpret(in, e, lane, out);
  if (!is_float(t))
    return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: %s on dtype %s is not supported",
                call_op_name(e->call.op), dtype_str(t, tb));
  Scalar x[2] = {{0}, {0}};
  for (int i = 0; i < e->call.n && i < 2; i++)
    if (!eval(in, e->call.args[i], lane, &x[i])) return false;
  if (is_f32(t)) {
    float a = (float)x[0].f, b = (float)x[1].f, r = 0;
    switch (e->call.op) {
      case CALL_EXP: r = expf(a); break;
      case CALL_LOG: r = logf(a); break;
      case CALL_SQRT: r = sqrtf(a); break;
      case CALL_TANH: r = tanhf(a); break;
      case CALL_ERF: r = erff(a); break;
      case CALL_FABS: r = fabsf(a); break;
      case CALL_FLOOR: r = floorf(a); break;
      case CALL_CEIL: r = ceilf(a); break;
      case CALL_ROUND: r = nearbyintf(a); break;
      case CALL_SIN: r = sinf(a); break;
      case CALL_COS: r = cosf(a); break;
      case CALL_POW: r = powf(a, b); break;
      case CALL_TAN: r = tanf(a); break;
      case CALL_ASIN: r = asinf(a); break;
      case CALL_ACOS: r = acosf(a); break;
      case CALL_ATAN: r = atanf(a); break;
      case CALL_SINH: r = sinhf(a); break;
      case CALL_COSH: r = coshf(a); break;
      case CALL_ASINH: r = asinhf(a); break;
      case CALL_ACOSH: r = acoshf(a); break;
      case CALL_ATANH: r = atanhf(a); break;
      case CALL_LOG1P: r = log1pf(a); break;
      default: return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: unknown call");
    }
    out->f = round_float(t, r);
  } else {
    double a = x[0].f, b = x[1].f, r = 0;
    switch (e->call.op) {
      case CALL_EXP: r = exp(a); break;
      case CALL_LOG: r = log(a); break;
      case CALL_SQRT: r = sqrt(a); break;
      case CALL_TANH: r = tanh(a); break;
      case CALL_ERF: r = erf(a); break;
      case CALL_FABS: r = fabs(a); break;
      case CALL_FLOOR: r = floor(a); break;
      case CALL_CEIL: r = ceil(a); break;
      case CALL_ROUND: r = nearbyint(a); break;
      case CALL_SIN: r = sin(a); break;
      case CALL_COS: r = cos(a); break;
      case CALL_POW: r = pow(a, b); break;
      case CALL_TAN: r = tan(a); break;
      case CALL_ASIN: r = asin(a); break;
      case CALL_ACOS: r = acos(a); break;
      case CALL_ATAN: r = atan(a); break;
      case CALL_SINH: r = sinh(a); break;
      case CALL_COSH: r = cosh(a); break;
      case CALL_ASINH: r = asinh(a); break;
      case CALL_ACOSH: r = acosh(a); break;
      case CALL_ATANH: r = atanh(a); break;
      case CALL_LOG1P: r = log1p(a); break;
      default: return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: unknown call");
    }
    out->f = r;
  }
  return true;
}

static bool eval_cast(Interp *in, DType to, DType from, Scalar x, Scalar *out) {
  char tb[16];
  to = dtype_element(to);
  from = dtype_element(from);
  if (!dtype_supported(to) || !dtype_supported(from))
    return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: cast to %s is not supported",
                dtype_str(to, tb));
  if (is_float(to)) {
    double v;
    if (is_float(from)) v = x.f;
    else if (is_u64(from)) v = is_f32(to) ? (double)(float)(uint64_t)x.i : (double)(uint64_t)x.i;
    else v = is_f32(to) ? (double)(float)x.i : (double)x.i;
    out->f = round_float(to, v);
    return true;
  }
  if (to.code == DT_BOOL) {
    out->i = is_float(from) ? x.f != 0 : x.i != 0;
    return true;
  }
  if (is_float(from) && dtype_is_narrow(to)) {
    /* int4/int2: truncate, then keep the low bits (ml_dtypes) */
    double tr = trunc(x.f);
    if (!(tr > -9.2e18 && tr < 9.2e18))
      return fail(in, LOOM_ERR_RUNTIME, "interpreter: cast of %g to %s is out of range", x.f, dtype_str(to, tb));
    out->i = dtype_narrow_wrap(to, (int64_t)tr);
    return true;
  }
  if (is_float(from)) {
    double tr = trunc(x.f);
    double lo, hi; /* valid range [lo, hi) */
    if (to.code == DT_UINT) {
      lo = 0;
      hi = ldexp(1.0, to.bits);
    } else {
      lo = -ldexp(1.0, to.bits - 1);
      hi = ldexp(1.0, to.bits - 1);
    }
    if (!(tr >= lo && tr < hi))
      return fail(in, LOOM_ERR_RUNTIME, "interpreter: cast of %g to %s is out of range", x.f,
                  dtype_str(to, tb));
    out->i = to.code == DT_UINT && to.bits == 64 ? (int64_t)(uint64_t)tr : (int64_t)tr;
    return true;
  }
  out->i = wrap_int(to, x.i);
  return true;
}

static bool eval_binary_float(Interp *in, const Expr *e, double a, double b, Scalar *out) {
  DType t = e->bin.a->dtype;
  double r;
  switch (e->kind) {
    case EXPR_ADD: r = a + b; break;
    case EXPR_SUB: r = a - b; break;
    case EXPR_MUL: r = a * b; break;
    case EXPR_DIV: r = a / b; break;
    case EXPR_MOD: r = is_f32(t) ? (double)fmodf((float)a, (float)b) : fmod(a, b); break;
    case EXPR_FLOORDIV: r = is_f32(t) ? (double)floorf((float)(a / b)) : floor(a / b); break;
    case EXPR_FLOORMOD: {
      double q = is_f32(t) ? (double)floorf((float)(a / b)) : floor(a / b);
      r = round_float(t, a - round_float(t, q * b));
      break;
    }
    case EXPR_MIN: r = a < b ? a : b; break;
    case EXPR_MAX: r = a > b ? a : b; break;
    case EXPR_EQ: out->i = a == b; return true;
    case EXPR_NE: out->i = a != b; return true;
    case EXPR_LT: out->i = a < b; return true;
    case EXPR_LE: out->i = a <= b; return true;
    case EXPR_GT: out->i = a > b; return true;
    case EXPR_GE: out->i = a >= b; return true;
    default:
      return fail(in, LOOM_ERR_RUNTIME, "interpreter: %s on floats", expr_kind_name(e->kind));
  }
  out->f = round_float(t, r);
  return true;
}

static bool eval_binary_int(Interp *in, const Expr *e, int64_t a, int64_t b, Scalar *out) {
  DType t = e->bin.a->dtype;
  bool u = is_u64(t);
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  int64_t r;
  switch (e->kind) {
    case EXPR_ADD: r = (int64_t)(ua + ub); break;
    case EXPR_SUB: r = (int64_t)(ua - ub); break;
    case EXPR_MUL: r = (int64_t)(ua * ub); break;
    case EXPR_DIV:
    case EXPR_MOD:
    case EXPR_FLOORDIV:
    case EXPR_FLOORMOD: {
      if (b == 0)
        return fail(in, LOOM_ERR_RUNTIME, "interpreter: %s by zero in %s", expr_kind_name(e->kind),
                    expr_to_string(in->a, e));
      bool is_div = e->kind == EXPR_DIV || e->kind == EXPR_FLOORDIV;
      if (u) {
        r = (int64_t)(is_div ? ua / ub : ua % ub);
        break;
      }
      if (a == INT64_MIN && b == -1) {
        r = is_div ? a : 0; /* wraps, as two's complement hardware does */
        break;
      }
      int64_t q = a / b, m = a % b;
      if ((e->kind == EXPR_FLOORDIV || e->kind == EXPR_FLOORMOD) && m != 0 && ((m < 0) != (b < 0))) {
        q -= 1;
        m += b;
      }
      r = is_div ? q : m;
      break;
    }
    case EXPR_MIN: r = u ? (ua < ub ? a : b) : (a < b ? a : b); break;
    case EXPR_MAX: r = u ? (ua > ub ? a : b) : (a > b ? a : b); break;
    case EXPR_EQ: out->i = a == b; return true;
    case EXPR_NE: out->i = a != b; return true;
    case EXPR_LT: out->i = u ? ua < ub : a < b; return true;
    case EXPR_LE: out->i = u ? ua <= ub : a <= b; return true;
    case EXPR_GT: out->i = u ? ua > ub : a > b; return true;
    case EXPR_GE: out->i = u ? ua >= ub : a >= b; return true;
    default:
      return fail(in, LOOM_ERR_RUNTIME, "interpreter: unexpected %s", expr_kind_name(e->kind));
  }
  out->i = wrap_int(t, r);
  return true;
}

static bool eval_load(Interp *in, const Expr *e, int lane, Scalar *out) {
  BufState *st = buf_lookup(in, e->load.buffer, "load from");
  if (!st) return false;
  int n = e->load.n;
  int64_t idx[n > 0 ? n : 1];
  for (int d = 0; d < n; d++) {
    Scalar v;
    if (!eval(in, e->load.indices[d], lane, &v)) return false;
    idx[d] = v.i;
  }
  int64_t k;
  if (!buf_offset(in, st, idx, n, "load", &k)) return false;
  if (st->written && !st->written[k])
    return fail(in, LOOM_ERR_RUNTIME,
                "interpreter: load of %s[%s] reads an element that was never written",
                st->buffer->name, index_str(in, idx, n));
  *out = elem_read(st, k);
  return true;
}

static bool eval(Interp *in, const Expr *e, int lane, Scalar *out) {
  if (in->failed) return false;
  if (e->dtype.lanes <= 1) lane = 0;
  char tb[16];
  switch (e->kind) {
    case EXPR_INT:
      out->i = e->int_value;
      return true;
    case EXPR_FLOAT:
      out->f = round_float(e->dtype, e->float_value);
      return true;
    case EXPR_VAR: {
      Slot *s = ptrmap_get(&in->vars, e);
      if (!s || !s->bound)
        return fail(in, LOOM_ERR_RUNTIME, "interpreter: variable \"%s\" is used outside its scope",
                    e->var.name);
      *out = s->v;
      return true;
    }
    case EXPR_NOT: {
      Scalar x;
      if (!eval(in, e->un.a, lane, &x)) return false;
      out->i = !x.i;
      return true;
    }
    case EXPR_CAST: {
      Scalar x;
      if (!eval(in, e->un.a, lane, &x)) return false;
      return eval_cast(in, e->dtype, e->un.a->dtype, x, out);
    }
    case EXPR_SELECT: {
      Scalar c;
      if (!eval(in, e->select.cond, lane, &c)) return false;
      return eval(in, c.i ? e->select.t : e->select.f, lane, out);
    }
    case EXPR_LOAD: return eval_load(in, e, lane, out);
    case EXPR_CALL: return eval_call(in, e, lane, out);
    case EXPR_RAMP: {
      Scalar b, s;
      if (!eval(in, e->ramp.base, 0, &b) || !eval(in, e->ramp.stride, 0, &s)) return false;
      out->i = wrap_int(e->ramp.base->dtype, (int64_t)((uint64_t)b.i + (uint64_t)s.i * (uint64_t)lane));
      return true;
    }
    case EXPR_BROADCAST: return eval(in, e->broadcast.value, 0, out);
    case EXPR_REDUCE:
      return fail(in, LOOM_ERR_UNSUPPORTED,
                  "interpreter: a te reduction is left in the loop IR (lower it with "
                  "te_create_primfunc)");
    case EXPR_AND:
    case EXPR_OR: {
      Scalar x;
      if (!eval(in, e->bin.a, lane, &x)) return false;
      if ((e->kind == EXPR_AND) != (x.i != 0)) {
        out->i = x.i != 0;
        return true;
      }
      if (!eval(in, e->bin.b, lane, &x)) return false;
      out->i = x.i != 0;
      return true;
    }
    default: {
      if (!expr_is_binary(e->kind))
        return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: unknown expression kind %d", e->kind);
      DType t = dtype_element(e->bin.a->dtype);
      if (!dtype_supported(t))
        return fail(in, LOOM_ERR_UNSUPPORTED, "interpreter: %s on dtype %s is not supported",
                    expr_kind_name(e->kind), dtype_str(t, tb));
      Scalar x, y;
      if (!eval(in, e->bin.a, lane, &x) || !eval(in, e->bin.b, lane, &y)) return false;
      if (is_float(t)) return eval_binary_float(in, e, x.f, y.f, out);
      return eval_binary_int(in, e, x.i, y.i, out);
    }
  }
}

/* -------------------------------------------------------------- statements */

static bool exec(Interp *in, const Stmt *s);

static int stmt_store_lanes(const Stmt *s) {
  int lanes = s->store.value->dtype.lanes;
  for (int d = 0; d < s->store.n; d++)
    if (s->store.indices[d]->dtype.lanes > lanes) lanes = s->store.indices[d]->dtype.lanes;
  return lanes < 1 ? 1 : lanes;
}

static bool exec_store(Interp *in, const Stmt *s) {
  BufState *st = buf_lookup(in, s->store.buffer, "store to");
  if (!st) return false;
  int lanes = stmt_store_lanes(s), n = s->store.n;
  int64_t idx[n > 0 ? n : 1];
  Scalar small_v[16];
  int64_t small_k[16];
  Scalar *vals = lanes <= 16 ? small_v : loom_malloc(sizeof(Scalar) * (size_t)lanes);
  int64_t *offs = lanes <= 16 ? small_k : loom_malloc(sizeof(int64_t) * (size_t)lanes);
  bool ok = vals && offs;
  if (!ok) fail(in, LOOM_ERR_OUT_OF_MEMORY, "interpreter: out of memory");
  for (int l = 0; ok && l < lanes; l++) {
    for (int d = 0; ok && d < n; d++) {
      Scalar v;
      ok = eval(in, s->store.indices[d], l, &v);
      idx[d] = v.i;
    }
    ok = ok && eval(in, s->store.value, l, &vals[l]) && buf_offset(in, st, idx, n, "store", &offs[l]);
  }
  for (int l = 0; ok && l < lanes; l++) elem_write(st, offs[l], vals[l]);
  if (vals != small_v) loom_free(vals);
  if (offs != small_k) loom_free(offs);
  return ok;
}

static bool exec_for(Interp *in, const Stmt *s) {
  Scalar mn, ext;
  if (!eval(in, s->loop.min, 0, &mn) || !eval(in, s->loop.extent, 0, &ext)) return false;
  Slot *slot = slot_of(in, s->loop.var);
  Slot saved = *slot;
  slot->bound = true;
  bool ok = true;
  for (int64_t k = 0; ok && k < ext.i; k++) {
    slot->v.i = mn.i + k;
    ok = exec(in, s->loop.body);
  }
  *slot = saved;
  return ok;
}

/* A DMA statement's copy with its arguments evaluated (when it starts). */
static bool dma_eval(Interp *in, const Stmt *s, DmaCopy *c) {
  const Expr *d = s->dma.dst, *r = s->dma.src;
  BufState *dst = buf_lookup(in, d->load.buffer, "DMA to"), *src = dst ? buf_lookup(in, r->load.buffer, "DMA from") : NULL;
  Scalar d0 = {0}, s0 = {0}, re = {0}, rows = {0}, ds = {0}, ss = {0};
  if (!src || !eval(in, d->load.indices[0], 0, &d0) || !eval(in, r->load.indices[0], 0, &s0) ||
      !eval(in, s->dma.row_elems, 0, &re) || !eval(in, s->dma.rows, 0, &rows) || !eval(in, s->dma.dst_stride, 0, &ds) ||
      !eval(in, s->dma.src_stride, 0, &ss))
    return false;
  /* More elements than the destination holds would overwrite some (no
   * copy Loom makes does), and bounds the work on hostile input. */
  if (re.i < 0 || rows.i < 0 || (re.i > 0 && rows.i > dst->n_elems / re.i))
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA of %lld rows of %lld elements into \"%s\" of %lld elements",
                (long long)rows.i, (long long)re.i, dst->buffer->name, (long long)dst->n_elems);
  *c = (DmaCopy){s, dst, src, d0.i, s0.i, re.i, rows.i, ds.i, ss.i};
  return true;
}

/* rows x row_elems elements, element by element through the same checks
 * as loads and stores (bounds; a temporary's never-written elements). */
static bool dma_copy(Interp *in, const DmaCopy *c) {
  for (int64_t row = 0; row < c->rows; row++)
    for (int64_t e = 0; e < c->row_elems; e++) {
      int64_t di = c->d0 + row * c->dst_stride + e, si = c->s0 + row * c->src_stride + e, dk, sk;
      if (!buf_offset(in, c->src, &si, 1, "DMA read", &sk) || !buf_offset(in, c->dst, &di, 1, "DMA write", &dk))
        return false;
      if (c->src->written && !c->src->written[sk])
        return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA from %s[%lld] reads an element that was never written",
                    c->src->buffer->name, (long long)si);
      elem_write(c->dst, dk, elem_read(c->src, sk));
    }
  TirDmaStats *st = in->opts.dma_stats;
  if (st) {
    int64_t bytes = c->rows * c->row_elems * c->dst->elem_bytes;
    if (c->s->dma.dir == DMA_GET) st->gets++, st->get_bytes += bytes;
    else st->puts++, st->put_bytes += bytes;
  }
  return true;
}

static bool dma_ticket(Interp *in, const Expr *e, const char *what, int64_t *t) {
  Scalar v = {0};
  if (!eval(in, e, 0, &v)) return false;
  if (v.i < 0 || v.i >= in->n_tickets)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA %s with ticket %lld, outside the kernel's %d tickets", what,
                (long long)v.i, in->n_tickets);
  *t = v.i;
  return true;
}

/* A blocking copy runs now. An asynchronous start runs as the slowest
 * legal engine would: the copy is deferred to its wait, and the
 * destination is poisoned until then (every element unwritten, its bytes
 * all ones: NaN for floats), so a read before the wait is reported (or,
 * without the uninit check, reads garbage). */
static bool exec_dma(Interp *in, const Stmt *s) {
  DmaCopy c;
  if (!dma_eval(in, s, &c)) return false;
  if (!s->dma.ticket) return dma_copy(in, &c);
  int64_t t;
  if (!dma_ticket(in, s->dma.ticket, "start", &t)) return false;
  if (in->pending[t].s)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA into \"%s\" started with ticket %lld, whose copy into \"%s\" "
                "was never waited for", c.dst->buffer->name, (long long)t, in->pending[t].dst->buffer->name);
  for (int64_t row = 0; row < c.rows; row++)
    for (int64_t e = 0; e < c.row_elems; e++) {
      int64_t di = c.d0 + row * c.dst_stride + e, dk;
      if (!buf_offset(in, c.dst, &di, 1, "DMA write", &dk)) return false;
      memset(c.dst->data + dk * c.dst->elem_bytes, 0xff, (size_t)c.dst->elem_bytes);
      if (c.dst->written) c.dst->written[dk] = false;
    }
  in->pending[t] = c;
  return true;
}

static bool exec_dma_wait(Interp *in, const Stmt *s) {
  int64_t t;
  if (!dma_ticket(in, s->dma_wait.ticket, "wait", &t)) return false;
  DmaCopy c = in->pending[t];
  if (!c.s) return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA wait for ticket %lld, which has no copy in flight", (long long)t);
  in->pending[t].s = NULL;
  if (buf_lookup(in, c.dst->buffer, "DMA to") != c.dst || buf_lookup(in, c.src->buffer, "DMA from") != c.src)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: DMA wait for ticket %lld after the scope of \"%s\" ended", (long long)t,
                c.dst->buffer->name);
  if (in->opts.dma_stats) in->opts.dma_stats->waits++;
  return dma_copy(in, &c);
}

/* Makes buffers live for the duration of a scope; restores the outer state. */
static bool scope_alloc(Interp *in, const Buffer *const *bufs, int n, BufState **saved, BufState **mine) {
  for (int i = 0; i < n; i++) {
    saved[i] = ptrmap_get(&in->bufs, bufs[i]);
    mine[i] = bufstate_new(in, bufs[i], NULL);
    if (!mine[i]) {
      for (int j = 0; j < i; j++) {
        bufstate_free(mine[j]);
        ptrmap_put(&in->bufs, bufs[j], saved[j]);
      }
      return false;
    }
    ptrmap_put(&in->bufs, bufs[i], mine[i]);
  }
  return true;
}

static void scope_release(Interp *in, const Buffer *const *bufs, int n, BufState **saved, BufState **mine) {
  for (int i = 0; i < n; i++) {
    bufstate_free(mine[i]);
    ptrmap_put(&in->bufs, bufs[i], saved[i]);
  }
}

static bool exec_realize(Interp *in, const Stmt *s) {
  const Block *b = s->realize.block;
  if (s->realize.n != b->n_iters)
    return fail(in, LOOM_ERR_RUNTIME, "interpreter: block \"%s\" has %d iterators but %d bindings",
                b->name, b->n_iters, s->realize.n);
  int n = b->n_iters;
  Scalar vals[n > 0 ? n : 1];
  for (int k = 0; k < n; k++)
    if (!eval(in, s->realize.iter_values[k], 0, &vals[k])) return false;
  /* The predicate reads the enclosing loop variables, not the block's. */
  Scalar pred;
  if (!eval(in, s->realize.predicate, 0, &pred)) return false;
  if (!pred.i) return true;

  bool run_init = b->init != NULL;
  for (int k = 0; k < n; k++) {
    const IterVar *iv = &b->iters[k];
    Scalar mn, ext;
    if (!eval(in, iv->min, 0, &mn) || !eval(in, iv->extent, 0, &ext)) return false;
    if (in->opts.check_iter_domain && (vals[k].i < mn.i || vals[k].i >= mn.i + ext.i))
      return fail(in, LOOM_ERR_RUNTIME,
                  "interpreter: block \"%s\": iterator %s = %lld is outside its domain [%lld, %lld)",
                  b->name, iv->var->var.name, (long long)vals[k].i, (long long)mn.i,
                  (long long)(mn.i + ext.i));
    if (iv->type == ITER_REDUCE && vals[k].i != mn.i) run_init = false;
  }
  Slot *slots[n > 0 ? n : 1];
  Slot saved[n > 0 ? n : 1];
  for (int k = 0; k < n; k++) {
    slots[k] = slot_of(in, b->iters[k].var);
    saved[k] = *slots[k];
  }
  for (int k = 0; k < n; k++) {
    slots[k]->v = vals[k];
    slots[k]->bound = true;
  }
  int na = b->n_alloc;
  BufState *outer[na > 0 ? na : 1], *mine[na > 0 ? na : 1];
  bool allocated = scope_alloc(in, b->alloc_buffers, na, outer, mine);
  bool ok = allocated;
  if (ok && run_init) ok = exec(in, b->init);
  if (ok) ok = exec(in, b->body);
  if (allocated) scope_release(in, b->alloc_buffers, na, outer, mine);
  for (int k = n - 1; k >= 0; k--) *slots[k] = saved[k];
  return ok;
}

static bool exec(Interp *in, const Stmt *s) {
  if (in->failed) return false;
  switch (s->kind) {
    case STMT_FOR: return exec_for(in, s);
    case STMT_BLOCK_REALIZE: return exec_realize(in, s);
    case STMT_STORE: return exec_store(in, s);
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++)
        if (!exec(in, s->seq.stmts[i])) return false;
      return true;
    case STMT_IF: {
      Scalar c;
      if (!eval(in, s->if_.cond, 0, &c)) return false;
      if (c.i) return exec(in, s->if_.then_s);
      return s->if_.else_s ? exec(in, s->if_.else_s) : true;
    }
    case STMT_EVALUATE: return true;
    case STMT_ALLOCATE: {
      BufState *outer, *mine;
      if (!scope_alloc(in, &s->alloc.buffer, 1, &outer, &mine)) return false;
      bool ok = exec(in, s->alloc.body);
      scope_release(in, &s->alloc.buffer, 1, &outer, &mine);
      return ok;
    }
    case STMT_DMA: return exec_dma(in, s);
    case STMT_DMA_WAIT: return exec_dma_wait(in, s);
    default: return fail(in, LOOM_ERR_INTERNAL, "interpreter: unknown statement kind %d", s->kind);
  }
}

loom_status tir_interpret_opts(const PrimFunc *f, void *const *param_data,
                               const TirInterpOptions *opts, LoomError *err) {
  Interp in = {.err = err, .opts = opts ? *opts : tir_interp_default_options()};
  if (!f || !f->body) return err_set(err, LOOM_ERR_INVALID_ARG, "tir_interpret: no function");
  in.a = arena_new();
  ptrmap_init(&in.vars, in.a);
  ptrmap_init(&in.bufs, in.a);
  for (int i = 0; i < f->n_params && !in.failed; i++) {
    if (!param_data || !param_data[i]) {
      fail(&in, LOOM_ERR_INVALID_ARG, "tir_interpret \"%s\": no data for parameter %d (\"%s\")",
           f->name, i, f->params[i]->name);
      break;
    }
    BufState *st = bufstate_new(&in, f->params[i], param_data[i]);
    if (st) ptrmap_put(&in.bufs, f->params[i], st);
  }
  in.n_tickets = f->dma_tickets;
  if (f->dma_tickets > 0) in.pending = ARENA_ARRAY(in.a, DmaCopy, f->dma_tickets);
  if (!in.failed) exec(&in, f->body);
  for (int t = 0; t < in.n_tickets && !in.failed; t++)
    if (in.pending[t].s)
      fail(&in, LOOM_ERR_RUNTIME, "interpreter: the DMA into \"%s\" started with ticket %d is never waited for",
           in.pending[t].dst->buffer->name, t);
  if (in.failed && err) err_prefix(err, "in function \"%s\": ", f->name);
  arena_free(in.a);
  return in.failed ? in.status : LOOM_OK;
}

loom_status tir_interpret(const PrimFunc *f, void *const *param_data, LoomError *err) {
  return tir_interpret_opts(f, param_data, NULL, err);
}

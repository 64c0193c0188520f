/* features_extract: per-store features of a lowered PrimFunc, aggregated
 * into one vector (features.h; every feature is defined in
 * docs/autotune.md, "Features").
 *
 * One walk over the statements keeps the enclosing loops (extent, kind),
 * allocations and guards. At each Store:
 *   - its expressions are counted by kind of operation, and its accesses
 *     collected (the store, then each load; a load of the stored location
 *     merges with it: read-write);
 *   - each access's flat index is read as an affine function of the loop
 *     variables (coefficients per loop; a variable under floordiv, a
 *     product of two variables, a select... is "non-affine" for its loop),
 *     which gives its innermost stride, the loop that carries its reuse and
 *     its footprint at any loop level (footprint());
 *   - the straight-line body it shares with its siblings (the innermost
 *     loop's body: the copies an unrolled register tile became) is
 *     summarized once per loop (body_stats());
 *   - the "compiler's loop", the innermost one the C compiler does not
 *     unroll completely, is the one it may vectorize: how the accesses move
 *     in it decides whether it does.
 * The store's features then go into the aggregates (sum, heaviest, mean)
 * without being kept, so the walk allocates nothing. */
#include "autotune/features.h"

#include "tir/transform/transform.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
  MAX_DEPTH = 64,     /* loops above a store */
  MAX_ACCESSES = 32,  /* distinct accesses of one store analysed (more: counted only) */
  MAX_BODY_LOADS = 256,
  SLOTS = 3,          /* accesses per store in the vector (largest footprint first) */
  LINE_BYTES = 64,
  L1_BYTES = 32 * 1024,    /* fixed, not the target's: a model transfers across machines */
  L2_BYTES = 1024 * 1024,
  /* Loops of at most this many iterations are unrolled completely by the
   * C compiler (GCC's cunroll peels up to 16 iterations of a small body):
   * the loop it may vectorize is the innermost longer one. */
  COMPILER_UNROLL_TRIPS = 16,
};

/* ---- the feature tables (order = vector order; docs/autotune.md) ---- */

typedef enum Transform { LOG, RAW } Transform;

/* Per store, multiplied by its executions: summed over stores ("sum."). */
#define STORE_TOTALS(X)           \
  X(EXEC, "exec", LOG)            \
  X(FLOAT_ADDSUB, "float_addsub", LOG) \
  X(FLOAT_MUL, "float_mul", LOG)  \
  X(FLOAT_FMA, "float_fma", LOG)  \
  X(FLOAT_DIVMOD, "float_divmod", LOG) \
  X(FLOAT_MINMAX, "float_minmax", LOG) \
  X(FLOAT_MATH, "float_math", LOG) \
  X(FLOAT_CMP, "float_cmp", LOG)  \
  X(INT_ADDSUB, "int_addsub", LOG) \
  X(INT_MUL, "int_mul", LOG)      \
  X(INT_DIVMOD, "int_divmod", LOG) \
  X(INT_OTHER, "int_other", LOG)  \
  X(CASTS, "casts", LOG)          \
  X(FLOPS, "flops", LOG)          \
  X(BYTES_ACCESSED, "bytes_accessed", LOG)

/* Per store, a property of one execution or of its nest: work-weighted
 * mean over stores ("mean."). */
#define STORE_SHAPES(X)                       \
  X(LANES, "lanes", LOG)                      \
  X(VECTOR_BYTES, "vector_bytes", LOG)        \
  X(DEPTH, "depth", LOG)                      \
  X(INNER_EXTENT, "inner_extent", LOG)        \
  X(PARALLEL_LOOPS, "parallel_loops", LOG)    \
  X(PARALLEL_EXTENT, "parallel_extent", LOG)  \
  X(PARALLEL_LAUNCHES, "parallel_launches", LOG) \
  X(UNROLL_LOOPS, "unroll_loops", LOG)        \
  X(UNROLL_EXTENT, "unroll_extent", LOG)      \
  X(GUARDED, "guarded", RAW)                  \
  X(BODY_STORES, "body_stores", LOG)          \
  X(BODY_CODE_SIZE, "body_code_size", LOG)    \
  X(BODY_FLOAT_OPS, "body_float_ops", LOG)    \
  X(BODY_LOADS, "body_loads", LOG)            \
  X(BODY_ACCUMULATORS, "body_accumulators", LOG) \
  X(BODY_OPS_PER_LOAD, "body_ops_per_load", RAW) \
  X(LOADS, "loads", LOG)                      \
  X(NONCONTIG, "noncontig", LOG)              \
  X(BYTES_INNER, "bytes_inner", LOG)          \
  X(BYTES_INNER2, "bytes_inner2", LOG)        \
  X(BYTES_NEST, "bytes_nest", LOG)            \
  X(LINES_NEST, "lines_nest", LOG)            \
  X(L1_WORK, "l1_work", LOG)                  \
  X(L2_WORK, "l2_work", LOG)                  \
  X(ALLOC_BYTES, "alloc_bytes", LOG)          \
  X(LOCAL_ALLOCS, "local_allocs", LOG)        \
  X(INTENSITY, "intensity", RAW)              \
  X(CLOOP_EXTENT, "cloop_extent", LOG)        \
  X(CLOOP_INNER, "cloop_inner", LOG)          \
  X(CLOOP_STRIDED, "cloop_strided", LOG)      \
  X(CLOOP_CARRIED, "cloop_carried", RAW)

/* Per access of the heaviest store, SLOTS of them ("top.acc<k>."). */
#define ACCESS_FEATURES(X)              \
  X(PRESENT, "present", RAW)            \
  X(IS_READ, "is_read", RAW)            \
  X(IS_WRITE, "is_write", RAW)          \
  X(IS_LOCAL, "is_local", RAW)          \
  X(AFFINE, "affine", RAW)              \
  X(ELEM_BYTES, "elem_bytes", LOG)      \
  X(VEC_STRIDE, "vec_stride", LOG)      \
  X(STRIDE, "stride", LOG)              \
  X(CSTRIDE, "cstride", LOG)            \
  X(BYTES_INNER, "bytes_inner", LOG)    \
  X(BYTES_NEST, "bytes_nest", LOG)      \
  X(LINES_NEST, "lines_nest", LOG)      \
  X(REUSE_RATIO, "reuse_ratio", LOG)    \
  X(REUSE_ITERS, "reuse_iters", LOG)    \
  X(REUSE_BYTES, "reuse_bytes", LOG)    \
  X(REUSE_COUNT, "reuse_count", LOG)

/* Of the whole function ("g."). */
#define GLOBAL_FEATURES(X)                         \
  X(N_STORES, "n_stores", LOG)                     \
  X(N_LOOPS, "n_loops", LOG)                       \
  X(MAX_DEPTH, "max_depth", LOG)                   \
  X(PARALLEL_LOOPS, "parallel_loops", LOG)         \
  X(MAX_PARALLEL_EXTENT, "max_parallel_extent", LOG) \
  X(UNROLL_LOOPS, "unroll_loops", LOG)             \
  X(SYMBOLIC_LOOPS, "symbolic_loops", LOG)         \
  X(ALLOCS, "allocs", LOG)                         \
  X(ALLOC_BYTES, "alloc_bytes", LOG)               \
  X(CODE_SIZE, "code_size", LOG)                   \
  X(PARALLEL_FRACTION, "parallel_fraction", RAW)   \
  X(INTENSITY, "intensity", RAW)

enum {
#define X(id, name, tr) T_##id,
  STORE_TOTALS(X)
#undef X
  N_TOTALS
};
enum {
#define X(id, name, tr) S_##id,
  STORE_SHAPES(X)
#undef X
  N_SHAPES
};
enum {
#define X(id, name, tr) A_##id,
  ACCESS_FEATURES(X)
#undef X
  N_ACCESS
};
enum {
#define X(id, name, tr) G_##id,
  GLOBAL_FEATURES(X)
#undef X
  N_GLOBAL
};

static const char *const total_names[] = {
#define X(id, name, tr) name,
    STORE_TOTALS(X)
#undef X
};
static const char *const shape_names[] = {
#define X(id, name, tr) name,
    STORE_SHAPES(X)
#undef X
};
static const char *const access_names[] = {
#define X(id, name, tr) name,
    ACCESS_FEATURES(X)
#undef X
};
static const char *const global_names[] = {
#define X(id, name, tr) name,
    GLOBAL_FEATURES(X)
#undef X
};
static const Transform total_tr[] = {
#define X(id, name, tr) tr,
    STORE_TOTALS(X)
#undef X
};
static const Transform shape_tr[] = {
#define X(id, name, tr) tr,
    STORE_SHAPES(X)
#undef X
};
static const Transform access_tr[] = {
#define X(id, name, tr) tr,
    ACCESS_FEATURES(X)
#undef X
};
static const Transform global_tr[] = {
#define X(id, name, tr) tr,
    GLOBAL_FEATURES(X)
#undef X
};

/* The vector: g.*, sum.<totals>, top.<totals> top.<shapes> top.acc<k>.*, mean.<shapes>. */
enum {
  OFF_GLOBAL = 0,
  OFF_SUM = OFF_GLOBAL + N_GLOBAL,
  OFF_TOP = OFF_SUM + N_TOTALS,
  OFF_TOP_SHAPE = OFF_TOP + N_TOTALS,
  OFF_TOP_ACCESS = OFF_TOP_SHAPE + N_SHAPES,
  OFF_MEAN = OFF_TOP_ACCESS + SLOTS * N_ACCESS,
  DIM = OFF_MEAN + N_SHAPES,
};
_Static_assert(DIM == FEATURES_DIM, "FEATURES_DIM in features.h must match the tables (and bump FEATURES_VERSION)");

const char *features_name(int i, char *buf, size_t cap) {
  if (i < 0 || i >= DIM || !buf || cap == 0) return NULL;
  if (i < OFF_SUM)
    snprintf(buf, cap, "g.%s", global_names[i - OFF_GLOBAL]);
  else if (i < OFF_TOP)
    snprintf(buf, cap, "sum.%s", total_names[i - OFF_SUM]);
  else if (i < OFF_TOP_SHAPE)
    snprintf(buf, cap, "top.%s", total_names[i - OFF_TOP]);
  else if (i < OFF_TOP_ACCESS)
    snprintf(buf, cap, "top.%s", shape_names[i - OFF_TOP_SHAPE]);
  else if (i < OFF_MEAN)
    snprintf(buf, cap, "top.acc%d.%s", (i - OFF_TOP_ACCESS) / N_ACCESS, access_names[(i - OFF_TOP_ACCESS) % N_ACCESS]);
  else
    snprintf(buf, cap, "mean.%s", shape_names[i - OFF_MEAN]);
  return buf;
}

static Transform transform_of(int i) {
  if (i < OFF_SUM) return global_tr[i - OFF_GLOBAL];
  if (i < OFF_TOP) return total_tr[i - OFF_SUM];
  if (i < OFF_TOP_SHAPE) return total_tr[i - OFF_TOP];
  if (i < OFF_TOP_ACCESS) return shape_tr[i - OFF_TOP_SHAPE];
  if (i < OFF_MEAN) return access_tr[(i - OFF_TOP_ACCESS) % N_ACCESS];
  return shape_tr[i - OFF_MEAN];
}

/* ---- the walk's state ---- */

/* The straight-line body of a loop (its statements outside nested loops). */
typedef struct BodyStats {
  bool done;
  double stores, code_size, float_ops, loads, accumulators;
} BodyStats;

typedef struct Loop {
  const Stmt *stmt;
  int64_t extent;
  BodyStats body;
} Loop;

typedef struct Walk {
  const PrimFunc *f;
  LoomError *err;
  Loop loops[MAX_DEPTH];
  int depth;
  BodyStats root_body; /* stores outside every loop */
  double guard_divisor; /* executions removed by enclosing `if (x == c)` guards */
  int guards;
  double alloc_bytes;
  int allocs;
  /* globals */
  double g[N_GLOBAL];
  /* aggregates */
  double sum[N_TOTALS];
  double mean[N_SHAPES], weight_sum, parallel_weight, nest_bytes_sum;
  double top_total[N_TOTALS], top_shape[N_SHAPES], top_access[SLOTS][N_ACCESS], top_weight;
  bool have_top;
} Walk;

static int loop_depth_of(const Walk *w, const Expr *var) {
  for (int d = w->depth - 1; d >= 0; d--)
    if (w->loops[d].stmt->loop.var == var) return d;
  return -1;
}

/* A loop's trip count: its constant extent, the constant of min(c, x) (a
 * partial tile's guard), else 1 (counted in g.symbolic_loops). */
static int64_t loop_trips(const Stmt *s, bool *symbolic) {
  int64_t e;
  *symbolic = false;
  if (expr_as_int(s->loop.extent, &e)) return e > 0 ? e : 0;
  const Expr *x = s->loop.extent;
  if (x->kind == EXPR_MIN && (expr_as_int(x->bin.a, &e) || expr_as_int(x->bin.b, &e))) return e > 0 ? e : 0;
  *symbolic = true;
  return 1;
}

static double scalar_bytes(DType t) { return (t.bits < 8 ? 8 : t.bits) / 8; }
static int lanes_of(DType t) { return t.lanes ? t.lanes : 1; }

/* ---- operation counts ---- */

typedef struct Access {
  const Buffer *buffer;
  const Expr *index; /* the flat index (after flattening every buffer is 1-d) */
  int lanes;
  bool read, write;
} Access;

typedef struct StoreScan {
  double ops[N_TOTALS]; /* per execution: T_FLOAT_ADDSUB .. T_FLOPS */
  double loads, load_bytes;
  Access acc[MAX_ACCESSES];
  int n_acc;
} StoreScan;

static const Expr *load_index(const Expr *load) { return load->load.n > 0 ? load->load.indices[0] : NULL; }

static void add_access(StoreScan *sc, const Buffer *b, const Expr *index, int lanes, bool write) {
  for (int i = 0; i < sc->n_acc; i++) {
    Access *a = &sc->acc[i];
    if (a->buffer == b && ((!a->index && !index) || (a->index && index && expr_equal(a->index, index)))) {
      a->read |= !write, a->write |= write;
      return;
    }
  }
  if (sc->n_acc < MAX_ACCESSES) sc->acc[sc->n_acc++] = (Access){b, index, lanes, !write, write};
}

static bool is_float_mul(const Expr *e) { return e->kind == EXPR_MUL && dtype_is_float(e->dtype); }

static void count_ops(StoreScan *sc, const Expr *e) {
  bool fl = dtype_is_float(e->dtype);
  double lanes = lanes_of(e->dtype);
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT:
    case EXPR_VAR: return;
    case EXPR_ADD:
    case EXPR_SUB:
      if (fl) {
        sc->ops[T_FLOAT_ADDSUB]++, sc->ops[T_FLOPS] += lanes;
        if (is_float_mul(e->bin.a) || is_float_mul(e->bin.b)) sc->ops[T_FLOAT_FMA]++;
      } else {
        sc->ops[T_INT_ADDSUB]++;
      }
      break;
    case EXPR_MUL:
      if (fl) sc->ops[T_FLOAT_MUL]++, sc->ops[T_FLOPS] += lanes;
      else sc->ops[T_INT_MUL]++;
      break;
    case EXPR_DIV:
    case EXPR_MOD:
    case EXPR_FLOORDIV:
    case EXPR_FLOORMOD:
      if (fl) sc->ops[T_FLOAT_DIVMOD]++, sc->ops[T_FLOPS] += lanes;
      else sc->ops[T_INT_DIVMOD]++;
      break;
    case EXPR_MIN:
    case EXPR_MAX:
      if (fl) sc->ops[T_FLOAT_MINMAX]++, sc->ops[T_FLOPS] += lanes;
      else sc->ops[T_INT_OTHER]++;
      break;
    case EXPR_EQ:
    case EXPR_NE:
    case EXPR_LT:
    case EXPR_LE:
    case EXPR_GT:
    case EXPR_GE:
      if (dtype_is_float(e->bin.a->dtype)) sc->ops[T_FLOAT_CMP]++;
      else sc->ops[T_INT_OTHER]++;
      break;
    case EXPR_AND:
    case EXPR_OR:
    case EXPR_NOT: sc->ops[T_INT_OTHER]++; break;
    case EXPR_SELECT:
      if (fl) sc->ops[T_FLOAT_CMP]++;
      else sc->ops[T_INT_OTHER]++;
      break;
    case EXPR_CAST: sc->ops[T_CASTS]++; break;
    case EXPR_CALL:
      if (call_op_is_bitwise(e->call.op) || !fl) sc->ops[T_INT_OTHER]++;
      else if (e->call.op != CALL_REINTERPRET) sc->ops[T_FLOAT_MATH]++, sc->ops[T_FLOPS] += lanes;
      break;
    case EXPR_LOAD:
      sc->loads++;
      sc->load_bytes += scalar_bytes(e->load.buffer->dtype) * lanes;
      add_access(sc, e->load.buffer, load_index(e), (int)lanes, false);
      break;
    default: break;
  }
  /* children */
  switch (e->kind) {
    case EXPR_NOT:
    case EXPR_CAST: count_ops(sc, e->un.a); break;
    case EXPR_SELECT:
      count_ops(sc, e->select.cond), count_ops(sc, e->select.t), count_ops(sc, e->select.f);
      break;
    case EXPR_LOAD:
      for (int i = 0; i < e->load.n; i++) count_ops(sc, e->load.indices[i]);
      break;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++) count_ops(sc, e->call.args[i]);
      break;
    case EXPR_RAMP: count_ops(sc, e->ramp.base), count_ops(sc, e->ramp.stride); break;
    case EXPR_BROADCAST: count_ops(sc, e->broadcast.value); break;
    default:
      if (expr_is_binary(e->kind) || expr_is_compare(e->kind) || e->kind == EXPR_AND || e->kind == EXPR_OR)
        count_ops(sc, e->bin.a), count_ops(sc, e->bin.b);
      break;
  }
}

/* ---- affine indices ---- */

typedef struct Affine {
  int64_t coef[MAX_DEPTH];   /* elements per iteration of loop d */
  bool nonlinear[MAX_DEPTH]; /* loop d's variable appears outside an affine position */
  int64_t vec_stride;        /* ramp stride (0: scalar or broadcast) */
  bool vec_irregular;        /* a vector index that is not a constant-stride ramp */
  bool any_nonlinear;
} Affine;

typedef struct MarkCtx {
  const Walk *w;
  Affine *a;
} MarkCtx;

static bool mark_var(Visitor *v, const Expr *e) {
  MarkCtx *m = v->user;
  if (e->kind == EXPR_VAR) {
    int d = loop_depth_of(m->w, e);
    if (d >= 0) m->a->nonlinear[d] = true, m->a->any_nonlinear = true;
  }
  return true;
}

static void mark_nonlinear(const Walk *w, const Expr *e, Affine *a) {
  MarkCtx m = {w, a};
  Visitor v = {NULL, mark_var, &m};
  visit_expr(&v, e);
}

static bool mul_ok(int64_t x, int64_t y, int64_t *out) { return !__builtin_mul_overflow(x, y, out); }

static void affine_walk(const Walk *w, const Expr *e, int64_t scale, Affine *a) {
  int64_t c, s;
  switch (e->kind) {
    case EXPR_INT:
    case EXPR_FLOAT: return;
    case EXPR_VAR: {
      int d = loop_depth_of(w, e);
      if (d >= 0) a->coef[d] += scale;
      return;
    }
    case EXPR_ADD:
      affine_walk(w, e->bin.a, scale, a), affine_walk(w, e->bin.b, scale, a);
      return;
    case EXPR_SUB:
      affine_walk(w, e->bin.a, scale, a), affine_walk(w, e->bin.b, -scale, a);
      return;
    case EXPR_MUL:
      if (expr_as_int(e->bin.b, &c) && mul_ok(scale, c, &s)) {
        affine_walk(w, e->bin.a, s, a);
        return;
      }
      if (expr_as_int(e->bin.a, &c) && mul_ok(scale, c, &s)) {
        affine_walk(w, e->bin.b, s, a);
        return;
      }
      break;
    case EXPR_CAST: affine_walk(w, e->un.a, scale, a); return;
    case EXPR_RAMP:
      affine_walk(w, e->ramp.base, scale, a);
      if (expr_as_int(e->ramp.stride, &c) && mul_ok(scale, c, &s)) {
        a->vec_stride = s;
      } else {
        a->vec_irregular = true;
        mark_nonlinear(w, e->ramp.stride, a);
      }
      return;
    case EXPR_BROADCAST: affine_walk(w, e->broadcast.value, scale, a); return;
    default: break;
  }
  mark_nonlinear(w, e, a);
  if (e->dtype.lanes > 1) a->vec_irregular = true;
}

static void affine_of(const Walk *w, const Access *acc, Affine *a) {
  memset(a->coef, 0, sizeof a->coef[0] * (size_t)w->depth);
  memset(a->nonlinear, 0, sizeof a->nonlinear[0] * (size_t)w->depth);
  a->vec_stride = 0, a->vec_irregular = false, a->any_nonlinear = false;
  if (acc->index) affine_walk(w, acc->index, 1, a);
}

/* Distinct elements and 64-byte lines one access touches over all
 * iterations of the loops from `level` inward (level == depth: one
 * execution). Each used loop is a dimension (|coefficient|, extent); the
 * ramp's lanes one more. In increasing coefficient order, a dimension
 * whose step is within the contiguous span so far extends the span
 * (overlapping windows merge); the first that jumps past it, and every
 * later one, repeats the span as separate blocks. A non-affine loop
 * multiplies the count by its extent. Exact for row-major tiles and
 * sliding windows; an upper bound otherwise; never above the accesses. */
typedef struct Foot {
  double elems, lines;
} Foot;

static Foot footprint(const Walk *w, const Affine *a, int level, int lanes, double elem_bytes) {
  double cs[MAX_DEPTH + 1], es[MAX_DEPTH + 1];
  int n = 0;
  double irregular = 1, accesses = lanes;
  for (int d = level; d < w->depth; d++) {
    double e = (double)w->loops[d].extent;
    accesses *= e;
    if (e <= 1) continue;
    if (a->nonlinear[d]) irregular *= e;
    else if (a->coef[d] != 0) cs[n] = fabs((double)a->coef[d]), es[n++] = e;
  }
  if (lanes > 1) {
    if (a->vec_irregular) irregular *= lanes;
    else if (a->vec_stride != 0) cs[n] = fabs((double)a->vec_stride), es[n++] = lanes;
  }
  for (int i = 1; i < n; i++) /* insertion sort by coefficient (n is small) */
    for (int j = i; j > 0 && cs[j - 1] > cs[j]; j--) {
      double tc = cs[j], te = es[j];
      cs[j] = cs[j - 1], es[j] = es[j - 1], cs[j - 1] = tc, es[j - 1] = te;
    }
  double span = 1, blocks = 1, total_span = 1;
  for (int i = 0; i < n; i++) {
    total_span += cs[i] * (es[i] - 1);
    if (blocks == 1 && cs[i] <= span) span += cs[i] * (es[i] - 1);
    else blocks *= es[i];
  }
  Foot f;
  f.elems = fmin(blocks * span * irregular, accesses);
  double lines_blocks = blocks * irregular * ceil(span * elem_bytes / LINE_BYTES);
  double lines_span = irregular * ceil(total_span * elem_bytes / LINE_BYTES);
  f.lines = fmax(1, fmin(fmin(lines_blocks, lines_span), f.elems));
  return f;
}

/* ---- the straight-line body around a store ---- */

typedef struct LoadSet {
  const Expr *e[MAX_BODY_LOADS];
  uint64_t h[MAX_BODY_LOADS];
  int n;
  double overflow;
} LoadSet;

static void loadset_add(LoadSet *s, const Expr *e) {
  uint64_t h = expr_hash(e);
  for (int i = 0; i < s->n; i++)
    if (s->h[i] == h && expr_equal(s->e[i], e)) return;
  if (s->n < MAX_BODY_LOADS) s->e[s->n] = e, s->h[s->n++] = h;
  else s->overflow++;
}

typedef struct BodyScan {
  BodyStats *bs;
  LoadSet *loads;
  const Stmt *store; /* the store being scanned: a load of its own location is an accumulator */
} BodyScan;

static bool same_location(const Expr *load, const Stmt *store) {
  if (load->load.buffer != store->store.buffer || load->load.n != store->store.n) return false;
  for (int i = 0; i < load->load.n; i++)
    if (!expr_equal(load->load.indices[i], store->store.indices[i])) return false;
  return true;
}

static void body_expr(BodyScan *b, const Expr *e) {
  bool fl = dtype_is_float(e->dtype);
  switch (e->kind) {
    case EXPR_ADD:
    case EXPR_SUB:
    case EXPR_MUL:
    case EXPR_DIV:
    case EXPR_MOD:
    case EXPR_MIN:
    case EXPR_MAX:
      if (fl) b->bs->float_ops++;
      break;
    case EXPR_CALL:
      if (fl && !call_op_is_bitwise(e->call.op)) b->bs->float_ops++;
      break;
    case EXPR_LOAD: /* index arithmetic is not the body's work */
      if (!same_location(e, b->store)) loadset_add(b->loads, e);
      return;
    default: break;
  }
  switch (e->kind) {
    case EXPR_NOT:
    case EXPR_CAST: body_expr(b, e->un.a); break;
    case EXPR_SELECT: body_expr(b, e->select.cond), body_expr(b, e->select.t), body_expr(b, e->select.f); break;
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++) body_expr(b, e->call.args[i]);
      break;
    case EXPR_RAMP: body_expr(b, e->ramp.base); break;
    case EXPR_BROADCAST: body_expr(b, e->broadcast.value); break;
    default:
      if (expr_is_binary(e->kind) || expr_is_compare(e->kind) || e->kind == EXPR_AND || e->kind == EXPR_OR)
        body_expr(b, e->bin.a), body_expr(b, e->bin.b);
      break;
  }
}

static bool reads_location(const Expr *e, const Stmt *store) {
  if (e->kind == EXPR_LOAD && same_location(e, store)) return true;
  switch (e->kind) {
    case EXPR_NOT:
    case EXPR_CAST: return reads_location(e->un.a, store);
    case EXPR_SELECT:
      return reads_location(e->select.t, store) || reads_location(e->select.f, store);
    case EXPR_CALL:
      for (int i = 0; i < e->call.n; i++)
        if (reads_location(e->call.args[i], store)) return true;
      return false;
    case EXPR_BROADCAST: return reads_location(e->broadcast.value, store);
    default:
      if (expr_is_binary(e->kind)) return reads_location(e->bin.a, store) || reads_location(e->bin.b, store);
      return false;
  }
}

static void body_walk(BodyScan *b, const Stmt *s) {
  if (!s) return;
  switch (s->kind) {
    case STMT_STORE:
      b->bs->stores++;
      b->store = s;
      body_expr(b, s->store.value);
      if (reads_location(s->store.value, s)) b->bs->accumulators++;
      break;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n; i++) body_walk(b, s->seq.stmts[i]);
      break;
    case STMT_IF: body_walk(b, s->if_.then_s), body_walk(b, s->if_.else_s); break;
    case STMT_ALLOCATE: body_walk(b, s->alloc.body); break;
    default: break; /* nested loops are bodies of their own */
  }
}

static const BodyStats *body_stats(Walk *w) {
  BodyStats *bs = w->depth > 0 ? &w->loops[w->depth - 1].body : &w->root_body;
  if (bs->done) return bs;
  const Stmt *body = w->depth > 0 ? w->loops[w->depth - 1].stmt->loop.body : w->f->body;
  LoadSet loads;
  loads.n = 0, loads.overflow = 0;
  BodyScan b = {bs, &loads, NULL};
  body_walk(&b, body);
  bs->loads = loads.n + loads.overflow;
  bs->code_size = (double)tir_code_size(body);
  bs->done = true;
  return bs;
}

/* ---- one store ---- */

static bool is_param(const PrimFunc *f, const Buffer *b) {
  for (int i = 0; i < f->n_params; i++)
    if (f->params[i] == b) return true;
  return false;
}

static double extents_product(const Walk *w, int from, int to) {
  double p = 1;
  for (int d = from; d < to; d++) p *= (double)w->loops[d].extent;
  return p;
}

typedef struct AccessResult {
  double f[N_ACCESS];
  double bytes_nest;
} AccessResult;

static void visit_store(Walk *w, const Stmt *s) {
  StoreScan sc;
  memset(&sc, 0, sizeof sc);
  int store_lanes = lanes_of(s->store.value->dtype);
  add_access(&sc, s->store.buffer, s->store.n > 0 ? s->store.indices[0] : NULL, store_lanes, true);
  count_ops(&sc, s->store.value);
  for (int i = 0; i < s->store.n; i++) count_ops(&sc, s->store.indices[i]);

  const int D = w->depth;
  double exec = extents_product(w, 0, D) / w->guard_divisor;
  if (exec < 0) exec = 0;
  double total[N_TOTALS] = {0}, shape[N_SHAPES] = {0};
  total[T_EXEC] = exec;
  for (int i = T_FLOAT_ADDSUB; i <= T_FLOPS; i++) total[i] = sc.ops[i] * exec;
  double store_bytes = scalar_bytes(s->store.buffer->dtype) * store_lanes;
  total[T_BYTES_ACCESSED] = (sc.load_bytes + store_bytes) * exec;

  /* the loop nest */
  shape[S_LANES] = store_lanes;
  shape[S_VECTOR_BYTES] = store_bytes;
  shape[S_DEPTH] = D;
  shape[S_INNER_EXTENT] = D > 0 ? (double)w->loops[D - 1].extent : 1;
  double par_extent = 1;
  int outer_parallel = -1;
  for (int d = 0; d < D; d++) {
    ForKind k = w->loops[d].stmt->loop.kind;
    if (k == FOR_PARALLEL) {
      shape[S_PARALLEL_LOOPS]++, par_extent *= (double)w->loops[d].extent;
      if (outer_parallel < 0) outer_parallel = d;
    } else if (k == FOR_UNROLLED) {
      shape[S_UNROLL_LOOPS]++;
      shape[S_UNROLL_EXTENT] = (shape[S_UNROLL_EXTENT] ? shape[S_UNROLL_EXTENT] : 1) * (double)w->loops[d].extent;
    }
  }
  shape[S_PARALLEL_EXTENT] = outer_parallel >= 0 ? par_extent : 0;
  shape[S_PARALLEL_LAUNCHES] = outer_parallel >= 0 ? extents_product(w, 0, outer_parallel) : 0;
  shape[S_GUARDED] = w->guards > 0;
  const BodyStats *bs = body_stats(w);
  shape[S_BODY_STORES] = bs->stores;
  shape[S_BODY_CODE_SIZE] = bs->code_size;
  shape[S_BODY_FLOAT_OPS] = bs->float_ops;
  shape[S_BODY_LOADS] = bs->loads;
  shape[S_BODY_ACCUMULATORS] = bs->accumulators;
  shape[S_BODY_OPS_PER_LOAD] = bs->float_ops / (bs->loads > 1 ? bs->loads : 1);
  shape[S_LOADS] = sc.loads;
  shape[S_ALLOC_BYTES] = w->alloc_bytes;
  shape[S_LOCAL_ALLOCS] = w->allocs;

  /* the accesses */
  AccessResult res[MAX_ACCESSES];
  Affine aff[MAX_ACCESSES];
  double eb[MAX_ACCESSES];
  int inner = D > 0 ? D - 1 : 0, inner2 = D > 1 ? D - 2 : 0;
  int cloop = D - 1; /* the loop the C compiler may vectorize, -1 when none */
  while (cloop >= 0 && w->loops[cloop].extent <= COMPILER_UNROLL_TRIPS) cloop--;
  if (cloop >= 0) {
    shape[S_CLOOP_EXTENT] = (double)w->loops[cloop].extent;
    shape[S_CLOOP_INNER] = extents_product(w, cloop + 1, D);
  }
  for (int i = 0; i < sc.n_acc; i++) {
    const Access *acc = &sc.acc[i];
    Affine *a = &aff[i];
    affine_of(w, acc, a);
    double *f = res[i].f;
    memset(f, 0, sizeof res[i].f);
    eb[i] = scalar_bytes(acc->buffer->dtype);
    f[A_PRESENT] = 1;
    f[A_IS_READ] = acc->read;
    f[A_IS_WRITE] = acc->write;
    f[A_IS_LOCAL] = !is_param(w->f, acc->buffer);
    f[A_AFFINE] = !a->any_nonlinear && !a->vec_irregular;
    f[A_ELEM_BYTES] = eb[i] * acc->lanes;
    f[A_VEC_STRIDE] = acc->lanes > 1 ? fabs((double)a->vec_stride) : 0;
    /* the innermost loop (of more than one iteration) the index moves with */
    bool contiguous = true;
    for (int d = D - 1; d >= 0; d--) {
      if (w->loops[d].extent <= 1 || (a->coef[d] == 0 && !a->nonlinear[d])) continue;
      f[A_STRIDE] = a->nonlinear[d] ? 0 : fabs((double)a->coef[d]);
      contiguous = !a->nonlinear[d] && f[A_STRIDE] <= 1;
      break;
    }
    if (acc->lanes > 1) contiguous = !a->vec_irregular && f[A_VEC_STRIDE] <= 1;
    shape[S_NONCONTIG] += !contiguous;
    if (cloop >= 0) {
      bool moves_evenly = !a->nonlinear[cloop] && llabs(a->coef[cloop]) <= (acc->lanes > 1 ? acc->lanes : 1);
      f[A_CSTRIDE] = a->nonlinear[cloop] ? 0 : fabs((double)a->coef[cloop]);
      shape[S_CLOOP_STRIDED] += !moves_evenly || (acc->lanes > 1 && (a->vec_irregular || f[A_VEC_STRIDE] > 1));
      if (acc->write && a->coef[cloop] == 0 && !a->nonlinear[cloop]) shape[S_CLOOP_CARRIED] = 1;
    }
    Foot fi = footprint(w, a, inner, acc->lanes, eb[i]), fn = footprint(w, a, 0, acc->lanes, eb[i]);
    f[A_BYTES_INNER] = fi.elems * eb[i];
    f[A_BYTES_NEST] = fn.elems * eb[i];
    f[A_LINES_NEST] = fn.lines;
    res[i].bytes_nest = f[A_BYTES_NEST];
    f[A_REUSE_RATIO] = extents_product(w, 0, D) * acc->lanes / (fn.elems > 1 ? fn.elems : 1);
    for (int d = D - 1; d >= 0; d--) {
      if (w->loops[d].extent <= 1 || a->coef[d] != 0 || a->nonlinear[d]) continue;
      f[A_REUSE_COUNT] = (double)w->loops[d].extent;
      f[A_REUSE_ITERS] = extents_product(w, d + 1, D);
      f[A_REUSE_BYTES] = footprint(w, a, d + 1, acc->lanes, eb[i]).elems * eb[i];
      break;
    }
    shape[S_BYTES_INNER] += f[A_BYTES_INNER];
    shape[S_BYTES_INNER2] += footprint(w, a, inner2, acc->lanes, eb[i]).elems * eb[i];
    shape[S_BYTES_NEST] += f[A_BYTES_NEST];
    shape[S_LINES_NEST] += fn.lines;
  }
  /* work per cache-resident level: the outermost level whose footprint fits */
  shape[S_L1_WORK] = shape[S_L2_WORK] = 1;
  for (int level = D - 1; level >= 0; level--) {
    double bytes = 0;
    for (int i = 0; i < sc.n_acc; i++) bytes += footprint(w, &aff[i], level, sc.acc[i].lanes, eb[i]).elems * eb[i];
    if (bytes > L2_BYTES) break;
    double work = extents_product(w, level, D);
    shape[S_L2_WORK] = work;
    if (bytes <= L1_BYTES) shape[S_L1_WORK] = work;
  }
  shape[S_INTENSITY] = log2((total[T_FLOPS] + 1) / (shape[S_BYTES_NEST] + 1));

  /* aggregate: weight = the store's work (flops plus elements moved) */
  double weight = total[T_FLOPS] + total[T_BYTES_ACCESSED] / 4;
  for (int i = 0; i < N_TOTALS; i++) w->sum[i] += total[i];
  for (int i = 0; i < N_SHAPES; i++) w->mean[i] += weight * shape[i];
  w->weight_sum += weight;
  if (outer_parallel >= 0) w->parallel_weight += weight;
  w->nest_bytes_sum += shape[S_BYTES_NEST];
  if (!w->have_top || weight > w->top_weight) {
    w->have_top = true, w->top_weight = weight;
    memcpy(w->top_total, total, sizeof total);
    memcpy(w->top_shape, shape, sizeof shape);
    /* the SLOTS accesses with the largest footprints, program order on ties */
    bool used[MAX_ACCESSES] = {false};
    for (int k = 0; k < SLOTS; k++) {
      int best = -1;
      for (int i = 0; i < sc.n_acc; i++)
        if (!used[i] && (best < 0 || res[i].bytes_nest > res[best].bytes_nest)) best = i;
      if (best < 0) {
        memset(w->top_access[k], 0, sizeof w->top_access[k]);
        continue;
      }
      used[best] = true;
      memcpy(w->top_access[k], res[best].f, sizeof res[best].f);
    }
  }
}

/* ---- the walk ---- */

typedef struct GuardCtx {
  const Walk *w;
  bool used[MAX_DEPTH];
} GuardCtx;

static bool guard_var(Visitor *v, const Expr *e) {
  GuardCtx *g = v->user;
  if (e->kind == EXPR_VAR) {
    int d = loop_depth_of(g->w, e);
    if (d >= 0) g->used[d] = true;
  }
  return true;
}

/* How many times fewer a guarded statement runs than its loops: for each
 * conjunct `x == c`, the product of the extents of the loops x mentions
 * (a reduction's init: `if (k == 0)`); other conditions count as always
 * true. */
static double guard_divisor(const Walk *w, const Expr *cond) {
  if (cond->kind == EXPR_AND) return guard_divisor(w, cond->bin.a) * guard_divisor(w, cond->bin.b);
  if (cond->kind != EXPR_EQ) return 1;
  GuardCtx g;
  g.w = w;
  memset(g.used, 0, sizeof g.used);
  Visitor v = {NULL, guard_var, &g};
  visit_expr(&v, cond);
  double div = 1;
  for (int d = 0; d < w->depth; d++)
    if (g.used[d]) div *= (double)w->loops[d].extent;
  return div;
}

static loom_status walk(Walk *w, const Stmt *s) {
  if (!s) return LOOM_OK;
  loom_status st = LOOM_OK;
  switch (s->kind) {
    case STMT_FOR: {
      if (w->depth == MAX_DEPTH)
        return err_set(w->err, LOOM_ERR_UNSUPPORTED, "features_extract: \"%s\" nests loops deeper than %d",
                       w->f->name, MAX_DEPTH);
      bool symbolic;
      Loop *l = &w->loops[w->depth];
      l->stmt = s, l->extent = loop_trips(s, &symbolic);
      memset(&l->body, 0, sizeof l->body);
      w->depth++;
      w->g[G_N_LOOPS]++;
      if (w->depth > w->g[G_MAX_DEPTH]) w->g[G_MAX_DEPTH] = w->depth;
      w->g[G_SYMBOLIC_LOOPS] += symbolic;
      if (s->loop.kind == FOR_PARALLEL) {
        w->g[G_PARALLEL_LOOPS]++;
        if (l->extent > w->g[G_MAX_PARALLEL_EXTENT]) w->g[G_MAX_PARALLEL_EXTENT] = (double)l->extent;
      }
      if (s->loop.kind == FOR_UNROLLED) w->g[G_UNROLL_LOOPS]++;
      st = walk(w, s->loop.body);
      w->depth--;
      return st;
    }
    case STMT_STORE:
      w->g[G_N_STORES]++;
      visit_store(w, s);
      return LOOM_OK;
    case STMT_SEQ:
      for (int i = 0; i < s->seq.n && !st; i++) st = walk(w, s->seq.stmts[i]);
      return st;
    case STMT_IF: {
      double saved = w->guard_divisor;
      w->guards++;
      w->guard_divisor = saved * guard_divisor(w, s->if_.cond);
      st = walk(w, s->if_.then_s);
      w->guard_divisor = saved;
      if (!st) st = walk(w, s->if_.else_s);
      w->guards--;
      return st;
    }
    case STMT_ALLOCATE: {
      const Buffer *b = s->alloc.buffer;
      double bytes = scalar_bytes(b->dtype) * lanes_of(b->dtype);
      for (int i = 0; i < b->ndim; i++) {
        int64_t e;
        bytes *= expr_as_int(b->shape[i], &e) && e > 0 ? (double)e : 0;
      }
      w->g[G_ALLOCS]++, w->g[G_ALLOC_BYTES] += bytes;
      w->alloc_bytes += bytes, w->allocs++;
      st = walk(w, s->alloc.body);
      w->alloc_bytes -= bytes, w->allocs--;
      return st;
    }
    case STMT_EVALUATE: return LOOM_OK;
    case STMT_DMA: /* calls: scratchpad kernels are not tuned (docs/schedule.md) */
    case STMT_DMA_WAIT: return LOOM_OK;
    case STMT_BLOCK_REALIZE:
      return err_set(w->err, LOOM_ERR_UNSUPPORTED,
                     "features_extract: \"%s\" is not lowered (block \"%s\" remains); run tir_lower first",
                     w->f->name, s->realize.block->name);
    default:
      return err_set(w->err, LOOM_ERR_UNSUPPORTED, "features_extract: \"%s\": unknown statement kind %d",
                     w->f->name, (int)s->kind);
  }
}

static float transformed(double x, Transform t) {
  if (t == RAW) return (float)x;
  return (float)log2(1 + (x > 0 ? x : 0));
}

loom_status features_extract(const PrimFunc *lowered, float *out, int cap, LoomError *err) {
  if (!lowered || !lowered->body || !out)
    return err_set(err, LOOM_ERR_INVALID_ARG, "features_extract: function and out must be non-NULL");
  if (cap < DIM)
    return err_set(err, LOOM_ERR_INVALID_ARG, "features_extract: out holds %d floats, need %d", cap, DIM);
  Walk w;
  memset(&w, 0, sizeof w);
  w.f = lowered, w.err = err, w.guard_divisor = 1;
  loom_status st = walk(&w, lowered->body);
  if (st) return st;
  w.g[G_CODE_SIZE] = (double)tir_code_size(lowered->body);
  w.g[G_PARALLEL_FRACTION] = w.weight_sum > 0 ? w.parallel_weight / w.weight_sum : 0;
  w.g[G_INTENSITY] = log2((w.sum[T_FLOPS] + 1) / (w.nest_bytes_sum + 1));

  double v[DIM];
  memcpy(v + OFF_GLOBAL, w.g, sizeof w.g);
  memcpy(v + OFF_SUM, w.sum, sizeof w.sum);
  memcpy(v + OFF_TOP, w.top_total, sizeof w.top_total);
  memcpy(v + OFF_TOP_SHAPE, w.top_shape, sizeof w.top_shape);
  for (int k = 0; k < SLOTS; k++) memcpy(v + OFF_TOP_ACCESS + k * N_ACCESS, w.top_access[k], sizeof w.top_access[k]);
  for (int i = 0; i < N_SHAPES; i++) v[OFF_MEAN + i] = w.weight_sum > 0 ? w.mean[i] / w.weight_sum : 0;
  for (int i = 0; i < DIM; i++) out[i] = transformed(v[i], transform_of(i));
  return LOOM_OK;
}

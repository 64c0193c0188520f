/* loom-measure: checks and times candidate kernels for the auto-tuner in a
 * process of its own, so a candidate that crashes, hangs or writes over
 * memory takes only this process down (docs/autotune.md, "Measurement").
 *
 * The tuner (src/autotune/measure.c) starts it with stdin, stdout and
 * stderr connected and sends requests in the text protocol of
 * src/autotune/measure_protocol.h. Per request:
 *
 *   1. the reference kernel's expected outputs: loaded, inputs filled with
 *      seeded random values (tensor_data/tensor_fill.h, as the unit tests'
 *      driver_tensors_alloc), run once; cached by (shared object, kernel,
 *      seed, argument description);
 *   2. the candidate: run twice, its outputs filled first with two
 *      different byte patterns, and compared with the reference after each
 *      run (f32/f64: max|x-y| / max(1, max|y|) <= 1e-4, NaN only matches
 *      NaN; integers exactly);
 *   3. then timed: one call per sample until min_seconds have passed and at
 *      least 3 samples; the median and the minimum are reported; the
 *      outputs are checked once more after the timed runs.
 *
 * Every argument lives in its own mapping between two PROT_NONE pages:
 * the data ends at most 63 bytes before the trailing guard page (64-byte
 * alignment), and the bytes around it inside the mapping hold a pattern
 * checked after every call. Inputs and expected outputs are read-only. A
 * kernel caught writing out of bounds may have written anywhere, so after
 * answering this process exits ("exiting 1"); crashes and hangs simply end
 * it, and the tuner starts another.
 *
 * Links only the runtime (module loading, thread pool, dtypes), never the
 * compiler. */
#include "autotune/measure_protocol.h"
#include "loom/loom_convert.h"
#include "loom/loom_kernel.h"
#include "runtime/dl_dtype.h"
#include "runtime/module.h"
#include "runtime/threadpool.h"
#include "support/clock.h"
#include "support/error.h"
#include "tensor_data/tensor_fill.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

enum {
  REFERENCE_CACHE = 4, /* reference results kept (least recently used goes) */
  POOL_CACHE = 8,      /* thread pools kept, one per thread count */
  MIN_RUNS = 3,
  MAX_RUNS = 1 << 20, /* samples kept: 8 MiB of doubles */
};
/* Fill patterns for outputs before a call (0xff: NaN in every float
 * format, -1 in every integer one) and around every argument. */
enum { POISON_A = 0xff, POISON_B = 0x55, GUARD_BYTE = 0xcb };
static const double F32_TOLERANCE = 1e-4;

/* ---- guarded buffers ---- */

typedef struct Guarded {
  char *map;        /* the whole mapping, guard pages included */
  size_t map_bytes;
  char *inner;      /* between the guard pages */
  size_t inner_bytes;
  char *data;       /* 64-byte aligned */
  size_t bytes;
} Guarded;

/* [guard page][pattern ... data ... <= 63 bytes of pattern][guard page] */
static bool guarded_alloc(size_t bytes, Guarded *g) {
  memset(g, 0, sizeof *g);
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t padded = (bytes + 63) / 64 * 64;
  if (padded == 0) padded = 64;
  size_t inner = (padded + page - 1) / page * page;
  if (inner < padded || inner > SIZE_MAX - 2 * page) return false;
  char *m = mmap(NULL, inner + 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return false;
  if (mprotect(m, page, PROT_NONE) != 0 || mprotect(m + page + inner, page, PROT_NONE) != 0) {
    munmap(m, inner + 2 * page);
    return false;
  }
  g->map = m;
  g->map_bytes = inner + 2 * page;
  g->inner = m + page;
  g->inner_bytes = inner;
  g->data = g->inner + (inner - padded);
  g->bytes = bytes;
  memset(g->inner, GUARD_BYTE, inner);
  return true;
}

static void guarded_free(Guarded *g) {
  if (g->map) munmap(g->map, g->map_bytes);
  memset(g, 0, sizeof *g);
}

/* The first byte around the data (inside the guard pages) that lost its
 * pattern, as an offset from the data's start; 0 when none changed. */
static bool guarded_intact(const Guarded *g, ptrdiff_t *where) {
  for (const char *p = g->inner; p < g->data; p++)
    if ((unsigned char)*p != GUARD_BYTE) {
      *where = p - g->data;
      return false;
    }
  for (const char *p = g->data + g->bytes; p < g->inner + g->inner_bytes; p++)
    if ((unsigned char)*p != GUARD_BYTE) {
      *where = p - g->data;
      return false;
    }
  return true;
}

/* ---- requests ---- */

typedef struct ArgSpec {
  DLDataType dtype;
  bool written;
  int ndim;
  int64_t shape[MEASURE_MAX_NDIM];
  size_t bytes;
} ArgSpec;

typedef struct Request {
  char cand_name[128], ref_name[128];
  char cand_path[PATH_MAX], ref_path[PATH_MAX];
  int threads;
  uint64_t seed;
  double min_seconds;
  int n_args;
  ArgSpec args[MEASURE_MAX_ARGS];
} Request;

typedef struct Response {
  const char *status; /* "ok", "wrong", "error" */
  double median_us, min_us, max_error;
  long runs;
  char message[1024];
  /* A kernel wrote where it must not: it may have written elsewhere too
   * (the cached reference, the heap), so this process answers and exits. */
  bool exit_after;
} Response;

static void respond_fail(Response *r, const char *status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void respond_fail(Response *r, const char *status, const char *fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

static char *arg_str(const ArgSpec *a, char *buf, size_t cap) {
  char dims[256];
  snprintf(buf, cap, "%s%s", dl_dtype_name(a->dtype), dl_shape_str(a->shape, a->ndim, dims, sizeof dims));
  return buf;
}

static bool parse_kernel_line(char *value, char *name, size_t name_cap, char *path, size_t path_cap) {
  char *space = strchr(value, ' ');
  if (!space || space == value || (size_t)(space - value) >= name_cap || !space[1] || strlen(space + 1) >= path_cap)
    return false;
  memcpy(name, value, (size_t)(space - value));
  name[space - value] = '\0';
  strcpy(path, space + 1);
  return true;
}

static bool parse_arg_line(char *value, ArgSpec *a) {
  char *save = NULL, *dtype = strtok_r(value, " ", &save), *dir = strtok_r(NULL, " ", &save),
       *ndim = strtok_r(NULL, " ", &save);
  if (!dtype || !dir || !ndim || !dl_dtype_parse(dtype, &a->dtype)) return false;
  if (strcmp(dir, "in") && strcmp(dir, "out")) return false;
  a->written = !strcmp(dir, "out");
  char *end;
  long n = strtol(ndim, &end, 10);
  if (*end || n < 0 || n > MEASURE_MAX_NDIM) return false;
  a->ndim = (int)n;
  for (int d = 0; d < a->ndim; d++) {
    char *tok = strtok_r(NULL, " ", &save);
    if (!tok) return false;
    long long v = strtoll(tok, &end, 10);
    if (*end || v < 0) return false;
    a->shape[d] = v;
  }
  if (strtok_r(NULL, " ", &save)) return false;
  uint64_t bytes;
  if (!dl_shape_bytes(a->shape, a->ndim, dl_dtype_bytes(a->dtype), (uint64_t)1 << 40, &bytes)) return false;
  a->bytes = (size_t)bytes;
  return true;
}

/* Reads one request. false at the end of input; a malformed request gives
 * true with r->status = "error" and the reason. */
static bool read_request(FILE *in, Request *q, Response *r) {
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  bool started = false, have_cand = false, have_ref = false;
  memset(q, 0, sizeof *q);
  q->threads = 1;
  while ((len = getline(&line, &cap, in)) >= 0) {
    if (len > 0 && line[len - 1] == '\n') line[--len] = '\0';
    char *value = strchr(line, ' ');
    if (value) *value++ = '\0';
    else value = line + len;
    if (!started) {
      if (strcmp(line, "measure") == 0) started = true;
      else if (!r->status) respond_fail(r, "error", "request: expected \"measure\", got \"%.64s\"", line);
      continue;
    }
    if (r->status) { /* malformed: skip to its end */
      if (strcmp(line, "end") == 0) break;
      continue;
    }
    char *end = NULL;
    if (strcmp(line, "end") == 0) {
      if (!have_cand || !have_ref || q->n_args == 0)
        respond_fail(r, "error", "request: expected candidate, reference and at least one arg before \"end\"");
      break;
    } else if (strcmp(line, "candidate") == 0) {
      have_cand = parse_kernel_line(value, q->cand_name, sizeof q->cand_name, q->cand_path, sizeof q->cand_path);
      if (!have_cand) respond_fail(r, "error", "request: bad candidate line \"%.200s\", expected KERNEL PATH", value);
    } else if (strcmp(line, "reference") == 0) {
      have_ref = parse_kernel_line(value, q->ref_name, sizeof q->ref_name, q->ref_path, sizeof q->ref_path);
      if (!have_ref) respond_fail(r, "error", "request: bad reference line \"%.200s\", expected KERNEL PATH", value);
    } else if (strcmp(line, "threads") == 0) {
      long t = strtol(value, &end, 10);
      if (*end || end == value || t < 1 || t > MEASURE_MAX_THREADS)
        respond_fail(r, "error", "request: threads \"%.32s\", expected 1..%d", value, MEASURE_MAX_THREADS);
      q->threads = (int)t;
    } else if (strcmp(line, "seed") == 0) {
      q->seed = strtoull(value, &end, 10);
      if (*end || end == value) respond_fail(r, "error", "request: seed \"%.32s\", expected an integer", value);
    } else if (strcmp(line, "min_seconds") == 0) {
      q->min_seconds = strtod(value, &end);
      if (*end || end == value || !(q->min_seconds >= 0) || q->min_seconds > 3600)
        respond_fail(r, "error", "request: min_seconds \"%.32s\", expected 0..3600", value);
    } else if (strcmp(line, "arg") == 0) {
      if (q->n_args == MEASURE_MAX_ARGS)
        respond_fail(r, "error", "request: more than %d arguments", MEASURE_MAX_ARGS);
      else if (!parse_arg_line(value, &q->args[q->n_args++]))
        respond_fail(r, "error",
                     "request: bad arg line %d, expected DTYPE in|out NDIM DIMS... with a known dtype, "
                     "at most %d dimensions and under 1 TiB",
                     q->n_args - 1, MEASURE_MAX_NDIM);
    } else {
      respond_fail(r, "error", "request: unknown key \"%.64s\" (protocol version %d)", line,
                   MEASURE_PROTOCOL_VERSION);
    }
  }
  free(line);
  return started;
}

static void write_response(FILE *out, const Response *r) {
  char msg[MEASURE_LINE_MAX - 16];
  snprintf(msg, sizeof msg, "%s", r->message);
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  fprintf(out, "status %s\nmedian_us %.17g\nmin_us %.17g\nruns %ld\nmax_error %.17g\nmessage %s\n%send\n", r->status,
          r->median_us, r->min_us, r->runs, r->max_error, msg, r->exit_after ? "exiting 1\n" : "");
  fflush(out);
}

/* ---- arguments ---- */

typedef struct Args {
  int n;
  Guarded buf[MEASURE_MAX_ARGS];
  DLTensor tensor[MEASURE_MAX_ARGS];
  DLTensor *ptr[MEASURE_MAX_ARGS];
} Args;

static void args_free(Args *a) {
  for (int i = 0; i < a->n; i++) guarded_free(&a->buf[i]);
  a->n = 0;
}

/* Inputs filled from the seed, then read-only; outputs poisoned. */
static bool args_alloc(const Request *q, Args *a, Response *r) {
  memset(a, 0, sizeof *a);
  for (int i = 0; i < q->n_args; i++) {
    const ArgSpec *s = &q->args[i];
    if (!guarded_alloc(s->bytes, &a->buf[i])) {
      args_free(a);
      respond_fail(r, "error", "cannot map %zu bytes for argument %d", s->bytes, i);
      return false;
    }
    a->n = i + 1;
    DLTensor *t = &a->tensor[i];
    t->data = a->buf[i].data;
    t->device.device_type = kDLCPU;
    t->ndim = s->ndim;
    t->dtype = s->dtype;
    t->shape = (int64_t *)s->shape;
    a->ptr[i] = t;
    if (s->written) {
      memset(t->data, POISON_A, s->bytes);
      continue;
    }
    DLDataType fill = s->dtype;
    if (fill.bits < 8) fill.bits = 8; /* sub-byte types take a byte each */
    tensor_fill_random(t->data, fill, s->bytes, q->seed, i);
    mprotect(a->buf[i].inner, a->buf[i].inner_bytes, PROT_READ);
  }
  return true;
}

/* ---- comparison ---- */

/* Element k as a double, for the float formats compared with a tolerance. */
static bool float_value(DLDataType t, const void *base, size_t k, double *out) {
  if (t.code == kDLFloat && t.bits == 32) *out = ((const float *)base)[k];
  else if (t.code == kDLFloat && t.bits == 64) *out = ((const double *)base)[k];
  else if (t.code == kDLFloat && t.bits == 16) *out = loom_f16_to_f32(((const uint16_t *)base)[k]);
  else if (t.code == kDLBfloat && t.bits == 16) *out = loom_bf16_to_f32(((const uint16_t *)base)[k]);
  else return false;
  return true;
}

/* f16 and bf16 kernels compute in f32 and round on store, so a different
 * summation order may move a result by one unit of the format: allow two. */
static double float_tolerance(DLDataType t) {
  if (t.code == kDLFloat && t.bits == 16) return 2.0 / 1024;
  if (t.code == kDLBfloat && t.bits == 16) return 2.0 / 128;
  return F32_TOLERANCE;
}

static int64_t int_value(DLDataType t, const void *base, size_t k) {
  size_t w = (t.bits + 7) / 8;
  const char *p = (const char *)base + k * w;
  bool is_signed = t.code == kDLInt;
  switch (w) {
    case 1: return is_signed ? (int64_t)*(const int8_t *)p : (int64_t)*(const uint8_t *)p;
    case 2: return is_signed ? (int64_t)*(const int16_t *)p : (int64_t)*(const uint16_t *)p;
    case 4: return is_signed ? (int64_t)*(const int32_t *)p : (int64_t)*(const uint32_t *)p;
    default: return *(const int64_t *)p;
  }
}

typedef struct Mismatch {
  double error; /* the metric; INFINITY for a NaN or inf in the wrong place */
  bool bad;
  size_t at;    /* first bad element */
  double got, want;
} Mismatch;

static void compare(const ArgSpec *s, const void *got, const void *want, Mismatch *m) {
  memset(m, 0, sizeof *m);
  size_t w = dl_dtype_bytes(s->dtype), n = w ? s->bytes / w : 0;
  double x, y;
  if (n == 0) return;
  if (float_value(s->dtype, want, 0, &y)) {
    double scale = 1, tol = float_tolerance(s->dtype), diff = 0;
    for (size_t k = 0; k < n; k++) {
      float_value(s->dtype, want, k, &y);
      if (isfinite(y) && fabs(y) > scale) scale = fabs(y);
    }
    for (size_t k = 0; k < n; k++) {
      float_value(s->dtype, got, k, &x);
      float_value(s->dtype, want, k, &y);
      double e;
      if (isnan(y)) e = isnan(x) ? 0 : INFINITY;
      else if (isinf(y)) e = x == y ? 0 : INFINITY;
      else e = isfinite(x) ? fabs(x - y) : INFINITY;
      if (e > diff) diff = e;
      if (!m->bad && !(e / scale <= tol)) {
        m->bad = true;
        m->at = k, m->got = x, m->want = y;
      }
    }
    m->error = diff / scale;
    return;
  }
  bool integer = s->dtype.code == kDLInt || s->dtype.code == kDLUInt || s->dtype.code == DL_DTYPE_BOOL_CODE;
  for (size_t k = 0; k < n; k++) {
    const char *a = (const char *)got + k * w, *b = (const char *)want + k * w;
    if (memcmp(a, b, w) == 0) continue;
    double e = INFINITY;
    if (integer) {
      x = (double)int_value(s->dtype, got, k), y = (double)int_value(s->dtype, want, k);
      e = fabs(x - y);
    } else { /* 8- and 4-bit floats: compared bit for bit */
      x = (unsigned char)*a, y = (unsigned char)*b;
    }
    if (e > m->error) m->error = e;
    if (!m->bad) {
      m->bad = true;
      m->at = k, m->got = x, m->want = y;
    }
  }
}

/* ---- kernels ---- */

typedef struct Loaded {
  Module *module;
  Kernel kernel;
} Loaded;

static bool load_kernel(const char *role, const char *path, const char *name, Loaded *out, Response *r) {
  LoomError err = {0};
  memset(out, 0, sizeof *out);
  if (module_load(path, &out->module, &err) || module_get_kernel(out->module, name, &out->kernel, &err)) {
    module_unload(out->module);
    out->module = NULL;
    respond_fail(r, "error", "%s: %s", role, err.msg);
    return false;
  }
  return true;
}

static loom_kernel_env kernel_env(ThreadPool *pool, const Guarded *ws) {
  loom_kernel_env env = {0};
  threadpool_fill_env(pool, &env);
  env.workspace = ws->data;
  env.workspace_bytes = (ws->bytes + 63) / 64 * 64;
  return env;
}

/* One call (the workspace is guarded too); a non-zero kernel code becomes
 * an error response naming the argument. */
static bool call_kernel(const char *role, const Kernel *k, Args *a, ThreadPool *pool, const Guarded *ws,
                        Response *r) {
  loom_kernel_env env = kernel_env(pool, ws);
  int32_t rc = k->fn(a->ptr, a->n, &env);
  if (rc == 0) return true;
  respond_fail(r, "error", "%s kernel \"%s\" refused argument %d: %s (code %d)", role, k->name,
               (int)LOOM_KERNEL_ERR_ARG(rc), kernel_err_kind_name(LOOM_KERNEL_ERR_KIND(rc)), (int)rc);
  return false;
}

/* ---- the reference cache ---- */

typedef struct Reference {
  char *key; /* NULL: slot free */
  uint64_t last_use;
  Loaded loaded;
  Args args;
  Guarded expected[MEASURE_MAX_ARGS]; /* the written arguments' values, read-only */
} Reference;

typedef struct State {
  Reference refs[REFERENCE_CACHE];
  uint64_t clock;
  struct {
    int threads;
    ThreadPool *pool;
  } pools[POOL_CACHE];
  int n_pools;
  Loaded cand;            /* the last candidate module, kept while the path repeats */
  char cand_path[PATH_MAX];
  double *samples;
  FILE *out; /* the protocol's output */
} State;

/* "phase reference" / "phase candidate" before running either, flushed: if
 * this process dies or hangs now, the tuner knows whose fault it is. */
static void announce(State *st, const char *phase) {
  fprintf(st->out, "phase %s\n", phase);
  fflush(st->out);
}

static char *reference_key(const Request *q) {
  size_t cap = strlen(q->ref_path) + 64 * (size_t)(q->n_args + 4);
  char *k = malloc(cap);
  if (!k) return NULL;
  int at = snprintf(k, cap, "%s\n%s\n%llu", q->ref_path, q->ref_name, (unsigned long long)q->seed);
  for (int i = 0; i < q->n_args && at > 0 && (size_t)at < cap; i++) {
    char buf[300];
    at += snprintf(k + at, cap - (size_t)at, "\n%s %d", arg_str(&q->args[i], buf, sizeof buf), q->args[i].written);
  }
  return k;
}

static void reference_free(Reference *ref) {
  for (int i = 0; i < ref->args.n; i++) guarded_free(&ref->expected[i]);
  args_free(&ref->args);
  module_unload(ref->loaded.module);
  free(ref->key);
  memset(ref, 0, sizeof *ref);
}

static ThreadPool *pool_for(State *st, int threads, Response *r) {
  for (int i = 0; i < st->n_pools; i++)
    if (st->pools[i].threads == threads) return st->pools[i].pool;
  if (st->n_pools == POOL_CACHE) {
    threadpool_destroy(st->pools[0].pool);
    memmove(st->pools, st->pools + 1, (POOL_CACHE - 1) * sizeof st->pools[0]);
    st->n_pools--;
  }
  LoomError err = {0};
  ThreadPool *p;
  if (threadpool_create(threads, &p, &err)) {
    respond_fail(r, "error", "%s", err.msg);
    return NULL;
  }
  st->pools[st->n_pools].threads = threads;
  st->pools[st->n_pools++].pool = p;
  return p;
}

/* The reference's arguments and expected outputs for q: cached, or
 * computed now. NULL with an error response when it cannot run. */
static Reference *reference_get(State *st, const Request *q, ThreadPool *pool, Response *r) {
  char *key = reference_key(q);
  if (!key) {
    respond_fail(r, "error", "out of memory");
    return NULL;
  }
  Reference *slot = &st->refs[0];
  for (int i = 0; i < REFERENCE_CACHE; i++) {
    Reference *ref = &st->refs[i];
    if (ref->key && strcmp(ref->key, key) == 0) {
      free(key);
      ref->last_use = ++st->clock;
      return ref;
    }
    if (!ref->key || (slot->key && ref->last_use < slot->last_use)) slot = ref;
  }
  reference_free(slot);
  slot->key = key;
  slot->last_use = ++st->clock;
  announce(st, "reference");
  bool ok = load_kernel("reference", q->ref_path, q->ref_name, &slot->loaded, r) && args_alloc(q, &slot->args, r);
  Guarded ws = {0};
  if (ok && !guarded_alloc(slot->loaded.kernel.workspace_bytes, &ws)) {
    respond_fail(r, "error", "cannot map the reference's workspace of %zu bytes", slot->loaded.kernel.workspace_bytes);
    ok = false;
  }
  ok = ok && call_kernel("reference", &slot->loaded.kernel, &slot->args, pool, &ws, r);
  guarded_free(&ws);
  for (int i = 0; ok && i < q->n_args; i++) {
    if (!q->args[i].written) continue;
    ptrdiff_t where;
    Guarded *e = &slot->expected[i];
    if (!guarded_intact(&slot->args.buf[i], &where)) {
      respond_fail(r, "error", "the reference kernel \"%s\" wrote out of bounds of argument %d (byte %td)",
                   q->ref_name, i, where);
      r->exit_after = true;
      ok = false;
    } else if (!guarded_alloc(q->args[i].bytes, e)) {
      respond_fail(r, "error", "cannot map %zu bytes for the expected argument %d", q->args[i].bytes, i);
      ok = false;
    } else {
      /* read-only: a stray write of a later candidate crashes instead of
       * changing what every later candidate is compared with */
      memcpy(e->data, slot->args.buf[i].data, q->args[i].bytes);
      mprotect(e->inner, e->inner_bytes, PROT_READ);
    }
  }
  if (!ok) {
    reference_free(slot);
    return NULL;
  }
  return slot;
}

/* ---- one request ---- */

/* Poisons the outputs with `pattern` and runs the candidate (pattern -1:
 * neither), then checks the bytes around every argument and the outputs. */
static bool checked_call(const Request *q, const Kernel *k, Reference *ref, ThreadPool *pool, Guarded *ws,
                         int pattern, const char *when, Response *r) {
  for (int i = 0; pattern >= 0 && i < q->n_args; i++)
    if (q->args[i].written) memset(ref->args.buf[i].data, pattern, q->args[i].bytes);
  if (pattern >= 0 && !call_kernel("candidate", k, &ref->args, pool, ws, r)) return false;
  for (int i = 0; i < q->n_args; i++) {
    ptrdiff_t where;
    char buf[300];
    if (!guarded_intact(&ref->args.buf[i], &where)) {
      respond_fail(r, "wrong", "%s: wrote out of bounds of argument %d (%s): byte %td from its start", when, i,
                   arg_str(&q->args[i], buf, sizeof buf), where);
      r->exit_after = true;
      return false;
    }
    if (!q->args[i].written) continue;
    Mismatch m;
    compare(&q->args[i], ref->args.buf[i].data, ref->expected[i].data, &m);
    if (m.error > r->max_error) r->max_error = m.error;
    if (m.bad) {
      respond_fail(r, "wrong",
                   "%s: argument %d (%s) differs from the reference: element %zu is %.9g, expected %.9g "
                   "(max|x-y| / max(1, max|y|) = %.3g)",
                   when, i, arg_str(&q->args[i], buf, sizeof buf), m.at, m.got, m.want, m.error);
      return false;
    }
  }
  return true;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void measure(State *st, const Request *q, Response *r) {
  ThreadPool *pool = pool_for(st, q->threads, r);
  if (!pool) return;
  Reference *ref = reference_get(st, q, pool, r);
  if (!ref) return;
  announce(st, "candidate");
  if (!st->cand.module || strcmp(st->cand_path, q->cand_path) != 0) {
    module_unload(st->cand.module);
    st->cand.module = NULL;
    st->cand_path[0] = '\0';
    Loaded l;
    if (!load_kernel("candidate", q->cand_path, q->cand_name, &l, r)) return;
    st->cand = l;
    snprintf(st->cand_path, sizeof st->cand_path, "%s", q->cand_path);
  }
  Kernel k;
  LoomError err = {0};
  if (module_get_kernel(st->cand.module, q->cand_name, &k, &err)) {
    respond_fail(r, "error", "candidate: %s", err.msg);
    return;
  }
  Guarded ws;
  if (!guarded_alloc(k.workspace_bytes, &ws)) {
    respond_fail(r, "error", "cannot map the candidate's workspace of %zu bytes", k.workspace_bytes);
    return;
  }
  /* Two checked calls (the second is the warm-up): an element the
   * candidate never writes keeps a poison, which cannot match the
   * reference under both patterns. */
  bool ok = checked_call(q, &k, ref, pool, &ws, POISON_A, "first call", r) &&
            checked_call(q, &k, ref, pool, &ws, POISON_B, "second call", r);
  loom_kernel_env env = kernel_env(pool, &ws);
  long runs = 0;
  double start = loom_clock_s(), elapsed = 0;
  while (ok && (runs < MIN_RUNS || elapsed < q->min_seconds) && runs < MAX_RUNS) {
    double t0 = loom_clock_s();
    int32_t rc = k.fn(ref->args.ptr, ref->args.n, &env);
    double t1 = loom_clock_s();
    if (rc != 0) {
      respond_fail(r, "error", "candidate kernel \"%s\" returned %d on timed run %ld", k.name, (int)rc, runs);
      ok = false;
      break;
    }
    st->samples[runs++] = (t1 - t0) * 1e6;
    elapsed = t1 - start;
  }
  /* After the timed runs: the outputs are still right and nothing around
   * the arguments changed (pattern -1: check without calling again). */
  ok = ok && checked_call(q, &k, ref, pool, &ws, -1, "after the timed runs", r);
  guarded_free(&ws);
  if (!ok) return;
  qsort(st->samples, (size_t)runs, sizeof *st->samples, cmp_double);
  r->status = "ok";
  r->runs = runs;
  r->min_us = st->samples[0];
  r->median_us = runs % 2 ? st->samples[runs / 2] : 0.5 * (st->samples[runs / 2 - 1] + st->samples[runs / 2]);
  snprintf(r->message, sizeof r->message, "%ld runs in %.3f s", runs, elapsed);
}

static void state_free(State *st) {
  for (int i = 0; i < REFERENCE_CACHE; i++) reference_free(&st->refs[i]);
  for (int i = 0; i < st->n_pools; i++) threadpool_destroy(st->pools[i].pool);
  module_unload(st->cand.module);
  free(st->samples);
}

/* The protocol gets private copies of stdin and stdout; fd 0 becomes
 * /dev/null and fd 1 a copy of stderr, so a kernel that reads or prints
 * cannot eat a request or corrupt a response. */
static bool private_streams(FILE **in, FILE **out) {
  int pin = fcntl(0, F_DUPFD_CLOEXEC, 3), pout = fcntl(1, F_DUPFD_CLOEXEC, 3);
  int null = open("/dev/null", O_RDONLY);
  if (pin < 0 || pout < 0 || null < 0 || dup2(null, 0) < 0 || dup2(2, 1) < 0) return false;
  close(null);
  *in = fdopen(pin, "r");
  *out = fdopen(pout, "w");
  return *in && *out;
}

int main(int argc, char **argv) {
  if (argc > 1) {
    fprintf(stderr,
            "usage: %s (no arguments)\n"
            "Started by the auto-tuner (src/autotune/measure.c): reads measurement requests on stdin\n"
            "and answers on stdout, protocol version %d (src/autotune/measure_protocol.h).\n",
            argv[0], MEASURE_PROTOCOL_VERSION);
    return 2;
  }
  /* A crashing candidate must not leave a core file (or keep a core
   * handler busy); the measurer dies with the tuner even when started by
   * something other than subprocess_start_piped. */
  setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGPIPE, SIG_DFL);
  FILE *in, *out;
  if (!private_streams(&in, &out)) {
    fprintf(stderr, "loom-measure: cannot set up its streams: %s\n", strerror(errno));
    return 1;
  }
  State st;
  memset(&st, 0, sizeof st);
  st.samples = malloc(MAX_RUNS * sizeof *st.samples);
  if (!st.samples) {
    fprintf(stderr, "loom-measure: out of memory\n");
    return 1;
  }
  st.out = out;
  fprintf(out, "%s %d\n", MEASURE_HELLO, MEASURE_PROTOCOL_VERSION);
  fflush(out);
  Request q;
  for (;;) {
    Response r;
    memset(&r, 0, sizeof r);
    if (!read_request(in, &q, &r)) break;
    if (!r.status) measure(&st, &q, &r);
    write_response(out, &r);
    if (r.exit_after) _exit(0); /* nothing here is to be trusted, not even the heap */
  }
  state_free(&st);
  fclose(in);
  fclose(out);
  return 0;
}

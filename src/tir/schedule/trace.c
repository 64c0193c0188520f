/* Traces: text form, parser and replay.
 *
 * Text form (one instruction a line; RVs are named by kind and recorded id):
 *   b0 = get_block("C")
 *   l1, l2, l3 = get_loops(b0)
 *   sample_perfect_tile(l1, n=2, max_innermost=16) -> [32, 4]
 *   l4, l5 = split(l1, [32, 4])
 *   sample_categorical([1, 2, 4], probs=[0.5, 0.25, 0.25]) -> 2
 *   bind(l4, "threadIdx.x")
 * The parser is generic: RV names become inputs in order, integers and
 * integer lists become ints, `probs=[...]` becomes floats, a string becomes
 * str, and `-> ...` the decision. schedule_internal.h lists each kind's layout. */
#include "support/strbuf.h"
#include "tir/schedule/schedule_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- printing ---- */

static bool outputs_blocks(InstKind k) {
  return k == INST_GET_BLOCK || k == INST_CACHE_READ || k == INST_CACHE_WRITE || k == INST_CACHE_INPLACE ||
         k == INST_DECOMPOSE_REDUCTION || k == INST_RFACTOR;
}

static char rv_prefix(const Trace *t, int upto, SchRV id) {
  for (int i = 0; i < upto; i++)
    for (int j = 0; j < t->insts[i].n_outputs; j++)
      if (t->insts[i].outputs[j] == id) return outputs_blocks(t->insts[i].kind) ? 'b' : 'l';
  return 'v';
}

static void print_str(StrBuf *sb, const char *s) {
  sb_putc(sb, '"');
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') sb_putc(sb, '\\');
    sb_putc(sb, *s);
  }
  sb_putc(sb, '"');
}

static void print_ints(StrBuf *sb, const int64_t *v, int n) {
  sb_putc(sb, '[');
  for (int i = 0; i < n; i++) sb_printf(sb, "%s%lld", i ? ", " : "", (long long)v[i]);
  sb_putc(sb, ']');
}

char *trace_to_text(const Trace *t) {
  StrBuf sb;
  sb_init(&sb);
  for (int i = 0; i < t->n; i++) {
    const Inst *in = &t->insts[i];
    char out_prefix = outputs_blocks(in->kind) ? 'b' : 'l';
    for (int j = 0; j < in->n_outputs; j++) sb_printf(&sb, "%s%c%d", j ? ", " : "", out_prefix, (int)in->outputs[j]);
    if (in->n_outputs) sb_puts(&sb, " = ");
    sb_printf(&sb, "%s(", inst_kind_name(in->kind));
    int args = 0;
#define SEP() sb_puts(&sb, args++ ? ", " : "")
    if (in->str) {
      /* get_block's name comes first; bind's tag after the loop */
      if (in->kind == INST_GET_BLOCK) SEP(), print_str(&sb, in->str);
    }
    for (int j = 0; j < in->n_inputs; j++) SEP(), sb_printf(&sb, "%c%d", rv_prefix(t, i, in->inputs[j]), (int)in->inputs[j]);
    if (in->kind == INST_SPLIT || in->kind == INST_SAMPLE_CATEGORICAL) {
      SEP(), print_ints(&sb, in->ints, in->n_ints);
    } else if (in->kind == INST_SAMPLE_PERFECT_TILE && in->n_ints == 2) {
      SEP(), sb_printf(&sb, "n=%lld, max_innermost=%lld", (long long)in->ints[0], (long long)in->ints[1]);
    } else {
      for (int j = 0; j < in->n_ints; j++) SEP(), sb_printf(&sb, "%lld", (long long)in->ints[j]);
    }
    if (in->n_floats) {
      SEP(), sb_puts(&sb, "probs=[");
      for (int j = 0; j < in->n_floats; j++) sb_printf(&sb, "%s%.17g", j ? ", " : "", in->floats[j]);
      sb_putc(&sb, ']');
    }
    if (in->str && in->kind != INST_GET_BLOCK) SEP(), print_str(&sb, in->str);
#undef SEP
    sb_putc(&sb, ')');
    if (in->n_decision) {
      sb_puts(&sb, " -> ");
      if (in->kind == INST_SAMPLE_CATEGORICAL && in->n_decision == 1)
        sb_printf(&sb, "%lld", (long long)in->decision[0]);
      else
        print_ints(&sb, in->decision, in->n_decision);
    }
    sb_putc(&sb, '\n');
  }
  if (!sb.data) sb_puts(&sb, "");
  return sb_take(&sb);
}

/* ---- parsing ---- */

typedef struct Parser {
  Arena *a;
  const char *src, *p, *line_start;
  int line;
  LoomError *err;
  bool failed;
} Parser;

static bool perr(Parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool perr(Parser *ps, const char *fmt, ...) {
  if (ps->failed) return false;
  ps->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  err_set(ps->err, LOOM_ERR_PARSE, "trace:%d:%d: %s", ps->line, (int)(ps->p - ps->line_start) + 1, msg);
  return false;
}

static void skip_ws(Parser *ps) {
  while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r') ps->p++;
}

static bool accept(Parser *ps, char c) {
  skip_ws(ps);
  if (*ps->p != c) return false;
  ps->p++;
  return true;
}

static bool expect(Parser *ps, char c) {
  if (accept(ps, c)) return true;
  return perr(ps, "expected '%c'", c);
}

static bool parse_ident(Parser *ps, char *buf, size_t cap) {
  skip_ws(ps);
  size_t n = 0;
  if (!isalpha((unsigned char)*ps->p) && *ps->p != '_') return perr(ps, "expected a name");
  while (isalnum((unsigned char)ps->p[n]) || ps->p[n] == '_') n++;
  if (n >= cap) return perr(ps, "name too long");
  memcpy(buf, ps->p, n);
  buf[n] = 0;
  ps->p += n;
  return true;
}

/* b12 / l3 / v7 -> 12 / 3 / 7 */
static bool rv_id(const char *name, SchRV *out) {
  if ((name[0] != 'b' && name[0] != 'l' && name[0] != 'v') || !isdigit((unsigned char)name[1])) return false;
  char *end;
  errno = 0;
  long v = strtol(name + 1, &end, 10);
  if (*end || errno || v > INT32_MAX) return false;
  *out = (SchRV)v;
  return true;
}

static bool parse_int(Parser *ps, int64_t *out) {
  skip_ws(ps);
  char *end;
  errno = 0;
  long long v = strtoll(ps->p, &end, 10);
  if (end == ps->p || errno) return perr(ps, "expected an integer");
  ps->p = end;
  *out = v;
  return true;
}

static bool parse_double(Parser *ps, double *out) {
  skip_ws(ps);
  char *end;
  double v = strtod(ps->p, &end);
  if (end == ps->p) return perr(ps, "expected a number");
  ps->p = end;
  *out = v;
  return true;
}

#define VEC_GROW(T, arr, n, cap)                                       \
  do {                                                                 \
    if ((n) == (cap)) {                                                \
      int c_ = (cap) ? (cap) * 2 : 8;                                  \
      T *p_ = ARENA_ARRAY(ps->a, T, c_);                               \
      if (n) memcpy(p_, (arr), sizeof(T) * (size_t)(n));               \
      (arr) = p_;                                                      \
      (cap) = c_;                                                      \
    }                                                                  \
  } while (0)

typedef struct InstBuild {
  SchRV *inputs, *outputs;
  int n_in, cap_in, n_out, cap_out;
  int64_t *ints, *dec;
  int n_ints, cap_ints, n_dec, cap_dec;
  double *floats;
  int n_floats, cap_floats;
  const char *str;
} InstBuild;

static bool parse_int_list(Parser *ps, int64_t **arr, int *n, int *cap) {
  if (!expect(ps, '[')) return false;
  if (accept(ps, ']')) return true;
  do {
    int64_t v;
    if (!parse_int(ps, &v)) return false;
    VEC_GROW(int64_t, *arr, *n, *cap);
    (*arr)[(*n)++] = v;
  } while (accept(ps, ','));
  return expect(ps, ']');
}

static bool parse_string(Parser *ps, const char **out) {
  StrBuf sb;
  sb_init(&sb);
  ps->p++; /* opening quote */
  while (*ps->p && *ps->p != '"' && *ps->p != '\n') {
    if (*ps->p == '\\' && ps->p[1]) ps->p++;
    sb_putc(&sb, *ps->p++);
  }
  if (*ps->p != '"') {
    sb_free(&sb);
    return perr(ps, "unterminated string");
  }
  ps->p++;
  *out = arena_strdup(ps->a, sb_cstr(&sb));
  sb_free(&sb);
  return true;
}

static bool parse_arg(Parser *ps, InstBuild *b) {
  skip_ws(ps);
  char c = *ps->p;
  if (c == '"') {
    if (b->str) return perr(ps, "more than one string argument");
    return parse_string(ps, &b->str);
  }
  if (c == '[') return parse_int_list(ps, &b->ints, &b->n_ints, &b->cap_ints);
  if (c == '-' || isdigit((unsigned char)c)) {
    int64_t v;
    if (!parse_int(ps, &v)) return false;
    VEC_GROW(int64_t, b->ints, b->n_ints, b->cap_ints);
    b->ints[b->n_ints++] = v;
    return true;
  }
  char name[64];
  if (!parse_ident(ps, name, sizeof name)) return false;
  if (accept(ps, '=')) {
    if (strcmp(name, "probs") == 0) {
      if (!expect(ps, '[')) return false;
      if (accept(ps, ']')) return true;
      do {
        double v = 0;
        if (!parse_double(ps, &v)) return false;
        VEC_GROW(double, b->floats, b->n_floats, b->cap_floats);
        b->floats[b->n_floats++] = v;
      } while (accept(ps, ','));
      return expect(ps, ']');
    }
    if (strcmp(name, "n") != 0 && strcmp(name, "max_innermost") != 0) return perr(ps, "unknown argument '%s'", name);
    return parse_arg(ps, b);
  }
  SchRV id;
  if (!rv_id(name, &id)) return perr(ps, "'%s' is not a handle (b<N> or l<N>)", name);
  VEC_GROW(SchRV, b->inputs, b->n_in, b->cap_in);
  b->inputs[b->n_in++] = id;
  return true;
}

static bool parse_line(Parser *ps, Trace *t) {
  InstBuild b = {0};
  char name[64];
  /* outputs: "x, y = " -- a name followed by ',' or '=' */
  if (!parse_ident(ps, name, sizeof name)) return false;
  skip_ws(ps);
  if (*ps->p == ',' || *ps->p == '=') {
    for (;;) {
      SchRV id;
      if (!rv_id(name, &id)) return perr(ps, "'%s' is not a handle (b<N> or l<N>)", name);
      VEC_GROW(SchRV, b.outputs, b.n_out, b.cap_out);
      b.outputs[b.n_out++] = id;
      if (accept(ps, '=')) break;
      if (!expect(ps, ',') || !parse_ident(ps, name, sizeof name)) return false;
    }
    if (!parse_ident(ps, name, sizeof name)) return false;
  }
  InstKind kind;
  if (!inst_kind_parse(name, &kind)) return perr(ps, "unknown instruction '%s'", name);
  if (!expect(ps, '(')) return false;
  if (!accept(ps, ')')) {
    do {
      if (!parse_arg(ps, &b)) return false;
    } while (accept(ps, ','));
    if (!expect(ps, ')')) return false;
  }
  skip_ws(ps);
  if (ps->p[0] == '-' && ps->p[1] == '>') {
    ps->p += 2;
    skip_ws(ps);
    if (*ps->p == '[') {
      if (!parse_int_list(ps, &b.dec, &b.n_dec, &b.cap_dec)) return false;
    } else {
      int64_t v;
      if (!parse_int(ps, &v)) return false;
      VEC_GROW(int64_t, b.dec, b.n_dec, b.cap_dec);
      b.dec[b.n_dec++] = v;
    }
  }
  skip_ws(ps);
  if (*ps->p && *ps->p != '\n' && *ps->p != '#') return perr(ps, "unexpected '%c' after the instruction", *ps->p);
  bool is_sample = kind == INST_SAMPLE_PERFECT_TILE || kind == INST_SAMPLE_CATEGORICAL;
  if (is_sample && b.n_dec == 0) return perr(ps, "%s needs a recorded decision (-> ...)", name);
  Inst in = {kind, b.inputs, b.n_in, b.ints, b.n_ints, b.str, b.floats, b.n_floats, b.outputs, b.n_out, b.dec, b.n_dec};
  trace_append(t, &in);
  return true;
}

Trace *trace_parse(Arena *a, const char *text, LoomError *err) {
  Parser ps = {a, text, text, text, 1, err, false};
  Trace *t = trace_new(a);
  while (*ps.p) {
    skip_ws(&ps);
    if (*ps.p == '#') /* comment */
      while (*ps.p && *ps.p != '\n') ps.p++;
    if (*ps.p && *ps.p != '\n' && !parse_line(&ps, t)) return NULL;
    while (*ps.p && *ps.p != '\n') ps.p++;
    if (*ps.p == '\n') {
      ps.p++;
      ps.line++;
      ps.line_start = ps.p;
    }
  }
  return t;
}

/* ---- replay ---- */

typedef struct RVMap {
  SchRV *old_ids, *new_ids;
  int n;
} RVMap;

static bool map_get(const RVMap *m, SchRV old, SchRV *out) {
  for (int i = m->n - 1; i >= 0; i--)
    if (m->old_ids[i] == old) {
      *out = m->new_ids[i];
      return true;
    }
  return false;
}

static void map_put(RVMap *m, SchRV old, SchRV new_id) {
  m->old_ids[m->n] = old;
  m->new_ids[m->n++] = new_id;
}

static loom_status replay_one(Schedule *s, const Inst *in, int index, RVMap *m) {
  SchRV *ins = ARENA_ARRAY(s->arena, SchRV, in->n_inputs);
  for (int j = 0; j < in->n_inputs; j++)
    if (!map_get(m, in->inputs[j], &ins[j]))
      return sch_fail(s, "instruction %d (%s): handle %d is not defined by an earlier instruction", index + 1,
                      inst_kind_name(in->kind), (int)in->inputs[j]);
  int need_in = -1, need_ints = -1;
  switch (in->kind) {
    case INST_GET_BLOCK: need_in = 0; break;
    case INST_GET_LOOPS: case INST_FUSE: case INST_REORDER: break;
    case INST_SPLIT: need_in = 1; break;
    case INST_VECTORIZE: case INST_PARALLEL: case INST_UNROLL: case INST_BIND: case INST_RFACTOR:
    case INST_COMPUTE_INLINE: case INST_REVERSE_COMPUTE_INLINE: need_in = 1, need_ints = 0; break;
    case INST_COMPUTE_AT: case INST_REVERSE_COMPUTE_AT: case INST_DECOMPOSE_REDUCTION: need_in = 2, need_ints = 0; break;
    case INST_CACHE_READ: case INST_CACHE_WRITE: need_in = 1, need_ints = 2; break;
    case INST_CACHE_INPLACE: need_in = 2, need_ints = 1; break;
    case INST_STORAGE_ALIGN: need_in = 1, need_ints = 4; break;
    case INST_SAMPLE_PERFECT_TILE: need_in = 1, need_ints = 2; break;
    case INST_SAMPLE_CATEGORICAL: need_in = 0; break;
    case INST_KIND_COUNT: break;
  }
  if ((need_in >= 0 && in->n_inputs != need_in) || (need_ints >= 0 && in->n_ints != need_ints) ||
      (in->kind == INST_GET_LOOPS && in->n_inputs != 1) || ((in->kind == INST_GET_BLOCK || in->kind == INST_BIND) && !in->str))
    return sch_fail(s, "instruction %d (%s): wrong number of arguments", index + 1, inst_kind_name(in->kind));

  int n_out = 0;
  SchRV *outs = ARENA_ARRAY(s->arena, SchRV, in->n_outputs > 256 ? in->n_outputs : 256);
  loom_status st = LOOM_OK;
  switch (in->kind) {
    case INST_GET_BLOCK:
      outs[0] = sch_get_block(s, in->str);
      st = outs[0] < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, n_out = 1;
      break;
    case INST_GET_LOOPS:
      n_out = sch_get_loops(s, ins[0], outs, 256);
      if (n_out < 0) st = LOOM_ERR_SCHEDULE, n_out = 0;
      break;
    case INST_SPLIT:
      st = sch_split(s, ins[0], in->ints, in->n_ints, outs) == 0 ? LOOM_OK : LOOM_ERR_SCHEDULE;
      n_out = st == LOOM_OK ? in->n_ints : 0;
      break;
    case INST_FUSE:
      outs[0] = sch_fuse(s, ins, in->n_inputs);
      st = outs[0] < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, n_out = 1;
      break;
    case INST_REORDER: st = sch_reorder(s, ins, in->n_inputs); break;
    case INST_VECTORIZE: st = sch_vectorize(s, ins[0]); break;
    case INST_PARALLEL: st = sch_parallel(s, ins[0]); break;
    case INST_UNROLL: st = sch_unroll(s, ins[0]); break;
    case INST_BIND: st = sch_bind(s, ins[0], in->str); break;
    case INST_COMPUTE_AT: st = sch_compute_at(s, ins[0], ins[1]); break;
    case INST_REVERSE_COMPUTE_AT: st = sch_reverse_compute_at(s, ins[0], ins[1]); break;
    case INST_COMPUTE_INLINE: st = sch_compute_inline(s, ins[0]); break;
    case INST_REVERSE_COMPUTE_INLINE: st = sch_reverse_compute_inline(s, ins[0]); break;
    case INST_CACHE_READ:
    case INST_CACHE_WRITE: {
      MemScope scope = (MemScope)in->ints[1];
      if (in->ints[1] < SCOPE_GLOBAL || in->ints[1] > SCOPE_SHARED)
        return sch_fail(s, "instruction %d (%s): scope %lld is not a memory scope", index + 1,
                        inst_kind_name(in->kind), (long long)in->ints[1]);
      outs[0] = in->kind == INST_CACHE_READ ? sch_cache_read(s, ins[0], (int)in->ints[0], scope)
                                            : sch_cache_write(s, ins[0], (int)in->ints[0], scope);
      st = outs[0] < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, n_out = 1;
      break;
    }
    case INST_CACHE_INPLACE:
      if (in->ints[0] < SCOPE_GLOBAL || in->ints[0] > SCOPE_SHARED)
        return sch_fail(s, "instruction %d (%s): scope %lld is not a memory scope", index + 1,
                        inst_kind_name(in->kind), (long long)in->ints[0]);
      st = sch_cache_inplace(s, ins[0], ins[1], (MemScope)in->ints[0], outs);
      n_out = st == LOOM_OK ? 2 : 0;
      break;
    case INST_STORAGE_ALIGN:
      st = sch_storage_align(s, ins[0], (int)in->ints[0], (int)in->ints[1], (int)in->ints[2], (int)in->ints[3]);
      break;
    case INST_DECOMPOSE_REDUCTION:
      outs[0] = sch_decompose_reduction(s, ins[0], ins[1]);
      st = outs[0] < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, n_out = 1;
      break;
    case INST_RFACTOR:
      outs[0] = sch_rfactor(s, ins[0]);
      st = outs[0] < 0 ? LOOM_ERR_SCHEDULE : LOOM_OK, n_out = 1;
      break;
    case INST_SAMPLE_PERFECT_TILE:
    case INST_SAMPLE_CATEGORICAL: {
      /* The recorded decision answers the sample, whatever the mode. */
      DecisionMode mode = s->mode;
      const Trace *dec = s->decisions;
      int next = s->next_decision;
      Trace one = {s->arena, (Inst *)in, 1, 1};
      s->mode = DECIDE_TRACE;
      s->decisions = &one;
      s->next_decision = 0;
      int64_t *vals = ARENA_ARRAY(s->arena, int64_t, in->n_decision);
      st = in->kind == INST_SAMPLE_PERFECT_TILE
               ? sch_sample_perfect_tile(s, ins[0], (int)in->ints[0], in->ints[1], vals)
               : sch_sample_categorical(s, in->ints, in->n_floats ? in->floats : NULL, in->n_ints, vals);
      s->mode = mode;
      s->decisions = dec;
      s->next_decision = next;
      break;
    }
    case INST_KIND_COUNT: break;
  }
  if (st != LOOM_OK) {
    err_prefix(&s->err, "instruction %d (%s)", index + 1, inst_kind_name(in->kind));
    return st;
  }
  if (n_out != in->n_outputs)
    return sch_fail(s, "instruction %d (%s): produced %d handles, the trace records %d", index + 1,
                    inst_kind_name(in->kind), n_out, in->n_outputs);
  for (int j = 0; j < n_out; j++) map_put(m, in->outputs[j], outs[j]);
  return LOOM_OK;
}

loom_status trace_apply(const Trace *t, Schedule *s) {
  int total = 0;
  for (int i = 0; i < t->n; i++) total += t->insts[i].n_outputs;
  RVMap m = {ARENA_ARRAY(s->arena, SchRV, total), ARENA_ARRAY(s->arena, SchRV, total), 0};
  /* All or nothing: a trace that fails halfway leaves s as it was. */
  const PrimFunc *saved_func = s->func;
  int saved_rvs = s->n_rvs, saved_trace = s->trace->n;
  for (int i = 0; i < t->n; i++) {
    loom_status st = replay_one(s, &t->insts[i], i, &m);
    if (st != LOOM_OK) {
      s->func = saved_func;
      s->n_rvs = saved_rvs;
      s->trace->n = saved_trace;
      return st;
    }
  }
  return LOOM_OK;
}

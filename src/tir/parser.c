/* Loop IR parser: reads what printer.c writes (grammar in docs/tir.md).
 *
 * Recursive descent over a token array (tokenizing up front lets the
 * reduce form look ahead past its source to its axes). Every failure sets
 * one LOOM_ERR_PARSE message "line L, column C: expected X, got Y" and
 * unwinds by returning NULL; nothing is allocated outside the caller's
 * arena. Nesting is capped so hostile input cannot exhaust the stack here or
 * in the recursive printer/verifier that later walk the result. */
#include "tir/text.h"

#include "support/vec.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 200, MAX_LANES = 1024 };

typedef enum TokKind { T_EOF, T_IDENT, T_INT, T_FLOAT, T_STRING, T_PUNCT } TokKind;

typedef struct Token {
  TokKind kind;
  const char *start;
  int len, line, col;
  uint64_t mag;     /* T_INT: magnitude */
  double fval;      /* T_FLOAT */
  DType dtype;      /* T_INT/T_FLOAT: suffix, or i64 when none */
  bool has_suffix;
  const char *str;  /* T_STRING: decoded */
} Token;

typedef struct Sym {
  const char *name;
  int len;
  bool is_buffer;
  const void *node;
} Sym;

typedef struct Parser {
  Arena *a;
  LoomError *err;
  bool failed;
  Token *toks;
  int n_toks, pos;
  Sym *syms;
  int n_syms, cap_syms;
  int depth;
} Parser;

/* ---- errors ---- */

static void *fail_at(Parser *p, int line, int col, const char *expected, const char *got) {
  if (!p->failed) {
    p->failed = true;
    err_set(p->err, LOOM_ERR_PARSE, "line %d, column %d: expected %s, got %s", line, col, expected, got);
  }
  return NULL;
}

/* "expected <what>, got '<token>'" at token t. */
static void *fail(Parser *p, const Token *t, const char *expected) {
  char got[48];
  if (t->kind == T_EOF) snprintf(got, sizeof got, "end of input");
  else snprintf(got, sizeof got, "'%.*s%s'", t->len > 24 ? 24 : t->len, t->start, t->len > 24 ? "..." : "");
  return fail_at(p, t->line, t->col, expected, got);
}

/* "expected <what>, got <n>" at token t, for counts (arity, indices). */
static void *fail_count(Parser *p, const Token *t, int got, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void *fail_count(Parser *p, const Token *t, int got, const char *fmt, ...) {
  char what[160], gotbuf[16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(gotbuf, sizeof gotbuf, "%d", got);
  return fail_at(p, t->line, t->col, what, gotbuf);
}

/* ---- lexer ---- */

static bool is_ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool is_ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Lexes a number at s into t; returns its length or -1 after an error. */
static int lex_number(Parser *p, const char *s, Token *t) {
  const char *c = s;
  bool is_float = false, overflow = false;
  uint64_t mag = 0;
  while (isdigit((unsigned char)*c)) {
    unsigned d = (unsigned)(*c - '0');
    if (mag > (UINT64_MAX - d) / 10) overflow = true;
    else mag = mag * 10 + d;
    c++;
  }
  if (*c == '.' && isdigit((unsigned char)c[1])) {
    is_float = true;
    c++;
    while (isdigit((unsigned char)*c)) c++;
  }
  if ((*c == 'e' || *c == 'E') &&
      (isdigit((unsigned char)c[1]) || ((c[1] == '+' || c[1] == '-') && isdigit((unsigned char)c[2])))) {
    is_float = true;
    c += 2;
    while (isdigit((unsigned char)*c)) c++;
  }
  size_t num_len = (size_t)(c - s);
  t->kind = is_float ? T_FLOAT : T_INT;
  t->dtype = DT_I64;
  if (is_ident_start(*c)) {
    const char *suf = c;
    while (is_ident_char(*c)) c++;
    char name[24];
    size_t n = (size_t)(c - suf);
    if (n >= sizeof name || (memcpy(name, suf, n), name[n] = '\0', !dtype_parse(name, &t->dtype))) {
      t->col += (int)(suf - s);
      t->start = suf;
      t->len = (int)n;
      fail(p, t, "a dtype suffix such as i32 or f32");
      return -1;
    }
    t->has_suffix = true;
  }
  if (is_float) {
    char buf[64];
    if (num_len >= sizeof buf) {
      t->start = s;
      t->len = (int)num_len;
      fail(p, t, "a float literal of at most 63 characters");
      return -1;
    }
    memcpy(buf, s, num_len);
    buf[num_len] = '\0';
    t->fval = strtod(buf, NULL);
  } else if (overflow) {
    t->start = s;
    t->len = (int)num_len;
    fail(p, t, "an integer literal that fits in 64 bits");
    return -1;
  }
  t->mag = mag;
  return (int)(c - s);
}

/* Decodes a "..." string with \" \\ \n \xHH escapes; returns length or -1. */
static int lex_string(Parser *p, const char *s, Token *t) {
  size_t cap = 16, n = 0;
  char *out = arena_alloc(p->a, cap);
  const char *c = s + 1;
  for (;;) {
    char ch = *c;
    if (ch == '\0' || ch == '\n') {
      t->start = s;
      t->len = (int)(c - s);
      t->kind = T_STRING;
      fail(p, t, "a closing '\"'");
      return -1;
    }
    if (ch == '"') break;
    if (ch == '\\') {
      if (c[1] == 'x' && hexval(c[2]) >= 0 && hexval(c[3]) >= 0 && (hexval(c[2]) | hexval(c[3]))) {
        ch = (char)(hexval(c[2]) * 16 + hexval(c[3]));
        c += 4;
      } else if (c[1] == '"' || c[1] == '\\') {
        ch = c[1];
        c += 2;
      } else if (c[1] == 'n') {
        ch = '\n';
        c += 2;
      } else {
        t->start = c;
        t->len = c[1] ? 2 : 1;
        fail(p, t, "an escape \\\" \\\\ \\n or \\xHH (not \\x00)");
        return -1;
      }
    } else {
      c++;
    }
    if (n + 2 > cap) {
      char *grown = arena_alloc(p->a, cap * 2);
      memcpy(grown, out, n);
      out = grown;
      cap *= 2;
    }
    out[n++] = ch;
  }
  out[n] = '\0';
  t->kind = T_STRING;
  t->str = out;
  return (int)(c + 1 - s);
}

static const char *const two_char_puncts[] = {"==", "!=", "<=", ">=", "&&", "||"};
static const char one_char_puncts[] = "()[]{},:=<>+-*/%!";

static bool tokenize(Parser *p, const char *src) {
  int cap = 64, n = 0, line = 1;
  const char *line_start = src;
  Token *toks = ARENA_ARRAY(p->a, Token, cap);
  const char *s = src;
  for (;;) {
    /* whitespace and `#` comments */
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '#') {
      if (*s == '#') {
        while (*s && *s != '\n') s++;
        continue;
      }
      if (*s == '\n') {
        line++;
        line_start = s + 1;
      }
      s++;
    }
    if (n + 1 >= cap) {
      Token *grown = ARENA_ARRAY(p->a, Token, cap * 2);
      memcpy(grown, toks, sizeof(Token) * (size_t)n);
      toks = grown;
      cap *= 2;
    }
    Token *t = &toks[n];
    memset(t, 0, sizeof *t);
    t->start = s;
    t->line = line;
    t->col = (int)(s - line_start) + 1;
    if (*s == '\0') {
      t->kind = T_EOF;
      n++;
      break;
    }
    int len = 0;
    if (is_ident_start(*s)) {
      while (is_ident_char(s[len])) len++;
      t->kind = T_IDENT;
    } else if (isdigit((unsigned char)*s)) {
      len = lex_number(p, s, t);
    } else if (*s == '"') {
      len = lex_string(p, s, t);
    } else {
      for (size_t k = 0; k < sizeof two_char_puncts / sizeof two_char_puncts[0]; k++)
        if (s[0] == two_char_puncts[k][0] && s[1] == two_char_puncts[k][1]) len = 2;
      if (!len && strchr(one_char_puncts, *s)) len = 1;
      if (!len) {
        t->len = 1;
        t->kind = T_PUNCT;
        fail(p, t, "a token");
        return false;
      }
      t->kind = T_PUNCT;
    }
    if (len < 0) return false;
    t->start = s;
    t->len = len;
    s += len;
    n++;
  }
  p->toks = toks;
  p->n_toks = n;
  p->pos = 0;
  return true;
}

/* ---- token helpers ---- */

static const Token *peek(const Parser *p) { return &p->toks[p->pos]; }
static const Token *peek_at(const Parser *p, int k) {
  int i = p->pos + k;
  return &p->toks[i < p->n_toks ? i : p->n_toks - 1];
}
static const Token *advance(Parser *p) {
  const Token *t = &p->toks[p->pos];
  if (t->kind != T_EOF) p->pos++;
  return t;
}

static bool tok_is(const Token *t, TokKind k, const char *text) {
  return t->kind == k && (int)strlen(text) == t->len && memcmp(t->start, text, (size_t)t->len) == 0;
}
static bool is_punct(const Parser *p, const char *text) { return tok_is(peek(p), T_PUNCT, text); }
static bool is_word(const Parser *p, const char *text) { return tok_is(peek(p), T_IDENT, text); }

static bool accept(Parser *p, const char *punct) {
  if (!is_punct(p, punct)) return false;
  advance(p);
  return true;
}

static bool expect(Parser *p, const char *punct) {
  if (accept(p, punct)) return true;
  char what[16];
  snprintf(what, sizeof what, "'%s'", punct);
  fail(p, peek(p), what);
  return false;
}

static bool expect_word(Parser *p, const char *word) {
  if (is_word(p, word)) {
    advance(p);
    return true;
  }
  char what[32];
  snprintf(what, sizeof what, "'%s'", word);
  fail(p, peek(p), what);
  return false;
}

static const Token *expect_ident(Parser *p, const char *what) {
  if (peek(p)->kind == T_IDENT) return advance(p);
  return fail(p, peek(p), what);
}

static const char *tok_str(Parser *p, const Token *t) { return arena_strndup(p->a, t->start, (size_t)t->len); }

static bool enter(Parser *p) {
  if (++p->depth <= MAX_DEPTH) return true;
  fail(p, peek(p), "nesting at most 200 deep");
  return false;
}

/* ---- scope ---- */

static void scope_push(Parser *p, const char *name, int len, bool is_buffer, const void *node) {
  if (p->n_syms == p->cap_syms) {
    int cap = p->cap_syms ? p->cap_syms * 2 : 32;
    Sym *grown = ARENA_ARRAY(p->a, Sym, cap);
    if (p->n_syms) memcpy(grown, p->syms, sizeof(Sym) * (size_t)p->n_syms);
    p->syms = grown;
    p->cap_syms = cap;
  }
  p->syms[p->n_syms++] = (Sym){name, len, is_buffer, node};
}

static void scope_push_var(Parser *p, const Expr *v) { scope_push(p, v->var.name, (int)strlen(v->var.name), false, v); }
static void scope_push_buffer(Parser *p, const Buffer *b) { scope_push(p, b->name, (int)strlen(b->name), true, b); }

/* Innermost symbol of the given kind named by token t. */
static const void *scope_find(const Parser *p, const Token *t, bool is_buffer) {
  for (int i = p->n_syms - 1; i >= 0; i--) {
    const Sym *s = &p->syms[i];
    if (s->is_buffer == is_buffer && s->len == t->len && memcmp(s->name, t->start, (size_t)t->len) == 0) return s->node;
  }
  return NULL;
}

/* ---- small pieces ---- */

static bool parse_dtype(Parser *p, DType *out) {
  const Token *t = peek(p);
  char name[24];
  if (t->kind == T_IDENT && t->len < (int)sizeof name) {
    memcpy(name, t->start, (size_t)t->len);
    name[t->len] = '\0';
    if (dtype_parse(name, out)) {
      advance(p);
      return true;
    }
  }
  fail(p, t, "a dtype such as f32, i64 or f32x8");
  return false;
}

/* An int literal without suffix, optionally negative, within [lo, hi]. */
static bool parse_small_int(Parser *p, int64_t lo, int64_t hi, int64_t *out) {
  bool neg = accept(p, "-");
  const Token *t = peek(p);
  if (t->kind != T_INT || t->has_suffix || t->mag > (uint64_t)INT64_MAX) {
    fail(p, t, "an integer");
    return false;
  }
  int64_t v = neg ? -(int64_t)t->mag : (int64_t)t->mag;
  if (v < lo || v > hi) {
    char what[80];
    snprintf(what, sizeof what, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    fail(p, t, what);
    return false;
  }
  advance(p);
  *out = v;
  return true;
}

/* `name` or `name<dtype>`: a fresh variable (not yet in scope). */
static const Expr *parse_var_decl(Parser *p) {
  const Token *t = expect_ident(p, "a variable name");
  if (!t) return NULL;
  DType dt = DT_I64;
  if (accept(p, "<") && !(parse_dtype(p, &dt) && expect(p, ">"))) return NULL;
  return expr_var(p->a, tok_str(p, t), dt);
}

/* A block or function name: identifier or string. */
static const char *parse_label(Parser *p, const char *what) {
  const Token *t = peek(p);
  if (t->kind == T_STRING) return advance(p)->str;
  if (t->kind == T_IDENT) return tok_str(p, advance(p));
  return fail(p, t, what);
}

/* ---- expressions ---- */

static const Expr *parse_expr(Parser *p);

/* Comma-separated expressions up to `close`; returns count or -1. */
static int parse_expr_list(Parser *p, const char *close, const Expr ***out) {
  VEC(const Expr *) xs = {0};
  if (!accept(p, close)) {
    do {
      const Expr *e = parse_expr(p);
      if (!e) return -1;
      VEC_PUSH(p->a, xs, e);
    } while (accept(p, ","));
    if (!expect(p, close)) return -1;
  }
  *out = xs.items;
  return xs.n;
}

static const Expr *parse_number(Parser *p, bool neg) {
  const Token *t = advance(p);
  if (t->kind == T_FLOAT) {
    if (!t->has_suffix || !dtype_is_float(t->dtype)) return fail(p, t, "a float literal with a float dtype suffix (1.5f32)");
    return expr_float(p->a, t->dtype, neg ? -t->fval : t->fval);
  }
  if (dtype_is_float(t->dtype) || t->dtype.code == DT_HANDLE)
    return fail(p, t, "an integer dtype suffix (a float literal needs a '.', as in 1.0f32)");
  int64_t v;
  if (neg && t->mag == (uint64_t)INT64_MAX + 1) v = INT64_MIN;
  else if (t->mag > (uint64_t)INT64_MAX) return fail(p, t, "an integer literal that fits in int64");
  else v = neg ? -(int64_t)t->mag : (int64_t)t->mag;
  if (t->dtype.code == DT_BOOL && v != 0 && v != 1) return fail(p, t, "0 or 1 for a bool literal");
  return expr_int(p->a, t->dtype, v);
}

/* `f32(inf)`, `f32(-inf)`, `f32(nan)` */
static const Expr *parse_special_float(Parser *p, DType t) {
  if (!dtype_is_float(t)) return fail(p, peek_at(p, -1), "a float dtype before '(inf)'");
  if (!expect(p, "(")) return NULL;
  bool neg = accept(p, "-");
  double v;
  if (is_word(p, "inf")) v = neg ? -INFINITY : INFINITY;
  else if (is_word(p, "nan") && !neg) v = NAN;
  else return fail(p, peek(p), neg ? "'inf'" : "'inf' or 'nan'");
  advance(p);
  if (!expect(p, ")")) return NULL;
  return expr_float(p->a, t, v);
}

static bool parse_fixed_args(Parser *p, const Token *head, int n, const Expr **args) {
  const Expr **xs;
  int got = parse_expr_list(p, ")", &xs);
  if (got < 0) return false;
  if (got != n) {
    fail_count(p, head, got, "%d argument%s to '%.*s'", n, n == 1 ? "" : "s", head->len, head->start);
    return false;
  }
  for (int i = 0; i < n; i++) args[i] = xs[i];
  return true;
}

/* Skips one expression (for the reduce look-ahead): stops before a ',' or
 * ')' that is not nested. */
static bool skip_expr(Parser *p) {
  int depth = 0;
  for (;;) {
    const Token *t = peek(p);
    if (t->kind == T_EOF) {
      fail(p, t, "')'");
      return false;
    }
    if (depth == 0 && (tok_is(t, T_PUNCT, ",") || tok_is(t, T_PUNCT, ")"))) return true;
    if (tok_is(t, T_PUNCT, "(") || tok_is(t, T_PUNCT, "[") || tok_is(t, T_PUNCT, "{")) depth++;
    if (tok_is(t, T_PUNCT, ")") || tok_is(t, T_PUNCT, "]") || tok_is(t, T_PUNCT, "}")) depth--;
    if (depth < 0) {
      fail(p, t, "balanced brackets");
      return false;
    }
    advance(p);
  }
}

/* reduce_sum(src, [k, 0, 16], ..., where=cond): the axes are declared after
 * the source that uses them, so parse them first and come back. */
static const Expr *parse_reduce(Parser *p, ReduceOp op) {
  if (!expect(p, "(")) return NULL;
  int src_pos = p->pos;
  if (!skip_expr(p)) return NULL;
  VEC(IterVar) axes = {0};
  const Token *where_tok = NULL;
  int where_pos = -1;
  while (accept(p, ",")) {
    if (is_word(p, "where")) {
      where_tok = advance(p);
      if (!expect(p, "=")) return NULL;
      where_pos = p->pos;
      if (!skip_expr(p)) return NULL;
      break;
    }
    IterVar iv = {0};
    iv.type = ITER_REDUCE;
    if (!expect(p, "[") || !(iv.var = parse_var_decl(p)) || !expect(p, ",") || !(iv.min = parse_expr(p)) ||
        !expect(p, ",") || !(iv.extent = parse_expr(p)))
      return NULL;
    if (accept(p, ",")) {
      if (is_word(p, "spatial")) iv.type = ITER_SPATIAL;
      else if (!is_word(p, "reduce")) return fail(p, peek(p), "'spatial' or 'reduce'");
      advance(p);
    }
    if (!expect(p, "]")) return NULL;
    VEC_PUSH(p->a, axes, iv);
  }
  if (!expect(p, ")")) return NULL;
  if (axes.n == 0) return fail(p, peek_at(p, -1), "at least one reduction axis [k, min, extent]");
  int end = p->pos, saved = p->n_syms;
  for (int i = 0; i < axes.n; i++) scope_push_var(p, axes.items[i].var);
  const Expr *cond = NULL;
  if (where_tok) {
    p->pos = where_pos;
    if (!(cond = parse_expr(p))) return NULL;
  }
  p->pos = src_pos;
  const Expr *src = parse_expr(p);
  if (!src) return NULL;
  p->n_syms = saved;
  p->pos = end;
  return expr_reduce(p->a, op, src, axes.items, axes.n, cond);
}

static const Expr *parse_ident_expr(Parser *p) {
  const Token *t = advance(p);
  char name[24] = "";
  if (t->len < (int)sizeof name) {
    memcpy(name, t->start, (size_t)t->len);
    name[t->len] = '\0';
  }
  const Expr *args[3];
  DType dt;
  CallOp op;
  if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) return expr_bool(p->a, name[0] == 't');
  if (is_punct(p, "(") && dtype_parse(name, &dt)) return parse_special_float(p, dt);
  if (strcmp(name, "select") == 0) {
    if (!expect(p, "(") || !parse_fixed_args(p, t, 3, args)) return NULL;
    return expr_select(p->a, args[0], args[1], args[2]);
  }
  if (strcmp(name, "cast") == 0) {
    if (!expect(p, "(") || !parse_dtype(p, &dt) || !expect(p, ",") || !(args[0] = parse_expr(p)) || !expect(p, ")"))
      return NULL;
    return expr_cast(p->a, dt, args[0]);
  }
  if (strcmp(name, "ramp") == 0 || strcmp(name, "broadcast") == 0) {
    bool ramp = name[0] == 'r';
    int64_t lanes;
    if (!expect(p, "(") || !(args[0] = parse_expr(p)) || !expect(p, ",")) return NULL;
    if (ramp && !((args[1] = parse_expr(p)) && expect(p, ","))) return NULL;
    if (!parse_small_int(p, 1, MAX_LANES, &lanes) || !expect(p, ")")) return NULL;
    return ramp ? expr_ramp(p->a, args[0], args[1], (int)lanes) : expr_broadcast(p->a, args[0], (int)lanes);
  }
  static const struct { const char *name; ExprKind kind; } binfns[] = {
      {"floordiv", EXPR_FLOORDIV}, {"floormod", EXPR_FLOORMOD}, {"min", EXPR_MIN}, {"max", EXPR_MAX}};
  for (size_t i = 0; i < sizeof binfns / sizeof binfns[0]; i++)
    if (strcmp(name, binfns[i].name) == 0) {
      if (!expect(p, "(") || !parse_fixed_args(p, t, 2, args)) return NULL;
      return expr_binary(p->a, binfns[i].kind, args[0], args[1]);
    }
  static const struct { const char *name; ReduceOp op; } reducers[] = {
      {"reduce_sum", REDUCE_SUM}, {"reduce_max", REDUCE_MAX}, {"reduce_min", REDUCE_MIN}, {"reduce_prod", REDUCE_PROD}};
  for (size_t i = 0; i < sizeof reducers / sizeof reducers[0]; i++)
    if (strcmp(name, reducers[i].name) == 0) return parse_reduce(p, reducers[i].op);
  if (call_op_parse(name, &op)) {
    bool typed = accept(p, "<");
    if (typed && !(parse_dtype(p, &dt) && expect(p, ">"))) return NULL;
    if (!expect(p, "(")) return NULL;
    const Expr **xs;
    int n = parse_expr_list(p, ")", &xs);
    if (n < 0) return NULL;
    if (n != call_op_arity(op)) {
      int want = call_op_arity(op);
      return fail_count(p, t, n, "%d argument%s to '%s'", want, want == 1 ? "" : "s", name);
    }
    return expr_call(p->a, op, typed ? dt : xs[0]->dtype, xs, n);
  }
  if (is_punct(p, "[")) {
    const Buffer *b = scope_find(p, t, true);
    if (!b) return fail(p, t, "a buffer in scope");
    advance(p);
    const Expr **idx;
    int n = parse_expr_list(p, "]", &idx);
    if (n < 0) return NULL;
    if (n != b->ndim) {
      return fail_count(p, t, n, "%d indices for buffer '%s'", b->ndim, b->name);
    }
    return expr_load(p->a, b, idx, n);
  }
  const Expr *v = scope_find(p, t, false);
  if (!v) return fail(p, t, "a variable in scope");
  return v;
}

static const Expr *parse_primary(Parser *p) {
  const Token *t = peek(p);
  if (accept(p, "(")) {
    const Expr *e = parse_expr(p);
    if (!e || !expect(p, ")")) return NULL;
    return e;
  }
  if (tok_is(t, T_PUNCT, "-") && (peek_at(p, 1)->kind == T_INT || peek_at(p, 1)->kind == T_FLOAT)) {
    advance(p);
    return parse_number(p, true);
  }
  if (t->kind == T_INT || t->kind == T_FLOAT) return parse_number(p, false);
  if (t->kind == T_IDENT) return parse_ident_expr(p);
  return fail(p, t, "an expression");
}

static const Expr *parse_unary(Parser *p) {
  if (!enter(p)) return NULL;
  const Expr *e;
  if (accept(p, "!")) {
    e = parse_unary(p);
    if (e) e = expr_not(p->a, e);
  } else {
    e = parse_primary(p);
  }
  p->depth--;
  return e;
}

static const struct { const char *op; int prec; ExprKind kind; } binops[] = {
    {"||", 1, EXPR_OR}, {"&&", 2, EXPR_AND}, {"==", 3, EXPR_EQ}, {"!=", 3, EXPR_NE},
    {"<", 4, EXPR_LT},  {"<=", 4, EXPR_LE},  {">", 4, EXPR_GT},  {">=", 4, EXPR_GE},
    {"+", 5, EXPR_ADD}, {"-", 5, EXPR_SUB},  {"*", 6, EXPR_MUL}, {"/", 6, EXPR_DIV},
    {"%", 6, EXPR_MOD},
};

/* Precedence climbing; every level is left-associative. The printer
 * parenthesizes every infix operation, so precedence matters only for
 * hand-written text. */
static const Expr *parse_binary(Parser *p, int min_prec) {
  int saved_depth = p->depth;
  const Expr *lhs = parse_unary(p);
  while (lhs) {
    int k = -1;
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
      if (is_punct(p, binops[i].op) && binops[i].prec >= min_prec) k = (int)i;
    if (k < 0) break;
    advance(p);
    /* a long chain a+b+c+... builds a deep left spine: count it as nesting */
    if (!enter(p)) return NULL;
    const Expr *rhs = parse_binary(p, binops[k].prec + 1);
    if (!rhs) return NULL;
    lhs = expr_binary(p->a, binops[k].kind, lhs, rhs);
  }
  p->depth = saved_depth;
  return lhs;
}

static const Expr *parse_expr(Parser *p) { return parse_binary(p, 1); }

/* ---- buffers and regions ---- */

/* `A: f32[shape] [strides[...]] [global|local|shared] [align(N)] [storage_align(axis, factor, offset)]` */
static Buffer *parse_buffer_decl(Parser *p) {
  const Token *t = expect_ident(p, "a buffer name");
  DType dt;
  if (!t || !expect(p, ":") || !parse_dtype(p, &dt) || !expect(p, "[")) return NULL;
  const Expr **shape;
  int ndim = parse_expr_list(p, "]", &shape);
  if (ndim < 0) return NULL;
  Buffer *b = buffer_new(p->a, tok_str(p, t), dt, ndim, shape);
  for (;;) {
    if (is_word(p, "strides")) {
      const Token *st = advance(p);
      const Expr **strides;
      if (!expect(p, "[")) return NULL;
      int n = parse_expr_list(p, "]", &strides);
      if (n < 0) return NULL;
      if (n != ndim) return fail(p, st, "one stride per dimension");
      b->strides = strides;
    } else if (is_word(p, "global") || is_word(p, "local") || is_word(p, "shared")) {
      const Token *s = advance(p);
      b->scope = s->start[0] == 'g' ? SCOPE_GLOBAL : s->start[0] == 'l' ? SCOPE_LOCAL : SCOPE_SHARED;
    } else if (is_word(p, "align")) {
      int64_t v;
      advance(p);
      if (!expect(p, "(") || !parse_small_int(p, 0, 1 << 30, &v) || !expect(p, ")")) return NULL;
      b->align = (int)v;
    } else if (is_word(p, "storage_align")) {
      int64_t axis, factor, offset;
      advance(p);
      if (!expect(p, "(") || !parse_small_int(p, 0, ndim > 0 ? ndim - 1 : 0, &axis) || !expect(p, ",") ||
          !parse_small_int(p, 0, 1 << 30, &factor) || !expect(p, ",") ||
          !parse_small_int(p, -(1 << 30), 1 << 30, &offset) || !expect(p, ")"))
        return NULL;
      b->align_axis = (int)axis;
      b->align_factor = (int)factor;
      b->align_offset = (int)offset;
    } else {
      return b;
    }
  }
}

/* `A[min, min:extent, ...]` */
static bool parse_region(Parser *p, BufferRegion *r) {
  const Token *t = expect_ident(p, "a buffer name");
  if (!t) return false;
  const Buffer *b = scope_find(p, t, true);
  if (!b) return fail(p, t, "a buffer in scope");
  if (!expect(p, "[")) return false;
  const Expr **mins = ARENA_ARRAY(p->a, const Expr *, b->ndim);
  const Expr **exts = ARENA_ARRAY(p->a, const Expr *, b->ndim);
  int d = 0;
  if (!accept(p, "]")) {
    do {
      if (d == b->ndim) return fail(p, peek(p), "']' (the buffer has fewer dimensions)");
      if (!(mins[d] = parse_expr(p))) return false;
      if (accept(p, ":")) {
        if (!(exts[d] = parse_expr(p))) return false;
      } else {
        exts[d] = expr_i64(p->a, 1);
      }
      d++;
    } while (accept(p, ","));
    if (!expect(p, "]")) return false;
  }
  if (d != b->ndim) {
    return fail_count(p, t, d, "%d dimensions in the region of buffer '%s'", b->ndim, b->name);
  }
  r->buffer = b;
  r->min = mins;
  r->extent = exts;
  return true;
}

static bool parse_regions(Parser *p, BufferRegion **out, int *n) {
  VEC(BufferRegion) rs = {0};
  for (int i = 0; i < *n; i++) VEC_PUSH(p->a, rs, (*out)[i]);
  do {
    BufferRegion r;
    if (!parse_region(p, &r)) return false;
    VEC_PUSH(p->a, rs, r);
  } while (accept(p, ","));
  *out = rs.items;
  *n = rs.n;
  return true;
}

/* ---- statements ---- */

static const Stmt *parse_stmt(Parser *p);

/* Statements up to the closing '}' (consumed). */
static const Stmt *parse_stmt_list(Parser *p) {
  VEC(const Stmt *) ss = {0};
  while (!accept(p, "}")) {
    const Stmt *s = parse_stmt(p);
    if (!s) return NULL;
    VEC_PUSH(p->a, ss, s);
  }
  /* stmt_seq drops Evaluate nodes; a lone `eval` is kept as written */
  if (ss.n == 1) return ss.items[0];
  return stmt_seq(p->a, ss.items, ss.n);
}

static const Stmt *parse_braced(Parser *p) {
  if (!expect(p, "{")) return NULL;
  return parse_stmt_list(p);
}

static const Stmt *parse_for(Parser *p) {
  const Expr *var, *min, *extent;
  if (!(var = parse_var_decl(p)) || !expect_word(p, "in") || !(min = parse_expr(p)) || !expect(p, ":") ||
      !(extent = parse_expr(p)))
    return NULL;
  ForKind kind = FOR_SERIAL;
  const char *tag = NULL;
  static const struct { const char *word; ForKind kind; } kinds[] = {
      {"serial", FOR_SERIAL}, {"parallel", FOR_PARALLEL}, {"vectorized", FOR_VECTORIZED},
      {"unroll", FOR_UNROLLED}, {"thread", FOR_THREAD_BINDING}};
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
    if (is_word(p, kinds[i].word)) {
      kind = kinds[i].kind;
      advance(p);
      break;
    }
  if (kind == FOR_THREAD_BINDING) {
    if (!expect(p, "(")) return NULL;
    if (peek(p)->kind != T_STRING) return fail(p, peek(p), "a thread tag string such as \"threadIdx.x\"");
    tag = advance(p)->str;
    if (!expect(p, ")")) return NULL;
  }
  int saved = p->n_syms;
  scope_push_var(p, var);
  const Stmt *body = parse_braced(p);
  p->n_syms = saved;
  if (!body) return NULL;
  if (kind == FOR_THREAD_BINDING) return stmt_for_thread(p->a, var, min, extent, tag, body);
  return stmt_for(p->a, var, min, extent, kind, body);
}

static const Stmt *parse_block(Parser *p) {
  Block *b = ARENA_NEW(p->a, Block);
  if (!(b->name = parse_label(p, "a block name")) || !expect(p, "(")) return NULL;
  VEC(IterVar) iters = {0};
  VEC(const Expr *) values = {0};
  if (!accept(p, ")")) {
    do {
      IterVar iv = {0};
      const Expr *value;
      if (!(iv.var = parse_var_decl(p)) || !expect(p, ":")) return NULL;
      if (is_word(p, "spatial")) iv.type = ITER_SPATIAL;
      else if (is_word(p, "reduce")) iv.type = ITER_REDUCE;
      else return fail(p, peek(p), "'spatial' or 'reduce'");
      advance(p);
      if (!expect(p, "[") || !(iv.min = parse_expr(p)) || !expect(p, ":") || !(iv.extent = parse_expr(p)) ||
          !expect(p, "]") || !expect(p, "=") || !(value = parse_expr(p)))
        return NULL;
      VEC_PUSH(p->a, iters, iv);
      VEC_PUSH(p->a, values, value);
    } while (accept(p, ","));
    if (!expect(p, ")")) return NULL;
  }
  const Expr *pred = NULL;
  if (is_word(p, "where")) {
    advance(p);
    if (!(pred = parse_expr(p))) return NULL;
  } else {
    pred = expr_bool(p->a, true);
  }
  if (!expect(p, "{")) return NULL;
  int saved = p->n_syms;
  for (int i = 0; i < iters.n; i++) scope_push_var(p, iters.items[i].var);
  b->iters = iters.items;
  b->n_iters = iters.n;
  VEC(const Buffer *) allocs = {0};
  BufferRegion *reads = NULL, *writes = NULL;
  int n_reads = 0, n_writes = 0;
  for (;;) {
    if (is_word(p, "alloc")) {
      advance(p);
      Buffer *buf = parse_buffer_decl(p);
      if (!buf) return NULL;
      VEC_PUSH(p->a, allocs, buf);
      scope_push_buffer(p, buf);
    } else if (is_word(p, "rule")) {
      advance(p);
      if (b->schedule_rule) return fail(p, peek(p), "one 'rule' per block");
      if (peek(p)->kind != T_STRING) return fail(p, peek(p), "a schedule rule name string such as \"matmul\"");
      b->schedule_rule = advance(p)->str;
    } else if (is_word(p, "reads")) {
      advance(p);
      if (!parse_regions(p, &reads, &n_reads)) return NULL;
    } else if (is_word(p, "writes")) {
      advance(p);
      if (!parse_regions(p, &writes, &n_writes)) return NULL;
    } else if (is_word(p, "init")) {
      if (b->init) return fail(p, peek(p), "one 'init' per block");
      advance(p);
      if (!(b->init = parse_braced(p))) return NULL;
    } else {
      break;
    }
  }
  b->alloc_buffers = allocs.items;
  b->n_alloc = allocs.n;
  b->reads = reads;
  b->n_reads = n_reads;
  b->writes = writes;
  b->n_writes = n_writes;
  if (!(b->body = parse_stmt_list(p))) return NULL;
  p->n_syms = saved;
  return stmt_realize(p->a, values.items, values.n, pred, b);
}

static const Stmt *parse_store(Parser *p) {
  const Token *t = advance(p);
  const Buffer *b = scope_find(p, t, true);
  if (!b) return fail(p, t, "a buffer in scope");
  const Expr **idx;
  if (!expect(p, "[")) return NULL;
  int n = parse_expr_list(p, "]", &idx);
  if (n < 0) return NULL;
  if (n != b->ndim) {
    return fail_count(p, t, n, "%d indices for buffer '%s'", b->ndim, b->name);
  }
  const Expr *value;
  if (!expect(p, "=") || !(value = parse_expr(p))) return NULL;
  return stmt_store(p->a, b, value, idx, n);
}

static const Stmt *parse_stmt_inner(Parser *p) {
  const Token *t = peek(p);
  if (t->kind != T_IDENT) return fail(p, t, "a statement");
  if (is_word(p, "for")) {
    advance(p);
    return parse_for(p);
  }
  if (is_word(p, "block")) {
    advance(p);
    return parse_block(p);
  }
  if (is_word(p, "if")) {
    advance(p);
    const Expr *cond = parse_expr(p);
    const Stmt *then_s, *else_s = NULL;
    if (!cond || !(then_s = parse_braced(p))) return NULL;
    if (is_word(p, "else")) {
      advance(p);
      if (!(else_s = parse_braced(p))) return NULL;
    }
    return stmt_if(p->a, cond, then_s, else_s);
  }
  if (is_word(p, "nop")) {
    advance(p);
    return stmt_nop(p->a);
  }
  if (is_word(p, "eval")) {
    advance(p);
    const Expr *v = parse_expr(p);
    if (!v) return NULL;
    Stmt *s = (Stmt *)stmt_nop(p->a); /* fresh node: no constructor takes a value */
    s->eval.value = v;
    return s;
  }
  if (is_word(p, "allocate")) {
    advance(p);
    Buffer *b = parse_buffer_decl(p);
    if (!b) return NULL;
    int saved = p->n_syms;
    scope_push_buffer(p, b);
    const Stmt *body = parse_braced(p);
    p->n_syms = saved;
    return body ? stmt_allocate(p->a, b, body) : NULL;
  }
  if (tok_is(peek_at(p, 1), T_PUNCT, "[")) return parse_store(p);
  return fail(p, t, "a statement (for, block, if, nop, eval, allocate or a store A[...] = ...)");
}

static const Stmt *parse_stmt(Parser *p) {
  if (!enter(p)) return NULL;
  const Stmt *s = parse_stmt_inner(p);
  p->depth--;
  return s;
}

/* ---- entry points ---- */

static PrimFunc *parse_func(Parser *p) {
  const char *name;
  if (!expect_word(p, "func") || !(name = parse_label(p, "a function name"))) return NULL;
  if (accept(p, "[")) { /* free variables: shape variables of the parameters */
    do {
      const Expr *v = parse_var_decl(p);
      if (!v) return NULL;
      scope_push_var(p, v);
    } while (accept(p, ","));
    if (!expect(p, "]")) return NULL;
  }
  if (!expect(p, "(")) return NULL;
  VEC(const Buffer *) params = {0};
  if (!accept(p, ")")) {
    do {
      Buffer *b = parse_buffer_decl(p);
      if (!b) return NULL;
      VEC_PUSH(p->a, params, b);
      scope_push_buffer(p, b);
    } while (accept(p, ","));
    if (!expect(p, ")")) return NULL;
  }
  const Stmt *body = parse_braced(p);
  if (!body) return NULL;
  if (peek(p)->kind != T_EOF) return fail(p, peek(p), "end of input after the function");
  return primfunc_new(p->a, name, params.items, params.n, body);
}

static void parser_init(Parser *p, Arena *a, LoomError *err) {
  memset(p, 0, sizeof *p);
  p->a = a;
  p->err = err;
  err_clear(err);
}

PrimFunc *tir_parse_func(Arena *a, const char *text, LoomError *err) {
  Parser p;
  parser_init(&p, a, err);
  if (!text) {
    err_set(err, LOOM_ERR_INVALID_ARG, "tir_parse_func: text is NULL");
    return NULL;
  }
  if (!tokenize(&p, text)) return NULL;
  return parse_func(&p);
}

const Expr *tir_parse_expr(Arena *a, const char *text, const TirScope *scope, LoomError *err) {
  Parser p;
  parser_init(&p, a, err);
  if (!text) {
    err_set(err, LOOM_ERR_INVALID_ARG, "tir_parse_expr: text is NULL");
    return NULL;
  }
  if (scope) {
    for (int i = 0; i < scope->n_vars; i++) scope_push_var(&p, scope->vars[i]);
    for (int i = 0; i < scope->n_buffers; i++) scope_push_buffer(&p, scope->buffers[i]);
  }
  if (!tokenize(&p, text)) return NULL;
  const Expr *e = parse_expr(&p);
  if (!e) return NULL;
  if (peek(&p)->kind != T_EOF) return fail(&p, peek(&p), "end of the expression");
  return e;
}

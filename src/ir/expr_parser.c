/* The expression parser and the lexer under it (expr_parser.h).
 *
 * Every failure sets one LOOM_ERR_PARSE message "line L, column C: expected
 * X, got Y" and unwinds by returning NULL; nothing is allocated outside the
 * caller's arena. */
#include "ir/expr_parser.h"

#include "support/vec.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ---- */

static void *fail_at(TextParser *p, int line, int col, const char *expected, const char *got) {
  if (!p->failed) {
    p->failed = true;
    err_set(p->err, LOOM_ERR_PARSE, "line %d, column %d: expected %s, got %s", line, col, expected, got);
  }
  return NULL;
}

/* "expected <what>, got '<token>'" at token t. */
void *parse_fail(TextParser *p, const TextToken *t, const char *expected) {
  char got[48];
  if (t->kind == TOK_EOF) snprintf(got, sizeof got, "end of input");
  else snprintf(got, sizeof got, "'%.*s%s'", t->len > 24 ? 24 : t->len, t->start, t->len > 24 ? "..." : "");
  return fail_at(p, t->line, t->col, expected, got);
}

/* "expected <what>, got <n>" at token t, for counts (arity, indices). */
void *parse_fail_count(TextParser *p, const TextToken *t, int got, const char *fmt, ...) {
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
static int lex_number(TextParser *p, const char *s, TextToken *t) {
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
  t->kind = is_float ? TOK_FLOAT : TOK_INT;
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
      parse_fail(p, t, "a dtype suffix such as i32 or f32");
      return -1;
    }
    t->has_suffix = true;
  }
  if (is_float) {
    char buf[64];
    if (num_len >= sizeof buf) {
      t->start = s;
      t->len = (int)num_len;
      parse_fail(p, t, "a float literal of at most 63 characters");
      return -1;
    }
    memcpy(buf, s, num_len);
    buf[num_len] = '\0';
    t->fval = strtod(buf, NULL);
  } else if (overflow) {
    t->start = s;
    t->len = (int)num_len;
    parse_fail(p, t, "an integer literal that fits in 64 bits");
    return -1;
  }
  t->mag = mag;
  return (int)(c - s);
}

/* Decodes a "..." string with \" \\ \n \xHH escapes; returns length or -1. */
static int lex_string(TextParser *p, const char *s, TextToken *t) {
  size_t cap = 16, n = 0;
  char *out = arena_alloc(p->a, cap);
  const char *c = s + 1;
  for (;;) {
    char ch = *c;
    if (ch == '\0' || ch == '\n') {
      t->start = s;
      t->len = (int)(c - s);
      t->kind = TOK_STRING;
      parse_fail(p, t, "a closing '\"'");
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
        parse_fail(p, t, "an escape \\\" \\\\ \\n or \\xHH (not \\x00)");
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
  t->kind = TOK_STRING;
  t->str = out;
  return (int)(c + 1 - s);
}

static const char *const two_char_puncts[] = {"==", "!=", "<=", ">=", "&&", "||"};
static const char one_char_puncts[] = "()[]{},:=<>+-*/%!";

bool parser_tokenize(TextParser *p, const char *src) {
  int cap = 64, n = 0, line = 1;
  const char *line_start = src;
  TextToken *toks = ARENA_ARRAY(p->a, TextToken, cap);
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
      TextToken *grown = ARENA_ARRAY(p->a, TextToken, cap * 2);
      memcpy(grown, toks, sizeof(TextToken) * (size_t)n);
      toks = grown;
      cap *= 2;
    }
    TextToken *t = &toks[n];
    memset(t, 0, sizeof *t);
    t->start = s;
    t->line = line;
    t->col = (int)(s - line_start) + 1;
    if (*s == '\0') {
      t->kind = TOK_EOF;
      n++;
      break;
    }
    int len = 0;
    if (is_ident_start(*s)) {
      while (is_ident_char(s[len])) len++;
      t->kind = TOK_IDENT;
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
        t->kind = TOK_PUNCT;
        parse_fail(p, t, "a token");
        return false;
      }
      t->kind = TOK_PUNCT;
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

const TextToken *parse_peek(const TextParser *p) { return &p->toks[p->pos]; }
const TextToken *parse_peek_at(const TextParser *p, int k) {
  int i = p->pos + k;
  return &p->toks[i < p->n_toks ? i : p->n_toks - 1];
}
const TextToken *parse_advance(TextParser *p) {
  const TextToken *t = &p->toks[p->pos];
  if (t->kind != TOK_EOF) p->pos++;
  return t;
}

bool token_is(const TextToken *t, TextTokenKind k, const char *text) {
  return t->kind == k && (int)strlen(text) == t->len && memcmp(t->start, text, (size_t)t->len) == 0;
}
bool parse_is_punct(const TextParser *p, const char *text) { return token_is(parse_peek(p), TOK_PUNCT, text); }
bool parse_is_word(const TextParser *p, const char *text) { return token_is(parse_peek(p), TOK_IDENT, text); }

bool parse_accept(TextParser *p, const char *punct) {
  if (!parse_is_punct(p, punct)) return false;
  parse_advance(p);
  return true;
}

bool parse_expect(TextParser *p, const char *punct) {
  if (parse_accept(p, punct)) return true;
  char what[16];
  snprintf(what, sizeof what, "'%s'", punct);
  parse_fail(p, parse_peek(p), what);
  return false;
}

bool parse_expect_word(TextParser *p, const char *word) {
  if (parse_is_word(p, word)) {
    parse_advance(p);
    return true;
  }
  char what[32];
  snprintf(what, sizeof what, "'%s'", word);
  parse_fail(p, parse_peek(p), what);
  return false;
}

const TextToken *parse_expect_ident(TextParser *p, const char *what) {
  if (parse_peek(p)->kind == TOK_IDENT) return parse_advance(p);
  return parse_fail(p, parse_peek(p), what);
}

const char *parse_token_str(TextParser *p, const TextToken *t) { return arena_strndup(p->a, t->start, (size_t)t->len); }

bool parse_enter(TextParser *p) {
  if (++p->depth <= PARSE_MAX_DEPTH) return true;
  parse_fail(p, parse_peek(p), "nesting at most 200 deep");
  return false;
}

/* ---- scope ---- */

static void scope_push(TextParser *p, const char *name, int len, bool is_buffer, const void *node) {
  if (p->n_syms == p->cap_syms) {
    int cap = p->cap_syms ? p->cap_syms * 2 : 32;
    TextSymbol *grown = ARENA_ARRAY(p->a, TextSymbol, cap);
    if (p->n_syms) memcpy(grown, p->syms, sizeof(TextSymbol) * (size_t)p->n_syms);
    p->syms = grown;
    p->cap_syms = cap;
  }
  p->syms[p->n_syms++] = (TextSymbol){name, len, is_buffer, node};
}

void parse_scope_push_var(TextParser *p, const Expr *v) { scope_push(p, v->var.name, (int)strlen(v->var.name), false, v); }
void parse_scope_push_buffer(TextParser *p, const Buffer *b) { scope_push(p, b->name, (int)strlen(b->name), true, b); }

/* Innermost symbol of the given kind named by token t. */
const void *parse_scope_find(const TextParser *p, const TextToken *t, bool is_buffer) {
  for (int i = p->n_syms - 1; i >= 0; i--) {
    const TextSymbol *s = &p->syms[i];
    if (s->is_buffer == is_buffer && s->len == t->len && memcmp(s->name, t->start, (size_t)t->len) == 0) return s->node;
  }
  return NULL;
}

/* ---- small pieces ---- */

bool parse_dtype(TextParser *p, DType *out) {
  const TextToken *t = parse_peek(p);
  char name[24];
  if (t->kind == TOK_IDENT && t->len < (int)sizeof name) {
    memcpy(name, t->start, (size_t)t->len);
    name[t->len] = '\0';
    if (dtype_parse(name, out)) {
      parse_advance(p);
      return true;
    }
  }
  parse_fail(p, t, "a dtype such as f32, i64 or f32x8");
  return false;
}

/* An int literal without suffix, optionally negative, within [lo, hi]. */
bool parse_small_int(TextParser *p, int64_t lo, int64_t hi, int64_t *out) {
  bool neg = parse_accept(p, "-");
  const TextToken *t = parse_peek(p);
  if (t->kind != TOK_INT || t->has_suffix || t->mag > (uint64_t)INT64_MAX) {
    parse_fail(p, t, "an integer");
    return false;
  }
  int64_t v = neg ? -(int64_t)t->mag : (int64_t)t->mag;
  if (v < lo || v > hi) {
    char what[80];
    snprintf(what, sizeof what, "an integer in [%lld, %lld]", (long long)lo, (long long)hi);
    parse_fail(p, t, what);
    return false;
  }
  parse_advance(p);
  *out = v;
  return true;
}

/* `name` or `name<dtype>`: a fresh variable (not yet in scope). */
const Expr *parse_var_decl(TextParser *p) {
  const TextToken *t = parse_expect_ident(p, "a variable name");
  if (!t) return NULL;
  DType dt = DT_I64;
  if (parse_accept(p, "<") && !(parse_dtype(p, &dt) && parse_expect(p, ">"))) return NULL;
  return expr_var(p->a, parse_token_str(p, t), dt);
}

/* A block or function name: identifier or string. */
const char *parse_label(TextParser *p, const char *what) {
  const TextToken *t = parse_peek(p);
  if (t->kind == TOK_STRING) return parse_advance(p)->str;
  if (t->kind == TOK_IDENT) return parse_token_str(p, parse_advance(p));
  return parse_fail(p, t, what);
}

/* ---- expressions ---- */

/* Comma-separated expressions up to `close`; returns count or -1. */
int parse_expr_list(TextParser *p, const char *close, const Expr ***out) {
  VEC(const Expr *) xs = {0};
  if (!parse_accept(p, close)) {
    do {
      const Expr *e = parse_expr(p);
      if (!e) return -1;
      VEC_PUSH(p->a, xs, e);
    } while (parse_accept(p, ","));
    if (!parse_expect(p, close)) return -1;
  }
  *out = xs.items;
  return xs.n;
}

static const Expr *parse_number(TextParser *p, bool neg) {
  const TextToken *t = parse_advance(p);
  if (t->kind == TOK_FLOAT) {
    if (!t->has_suffix || !dtype_is_float(t->dtype)) return parse_fail(p, t, "a float literal with a float dtype suffix (1.5f32)");
    return expr_float(p->a, t->dtype, neg ? -t->fval : t->fval);
  }
  if (dtype_is_float(t->dtype) || t->dtype.code == DT_HANDLE)
    return parse_fail(p, t, "an integer dtype suffix (a float literal needs a '.', as in 1.0f32)");
  int64_t v;
  if (neg && t->mag == (uint64_t)INT64_MAX + 1) v = INT64_MIN;
  else if (t->mag > (uint64_t)INT64_MAX) return parse_fail(p, t, "an integer literal that fits in int64");
  else v = neg ? -(int64_t)t->mag : (int64_t)t->mag;
  if (t->dtype.code == DT_BOOL && v != 0 && v != 1) return parse_fail(p, t, "0 or 1 for a bool literal");
  return expr_int(p->a, t->dtype, v);
}

/* `f32(inf)`, `f32(-inf)`, `f32(nan)` */
static const Expr *parse_special_float(TextParser *p, DType t) {
  if (!dtype_is_float(t)) return parse_fail(p, parse_peek_at(p, -1), "a float dtype before '(inf)'");
  if (!parse_expect(p, "(")) return NULL;
  bool neg = parse_accept(p, "-");
  double v;
  if (parse_is_word(p, "inf")) v = neg ? -INFINITY : INFINITY;
  else if (parse_is_word(p, "nan") && !neg) v = NAN;
  else return parse_fail(p, parse_peek(p), neg ? "'inf'" : "'inf' or 'nan'");
  parse_advance(p);
  if (!parse_expect(p, ")")) return NULL;
  return expr_float(p->a, t, v);
}

static bool parse_fixed_args(TextParser *p, const TextToken *head, int n, const Expr **args) {
  const Expr **xs;
  int got = parse_expr_list(p, ")", &xs);
  if (got < 0) return false;
  if (got != n) {
    parse_fail_count(p, head, got, "%d argument%s to '%.*s'", n, n == 1 ? "" : "s", head->len, head->start);
    return false;
  }
  for (int i = 0; i < n; i++) args[i] = xs[i];
  return true;
}

/* Skips one expression (for the reduce look-ahead): stops before a ',' or
 * ')' that is not nested. */
static bool skip_expr(TextParser *p) {
  int depth = 0;
  for (;;) {
    const TextToken *t = parse_peek(p);
    if (t->kind == TOK_EOF) {
      parse_fail(p, t, "')'");
      return false;
    }
    if (depth == 0 && (token_is(t, TOK_PUNCT, ",") || token_is(t, TOK_PUNCT, ")"))) return true;
    if (token_is(t, TOK_PUNCT, "(") || token_is(t, TOK_PUNCT, "[") || token_is(t, TOK_PUNCT, "{")) depth++;
    if (token_is(t, TOK_PUNCT, ")") || token_is(t, TOK_PUNCT, "]") || token_is(t, TOK_PUNCT, "}")) depth--;
    if (depth < 0) {
      parse_fail(p, t, "balanced brackets");
      return false;
    }
    parse_advance(p);
  }
}

/* reduce_sum(src, [k, 0, 16], ..., where=cond): the axes are declared after
 * the source that uses them, so parse them first and come back. */
static const Expr *parse_reduce(TextParser *p, ReduceOp op) {
  if (!parse_expect(p, "(")) return NULL;
  int src_pos = p->pos;
  if (!skip_expr(p)) return NULL;
  VEC(IterVar) axes = {0};
  const TextToken *where_tok = NULL;
  int where_pos = -1;
  while (parse_accept(p, ",")) {
    if (parse_is_word(p, "where")) {
      where_tok = parse_advance(p);
      if (!parse_expect(p, "=")) return NULL;
      where_pos = p->pos;
      if (!skip_expr(p)) return NULL;
      break;
    }
    IterVar iv = {0};
    iv.type = ITER_REDUCE;
    if (!parse_expect(p, "[") || !(iv.var = parse_var_decl(p)) || !parse_expect(p, ",") || !(iv.min = parse_expr(p)) ||
        !parse_expect(p, ",") || !(iv.extent = parse_expr(p)))
      return NULL;
    if (parse_accept(p, ",")) {
      if (parse_is_word(p, "spatial")) iv.type = ITER_SPATIAL;
      else if (!parse_is_word(p, "reduce")) return parse_fail(p, parse_peek(p), "'spatial' or 'reduce'");
      parse_advance(p);
    }
    if (!parse_expect(p, "]")) return NULL;
    VEC_PUSH(p->a, axes, iv);
  }
  if (!parse_expect(p, ")")) return NULL;
  if (axes.n == 0) return parse_fail(p, parse_peek_at(p, -1), "at least one reduction axis [k, min, extent]");
  int end = p->pos, saved = p->n_syms;
  for (int i = 0; i < axes.n; i++) parse_scope_push_var(p, axes.items[i].var);
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

static const Expr *parse_ident_expr(TextParser *p) {
  const TextToken *t = parse_advance(p);
  char name[24] = "";
  if (t->len < (int)sizeof name) {
    memcpy(name, t->start, (size_t)t->len);
    name[t->len] = '\0';
  }
  const Expr *args[3];
  DType dt;
  CallOp op;
  if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0) return expr_bool(p->a, name[0] == 't');
  if (parse_is_punct(p, "(") && dtype_parse(name, &dt)) return parse_special_float(p, dt);
  if (strcmp(name, "select") == 0) {
    if (!parse_expect(p, "(") || !parse_fixed_args(p, t, 3, args)) return NULL;
    return expr_select(p->a, args[0], args[1], args[2]);
  }
  if (strcmp(name, "cast") == 0) {
    if (!parse_expect(p, "(") || !parse_dtype(p, &dt) || !parse_expect(p, ",") || !(args[0] = parse_expr(p)) || !parse_expect(p, ")"))
      return NULL;
    return expr_cast(p->a, dt, args[0]);
  }
  if (strcmp(name, "ramp") == 0 || strcmp(name, "broadcast") == 0) {
    bool ramp = name[0] == 'r';
    int64_t lanes;
    if (!parse_expect(p, "(") || !(args[0] = parse_expr(p)) || !parse_expect(p, ",")) return NULL;
    if (ramp && !((args[1] = parse_expr(p)) && parse_expect(p, ","))) return NULL;
    if (!parse_small_int(p, 1, PARSE_MAX_LANES, &lanes) || !parse_expect(p, ")")) return NULL;
    return ramp ? expr_ramp(p->a, args[0], args[1], (int)lanes) : expr_broadcast(p->a, args[0], (int)lanes);
  }
  static const struct { const char *name; ExprKind kind; } binfns[] = {
      {"floordiv", EXPR_FLOORDIV}, {"floormod", EXPR_FLOORMOD}, {"min", EXPR_MIN}, {"max", EXPR_MAX}};
  for (size_t i = 0; i < sizeof binfns / sizeof binfns[0]; i++)
    if (strcmp(name, binfns[i].name) == 0) {
      if (!parse_expect(p, "(") || !parse_fixed_args(p, t, 2, args)) return NULL;
      return expr_binary(p->a, binfns[i].kind, args[0], args[1]);
    }
  static const struct { const char *name; ReduceOp op; } reducers[] = {
      {"reduce_sum", REDUCE_SUM}, {"reduce_max", REDUCE_MAX}, {"reduce_min", REDUCE_MIN}, {"reduce_prod", REDUCE_PROD}};
  for (size_t i = 0; i < sizeof reducers / sizeof reducers[0]; i++)
    if (strcmp(name, reducers[i].name) == 0) return parse_reduce(p, reducers[i].op);
  if (call_op_parse(name, &op)) {
    bool typed = parse_accept(p, "<");
    if (typed && !(parse_dtype(p, &dt) && parse_expect(p, ">"))) return NULL;
    if (!parse_expect(p, "(")) return NULL;
    const Expr **xs;
    int n = parse_expr_list(p, ")", &xs);
    if (n < 0) return NULL;
    if (n != call_op_arity(op)) {
      int want = call_op_arity(op);
      return parse_fail_count(p, t, n, "%d argument%s to '%s'", want, want == 1 ? "" : "s", name);
    }
    return expr_call(p->a, op, typed ? dt : xs[0]->dtype, xs, n);
  }
  if (parse_is_punct(p, "[")) {
    const Buffer *b = parse_scope_find(p, t, true);
    if (!b) return parse_fail(p, t, "a buffer in scope");
    parse_advance(p);
    const Expr **idx;
    int n = parse_expr_list(p, "]", &idx);
    if (n < 0) return NULL;
    if (n != b->ndim) {
      return parse_fail_count(p, t, n, "%d indices for buffer '%s'", b->ndim, b->name);
    }
    return expr_load(p->a, b, idx, n);
  }
  const Expr *v = parse_scope_find(p, t, false);
  if (!v) return parse_fail(p, t, "a variable in scope");
  return v;
}

static const Expr *parse_primary(TextParser *p) {
  const TextToken *t = parse_peek(p);
  if (parse_accept(p, "(")) {
    const Expr *e = parse_expr(p);
    if (!e || !parse_expect(p, ")")) return NULL;
    return e;
  }
  if (token_is(t, TOK_PUNCT, "-") && (parse_peek_at(p, 1)->kind == TOK_INT || parse_peek_at(p, 1)->kind == TOK_FLOAT)) {
    parse_advance(p);
    return parse_number(p, true);
  }
  if (t->kind == TOK_INT || t->kind == TOK_FLOAT) return parse_number(p, false);
  if (t->kind == TOK_IDENT) return parse_ident_expr(p);
  return parse_fail(p, t, "an expression");
}

static const Expr *parse_unary(TextParser *p) {
  if (!parse_enter(p)) return NULL;
  const Expr *e;
  if (parse_accept(p, "!")) {
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
static const Expr *parse_binary(TextParser *p, int min_prec) {
  int saved_depth = p->depth;
  const Expr *lhs = parse_unary(p);
  while (lhs) {
    int k = -1;
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++)
      if (parse_is_punct(p, binops[i].op) && binops[i].prec >= min_prec) k = (int)i;
    if (k < 0) break;
    parse_advance(p);
    /* a long chain a+b+c+... builds a deep left spine: count it as nesting */
    if (!parse_enter(p)) return NULL;
    const Expr *rhs = parse_binary(p, binops[k].prec + 1);
    if (!rhs) return NULL;
    lhs = expr_binary(p->a, binops[k].kind, lhs, rhs);
  }
  p->depth = saved_depth;
  return lhs;
}

const Expr *parse_expr(TextParser *p) { return parse_binary(p, 1); }

/* ---- entry points ---- */

void parser_init(TextParser *p, Arena *a, LoomError *err) {
  memset(p, 0, sizeof *p);
  p->a = a;
  p->err = err;
  err_clear(err);
}

/* Tokenizes text with the scope's names declared. */
static bool parser_start(TextParser *p, Arena *a, const char *text, const ExprScope *scope, LoomError *err,
                         const char *who) {
  parser_init(p, a, err);
  if (!text) {
    err_set(err, LOOM_ERR_INVALID_ARG, "%s: text is NULL", who);
    return false;
  }
  if (scope) {
    for (int i = 0; i < scope->n_vars; i++) parse_scope_push_var(p, scope->vars[i]);
    for (int i = 0; i < scope->n_buffers; i++) parse_scope_push_buffer(p, scope->buffers[i]);
  }
  return parser_tokenize(p, text);
}

const Expr *expr_parse(Arena *a, const char *text, const ExprScope *scope, LoomError *err) {
  TextParser p;
  if (!parser_start(&p, a, text, scope, err, "expr_parse")) return NULL;
  const Expr *e = parse_expr(&p);
  if (!e) return NULL;
  if (parse_peek(&p)->kind != TOK_EOF) return parse_fail(&p, parse_peek(&p), "end of the expression");
  return e;
}

bool expr_parse_var_decl(Arena *a, const char *text, const ExprScope *scope, const Expr **var, const Expr **min,
                         const Expr **extent, LoomError *err) {
  TextParser p;
  if (!parser_start(&p, a, text, scope, err, "expr_parse_var_decl")) return false;
  const Expr *v = parse_var_decl(&p);
  if (!v) return false;
  const Expr *lo = NULL, *ext = NULL;
  if (parse_is_word(&p, "in")) {
    parse_advance(&p);
    if (!(lo = parse_expr(&p)) || !parse_expect(&p, ":") || !(ext = parse_expr(&p))) return false;
  }
  if (parse_peek(&p)->kind != TOK_EOF) {
    parse_fail(&p, parse_peek(&p), lo ? "end of the declaration" : "'in' or end of the declaration");
    return false;
  }
  *var = v;
  *min = lo;
  *extent = ext;
  return true;
}

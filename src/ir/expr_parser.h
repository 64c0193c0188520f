/* The expression parser: reads what expr_print writes (syntax in
 * docs/tir.md, "Expressions"), so every layer from arith up can write its
 * test inputs as text: `floordiv(i * 8 + j, 8)`.
 *
 * It lives here, below arith, and the loop IR's statement parser
 * (tir/parser.c) is built on its lexer, token helpers and scope (the second
 * half of this header). Errors are one LOOM_ERR_PARSE message "line L,
 * column C: expected X, got Y"; nothing is allocated outside the caller's
 * arena, and nesting is capped so hostile input cannot exhaust the stack. */
#ifndef LOOM_IR_EXPR_PARSER_H
#define LOOM_IR_EXPR_PARSER_H

#include "ir/expr.h"
#include "support/error.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- for tests and tools ---- */

/* Names an expression may refer to: the variables and buffers listed, by
 * their own names (var->var.name, buffer->name; a later entry hides an
 * earlier one of the same name). Either list may be empty. */
typedef struct ExprScope {
  const Expr *const *vars;
  int n_vars;
  const Buffer *const *buffers;
  int n_buffers;
} ExprScope;

/* Parses one expression; scope may be NULL. Infix operations may be written
 * with C precedence instead of the printer's parentheses: `x * 4 + y`. */
const Expr *expr_parse(Arena *a, const char *text, const ExprScope *scope, LoomError *err);

/* Parses a variable declaration `name[<dtype>] [in min:extent]` (dtype i64
 * when left out): *var is a fresh variable; *min and *extent (expressions
 * over scope) are its range, NULL when no `in` part is given. */
bool expr_parse_var_decl(Arena *a, const char *text, const ExprScope *scope, const Expr **var, const Expr **min,
                         const Expr **extent, LoomError *err);

/* ---- for parsers of larger forms built on this one (tir/parser.c) ---- */

typedef enum TextTokenKind { TOK_EOF, TOK_IDENT, TOK_INT, TOK_FLOAT, TOK_STRING, TOK_PUNCT } TextTokenKind;

typedef struct TextToken {
  TextTokenKind kind;
  const char *start;
  int len, line, col;
  uint64_t mag;    /* TOK_INT: magnitude */
  double fval;     /* TOK_FLOAT */
  DType dtype;     /* TOK_INT/TOK_FLOAT: suffix, or i64 when none */
  bool has_suffix;
  const char *str; /* TOK_STRING: decoded */
} TextToken;

typedef struct TextSymbol {
  const char *name;
  int len;
  bool is_buffer;
  const void *node;
} TextSymbol;

/* Recursive descent over a token array (tokenized up front, so a rule may
 * look ahead and come back: the reduce form parses its axes before its
 * source). `failed` is set by the first error, whose message is in err. */
typedef struct TextParser {
  Arena *a;
  LoomError *err;
  bool failed;
  TextToken *toks;
  int n_toks, pos;
  TextSymbol *syms; /* the scope: a stack, innermost last */
  int n_syms, cap_syms;
  int depth;
} TextParser;

enum { PARSE_MAX_DEPTH = 200, PARSE_MAX_LANES = 1024 };

/* Clears err. */
void parser_init(TextParser *p, Arena *a, LoomError *err);
/* Splits text into tokens (`#` to the end of a line is a comment); false
 * after an error. */
bool parser_tokenize(TextParser *p, const char *text);

/* The helpers below that return a pointer return NULL after an error, so a
 * rule can `return parse_fail(...)`. */
const TextToken *parse_peek(const TextParser *p);
const TextToken *parse_peek_at(const TextParser *p, int k); /* k tokens ahead (negative: behind) */
const TextToken *parse_advance(TextParser *p);
bool token_is(const TextToken *t, TextTokenKind k, const char *text);
bool parse_is_punct(const TextParser *p, const char *text);
bool parse_is_word(const TextParser *p, const char *text);
bool parse_accept(TextParser *p, const char *punct);
bool parse_expect(TextParser *p, const char *punct);
bool parse_expect_word(TextParser *p, const char *word);
const TextToken *parse_expect_ident(TextParser *p, const char *what);
const char *parse_token_str(TextParser *p, const TextToken *t); /* the token's text, in the arena */
/* "line L, column C: expected <expected>, got '<token t>'" */
void *parse_fail(TextParser *p, const TextToken *t, const char *expected);
/* "... expected <fmt...>, got <got>" at t, for counts (arity, indices). */
void *parse_fail_count(TextParser *p, const TextToken *t, int got, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* One level deeper; false (an error) past PARSE_MAX_DEPTH. The caller
 * decrements p->depth when it leaves. */
bool parse_enter(TextParser *p);

void parse_scope_push_var(TextParser *p, const Expr *v);
void parse_scope_push_buffer(TextParser *p, const Buffer *b);
/* The innermost variable (or buffer) named by t, or NULL. */
const void *parse_scope_find(const TextParser *p, const TextToken *t, bool is_buffer);

const Expr *parse_expr(TextParser *p);
/* Comma-separated expressions up to `close` (consumed); the count, or -1. */
int parse_expr_list(TextParser *p, const char *close, const Expr ***out);
bool parse_dtype(TextParser *p, DType *out);
/* An int literal without suffix, optionally negative, within [lo, hi]. */
bool parse_small_int(TextParser *p, int64_t lo, int64_t hi, int64_t *out);
/* `name` or `name<dtype>`: a fresh variable, not yet in scope. */
const Expr *parse_var_decl(TextParser *p);
/* A block or function name: an identifier or a string. */
const char *parse_label(TextParser *p, const char *what);

#endif

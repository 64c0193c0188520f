/* Runs .arith test files (in tests/unit/arith/; the format is in
 * docs/tir.md, "Testing passes as text"): variables with their ranges, then
 * one check per line on the analyzer those ranges are bound to:
 *
 *   var i in 0:16                  a variable (i64 unless `var v<f32>`) and its range
 *   floordiv(i * 8 + j, 8) -> i    arith_simplify gives exactly the right side
 *   prove i * 8 + j < 128          arith_can_prove holds
 *   cannot_prove i < 15            arith_can_prove does not hold
 *   prove_equal x + y == y + x     arith_can_prove_equal of the two sides
 *   bound i * 8 + j -> [0, 127]    arith_const_bound (-inf / inf: unbounded)
 *
 * Expressions are parsed with expr_parse over the variables declared above
 * them. A simplification of an integer expression is also evaluated at 64
 * random points of the variables' ranges (a variable without one takes
 * values in [-100, 100]) and must give the input's value wherever the input
 * has one. One cmocka test per check, named FILE:LINE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "arith/arith.h"
#include "ir/expr_parser.h"
#include "unit/text_cases.h"

typedef enum CheckKind { CHECK_SIMPLIFY, CHECK_PROVE, CHECK_CANNOT_PROVE, CHECK_PROVE_EQUAL, CHECK_BOUND } CheckKind;

typedef struct ArithVar {
  const Expr *var, *min, *extent; /* min/extent NULL: no range */
} ArithVar;

typedef struct ArithFile {
  Arena *a;
  Analyzer *az;
  ArithVar *vars;
  const Expr **var_nodes; /* vars[k].var: the scope of expr_parse */
  int n_vars;
} ArithFile;

typedef struct ArithCheck {
  ArithFile *file;
  CheckKind kind;
  char name[128];         /* FILE:LINE */
  int n_vars;             /* the variables declared above it */
  const char *lhs, *rhs;  /* the sides of `->`; rhs NULL without one */
} ArithCheck;

static const Expr *parse_side(ArithCheck *c, const char *text) {
  ExprScope scope = {c->file->var_nodes, c->n_vars, NULL, 0};
  LoomError err = {0};
  const Expr *e = expr_parse(c->file->a, text, &scope, &err);
  if (!e) fail_msg("%s: '%s': %s", c->name, text, err.msg);
  return e;
}

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Evaluates `in` and `out` at random points of the ranges of the first n
 * variables; they must agree wherever `in` has a value. */
static void check_same_values(ArithCheck *c, const Expr *in, const Expr *out) {
  ArithFile *f = c->file;
  int64_t *vals = calloc((size_t)(c->n_vars ? c->n_vars : 1), sizeof(int64_t));
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int point = 0; point < 64; point++) {
    PtrMap values;
    ptrmap_init(&values, f->a);
    bool ok = true;
    for (int i = 0; i < c->n_vars && ok; i++) {
      const ArithVar *v = &f->vars[i];
      if (!dtype_is_int(v->var->dtype) || v->var->dtype.lanes != 1) continue;
      int64_t lo = -100, ext = 201;
      if (v->min) ok = arith_eval_int(v->min, &values, &lo) && arith_eval_int(v->extent, &values, &ext) && ext > 0;
      vals[i] = lo + (int64_t)(rng_next(&seed) % (uint64_t)(ext > 0 ? ext : 1));
      ptrmap_put(&values, v->var, &vals[i]);
    }
    int64_t want, got;
    if (!ok || !arith_eval_int(in, &values, &want)) continue;
    if (!arith_eval_int(out, &values, &got) || got != want) {
      char at[256] = "";
      size_t len = 0;
      for (int i = 0; i < c->n_vars && len < sizeof at; i++)
        len += (size_t)snprintf(at + len, sizeof at - len, " %s=%lld", f->vars[i].var->var.name, (long long)vals[i]);
      fail_msg("%s: %s simplifies to %s, which differs at%s (%lld, not %lld)", c->name, expr_to_string(f->a, in),
               expr_to_string(f->a, out), at, (long long)got, (long long)want);
    }
  }
  free(vals);
}

/* One end of a bound: an integer, or -inf / inf (unbounded). */
static bool parse_bound_value(const char *s, int64_t *out) {
  while (*s == ' ') s++;
  if (strncmp(s, "-inf", 4) == 0 || strncmp(s, "inf", 3) == 0) {
    *out = s[0] == '-' ? INT64_MIN : INT64_MAX;
    return true;
  }
  char *end;
  *out = strtoll(s, &end, 10);
  return end != s;
}

static void run_check(void **state) {
  ArithCheck *c = *state;
  ArithFile *f = c->file;
  const Expr *e = parse_side(c, c->lhs);
  switch (c->kind) {
    case CHECK_SIMPLIFY: {
      const Expr *want = parse_side(c, c->rhs), *got = arith_simplify(f->az, e);
      if (!expr_equal(got, want))
        fail_msg("%s: %s simplifies to\n  %s\nexpected\n  %s", c->name, expr_to_string(f->a, e),
                 expr_to_string(f->a, got), expr_to_string(f->a, want));
      check_same_values(c, e, got);
      break;
    }
    case CHECK_PROVE:
    case CHECK_CANNOT_PROVE:
      if (arith_can_prove(f->az, e) != (c->kind == CHECK_PROVE))
        fail_msg("%s: expected %s to be %s", c->name, expr_to_string(f->a, e),
                 c->kind == CHECK_PROVE ? "proven" : "not proven");
      break;
    case CHECK_PROVE_EQUAL:
      if (e->kind != EXPR_EQ) fail_msg("%s: prove_equal wants A == B", c->name);
      if (!arith_can_prove_equal(f->az, e->bin.a, e->bin.b))
        fail_msg("%s: cannot prove %s", c->name, expr_to_string(f->a, e));
      break;
    case CHECK_BOUND: {
      int64_t lo, hi;
      const char *comma = strchr(c->rhs, ',');
      if (c->rhs[0] != '[' || !comma || !parse_bound_value(c->rhs + 1, &lo) || !parse_bound_value(comma + 1, &hi))
        fail_msg("%s: expected a bound [LO, HI], got '%s'", c->name, c->rhs);
      IntBound b = arith_const_bound(f->az, e);
      if (b.min != lo || b.max != hi)
        fail_msg("%s: bound of %s is [%lld, %lld], expected %s", c->name, expr_to_string(f->a, e), (long long)b.min,
                 (long long)b.max, c->rhs);
      break;
    }
  }
}

/* The line without its comment and surrounding blanks, in the arena. */
static char *trimmed(Arena *a, const char *line) {
  size_t n = strcspn(line, "#");
  while (n && isspace((unsigned char)line[n - 1])) n--;
  while (n && isspace((unsigned char)*line)) line++, n--;
  return arena_strndup(a, line, n);
}

static const struct {
  const char *word;
  CheckKind kind;
} keywords[] = {{"prove", CHECK_PROVE}, {"cannot_prove", CHECK_CANNOT_PROVE}, {"prove_equal", CHECK_PROVE_EQUAL},
                {"bound", CHECK_BOUND}};

/* Reads the variables and checks of one file; false on a malformed line
 * (message on stderr). */
static bool read_file(const char *path, const TextLines *lines, ArithFile *f, ArithCheck **out, int *n_out) {
  f->vars = calloc((size_t)lines->n + 1, sizeof(ArithVar));
  f->var_nodes = calloc((size_t)lines->n + 1, sizeof(const Expr *));
  ArithCheck *checks = calloc((size_t)lines->n + 1, sizeof(ArithCheck));
  int n = 0;
  for (int i = 0; i < lines->n; i++) {
    char *t = trimmed(f->a, lines->line[i]);
    if (!*t) continue;
    if (strncmp(t, "var ", 4) == 0) {
      ArithVar *v = &f->vars[f->n_vars];
      ExprScope scope = {f->var_nodes, f->n_vars, NULL, 0};
      LoomError err = {0};
      if (!expr_parse_var_decl(f->a, t + 4, &scope, &v->var, &v->min, &v->extent, &err)) {
        fprintf(stderr, "%s:%d: %s\n", path, i + 1, err.msg);
        return false;
      }
      if (v->min) arith_bind_range(f->az, v->var, v->min, v->extent);
      f->var_nodes[f->n_vars++] = v->var;
      continue;
    }
    ArithCheck *c = &checks[n++];
    c->file = f;
    c->n_vars = f->n_vars;
    c->kind = CHECK_SIMPLIFY;
    snprintf(c->name, sizeof c->name, "%s:%d", path, i + 1);
    for (size_t k = 0; k < sizeof keywords / sizeof keywords[0]; k++) {
      size_t len = strlen(keywords[k].word);
      if (strncmp(t, keywords[k].word, len) == 0 && t[len] == ' ') {
        c->kind = keywords[k].kind;
        t += len + 1;
        break;
      }
    }
    char *arrow = strstr(t, "->");
    bool wants_arrow = c->kind == CHECK_SIMPLIFY || c->kind == CHECK_BOUND;
    if (wants_arrow != (arrow != NULL)) {
      fprintf(stderr, "%s:%d: %s\n", path, i + 1,
              wants_arrow ? "expected `EXPR -> RESULT`" : "unexpected '->' after prove/cannot_prove/prove_equal");
      return false;
    }
    if (arrow) {
      c->lhs = trimmed(f->a, arena_strndup(f->a, t, (size_t)(arrow - t)));
      c->rhs = trimmed(f->a, arrow + 2);
    } else {
      c->lhs = t;
    }
  }
  *out = checks;
  *n_out = n;
  return n > 0 || (fprintf(stderr, "%s: no checks\n", path), false);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.arith...\n", argv[0]);
    return 2;
  }
  int failed = 0;
  for (int i = 1; i < argc; i++) {
    TextLines lines;
    if (!text_lines_read(argv[i], &lines)) return 1;
    ArithFile f = {0};
    f.a = arena_new();
    f.az = arith_analyzer_new(f.a);
    ArithCheck *checks;
    int n;
    if (!read_file(argv[i], &lines, &f, &checks, &n)) return 1;
    struct CMUnitTest *tests = calloc((size_t)n, sizeof *tests);
    for (int k = 0; k < n; k++) tests[k] = (struct CMUnitTest){checks[k].name, run_check, NULL, NULL, &checks[k]};
    failed += _cmocka_run_group_tests(argv[i], tests, (size_t)n, NULL, NULL);
    free(tests);
    free(checks);
    free(f.vars);
    free(f.var_nodes);
    arena_free(f.a);
    text_lines_free(&lines);
  }
  return failed ? 1 : 0;
}

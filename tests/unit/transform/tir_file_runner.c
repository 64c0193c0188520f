/* Runs .tir test files (in tests/unit/transform/; the format is in docs/tir.md,
 * "Testing passes as text"): each case is a function in the loop IR's text,
 * the passes to run on it, and what must hold afterwards: the exact text
 * the printer gives, the same results on the reference interpreter, the
 * function returned unchanged, or an error. One cmocka test per case,
 * named FILE:LINE; a wrong output prints a diff.
 *
 *   tir_file_runner FILE.tir...
 *   LOOM_TIR_UPDATE=1 tir_file_runner FILE.tir...   rewrites each `# expect:`
 *                     block with the output instead of comparing (review the
 *                     change with git diff). */
#include "transform_check.h"

#include "tir/text.h"
#include "unit/text_cases.h"

typedef struct TirCase {
  const char *file;
  const TextLines *lines;
  int first, end;   /* its lines [first, end) of the file, 0-based; first is the `# pass:` line */
  int src_first, src_end; /* the lines holding its function: its own, or the case's before it */
  const char *passes, *checks, *options, *error;
  int expect_first; /* the first line of the `# expect:` block, -1 without one */
  int expect_end;
  char name[128];   /* FILE:LINE */
  char *output;     /* update mode: the printed result (malloc'd) */
} TirCase;

/* The lines of the case's function with every other line of the file left
 * blank, so the parser's line numbers are the file's. malloc'd. */
static char *case_text(const TirCase *c) {
  size_t n = 0;
  for (int i = 0; i < c->src_end; i++) n += (i >= c->src_first ? strlen(c->lines->line[i]) : 0) + 1;
  char *text = malloc(n + 1), *o = text;
  for (int i = 0; i < c->src_end; i++) {
    if (i >= c->src_first) o += sprintf(o, "%s", c->lines->line[i]);
    *o++ = '\n';
  }
  *o = '\0';
  return text;
}

/* The expected output: the `# expect:` block without its "# " prefixes. */
static char *expected_text(const TirCase *c) {
  size_t n = 0;
  for (int i = c->expect_first; i < c->expect_end; i++) n += strlen(c->lines->line[i]) + 1;
  char *text = malloc(n + 1), *o = text;
  for (int i = c->expect_first; i < c->expect_end; i++) {
    const char *l = c->lines->line[i] + 1;
    if (*l == ' ') l++;
    o += sprintf(o, "%s\n", l);
  }
  *o = '\0';
  return text;
}

static LowerOptions case_options(const TirCase *c) {
  LowerOptions opt = lower_options_default();
  const char *s = c->options ? c->options : "";
  char item[64];
  while (text_next_item(&s, item, sizeof item)) {
    char *eq = strchr(item, '=');
    if (!eq) fail_msg("%s: option '%s' is not KEY=VALUE", c->name, item);
    *eq = '\0';
    const char *v = eq + 1;
    bool on = strcmp(v, "true") == 0;
    if (!on && strcmp(v, "false") != 0 && strcmp(item, "max_unroll_extent") != 0)
      fail_msg("%s: option %s wants true or false, got '%s'", c->name, item, v);
    if (strcmp(item, "partition_loops") == 0) opt.partition_loops = on;
    else if (strcmp(item, "storage_rewrite") == 0) opt.storage_rewrite = on;
    else if (strcmp(item, "compact_buffers") == 0) opt.compact_buffers = on;
    else if (strcmp(item, "max_unroll_extent") == 0) opt.max_unroll_extent = atoi(v);
    else fail_msg("%s: unknown option '%s' (partition_loops, storage_rewrite, compact_buffers, max_unroll_extent)",
                  c->name, item);
  }
  return opt;
}

static void run_case(void **state) {
  TirCase *c = *state;
  Arena *a = arena_new();
  LoomError err = {0};
  char *text = case_text(c);
  const PrimFunc *input = tir_parse_func(a, text, &err);
  free(text);
  if (!input) fail_msg("%s: %s", c->file, err.msg);
  LowerOptions opt = case_options(c);
  const PrimFunc *f = input;
  const char *s = c->passes;
  char name[64];
  int n_passes = 0;
  while (text_next_item(&s, name, sizeof name)) {
    const TirPass *pass = tir_pass_find(name);
    if (!pass) fail_msg("%s: no pass named '%s'", c->name, name);
    n_passes++;
    f = pass->run(a, f, &opt, &err);
    if (f) continue;
    if (!c->error) fail_msg("%s: pass %s failed: %s", c->name, name, err.msg);
    if (!strstr(err.msg, c->error)) fail_msg("%s: pass %s failed with '%s', expected '%s'", c->name, name, err.msg, c->error);
    arena_free(a);
    return;
  }
  if (n_passes == 0) fail_msg("%s: '# pass:' names no pass", c->name);
  if (c->error) {
    xc_print("output", f);
    fail_msg("%s: the passes succeeded, expected an error '%s'", c->name, c->error);
  }
  bool checked = false;
  s = c->checks ? c->checks : "";
  char check[64];
  while (text_next_item(&s, check, sizeof check)) {
    checked = true;
    if (strcmp(check, "equal-results") == 0) {
      for (uint64_t seed = 1; seed <= 2; seed++) xc_check_same(input, f, (uint64_t)c->first * 2 + seed);
    } else if (strcmp(check, "unchanged") == 0) {
      if (f != input) {
        xc_print("output", f);
        fail_msg("%s: the passes changed the function (check: unchanged)", c->name);
      }
    } else {
      fail_msg("%s: unknown check '%s' (equal-results, unchanged)", c->name, check);
    }
  }
  if (c->expect_first >= 0) {
    checked = true;
    char *want = expected_text(c), *got = tir_print_func(f);
    if (getenv("LOOM_TIR_UPDATE")) {
      c->output = got;
    } else {
      if (strcmp(want, got) != 0) {
        fprintf(stderr, "%s: output differs from # expect: (- expected, + output)\n", c->name);
        text_print_diff(want, got);
        fail_msg("%s: wrong output", c->name);
      }
      free(got);
    }
    free(want);
  }
  if (!checked) fail_msg("%s: the case checks nothing (add # check: or # expect:)", c->name);
  arena_free(a);
}

/* Splits the file into cases, one per `# pass:` line; false on a
 * malformed file (message on stderr). */
static bool find_cases(const char *file, const TextLines *lines, TirCase **out, int *n_out) {
  int n = 0;
  for (int i = 0; i < lines->n; i++) n += text_directive(lines->line[i], "pass") != NULL;
  TirCase *cases = calloc((size_t)(n ? n : 1), sizeof(TirCase));
  int k = -1;
  for (int i = 0; i < lines->n; i++) {
    const char *l = lines->line[i], *v;
    if ((v = text_directive(l, "pass"))) {
      if (k >= 0) cases[k].end = i;
      TirCase *c = &cases[++k];
      c->file = file;
      c->lines = lines;
      c->first = i;
      c->passes = v;
      c->expect_first = -1;
      snprintf(c->name, sizeof c->name, "%s:%d", file, i + 1);
      continue;
    }
    const char **slot = NULL;
    if (k >= 0 && (v = text_directive(l, "check"))) slot = &cases[k].checks;
    else if (k >= 0 && (v = text_directive(l, "options"))) slot = &cases[k].options;
    else if (k >= 0 && (v = text_directive(l, "error"))) slot = &cases[k].error;
    if (slot) {
      *slot = v;
    } else if (k >= 0 && text_directive(l, "expect")) {
      int j = i + 1;
      while (j < lines->n && lines->line[j][0] == '#' && !text_directive(lines->line[j], "pass")) j++;
      cases[k].expect_first = i + 1;
      cases[k].expect_end = j;
      i = j - 1;
    } else if (k < 0 && l[0] != '#' && l[strspn(l, " \t\r")] != '\0') {
      fprintf(stderr, "%s:%d: expected a '# pass:' line before the function\n", file, i + 1);
      free(cases);
      return false;
    }
  }
  if (k >= 0) cases[k].end = lines->n;
  for (k = 0; k < n; k++) {
    TirCase *c = &cases[k];
    bool has_func = false;
    for (int i = c->first; i < c->end && !has_func; i++) {
      const char *l = lines->line[i] + strspn(lines->line[i], " \t\r");
      has_func = *l && *l != '#';
    }
    c->src_first = has_func ? c->first : k ? cases[k - 1].src_first : -1;
    c->src_end = has_func ? c->end : k ? cases[k - 1].src_end : -1;
    if (c->src_first < 0) {
      fprintf(stderr, "%s: the first case has no function\n", c->name);
      free(cases);
      return false;
    }
  }
  *out = cases;
  *n_out = n;
  return n > 0 || (fprintf(stderr, "%s: no cases (a case starts with '# pass: NAME, ...')\n", file), false);
}

/* Update mode: writes the file back with each case's expect block replaced
 * by its output. */
static bool rewrite_expectations(const char *file, const TextLines *lines, const TirCase *cases, int n) {
  FILE *fp = fopen(file, "wb");
  if (!fp) return false;
  int skip_to = 0;
  for (int i = 0; i <= lines->n; i++) {
    for (int k = 0; k < n; k++) {
      if (cases[k].expect_first != i || !cases[k].output) continue;
      char **out_lines;
      int m = text_split(cases[k].output, &out_lines);
      for (int j = 0; j < m; j++) fprintf(fp, "# %s\n", out_lines[j]);
      free(out_lines);
      skip_to = cases[k].expect_end;
    }
    if (i < lines->n && i >= skip_to) fprintf(fp, "%s\n", lines->line[i]);
  }
  return fclose(fp) == 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE.tir...\n", argv[0]);
    return 2;
  }
  int failed = 0;
  for (int f = 1; f < argc; f++) {
    TextLines lines;
    TirCase *cases;
    int n;
    if (!text_lines_read(argv[f], &lines)) return 1;
    if (!find_cases(argv[f], &lines, &cases, &n)) {
      text_lines_free(&lines);
      return 1;
    }
    struct CMUnitTest *tests = calloc((size_t)n, sizeof *tests);
    for (int i = 0; i < n; i++) tests[i] = (struct CMUnitTest){cases[i].name, run_case, NULL, NULL, &cases[i]};
    failed += _cmocka_run_group_tests(argv[f], tests, (size_t)n, NULL, NULL);
    if (getenv("LOOM_TIR_UPDATE") && !rewrite_expectations(argv[f], &lines, cases, n)) {
      fprintf(stderr, "%s: cannot write\n", argv[f]);
      failed++;
    }
    for (int i = 0; i < n; i++) free(cases[i].output);
    free(tests);
    free(cases);
    text_lines_free(&lines);
  }
  return failed ? 1 : 0;
}

/* Reading the text-driven test files (.tir in tests/unit/transform/, .arith in
 * tests/unit/arith/): the file as lines, `# key: value` directives, and a line
 * diff for failures. Shared by
 * tests/unit/transform/tir_file_runner.c and tests/unit/arith/arith_file_runner.c
 * (static functions only). */
#ifndef LOOM_TESTS_TEXT_CASES_H
#define LOOM_TESTS_TEXT_CASES_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Splits text into lines in place (text is modified); returns the count. */
static inline int text_split(char *text, char ***lines) {
  int n = 0, cap = 16;
  *lines = malloc(sizeof(char *) * (size_t)cap);
  for (char *c = text; *c;) {
    if (n == cap) *lines = realloc(*lines, sizeof(char *) * (size_t)(cap *= 2));
    (*lines)[n++] = c;
    char *nl = strchr(c, '\n');
    if (!nl) break;
    *nl = '\0';
    c = nl + 1;
  }
  return n;
}

/* A file split into lines (without their '\n'); line k of the file is
 * line[k - 1]. */
typedef struct TextLines {
  char *text; /* the file's bytes, each '\n' replaced by a NUL */
  char **line;
  int n;
} TextLines;

/* False (with a message on stderr) when the file cannot be read. */
static inline bool text_lines_read(const char *path, TextLines *out) {
  memset(out, 0, sizeof *out);
  FILE *fp = fopen(path, "rb");
  if (!fp) {
    fprintf(stderr, "%s: cannot open\n", path);
    return false;
  }
  size_t cap = 4096, n = 0, got;
  char *text = malloc(cap);
  while ((got = fread(text + n, 1, cap - n - 1, fp)) > 0) {
    n += got;
    if (n + 1 == cap) text = realloc(text, cap *= 2);
  }
  fclose(fp);
  text[n] = '\0';
  out->text = text;
  out->n = text_split(text, &out->line);
  return true;
}

static inline void text_lines_free(TextLines *t) {
  free(t->line);
  free(t->text);
}

/* The value of a directive line `# key: value` (trimmed; "" when empty), or
 * NULL when the line is not that directive. */
static inline const char *text_directive(const char *line, const char *key) {
  if (line[0] != '#') return NULL;
  const char *c = line + 1;
  while (*c == ' ') c++;
  size_t k = strlen(key);
  if (strncmp(c, key, k) != 0 || c[k] != ':') return NULL;
  c += k + 1;
  while (*c == ' ') c++;
  return c;
}

/* The next comma-separated item of a directive's value at *s (trimmed,
 * copied into buf); false at the end. */
static inline bool text_next_item(const char **s, char *buf, size_t cap) {
  const char *c = *s;
  while (*c == ' ' || *c == ',') c++;
  if (!*c) return false;
  const char *end = c;
  while (*end && *end != ',') end++;
  const char *last = end;
  while (last > c && last[-1] == ' ') last--;
  size_t n = (size_t)(last - c) < cap - 1 ? (size_t)(last - c) : cap - 1;
  memcpy(buf, c, n);
  buf[n] = '\0';
  *s = end;
  return true;
}

/* ---- diff ---- */

/* Prints a line diff of want -> got to stderr ('-' only in want, '+' only in
 * got), from a longest common subsequence of lines (the texts are short). */
static inline void text_print_diff(const char *want, const char *got) {
  char *w = strdup(want), *g = strdup(got), **wl, **gl;
  int nw = text_split(w, &wl), ng = text_split(g, &gl);
  /* lcs[i][j]: longest common subsequence of wl[i..] and gl[j..] */
  int *lcs = calloc((size_t)(nw + 1) * (size_t)(ng + 1), sizeof(int));
#define LCS(i, j) lcs[(size_t)(i) * (size_t)(ng + 1) + (size_t)(j)]
  for (int i = nw - 1; i >= 0; i--)
    for (int j = ng - 1; j >= 0; j--)
      LCS(i, j) = strcmp(wl[i], gl[j]) == 0 ? LCS(i + 1, j + 1) + 1
                                            : (LCS(i + 1, j) > LCS(i, j + 1) ? LCS(i + 1, j) : LCS(i, j + 1));
  int i = 0, j = 0;
  while (i < nw || j < ng) {
    if (i < nw && j < ng && strcmp(wl[i], gl[j]) == 0) {
      fprintf(stderr, "   %s\n", wl[i++]);
      j++;
    } else if (i < nw && (j == ng || LCS(i + 1, j) >= LCS(i, j + 1))) {
      fprintf(stderr, " - %s\n", wl[i++]);
    } else {
      fprintf(stderr, " + %s\n", gl[j++]);
    }
  }
#undef LCS
  free(lcs);
  free(wl);
  free(gl);
  free(w);
  free(g);
}

#endif

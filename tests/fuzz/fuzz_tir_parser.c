/* libFuzzer target for the loop IR text parser.
 *
 * Any input: the parser must return a function or a LOOM_ERR_PARSE, never
 * crash (ASan/UBSan catch the rest). When it parses, the printed text must
 * parse again, print identically and compare equal (tir_func_equal), and
 * the verifier must judge both copies the same way. The expression entry
 * point gets the same input. */
#include "ir/expr_parser.h"
#include "tir/text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, const char *detail, const char *text) {
  fprintf(stderr, "fuzz_tir_parser: %s: %s\n--- text ---\n%s\n", what, detail, text);
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  Arena *a = arena_new();
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) {
    if (err.status != LOOM_ERR_PARSE || strncmp(err.msg, "line ", 5) != 0) die("bad error", err.msg, text);
  } else {
    char *t1 = tir_print_func(f);
    PrimFunc *g = tir_parse_func(a, t1, &err);
    if (!g) die("printed text does not parse", err.msg, t1);
    char *t2 = tir_print_func(g);
    if (strcmp(t1, t2) != 0) die("print -> parse -> print changed the text", t2, t1);
    if (!tir_func_equal(f, g) || !tir_func_equal(g, f)) die("reparsed function is not equal", "", t1);
    LoomError e1 = {0}, e2 = {0};
    if (tir_verify(f, &e1) != tir_verify(g, &e2)) die("verifier disagrees on equal functions", e1.msg, t1);
    free(t1);
    free(t2);
  }
  const Expr *e = expr_parse(a, text, NULL, &err);
  if (!e && err.status != LOOM_ERR_PARSE) die("bad expression error", err.msg, text);
  arena_free(a);
  free(text);
  return 0;
}

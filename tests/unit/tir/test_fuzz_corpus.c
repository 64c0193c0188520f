/* Runs the parser fuzz target (tests/fuzz/fuzz_tir_parser.c) over its seed
 * corpus in the ordinary build, so the harness keeps compiling without
 * clang and every seed keeps round-tripping. The target aborts on a
 * failure. Also checks that the function seeds parse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/strbuf.h"

#include "../../fuzz/fuzz_tir_parser.c"

static char *read_file(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  StrBuf sb;
  sb_init(&sb);
  char buf[4096];
  size_t n;
  *size = 0;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    for (size_t i = 0; i < n; i++) sb_putc(&sb, buf[i]);
    *size += n;
  }
  fclose(f);
  return sb_take(&sb);
}

static void test_seed_corpus(void **state) {
  (void)state;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/tir", LOOM_SOURCE_DIR);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int n_files = 0, n_funcs = 0;
  struct dirent *ent;
  while ((ent = readdir(d)) != NULL) {
    if (ent->d_name[0] == '.') continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, ent->d_name);
    size_t size = 0;
    char *text = read_file(path, &size);
    assert_non_null(text);
    LLVMFuzzerTestOneInput((const uint8_t *)text, size);
    Arena *a = arena_new();
    LoomError err = {0};
    if (strncmp(text, "func", 4) == 0 || strncmp(text, "#", 1) == 0) {
      if (!tir_parse_func(a, text, &err)) fail_msg("%s: %s", ent->d_name, err.msg);
      n_funcs++;
    }
    arena_free(a);
    free(text);
    n_files++;
  }
  closedir(d);
  assert_true(n_files >= 5);
  assert_true(n_funcs >= 4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_seed_corpus),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

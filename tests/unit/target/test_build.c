#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unit/target/kernel_harness.h"

/* A source no earlier run has built: the cache must miss once. */
static char *unique_source(const char *body) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char *s = malloc(strlen(body) + 128);
  sprintf(s, "/* unique %ld.%ld.%ld */\n%s", (long)getpid(), (long)ts.tv_sec, (long)ts.tv_nsec, body);
  return s;
}

/* Removes a one-off object and its source so test runs don't fill the cache. */
static void remove_built(const BuildResult *r) {
  char c[PATH_MAX];
  snprintf(c, sizeof c, "%.*s.c", (int)strlen(r->so_path) - 3, r->so_path);
  unlink(r->so_path);
  unlink(c);
}

/* A compiler: a script that appends a line to `runs` and runs the real
 * one; `version` is a comment in it (another version, another file). */
static void write_counting_cc(const char *path, const char *runs, const char *version) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n# version %s\necho run >> %s\nexec %s \"$@\"\n", version, runs, build_default_cc());
  fclose(f);
  assert_int_equal(chmod(path, 0755), 0);
}

static int count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  int n = 0, c;
  while (f && (c = fgetc(f)) != EOF) n += c == '\n';
  if (f) fclose(f);
  return n;
}

static void test_cache_hit(void **state) {
  (void)state;
  char *src = unique_source("#include \"loom/loom_kernel.h\"\nint32_t probe(void) { return 42; }\n");
  char dir[] = "/tmp/loom_build_cache_hit_XXXXXX", cc[PATH_MAX], runs[PATH_MAX];
  assert_non_null(mkdtemp(dir));
  snprintf(cc, sizeof cc, "%s/cc", dir);
  snprintf(runs, sizeof runs, "%s/runs", dir);
  write_counting_cc(cc, runs, "1");
  BuildOptions o = harness_build_options();
  o.cc = cc;
  BuildResult r1, r2;
  LoomError err = {0};
  assert_int_equal(build_shared_object(src, &o, &r1, &err), LOOM_OK);
  assert_false(r1.cache_hit);
  assert_int_equal(count_lines(runs), 1);
  struct stat st1, st2;
  assert_int_equal(stat(r1.so_path, &st1), 0);
  /* The second build does not run the compiler. */
  assert_int_equal(build_shared_object(src, &o, &r2, &err), LOOM_OK);
  assert_true(r2.cache_hit);
  assert_int_equal(count_lines(runs), 1);
  assert_string_equal(r1.so_path, r2.so_path);
  assert_int_equal(stat(r2.so_path, &st2), 0);
  assert_true(st1.st_mtim.tv_sec == st2.st_mtim.tv_sec && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
  /* The same compiler name, upgraded (its file replaced): another key, so
   * nothing the old compiler built is reused. */
  write_counting_cc(cc, runs, "2 (upgraded)");
  BuildResult r4;
  assert_int_equal(build_shared_object(src, &o, &r4, &err), LOOM_OK);
  assert_false(r4.cache_hit);
  assert_int_equal(count_lines(runs), 2);
  assert_string_not_equal(r1.so_path, r4.so_path);
  remove_built(&r4);
  /* Different flags -> different key. */
  o.extra_flags = "-Wall -Wextra -Werror -DLOOM_PROBE=1";
  BuildResult r3;
  assert_int_equal(build_shared_object(src, &o, &r3, &err), LOOM_OK);
  assert_false(r3.cache_hit);
  assert_string_not_equal(r1.so_path, r3.so_path);
  /* And the object works. */
  Module *m;
  assert_int_equal(module_load(r1.so_path, &m, &err), LOOM_OK);
  Kernel k;
  assert_int_equal(module_get_kernel(m, "probe", &k, &err), LOOM_OK);
  int32_t (*probe)(void);
  memcpy(&probe, &k.fn, sizeof probe);
  assert_int_equal(probe(), 42);
  module_unload(m);
  remove_built(&r1);
  remove_built(&r3);
  free(src);
  unlink(runs);
  unlink(cc);
  rmdir(dir);
}

static void test_compiler_error(void **state) {
  (void)state;
  char *src = unique_source("int broken(void) { return undeclared_thing + ; }\n");
  BuildOptions o = harness_build_options();
  BuildResult r;
  LoomError err = {0};
  assert_int_equal(build_shared_object(src, &o, &r, &err), LOOM_ERR_BUILD);
  assert_non_null(strstr(err.msg, "failed"));
  assert_non_null(strstr(err.msg, "error"));
  assert_non_null(strstr(err.msg, "undeclared_thing"));
  /* Nothing left under the final name: a retry compiles again. */
  assert_int_equal(access(r.so_path, F_OK), -1);
  remove_built(&r);
  free(src);

  o.cc = "/nonexistent/cc";
  src = unique_source("int ok(void) { return 0; }\n");
  assert_int_equal(build_shared_object(src, &o, &r, &err), LOOM_ERR_BUILD);
  assert_non_null(strstr(err.msg, "/nonexistent/cc"));
  remove_built(&r);
  free(src);
}

/* Running, not a zombie (an orphan killed with its parent waits for
 * init to reap it). */
static bool process_alive(pid_t pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  const char *close = strrchr(buf, ')');
  return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

/* A compiler run past BuildOptions.timeout_seconds is killed (its whole
 * process group: the sleep the fake compiler starts too) and the build
 * fails with a message that says so; both for one unit and for several
 * built in parallel. */
static void test_compiler_timeout(void **state) {
  (void)state;
  char dir[] = "/tmp/loom_build_timeout_XXXXXX";
  assert_non_null(mkdtemp(dir));
  char cc[PATH_MAX], pidfile[PATH_MAX];
  snprintf(cc, sizeof cc, "%s/slowcc", dir);
  snprintf(pidfile, sizeof pidfile, "%s/sleep.pid", dir);
  FILE *f = fopen(cc, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\nsleep 30 &\necho $! > %s\nwait\n", pidfile);
  fclose(f);
  assert_int_equal(chmod(cc, 0755), 0);
  for (int units = 1; units <= 3; units += 2) {
    char *srcs[3];
    for (int i = 0; i < units; i++) srcs[i] = unique_source("int slow(void) { return 0; }\n");
    BuildOptions o = harness_build_options();
    o.cc = cc;
    o.timeout_seconds = 0.5;
    BuildResult r;
    LoomError err = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(build_shared_object_units((const char *const *)srcs, units, &o, &r, &err), LOOM_ERR_BUILD);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!strstr(err.msg, "timed out")) fail_msg("%d unit(s): expected a time-out, got: %s", units, err.msg);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (s > 20) fail_msg("%d unit(s): the build returned after %.1f s (hang guard)", units, s);
    /* The fake compiler's child died with it. */
    FILE *p = fopen(pidfile, "r");
    long pid = 0;
    if (p && fscanf(p, "%ld", &pid) == 1 && pid > 0) {
      for (int k = 0; k < 100 && process_alive((pid_t)pid); k++) usleep(10000);
      if (process_alive((pid_t)pid)) fail_msg("the compiler's child %ld outlived the time-out", pid);
    }
    if (p) fclose(p);
    unlink(pidfile);
    for (int i = 0; i < units; i++) free(srcs[i]);
  }
  unlink(cc);
  rmdir(dir);
}

static void test_cache_dir_errors(void **state) {
  (void)state;
  BuildOptions o = harness_build_options();
  o.cache_dir = "/proc/loom-cannot-create";
  BuildResult r;
  LoomError err = {0};
  assert_int_equal(build_shared_object("int x;\n", &o, &r, &err), LOOM_ERR_IO);
  assert_non_null(strstr(err.msg, "/proc/loom-cannot-create"));
  o = harness_build_options();
  o.include_dir = "/nonexistent-include";
  assert_int_equal(build_shared_object("int x;\n", &o, &r, &err), LOOM_ERR_IO);
  assert_non_null(strstr(err.msg, "loom_kernel.h"));
}

static void test_module_errors(void **state) {
  (void)state;
  Module *m;
  LoomError err = {0};
  assert_int_equal(module_load("/nonexistent/lib.so", &m, &err), LOOM_ERR_IO);
  assert_null(m);
  assert_non_null(strstr(err.msg, "/nonexistent/lib.so"));
  char *src = unique_source("int present(void) { return 1; }\n");
  BuildOptions o = harness_build_options();
  BuildResult r;
  assert_int_equal(build_shared_object(src, &o, &r, &err), LOOM_OK);
  assert_int_equal(module_load(r.so_path, &m, &err), LOOM_OK);
  Kernel k;
  assert_int_equal(module_get_kernel(m, "absent_kernel", &k, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "absent_kernel"));
  assert_int_equal(module_get_kernel(m, "present", &k, &err), LOOM_OK);
  assert_int_equal(k.workspace_bytes, 0);
  module_unload(m);
  remove_built(&r);
  free(src);
}

static void test_fnv(void **state) {
  (void)state;
  /* Reference values of FNV-1a 64. */
  assert_true(build_fnv1a64(BUILD_FNV_OFFSET, "", 0) == 0xcbf29ce484222325ULL);
  assert_true(build_fnv1a64(BUILD_FNV_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cULL);
  assert_true(build_fnv1a64(BUILD_FNV_OFFSET, "foobar", 6) == 0x85944171f73967e8ULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cache_hit),       cmocka_unit_test(test_compiler_error), cmocka_unit_test(test_compiler_timeout),
      cmocka_unit_test(test_cache_dir_errors), cmocka_unit_test(test_module_errors),
      cmocka_unit_test(test_fnv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

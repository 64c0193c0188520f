/* Safe measurement (src/autotune/measure.h): a small matmul, its default
 * schedule as the reference, and candidates that are right (a random
 * schedule), crash, hang, write out of bounds (after the output: the guard
 * page; before it: the guard bytes), compute a wrong answer, leave an
 * element unwritten, or refuse their arguments. Each bad one is classified
 * within its time limit, the next good request succeeds (the measurer was
 * restarted), a small tuning loop over all of them ends with the default,
 * and nothing is left running after measurer_stop.
 *
 * The bad candidates are hand-written kernels with the kernel ABI, built
 * from the C source below: test fixtures, not operator kernels. Times are
 * never compared with each other (the machine is shared); only their
 * presence is checked.
 *
 * Environment: LOOM_TEST_CACHE_DIR (default /tmp/loom-test-cache) for the
 * build cache; LOOM_MEASURE to use another measurer executable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "autotune/autotune.h"
#include "autotune/measure.h"
#include "fixtures/op_funcs.h"
#include "target/target.h"
#include "topi/topi_schedule.h"

/* As the random-schedule harness: in a sanitizer build the kernels are
 * sanitized too, which checks that such kernels load into the (equally
 * sanitized) measurer. */
#if defined(__SANITIZE_ADDRESS__)
#define MEASURE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MEASURE_TEST_SANITIZED 1
#endif
#endif
#ifdef MEASURE_TEST_SANITIZED
#define KERNEL_EXTRA_CFLAGS "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
#else
#define KERNEL_EXTRA_CFLAGS ""
#endif

enum { M = 16, N = 12, K = 20 };
/* The time limit of a request for a fixture kernel: the endless loop costs
 * this much each time. Compiled candidates get a generous one: they are
 * never meant to time out, also not on a loaded CI machine. */
static const double TIMEOUT_S = 2, GOOD_TIMEOUT_S = 30;
static const double MIN_SECONDS = 0.01;

/* C[M, N] = A[M, K] B[K, N] with one defect each (or none: fx_good). */
static const char k_fixtures_c[] =
    "#include \"loom/loom_kernel.h\"\n"
    "static void mm(DLTensor *const *args) {\n"
    "  const float *a = args[0]->data, *b = args[1]->data;\n"
    "  float *c = args[2]->data;\n"
    "  int64_t m = args[0]->shape[0], k = args[0]->shape[1], n = args[1]->shape[1];\n"
    "  for (int64_t i = 0; i < m; i++)\n"
    "    for (int64_t j = 0; j < n; j++) {\n"
    "      float s = 0;\n"
    "      for (int64_t r = 0; r < k; r++) s += a[i * k + r] * b[r * n + j];\n"
    "      c[i * n + j] = s;\n"
    "    }\n"
    "}\n"
    "static int64_t numel(const DLTensor *t) { return t->shape[0] * t->shape[1]; }\n"
    "#define KERNEL(name) int32_t name(DLTensor *const *args, int32_t num_args, const loom_kernel_env *env)\n"
    "KERNEL(fx_good) { (void)num_args; (void)env; mm(args); return 0; }\n"
    "KERNEL(fx_segv) {\n"
    "  (void)num_args; (void)env;\n"
    "  int *volatile p = 0;\n"
    "  *p = 1;\n"
    "  mm(args);\n"
    "  return 0;\n"
    "}\n"
    "KERNEL(fx_hang) {\n"
    "  (void)num_args; (void)env;\n"
    "  volatile int spin = 1;\n"
    "  while (spin) {}\n"
    "  mm(args);\n"
    "  return 0;\n"
    "}\n"
    /* an overrun of 4096 elements: through the guard page after C */
    "KERNEL(fx_oob_after) {\n"
    "  (void)num_args; (void)env;\n"
    "  mm(args);\n"
    "  float *volatile c = args[2]->data;\n"
    "  for (int64_t i = numel(args[2]); i < numel(args[2]) + 4096; i++) c[i] = 0;\n"
    "  return 0;\n"
    "}\n"
    /* one element before C: inside the mapping, caught by the guard bytes */
    "KERNEL(fx_oob_before) {\n"
    "  (void)num_args; (void)env;\n"
    "  mm(args);\n"
    "  float *volatile c = args[2]->data;\n"
    "  c[-1] = 0;\n"
    "  return 0;\n"
    "}\n"
    "KERNEL(fx_wrong) {\n"
    "  (void)num_args; (void)env;\n"
    "  mm(args);\n"
    "  ((float *)args[2]->data)[5] += 1.0f;\n"
    "  return 0;\n"
    "}\n"
    /* leaves the last element as it found it */
    "KERNEL(fx_partial) {\n"
    "  (void)num_args; (void)env;\n"
    "  float *c = args[2]->data, last = c[numel(args[2]) - 1];\n"
    "  mm(args);\n"
    "  c[numel(args[2]) - 1] = last;\n"
    "  return 0;\n"
    "}\n"
    "KERNEL(fx_refuse) {\n"
    "  (void)num_args; (void)env; (void)args;\n"
    "  return LOOM_KERNEL_ERR(LOOM_KERNEL_ERR_SHAPE, 2);\n"
    "}\n";

/* ---- shared state: built once, in the group setup ---- */

static struct {
  Measurer *measurer;
  Arena *arena;
  Schedule *sch[3];
  const PrimFunc *funcs[3]; /* [0] the default schedule, [1], [2] random schedules */
  MeasureBuild built[3];
  char fixtures_so[PATH_MAX];
  MeasureArg args[MEASURE_MAX_ARGS];
  int n_args;
  BuildOptions build;
} g;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static BuildOptions build_options(void) {
  BuildOptions o = {0};
  const char *dir = getenv("LOOM_TEST_CACHE_DIR");
  o.cache_dir = dir && *dir ? dir : "/tmp/loom-test-cache";
  o.include_dir = LOOM_SOURCE_DIR "/include";
  o.extra_flags = KERNEL_EXTRA_CFLAGS;
  return o;
}

static int group_setup(void **state) {
  (void)state;
  LoomError err = {0};
  /* First, before anything else could start a thread. */
  if (measurer_start(&g.measurer, &err)) {
    fprintf(stderr, "measurer_start: %s\n", err.msg);
    return -1;
  }
  g.arena = arena_new();
  g.build = build_options();
  PrimFunc *f = opfunc_matmul(g.arena, M, N, K, DT_F32, &err);
  if (!f) return -1;
  Target host = target_host();
  g.sch[0] = sch_create(f, DECIDE_DEFAULT, 0);
  if (topi_schedule_matmul_cpu(g.sch[0], "C", NULL, &host, 1)) {
    fprintf(stderr, "default schedule: %s\n", sch_error(g.sch[0]));
    return -1;
  }
  for (int i = 1; i < 3; i++) {
    g.sch[i] = sch_create(f, DECIDE_RANDOM, (uint64_t)(10 + i));
    if (random_schedule_apply(g.sch[i], NULL, &err)) {
      fprintf(stderr, "random schedule %d: %s\n", i, err.msg);
      return -1;
    }
  }
  for (int i = 0; i < 3; i++) g.funcs[i] = sch_func(g.sch[i]);
  double t0 = now_s();
  if (measure_build_batch(g.arena, g.funcs, 3, NULL, &g.build, g.built, &err)) {
    fprintf(stderr, "measure_build_batch: %s\n", err.msg);
    return -1;
  }
  for (int i = 0; i < 3; i++)
    if (g.built[i].status) {
      fprintf(stderr, "candidate %d: %s\n", i, g.built[i].message);
      return -1;
    }
  BuildResult r;
  if (build_shared_object(k_fixtures_c, &g.build, &r, &err)) {
    fprintf(stderr, "fixtures: %s\n", err.msg);
    return -1;
  }
  snprintf(g.fixtures_so, sizeof g.fixtures_so, "%s", r.so_path);
  fprintf(stderr, "built the candidates in %.2f s\n", now_s() - t0);
  if (measure_args_from_func(g.built[0].lowered, g.args, MEASURE_MAX_ARGS, &g.n_args, &err)) {
    fprintf(stderr, "measure_args_from_func: %s\n", err.msg);
    return -1;
  }
  return 0;
}

static int group_teardown(void **state) {
  (void)state;
  measurer_stop(g.measurer);
  for (int i = 0; i < 3; i++) sch_free(g.sch[i]);
  arena_free(g.arena);
  return 0;
}

static MeasureRequest request(const char *so_path, const char *kernel) {
  MeasureRequest q = {
      .candidate = {so_path, kernel},
      .reference = {g.built[0].so_path, g.built[0].kernel},
      .args = g.args,
      .n_args = g.n_args,
      .threads = 1,
      .seed = 7,
      .min_seconds = MIN_SECONDS,
      .timeout_seconds = strcmp(so_path, g.fixtures_so) == 0 ? TIMEOUT_S : GOOD_TIMEOUT_S,
  };
  return q;
}

/* Measures and prints the result; fails the test when the machinery fails
 * or the request takes much longer than its limit. */
static MeasureResult measure(const char *so_path, const char *kernel) {
  MeasureRequest q = request(so_path, kernel);
  MeasureResult r;
  LoomError err = {0};
  double t0 = now_s();
  if (measurer_run(g.measurer, &q, &r, &err)) fail_msg("measurer_run(%s): %s", kernel, err.msg);
  double took = now_s() - t0;
  fprintf(stderr, "  %-22s %-7s %.2f s  median %.2f us, min %.2f us, %d runs, error %.2g: %s\n", kernel,
          measure_status_name(r.status), took, r.median_us, r.min_us, r.runs, r.max_error, r.message);
  /* within the limit, plus a start of the measurer (generous: a loaded
   * machine; this catches a wait that never ends, not slowness) */
  if (took > q.timeout_seconds + 10) fail_msg("%s: took %.2f s, the limit is %.2f s", kernel, took, q.timeout_seconds);
  return r;
}

static void assert_good_times(const MeasureResult *r) {
  assert_int_equal(r->status, MEASURE_OK);
  assert_true(r->runs >= 3);
  assert_true(r->median_us > 0);
  assert_true(r->min_us > 0 && r->min_us <= r->median_us);
  assert_true(r->max_error <= 1e-4);
}

/* A bad candidate: the expected class, then the next good request works
 * (after `restarts` new measurer processes: a crash, a time-out or a write
 * out of bounds cost one). */
static void expect_failure(const char *kernel, MeasureStatus want, const char *in_message, int restarts) {
  int starts = measurer_starts(g.measurer);
  MeasureResult r = measure(g.fixtures_so, kernel);
  if (r.status != want)
    fail_msg("%s: %s (%s), expected %s", kernel, measure_status_name(r.status), r.message, measure_status_name(want));
  assert_true(r.median_us == 0 && r.min_us == 0);
  if (in_message && !strstr(r.message, in_message))
    fail_msg("%s: message \"%s\" does not mention \"%s\"", kernel, r.message, in_message);
  MeasureResult next = measure(g.built[1].so_path, g.built[1].kernel);
  assert_good_times(&next);
  assert_int_equal(measurer_starts(g.measurer), starts + restarts);
}

/* ---- tests ---- */

static void test_args_from_func(void **state) {
  (void)state;
  assert_int_equal(g.n_args, 3);
  static const int64_t shapes[3][2] = {{M, K}, {K, N}, {M, N}};
  for (int i = 0; i < 3; i++) {
    assert_true(dtype_eq(g.args[i].dtype, DT_F32));
    assert_int_equal(g.args[i].ndim, 2);
    assert_int_equal(g.args[i].shape[0], shapes[i][0]);
    assert_int_equal(g.args[i].shape[1], shapes[i][1]);
    assert_int_equal(g.args[i].written, i == 2);
  }
  /* the same from the function before lowering (blocks' write regions) */
  MeasureArg before[4];
  int n = 0;
  LoomError err = {0};
  assert_int_equal(measure_args_from_func(g.funcs[1], before, 4, &n, &err), LOOM_OK);
  assert_int_equal(n, 3);
  for (int i = 0; i < 3; i++) assert_int_equal(before[i].written, i == 2);
  assert_int_equal(measure_args_from_func(g.funcs[1], before, 2, &n, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "3 parameters"));
}

static void test_random_schedules_ok(void **state) {
  (void)state;
  for (int i = 0; i < 3; i++) {
    MeasureResult r = measure(g.built[i].so_path, g.built[i].kernel);
    assert_good_times(&r);
  }
  MeasureResult r = measure(g.fixtures_so, "fx_good");
  assert_good_times(&r);
  /* another thread count: the measurer makes a pool for it */
  MeasureRequest q = request(g.built[2].so_path, g.built[2].kernel);
  q.threads = 2;
  LoomError err = {0};
  assert_int_equal(measurer_run(g.measurer, &q, &r, &err), LOOM_OK);
  assert_good_times(&r);
}

static void test_segfault(void **state) {
  (void)state;
  /* Sanitized, the kernel's UBSan stops at the store to NULL and exits:
   * the measurer is gone all the same, with UBSan's line in the message. */
#ifdef MEASURE_TEST_SANITIZED
  expect_failure("fx_segv", MEASURE_CRASH, "store to null pointer", 1);
#else
  expect_failure("fx_segv", MEASURE_CRASH, "SIGSEGV", 1);
#endif
}

static void test_hang(void **state) {
  (void)state;
  expect_failure("fx_hang", MEASURE_TIMEOUT, "time limit", 1);
}

static void test_out_of_bounds_after(void **state) {
  (void)state;
  expect_failure("fx_oob_after", MEASURE_CRASH, NULL, 1);
}

static void test_out_of_bounds_before(void **state) {
  (void)state;
  expect_failure("fx_oob_before", MEASURE_WRONG, "out of bounds of argument 2", 1);
}

static void test_wrong(void **state) {
  (void)state;
  expect_failure("fx_wrong", MEASURE_WRONG, "element 5", 0);
}

static void test_unwritten_element(void **state) {
  (void)state;
  expect_failure("fx_partial", MEASURE_WRONG, "differs from the reference", 0);
}

static void test_errors(void **state) {
  (void)state;
  expect_failure("fx_refuse", MEASURE_ERROR, "shape mismatch", 0);
  expect_failure("fx_missing", MEASURE_ERROR, "not found", 0);
  MeasureResult r = measure("/nonexistent/loom/candidate.so", "fx_good");
  assert_int_equal(r.status, MEASURE_ERROR);
  assert_non_null(strstr(r.message, "/nonexistent/loom/candidate.so"));
  /* requests the tuner side refuses before sending */
  MeasureRequest q = request(g.fixtures_so, "fx_good");
  q.threads = 0;
  LoomError err = {0};
  assert_int_equal(measurer_run(g.measurer, &q, &r, &err), LOOM_OK);
  assert_int_equal(r.status, MEASURE_ERROR);
  assert_non_null(strstr(r.message, "threads 0"));
  q = request(g.fixtures_so, "fx good");
  assert_int_equal(measurer_run(g.measurer, &q, &r, &err), LOOM_OK);
  assert_int_equal(r.status, MEASURE_ERROR);
}

/* A reference that crashes is the request's error, not the candidate's. */
static void test_reference_crash(void **state) {
  (void)state;
  int starts = measurer_starts(g.measurer);
  MeasureRequest q = request(g.built[1].so_path, g.built[1].kernel);
  q.reference = (MeasureKernel){g.fixtures_so, "fx_segv"};
  MeasureResult r;
  LoomError err = {0};
  assert_int_equal(measurer_run(g.measurer, &q, &r, &err), LOOM_OK);
  fprintf(stderr, "  reference fx_segv: %s: %s\n", measure_status_name(r.status), r.message);
  assert_int_equal(r.status, MEASURE_ERROR);
  assert_non_null(strstr(r.message, "while the reference ran"));
  MeasureResult next = measure(g.built[1].so_path, g.built[1].kernel);
  assert_good_times(&next);
  assert_int_equal(measurer_starts(g.measurer), starts + 1);
}

/* The issue's acceptance test in small: every bad candidate is recorded
 * as failed, tuning goes on, and the default stays the answer. */
static void test_tuning_keeps_default(void **state) {
  (void)state;
  static const char *const bad[] = {"fx_segv", "fx_hang", "fx_oob_after", "fx_oob_before", "fx_wrong", "fx_partial"};
  int n_bad = (int)(sizeof bad / sizeof bad[0]);
  int best = -1, failed = 0;
  double best_us = 0;
  for (int i = 0; i <= n_bad; i++) {
    /* the default schedule's own kernel is the last candidate */
    MeasureResult r = i < n_bad ? measure(g.fixtures_so, bad[i]) : measure(g.built[0].so_path, g.built[0].kernel);
    if (r.status != MEASURE_OK) {
      failed++;
      continue;
    }
    if (best < 0 || r.median_us < best_us) best = i, best_us = r.median_us;
  }
  assert_int_equal(failed, n_bad);
  assert_int_equal(best, n_bad);
}

/* One candidate the C compiler rejects (a macro turns its name into a
 * syntax error) fails alone: the batch falls back to one by one. */
static void test_build_batch_isolates_failure(void **state) {
  (void)state;
  BuildOptions o = g.build;
  char flags[512];
  snprintf(flags, sizeof flags, "%s -D%s_c1=@", KERNEL_EXTRA_CFLAGS, g.funcs[1]->name);
  o.extra_flags = flags;
  MeasureBuild b[3];
  LoomError err = {0};
  assert_int_equal(measure_build_batch(g.arena, g.funcs, 3, NULL, &o, b, &err), LOOM_OK);
  assert_int_equal(b[0].status, LOOM_OK);
  assert_int_equal(b[1].status, LOOM_ERR_BUILD);
  assert_int_equal(b[2].status, LOOM_OK);
  fprintf(stderr, "  the broken candidate: %.120s...\n", b[1].message);
  assert_string_not_equal(b[0].so_path, b[2].so_path);
  MeasureResult r = measure(b[2].so_path, b[2].kernel);
  assert_good_times(&r);
  assert_int_equal(measure_build_batch(g.arena, g.funcs, 0, NULL, &o, b, &err), LOOM_ERR_INVALID_ARG);
}

static void test_bad_measurer(void **state) {
  (void)state;
  Measurer *m = NULL;
  LoomError err = {0};
  setenv("LOOM_MEASURE", "/nonexistent/loom-measure", 1);
  assert_int_equal(measurer_start(&m, &err), LOOM_ERR_IO);
  assert_non_null(strstr(err.msg, "/nonexistent/loom-measure"));
  fprintf(stderr, "  %s\n", err.msg);
  setenv("LOOM_MEASURE", "/bin/true", 1);
  assert_int_equal(measurer_start(&m, &err), LOOM_ERR_IO);
  fprintf(stderr, "  %s\n", err.msg);
  unsetenv("LOOM_MEASURE");
  assert_null(m);
}

/* Children of this process: /proc/<pid>/stat's fourth field is the
 * parent (after the command name, which may hold spaces and parentheses).
 * *last (may be NULL) gets the pid of the last one seen. */
static int count_children(bool print, int *last) {
  DIR *d = opendir("/proc");
  assert_non_null(d);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    char path[300], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t got = fread(line, 1, sizeof line - 1, f);
    fclose(f);
    line[got] = '\0';
    char *paren = strrchr(line, ')');
    char state;
    int ppid;
    if (paren && sscanf(paren + 1, " %c %d", &state, &ppid) == 2 && ppid == (int)getpid()) {
      if (print) fprintf(stderr, "  child left: %s", line);
      if (last) *last = atoi(e->d_name);
      n++;
    }
  }
  closedir(d);
  return n;
}

/* A measurer killed between requests (as when the thread that started
 * it exits) is noticed before the next request, which is not blamed. */
static void test_killed_between_requests(void **state) {
  (void)state;
  int pid = 0, starts = measurer_starts(g.measurer);
  assert_int_equal(count_children(false, &pid), 1);
  assert_int_equal(kill(pid, SIGKILL), 0);
  nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  MeasureResult r = measure(g.built[1].so_path, g.built[1].kernel);
  assert_good_times(&r);
  assert_int_equal(measurer_starts(g.measurer), starts + 1);
}

static void test_stop_leaves_nothing(void **state) {
  (void)state;
  /* a request, so the measurer is running and holds pools and modules */
  MeasureResult r = measure(g.built[1].so_path, g.built[1].kernel);
  assert_good_times(&r);
  assert_true(count_children(false, NULL) >= 1);
  double t0 = now_s();
  measurer_stop(g.measurer);
  g.measurer = NULL;
  fprintf(stderr, "  measurer_stop took %.3f s\n", now_s() - t0);
  assert_int_equal(count_children(true, NULL), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_args_from_func),
      cmocka_unit_test(test_random_schedules_ok),
      cmocka_unit_test(test_segfault),
      cmocka_unit_test(test_hang),
      cmocka_unit_test(test_out_of_bounds_after),
      cmocka_unit_test(test_out_of_bounds_before),
      cmocka_unit_test(test_wrong),
      cmocka_unit_test(test_unwritten_element),
      cmocka_unit_test(test_errors),
      cmocka_unit_test(test_reference_crash),
      cmocka_unit_test(test_tuning_keeps_default),
      cmocka_unit_test(test_build_batch_isolates_failure),
      cmocka_unit_test(test_bad_measurer),
      cmocka_unit_test(test_killed_between_requests),
      cmocka_unit_test(test_stop_leaves_nothing),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

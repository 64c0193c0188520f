/* A tuning run that a bad candidate cannot break (issue 14, "Bad input"):
 * every searched candidate of a small kernel is replaced (TuneOptions'
 * fault-injection hook) by one that segfaults, loops forever, writes out of
 * bounds or computes a wrong answer, in turn. Each is recorded as failed
 * with its reason, the run completes, and the default stays the answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "autotune/records.h"
#include "autotune/workload.h"
#include "target/target.h"
#include "tir/text.h"
#include "tune/tune.h"

#include "transpose_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The good kernel (transpose_kernel.h): its space has more points than
 * the four faults. */
#define kGood kTranspose2x

/* The faults, as replacements of the same signature. */
static const char *const kFaults[] = {
    /* a store four gigabytes before the output: SIGSEGV */
    "func %s(X: f32[64, 256], Y: f32[256, 64]) {\n"
    "  for i in 0:256 {\n"
    "    Y[(i - 1073741824), 0] = X[0, i]\n"
    "  }\n"
    "}\n",
    /* 2^60 iterations: the time limit */
    "func %s(X: f32[64, 256], Y: f32[256, 64]) {\n"
    "  for i in 0:1152921504606846976 {\n"
    "    for j in 0:64 {\n"
    "      Y[(i %% 256), j] = (Y[(i %% 256), j] + X[j, (i %% 256)])\n"
    "    }\n"
    "  }\n"
    "}\n",
    /* one row past the end of Y: the guard page */
    "func %s(X: f32[64, 256], Y: f32[256, 64]) {\n"
    "  for i in 0:257 {\n"
    "    for j in 0:64 {\n"
    "      Y[i, j] = (X[j, (i %% 256)] * 2.0f32)\n"
    "    }\n"
    "  }\n"
    "}\n",
    /* a wrong answer */
    "func %s(X: f32[64, 256], Y: f32[256, 64]) {\n"
    "  for i in 0:256 {\n"
    "    for j in 0:64 {\n"
    "      Y[i, j] = (X[j, i] * 3.0f32)\n"
    "    }\n"
    "  }\n"
    "}\n",
};
enum { N_FAULTS = sizeof kFaults / sizeof kFaults[0] };

static PrimFunc *parse(Arena *a, const char *fmt, const char *name) {
  char text[2048];
  snprintf(text, sizeof text, fmt, name);
  LoomError err = {0};
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  return f;
}

static const PrimFunc *sabotage(Arena *a, const PrimFunc *candidate, int n, void *user) {
  (void)user;
  return parse(a, kFaults[n % N_FAULTS], candidate->name);
}

typedef struct Seen {
  int ok, crash, timeout, wrong, other;
  const char *default_trace;
} Seen;

static bool count_record(const TuneRecord *r, void *user) {
  Seen *s = user;
  if (!strcmp(r->status, "ok")) s->ok++;
  else if (!strcmp(r->status, "crash")) s->crash++;
  else if (!strcmp(r->status, "timeout")) s->timeout++;
  else if (!strcmp(r->status, "wrong")) s->wrong++;
  else s->other++;
  if (!strcmp(r->provenance, "default")) s->default_trace = strdup(r->trace);
  return true;
}

/* A new file name from the template; records_open makes the file. */
static void name_temp_db(char *db) {
  int fd = mkstemp(db);
  assert_true(fd >= 0);
  close(fd);
  unlink(db);
}

/* The kernel both tests tune, the host target and a fresh database name. */
static const PrimFunc *setup(Arena *a, Target *target, char *db) {
  LoomError err = {0};
  assert_int_equal(target_parse(NULL, target, &err), LOOM_OK);
  name_temp_db(db);
  return parse(a, kGood, "transpose2x");
}

static void test_bad_candidates(void **state) {
  (void)state;
  Arena *a = arena_new();
  Target target;
  LoomError err = {0};
  char db[] = "/tmp/loom-tune-faults-XXXXXX";
  const PrimFunc *f = setup(a, &target, db);
  TuneOptions opt = {.records = db, .trials = 1 + 2 * N_FAULTS, .batch = N_FAULTS, .seed = 3,
                     .min_seconds = 0.01, .timeout_seconds = 1, .sabotage = sabotage};
  TuneProgress p;
  assert_int_equal(tune_kernels(&f, 1, &target, 1, &opt, &p, &err), LOOM_OK);
  /* the default, then every searched candidate failed, each of its kind */
  assert_true(p.trials >= 1 + N_FAULTS);
  assert_int_equal(p.failed, p.trials - 1);

  RecordStore *rec;
  assert_int_equal(records_open(db, &rec, &err), LOOM_OK);
  char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
  autotune_workload_key(f, key);
  Seen seen = {0};
  assert_int_equal(records_foreach(rec, key, target.name, count_record, &seen, &err), LOOM_OK);
  assert_int_equal(seen.ok, 1); /* the default */
  assert_true(seen.crash >= 2);   /* the segfault, and the write a row past the end (the guard page) */
  assert_true(seen.timeout >= 1); /* the endless loop */
  assert_true(seen.wrong >= 1);   /* the wrong answer */
  assert_int_equal(seen.other, 0);
  Arena *ra = arena_new();
  TuneRecord best;
  bool found = false;
  assert_int_equal(records_best(rec, key, target.name, 1, ra, &best, &found, &err), LOOM_OK);
  assert_true(found);
  assert_non_null(seen.default_trace);
  assert_string_equal(best.trace, seen.default_trace); /* the default stays the answer */
  assert_int_equal(records_check(rec, &err), LOOM_OK);
  free((void *)seen.default_trace);
  arena_free(ra);
  records_close(rec);
  unlink(db);
  for (const char *suffix = "-wal"; suffix; suffix = strcmp(suffix, "-wal") ? NULL : "-shm") {
    char side[sizeof db + 8];
    snprintf(side, sizeof side, "%s%s", db, suffix);
    unlink(side);
  }
  arena_free(a);
}

static bool fail_call(const char *call, void *user) { return !strcmp(call, (const char *)user); }

static void remove_db(const char *db) {
  const char *suffixes[] = {"", "-wal", "-shm", ".model"};
  for (int i = 0; i < 4; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s%s", db, suffixes[i]);
    unlink(path);
  }
}

/* The cost model's failures are counted, never dropped: a failed update
 * lets the run go on (counted, its message kept), a failed prediction
 * ends it with the error (the batch would be the pool's order). */
static void test_cost_model_failures(void **state) {
  (void)state;
  Arena *a = arena_new();
  Target target;
  LoomError err = {0};
  char db[] = "/tmp/loom-tune-model-XXXXXX";
  const PrimFunc *f = setup(a, &target, db);
  TuneOptions opt = {.records = db, .trials = 9, .batch = 4, .seed = 3, .min_seconds = 0.01, .timeout_seconds = 1,
                     .cost_model_fault = fail_call, .user = (void *)"update"};
  TuneProgress p;
  assert_int_equal(tune_kernels(&f, 1, &target, 1, &opt, &p, &err), LOOM_OK);
  assert_true(p.model_update_failures >= 2); /* the default's batch, then each search batch */
  assert_int_equal(p.model_predict_failures, 0);
  assert_non_null(strstr(p.model_error, "injected fault"));
  remove_db(db);

  opt.user = (void *)"predict";
  memset(&err, 0, sizeof err);
  assert_int_not_equal(tune_kernels(&f, 1, &target, 1, &opt, &p, &err), LOOM_OK);
  assert_non_null(strstr(err.msg, "could not rank the candidates"));
  assert_int_equal(p.model_predict_failures, 1);
  assert_int_equal(p.model_update_failures, 0);
  assert_int_equal(p.trials, 1); /* the default only: the search stopped at its first ranking */
  remove_db(db);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_bad_candidates), cmocka_unit_test(test_cost_model_failures)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

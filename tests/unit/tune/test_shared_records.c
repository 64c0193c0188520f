/* Two tuners on one records database at the same time (issue 31): two
 * processes, the same kernel, seed and random search, so both propose the
 * same batch; a barrier (in TuneOptions' sabotage hook, which passes each
 * candidate through unchanged) holds each until both have proposed it, so
 * the overlap always happens: one records the batch, the other finds every
 * candidate recorded by the first (records_add: not added). Then:
 *   - no trace is recorded twice;
 *   - only recorded candidates teach the cost model: every row it is given
 *     (TuneOptions' model_samples hook) is a real feature row, never the
 *     all-zero row of a candidate that was not recorded, and there are as
 *     many as the run recorded (plus the warm start's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "autotune/features.h"
#include "autotune/records.h"
#include "autotune/workload.h"
#include "target/target.h"
#include "tir/text.h"
#include "tune/tune.h"

#include "transpose_kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { BATCH = 4 };

/* What a tuner process saw, sent to the parent. */
typedef struct Report {
  int status;           /* tune_kernels' */
  int trials;           /* recorded by this process */
  int built;            /* searched candidates built and measured (sabotage hook calls) */
  int rows, zero_rows;  /* rows given to the cost model; of them, all zero */
  int update_failures;
} Report;

typedef struct Child {
  int barrier_out, barrier_in; /* this process's end of the barrier, the other's */
  Report r;
} Child;

static const PrimFunc *pass_through(Arena *a, const PrimFunc *candidate, int n, void *user) {
  (void)a;
  Child *c = user;
  if (n == 0) { /* the first batch is proposed: wait until the other's is too */
    char b = 1;
    if (write(c->barrier_out, &b, 1) != 1 || read(c->barrier_in, &b, 1) != 1) _exit(3);
  }
  c->r.built++;
  return candidate;
}

static void count_samples(const float *X, const float *y, int n, void *user) {
  (void)y;
  Child *c = user;
  for (int i = 0; i < n; i++) {
    bool zero = true;
    for (int j = 0; j < FEATURES_DIM && zero; j++) zero = X[(size_t)i * FEATURES_DIM + j] == 0.0f;
    c->r.rows++;
    c->r.zero_rows += zero;
  }
}

static PrimFunc *parse_kernel(Arena *a) {
  LoomError err = {0};
  char text[2048];
  snprintf(text, sizeof text, kTranspose2x, "transpose2x");
  PrimFunc *f = tir_parse_func(a, text, &err);
  if (!f) fail_msg("parse: %s", err.msg);
  return f;
}

static void remove_db(const char *db) {
  const char *suffixes[] = {"", "-wal", "-shm", ".model", ".model.0", ".model.1"};
  for (int i = 0; i < 6; i++) {
    char path[256];
    snprintf(path, sizeof path, "%s%s", db, suffixes[i]);
    unlink(path);
  }
}

typedef struct Traces {
  char *trace[64];
  int n, dup, threads_other;
} Traces;

static bool collect(const TuneRecord *r, void *user) {
  Traces *t = user;
  if (r->threads != 1) t->threads_other++;
  for (int i = 0; i < t->n; i++)
    if (!strcmp(t->trace[i], r->trace)) t->dup++;
  if (t->n < 64) t->trace[t->n++] = strdup(r->trace);
  return true;
}

static void test_two_tuners_one_database(void **state) {
  (void)state;
  Arena *a = arena_new();
  const PrimFunc *f = parse_kernel(a);
  Target target;
  LoomError err = {0};
  assert_int_equal(target_parse(NULL, &target, &err), LOOM_OK);
  char db[] = "/tmp/loom-tune-shared-XXXXXX";
  int fd = mkstemp(db);
  assert_true(fd >= 0);
  close(fd);
  unlink(db);
  /* The default recorded first: both tuners then skip it and go straight
   * to the search, their random draws in step. */
  TuneOptions opt = {.records = db, .trials = 1, .batch = BATCH, .seed = 7, .search = TUNE_SEARCH_RANDOM,
                     .min_seconds = 0.01, .timeout_seconds = 5};
  TuneProgress p;
  assert_int_equal(tune_kernels(&f, 1, &target, 1, &opt, &p, &err), LOOM_OK);
  assert_int_equal(p.trials, 1);

  int to[2][2]; /* to[k]: the barrier's pipe into tuner k */
  int results[2][2];
  for (int k = 0; k < 2; k++) assert_int_equal(pipe(to[k]), 0), assert_int_equal(pipe(results[k]), 0);
  pid_t pid[2];
  for (int k = 0; k < 2; k++) {
    fflush(NULL);
    pid[k] = fork();
    assert_true(pid[k] >= 0);
    if (pid[k] == 0) {
      Child c = {.barrier_out = to[1 - k][1], .barrier_in = to[k][0]};
      char model[256];
      snprintf(model, sizeof model, "%s.model.%d", db, k); /* each its own: no two saves of one file */
      TuneOptions o = opt;
      o.trials = BATCH;
      o.cost_model = model;
      o.sabotage = pass_through;
      o.model_samples = count_samples;
      o.user = &c;
      LoomError e = {0};
      TuneProgress q;
      memset(&q, 0, sizeof q);
      c.r.status = tune_kernels(&f, 1, &target, 1, &o, &q, &e);
      if (c.r.status) fprintf(stderr, "tuner %d: %s\n", k, e.msg);
      c.r.trials = q.trials;
      c.r.update_failures = q.model_update_failures;
      _exit(write(results[k][1], &c.r, sizeof c.r) == (ssize_t)sizeof c.r ? 0 : 4);
    }
  }
  Report r[2];
  for (int k = 0; k < 2; k++) {
    close(results[k][1]);
    assert_int_equal(read(results[k][0], &r[k], sizeof r[k]), (ssize_t)sizeof r[k]);
    int wst;
    assert_int_equal(waitpid(pid[k], &wst, 0), pid[k]);
    assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  }
  int not_added = 0;
  for (int k = 0; k < 2; k++) {
    print_message("tuner %d: %d built, %d recorded, %d rows to the cost model (%d all zero)\n", k, r[k].built,
                  r[k].trials, r[k].rows, r[k].zero_rows);
    assert_int_equal(r[k].status, LOOM_OK);
    assert_int_equal(r[k].update_failures, 0);
    assert_int_equal(r[k].zero_rows, 0);
    /* the rows: what this process recorded, and the warm start's one (the default's record) */
    assert_int_equal(r[k].rows, r[k].trials + 1);
    not_added += r[k].built - r[k].trials;
  }
  /* The overlap happened: one tuner's whole first batch was the other's. */
  assert_true(not_added >= BATCH);

  RecordStore *rec;
  assert_int_equal(records_open(db, &rec, &err), LOOM_OK);
  char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
  autotune_workload_key(f, key);
  Traces t = {{0}, 0, 0, 0};
  assert_int_equal(records_foreach(rec, key, target.name, collect, &t, &err), LOOM_OK);
  assert_int_equal(t.dup, 0);
  assert_int_equal(t.threads_other, 0);
  assert_int_equal(t.n, 1 + r[0].trials + r[1].trials);
  assert_int_equal(records_check(rec, &err), LOOM_OK);
  for (int i = 0; i < t.n; i++) free(t.trace[i]);
  records_close(rec);
  remove_db(db);
  arena_free(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_tuners_one_database)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}

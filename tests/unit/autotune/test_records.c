/* The records store (SQLite): create and reopen; add, best, contains,
 * foreach, count; batches that roll back; duplicates ignored without
 * spoiling their batch; bad records refused by field; files that are not
 * records files (text, empty, another application's SQLite database, a
 * newer format, a damaged meta table, a trigger) refused with their bytes
 * untouched; and a writer killed with SIGKILL, once at a known point and
 * then at random moments, losing only its open batch, the file passing
 * integrity_check and the run resuming without duplicates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "autotune/records.h"
#include "runtime/artifact.h" /* LOOM_VERSION_STRING */

typedef struct Env {
  char dir[256];
  char db[300]; /* a fresh path in dir per test */
} Env;

static int setup(void **state) {
  Env *e = calloc(1, sizeof *e);
  snprintf(e->dir, sizeof e->dir, "/tmp/loom-test-records-XXXXXX");
  if (!mkdtemp(e->dir)) return -1;
  snprintf(e->db, sizeof e->db, "%s/records.db", e->dir);
  *state = e;
  return 0;
}

static int teardown(void **state) {
  Env *e = *state;
  DIR *d = opendir(e->dir);
  if (d) {
    struct dirent *ent;
    char p[600];
    while ((ent = readdir(d)))
      if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
        snprintf(p, sizeof p, "%s/%s", e->dir, ent->d_name);
        unlink(p);
      }
    closedir(d);
  }
  rmdir(e->dir);
  free(e);
  return 0;
}

/* ---- helpers ---- */

static const double three_times[] = {12.5, 11.75, 12.0};

static TuneRecord rec(const char *workload, const char *target, int threads, const char *trace, double median) {
  TuneRecord r = {.workload = workload,
                  .target = target,
                  .threads = threads,
                  .trace = trace,
                  .status = median >= 0 ? "ok" : "build",
                  .median_us = median,
                  .times_us = three_times,
                  .n_times = median >= 0 ? 3 : 0,
                  .error = median >= 0 ? NULL : "cc: error: something",
                  .provenance = "random"};
  return r;
}

static RecordStore *open_ok(const char *path) {
  RecordStore *s = NULL;
  LoomError err = {0};
  loom_status st = records_open(path, &s, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  assert_non_null(s);
  return s;
}

static void add_ok(RecordStore *s, const TuneRecord *r, bool want_added) {
  LoomError err = {0};
  bool added = !want_added;
  loom_status st = records_add(s, r, &added, &err);
  if (st) fprintf(stderr, "%s\n", err.msg);
  assert_int_equal(st, LOOM_OK);
  assert_int_equal(added, want_added);
}

static int64_t count(RecordStore *s, const char *workload, const char *target) {
  int64_t n = -1;
  LoomError err = {0};
  assert_int_equal(records_count(s, workload, target, &n, &err), LOOM_OK);
  return n;
}

static bool contains(RecordStore *s, const char *workload, const char *target, int threads, const char *trace) {
  bool found = false;
  LoomError err = {0};
  assert_int_equal(records_contains(s, workload, target, threads, trace, &found, &err), LOOM_OK);
  return found;
}

static unsigned char *read_bytes(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)n + 1);
  assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *len = (size_t)n;
  return b;
}

static void write_bytes(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b, 1, n, f), n);
  fclose(f);
}

static void sql(const char *path, const char *text) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  char *msg = NULL;
  int rc = sqlite3_exec(db, text, NULL, NULL, &msg);
  if (rc) fprintf(stderr, "%s\n", msg);
  assert_int_equal(rc, SQLITE_OK);
  assert_int_equal(sqlite3_close(db), SQLITE_OK);
}

static int64_t sql_int(const char *path, const char *text) {
  sqlite3 *db = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(db, text, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(db);
  return v;
}

/* records_open refuses `path` with status `want` and a message naming the
 * path and containing `says`; the file's bytes are as they were. */
static void assert_refused(const char *path, loom_status want, const char *says) {
  size_t n0, n1;
  unsigned char *before = read_bytes(path, &n0);
  RecordStore *s = (RecordStore *)1;
  LoomError err = {0};
  assert_int_equal(records_open(path, &s, &err), want);
  assert_null(s);
  if (!strstr(err.msg, says)) fprintf(stderr, "message: %s\nexpected to contain: %s\n", err.msg, says);
  assert_non_null(strstr(err.msg, says));
  assert_true(strncmp(err.msg, path, strlen(path)) == 0);
  unsigned char *after = read_bytes(path, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  free(before);
  free(after);
}

/* ---- tests ---- */

static void test_helpers(void **state) {
  (void)state;
  char fam[32];
  assert_true(records_version_family("0.1.0", fam));
  assert_string_equal(fam, "0.1");
  assert_true(records_version_family("10.22", fam));
  assert_string_equal(fam, "10.22");
  assert_true(records_version_family("1.2.3-rc1", fam));
  assert_string_equal(fam, "1.2");
  const char *bad_versions[] = {"", "1", "1.", ".1", "a.b", "1.2x", "v1.2"};
  for (size_t i = 0; i < sizeof bad_versions / sizeof bad_versions[0]; i++)
    assert_false(records_version_family(bad_versions[i], fam));

  double t[] = {0, 1.5, 123456.789012345678, 1e-300, 3.0};
  char *j = records_times_to_json(t, 5);
  int n = 0;
  double *back = records_times_from_json(j, &n);
  assert_int_equal(n, 5);
  assert_memory_equal(back, t, sizeof t); /* exact */
  free(back);
  free(j);
  j = records_times_to_json(NULL, 0);
  assert_string_equal(j, "[]");
  back = records_times_from_json(j, &n);
  assert_non_null(back);
  assert_int_equal(n, 0);
  free(back);
  free(j);
  back = records_times_from_json(" [ 1 , 2.5e3 ] ", &n);
  assert_int_equal(n, 2);
  assert_true(back[1] == 2500.0);
  free(back);
  const char *bad_json[] = {"", "1", "[", "[1,]", "[,1]", "[1 2]", "[nan]", "[inf]", "[-inf]", "[0x10]",
                            "[1e999]", "[1]x", "[\"1\"]", "[1,,2]", "[.5]"};
  for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
    back = records_times_from_json(bad_json[i], &n);
    if (back) fprintf(stderr, "accepted %s\n", bad_json[i]);
    assert_null(back);
    assert_int_equal(n, -1);
  }
  assert_true(records_status_valid("timeout"));
  assert_false(records_status_valid("fast"));
  assert_false(records_status_valid(NULL));
}

static void test_create_reopen(void **state) {
  Env *e = *state;
  mode_t mask = umask(022);
  RecordStore *s = open_ok(e->db);
  umask(mask);
  assert_string_equal(records_path(s), e->db);
  /* the mode of any new file (not mkstemp's 0600) */
  struct stat sb;
  assert_int_equal(stat(e->db, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0644);
  assert_int_equal(count(s, NULL, NULL), 0);
  records_close(s);
  /* the marks of a records file, readable with any SQLite */
  assert_int_equal(sql_int(e->db, "PRAGMA application_id"), RECORDS_APPLICATION_ID);
  assert_int_equal(sql_int(e->db, "PRAGMA user_version"), RECORDS_FORMAT_VERSION);
  assert_int_equal(sql_int(e->db, "SELECT count(*) FROM meta WHERE key = 'application' AND value = 'loom-records'"), 1);
  assert_int_equal(sql_int(e->db, "SELECT count(*) FROM meta WHERE key = 'created_by' AND value = 'loom "
                                  LOOM_VERSION_STRING "'"),
                   1);
  assert_int_equal(sql_int(e->db, "SELECT count(*) FROM pragma_journal_mode WHERE journal_mode = 'wal'"), 1);
  /* nothing else was left beside it (the file was built as <path>.new.*) */
  DIR *d = opendir(e->dir);
  struct dirent *ent;
  while ((ent = readdir(d)))
    if (ent->d_name[0] != '.') assert_true(strncmp(ent->d_name, "records.db", 10) == 0 && !strstr(ent->d_name, ".new."));
  closedir(d);

  s = open_ok(e->db);
  TuneRecord r = rec("w1", "x86_64-avx2", 4, "b0 = get_block(\"C\")\n", 10.0);
  add_ok(s, &r, true);
  records_close(s);
  s = open_ok(e->db);
  assert_int_equal(count(s, NULL, NULL), 1);
  LoomError err = {0};
  assert_int_equal(records_check(s, &err), LOOM_OK);
  records_close(s);

  /* a directory that does not exist: an I/O error naming the path */
  char missing[400];
  snprintf(missing, sizeof missing, "%s/no/such/dir/records.db", e->dir);
  s = (RecordStore *)1;
  assert_int_equal(records_open(missing, &s, &err), LOOM_ERR_IO);
  assert_null(s);
  assert_non_null(strstr(err.msg, missing));
  /* a directory is not a records file */
  assert_int_equal(records_open(e->dir, &s, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "not a regular file"));
  assert_int_equal(records_open("postgresql://db/loom", &s, &err), LOOM_ERR_UNSUPPORTED);
}

typedef struct Seen {
  int n;
  int64_t ids[16];
  char traces[16][64];
  int stop_after; /* 0: never */
} Seen;

static bool visit(const TuneRecord *r, void *user) {
  Seen *seen = user;
  if (seen->n < 16) {
    seen->ids[seen->n] = r->id;
    snprintf(seen->traces[seen->n], sizeof seen->traces[0], "%s", r->trace);
  }
  seen->n++;
  return !(seen->stop_after && seen->n >= seen->stop_after);
}

static bool visit_nested(const TuneRecord *r, void *user) {
  RecordStore *s = user;
  LoomError err = {0};
  Seen inner = {0};
  (void)r;
  assert_int_equal(records_foreach(s, NULL, NULL, visit, &inner, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "visitor"));
  /* other calls are fine */
  assert_int_equal(count(s, NULL, NULL), 8);
  return true;
}

static void test_add_best_contains_foreach(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  LoomError err = {0};
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  TuneRecord rs[] = {
      rec("w1", "x86_64-avx2", 4, "t-slow", 30.0),
      rec("w1", "x86_64-avx2", 4, "t-fast", 10.0),
      rec("w1", "x86_64-avx2", 4, "t-tie", 10.0),    /* as fast, later: not the best */
      rec("w1", "x86_64-avx2", 4, "t-broken", -1.0), /* failed */
      rec("w1", "x86_64-avx2", 1, "t-fast", 25.0),   /* other threads */
      rec("w1", "x86_64-sse2", 4, "t-fast", 40.0),   /* other target */
      rec("w2", "x86_64-avx2", 4, "t-fast", 5.0),    /* other workload */
      rec("w1", "x86_64-avx2", 4, "t-old", 1.0),     /* another Loom family */
  };
  rs[1].provenance = "evolutionary";
  rs[1].created_unix = 1700000000;
  rs[7].loom_version = "0.0.9";
  for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++) add_ok(s, &rs[i], true);
  assert_int_equal(records_commit(s, &err), LOOM_OK);

  Arena *a = arena_new();
  TuneRecord best;
  bool found = false;
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 4, a, &best, &found, &err), LOOM_OK);
  assert_true(found);
  assert_string_equal(best.trace, "t-fast");
  assert_true(best.median_us == 10.0);
  assert_string_equal(best.status, "ok");
  assert_string_equal(best.provenance, "evolutionary");
  assert_string_equal(best.loom_version, LOOM_VERSION_STRING);
  assert_int_equal(best.created_unix, 1700000000);
  assert_int_equal(best.n_times, 3);
  assert_memory_equal(best.times_us, three_times, sizeof three_times);
  assert_null(best.error);
  assert_true(best.id > 0);
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 1, a, &best, &found, &err), LOOM_OK);
  assert_true(found);
  assert_true(best.median_us == 25.0);
  assert_int_equal(records_best(s, "w3", "x86_64-avx2", 4, a, &best, &found, &err), LOOM_OK);
  assert_false(found);
  assert_int_equal(records_best(s, "w1", "arm64", 4, a, &best, &found, &err), LOOM_OK);
  assert_false(found);

  assert_true(contains(s, "w1", "x86_64-avx2", 4, "t-broken")); /* any status */
  assert_true(contains(s, "w1", "x86_64-sse2", 4, "t-fast"));
  assert_false(contains(s, "w1", "x86_64-sse2", 4, "t-slow"));
  assert_false(contains(s, "w1", "x86_64-avx2", 2, "t-fast"));
  assert_false(contains(s, "w1", "x86_64-avx2", 4, "t-old")); /* another family */
  assert_false(contains(s, "w1", "x86_64-avx2", 4, "t-fas"));

  assert_int_equal(count(s, NULL, NULL), 8);
  assert_int_equal(count(s, "w1", NULL), 7);
  assert_int_equal(count(s, NULL, "x86_64-sse2"), 1);
  assert_int_equal(count(s, "w1", "x86_64-avx2"), 6);
  assert_int_equal(count(s, "w9", NULL), 0);

  /* in the order added, every family */
  Seen seen = {0};
  assert_int_equal(records_foreach(s, "w1", "x86_64-avx2", visit, &seen, &err), LOOM_OK);
  assert_int_equal(seen.n, 6);
  const char *order[] = {"t-slow", "t-fast", "t-tie", "t-broken", "t-fast", "t-old"};
  for (int i = 0; i < 6; i++) {
    assert_string_equal(seen.traces[i], order[i]);
    if (i) assert_true(seen.ids[i] > seen.ids[i - 1]);
  }
  memset(&seen, 0, sizeof seen);
  assert_int_equal(records_foreach(s, NULL, NULL, visit, &seen, &err), LOOM_OK);
  assert_int_equal(seen.n, 8);
  memset(&seen, 0, sizeof seen);
  assert_int_equal(records_foreach(s, NULL, "x86_64-sse2", visit, &seen, &err), LOOM_OK);
  assert_int_equal(seen.n, 1);
  memset(&seen, 0, sizeof seen);
  seen.stop_after = 2;
  assert_int_equal(records_foreach(s, NULL, NULL, visit, &seen, &err), LOOM_OK);
  assert_int_equal(seen.n, 2);
  /* the statement was reset: a second walk starts over */
  memset(&seen, 0, sizeof seen);
  assert_int_equal(records_foreach(s, "w2", NULL, visit, &seen, &err), LOOM_OK);
  assert_int_equal(seen.n, 1);
  assert_int_equal(records_foreach(s, NULL, NULL, visit_nested, s, &err), LOOM_OK);

  arena_free(a);
  records_close(s);
}

static bool check_failed(const TuneRecord *r, void *user) {
  (void)user;
  if (strcmp(r->trace, "t-broken") == 0) {
    assert_string_equal(r->status, "build");
    assert_true(r->median_us < 0);
    assert_int_equal(r->n_times, 0);
    assert_string_equal(r->error, "cc: error: something");
  }
  return true;
}

static void test_failed_record_roundtrip(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  TuneRecord r = rec("w1", "x86_64-avx2", 4, "t-broken", -1.0);
  add_ok(s, &r, true); /* outside a batch: its own transaction */
  records_close(s);
  s = open_ok(e->db);
  LoomError err = {0};
  assert_int_equal(records_foreach(s, NULL, NULL, check_failed, NULL, &err), LOOM_OK);
  Arena *a = arena_new();
  TuneRecord best;
  bool found = true;
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 4, a, &best, &found, &err), LOOM_OK);
  assert_false(found); /* a failure is never the best */
  arena_free(a);
  records_close(s);
}

/* A re-measurement (records_add_time) joins the record's times; the median
 * of all of them becomes its median_us, and so decides records_best. */
static void test_add_time(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  TuneRecord fast = rec("w1", "x86_64-avx2", 2, "t-lucky", 10.0), slow = rec("w1", "x86_64-avx2", 2, "t-steady", 11.0),
             bad = rec("w1", "x86_64-avx2", 2, "t-broken", -1.0);
  fast.times_us = slow.times_us = (const double[]){10.0};
  fast.n_times = slow.n_times = 1;
  add_ok(s, &fast, true);
  add_ok(s, &slow, true);
  add_ok(s, &bad, true);
  LoomError err = {0};
  Arena *a = arena_new();
  TuneRecord best;
  bool found = false;
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 2, a, &best, &found, &err), LOOM_OK);
  assert_string_equal(best.trace, "t-lucky");
  int64_t lucky = best.id, steady = best.id + 1, broken = best.id + 2;
  /* measured again: the lucky one twice at 13 us, the steady one at 11 */
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  assert_int_equal(records_add_time(s, lucky, 13.0, &err), LOOM_OK);
  assert_int_equal(records_add_time(s, lucky, 13.0, &err), LOOM_OK);
  assert_int_equal(records_add_time(s, steady, 11.0, &err), LOOM_OK);
  assert_int_equal(records_commit(s, &err), LOOM_OK);
  records_close(s);
  s = open_ok(e->db);
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 2, a, &best, &found, &err), LOOM_OK);
  assert_string_equal(best.trace, "t-steady");
  assert_true(best.median_us == 10.5 && best.n_times == 2); /* median of [10, 11] */
  /* not an ok record, no such record, a bad time: refused, nothing changed */
  assert_int_equal(records_add_time(s, broken, 5.0, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "not an \"ok\" record"));
  assert_int_equal(records_add_time(s, broken + 100, 5.0, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_add_time(s, steady, -1.0, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_best(s, "w1", "x86_64-avx2", 2, a, &best, &found, &err), LOOM_OK);
  assert_true(best.median_us == 10.5);
  arena_free(a);
  records_close(s);
}

static void test_rollback(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  LoomError err = {0};
  char trace[32];
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  for (int i = 0; i < 3; i++) {
    snprintf(trace, sizeof trace, "t%d", i);
    TuneRecord r = rec("w", "x86_64-avx2", 1, trace, 1.0 + i);
    add_ok(s, &r, true);
  }
  assert_int_equal(count(s, NULL, NULL), 3); /* the batch sees its own records */
  records_rollback(s);
  assert_int_equal(count(s, NULL, NULL), 0);
  assert_false(contains(s, "w", "x86_64-avx2", 1, "t0"));
  records_rollback(s); /* none open: nothing */

  /* misuse of batches */
  assert_int_equal(records_commit(s, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "no batch is open"));
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  assert_int_equal(records_begin(s, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "already open"));
  TuneRecord r = rec("w", "x86_64-avx2", 1, "t-closed", 1.0);
  add_ok(s, &r, true);
  /* closed with the batch open: rolled back, as a kill would */
  records_close(s);
  s = open_ok(e->db);
  assert_int_equal(count(s, NULL, NULL), 0);
  records_close(s);
}

static void test_duplicates_ignored(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  LoomError err = {0};
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  TuneRecord r = rec("w", "x86_64-avx2", 2, "t-same", 8.0);
  add_ok(s, &r, true);
  TuneRecord again = r;
  again.median_us = 3.0; /* a second measurement of the same candidate */
  add_ok(s, &again, false);
  TuneRecord failed = rec("w", "x86_64-avx2", 2, "t-same", -1.0); /* same key, any status */
  add_ok(s, &failed, false);
  TuneRecord other = rec("w", "x86_64-avx2", 2, "t-other", 9.0);
  add_ok(s, &other, true);
  /* the same trace in another family is another record */
  TuneRecord newer = r;
  newer.loom_version = "0.0.1";
  add_ok(s, &newer, true);
  assert_int_equal(records_add(s, &r, NULL, &err), LOOM_OK); /* added may be NULL */
  assert_int_equal(records_commit(s, &err), LOOM_OK);
  assert_int_equal(count(s, NULL, NULL), 3);
  Arena *a = arena_new();
  TuneRecord best;
  bool found = false;
  assert_int_equal(records_best(s, "w", "x86_64-avx2", 2, a, &best, &found, &err), LOOM_OK);
  assert_true(found);
  assert_true(best.median_us == 8.0); /* the first measurement stands */
  arena_free(a);
  records_close(s);
}

static void test_bad_records(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  LoomError err = {0};
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  TuneRecord good = rec("w", "x86_64-avx2", 1, "t-good", 5.0);
  add_ok(s, &good, true);
  double nan_times[] = {1.0, NAN};
  struct {
    TuneRecord r;
    const char *says;
  } cases[] = {
      {rec(NULL, "x86_64-avx2", 1, "t", 1.0), "workload"},
      {rec("w", "", 1, "t", 1.0), "target"},
      {rec("w", "two\nlines", 1, "t", 1.0), "target"},
      {rec("w", "x86_64-avx2", 0, "t", 1.0), "threads is 0"},
      {rec("w", "x86_64-avx2", 1, "", 1.0), "trace"},
      {rec("w", "x86_64-avx2", 1, "t\x01", 1.0), "trace"},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "status \"fast\""},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "median_us is -1"},
      {rec("w", "x86_64-avx2", 1, "t", -1.0), "median_us is 2"},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "n_times is 0"},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "times_us[1] is nan"},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "loom_version \"dev\""},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "provenance"},
      {rec("w", "x86_64-avx2", 1, "t", 1.0), "created_unix is -5"},
  };
  cases[6].r.status = "fast";
  cases[7].r.median_us = -1.0;
  cases[8].r.median_us = 2.0;
  cases[9].r.n_times = 0;
  cases[10].r.times_us = nan_times;
  cases[10].r.n_times = 2;
  cases[11].r.loom_version = "dev";
  cases[12].r.provenance = NULL;
  cases[13].r.created_unix = -5;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    bool added = true;
    assert_int_equal(records_add(s, &cases[i].r, &added, &err), LOOM_ERR_INVALID_ARG);
    assert_false(added);
    if (!strstr(err.msg, cases[i].says)) fprintf(stderr, "case %zu: %s\n", i, err.msg);
    assert_non_null(strstr(err.msg, cases[i].says));
    assert_true(strncmp(err.msg, e->db, strlen(e->db)) == 0);
  }
  assert_int_equal(records_add(s, NULL, NULL, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_add(NULL, &good, NULL, &err), LOOM_ERR_INVALID_ARG);
  /* the batch is intact */
  TuneRecord after = rec("w", "x86_64-avx2", 1, "t-after", 6.0);
  add_ok(s, &after, true);
  assert_int_equal(records_commit(s, &err), LOOM_OK);
  assert_int_equal(count(s, NULL, NULL), 2);

  /* bad queries */
  bool found;
  Arena *a = arena_new();
  TuneRecord best;
  assert_int_equal(records_best(s, "w", NULL, 1, a, &best, &found, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_best(s, "w", "x86_64-avx2", 0, a, &best, &found, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_contains(s, "w", "x86_64-avx2", 1, NULL, &found, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_foreach(s, NULL, NULL, NULL, NULL, &err), LOOM_ERR_INVALID_ARG);
  assert_int_equal(records_count(s, NULL, NULL, NULL, &err), LOOM_ERR_INVALID_ARG);
  arena_free(a);
  records_close(s);
}

static void test_refuse_text_file(void **state) {
  Env *e = *state;
  const char text[] = "workload,target,trace\nw1,x86_64-avx2,\"b0 = get_block(\\\"C\\\")\"\n";
  write_bytes(e->db, text, sizeof text - 1);
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "not an SQLite database");
  /* a text file longer than SQLite's header */
  char big[4096];
  memset(big, 'x', sizeof big);
  write_bytes(e->db, big, sizeof big);
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "not an SQLite database");
  /* an empty file */
  write_bytes(e->db, "", 0);
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "the file is empty");
  /* SQLite's header, then garbage */
  char fake[4096];
  memset(fake, 0xa5, sizeof fake);
  memcpy(fake, "SQLite format 3", 16);
  write_bytes(e->db, fake, sizeof fake);
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "not a Loom records file");
}

static void test_refuse_other_sqlite(void **state) {
  Env *e = *state;
  sql(e->db, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);"
             "INSERT INTO notes (body) VALUES ('keep me');");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "application_id 0");
  /* another application that marks its files */
  sql(e->db, "PRAGMA application_id = 1234;");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "application_id 1234");
  assert_int_equal(sql_int(e->db, "SELECT count(*) FROM notes WHERE body = 'keep me'"), 1);
  /* ours in name only: the right application_id, no meta table */
  sql(e->db, "PRAGMA application_id = 1280266061; PRAGMA user_version = 1;");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "meta");
}

static void test_refuse_newer_version(void **state) {
  Env *e = *state;
  records_close(open_ok(e->db));
  sql(e->db, "PRAGMA user_version = 2;"
             "UPDATE meta SET value = '2' WHERE key = 'format_version';"
             "UPDATE meta SET value = 'loom 0.9.0' WHERE key = 'created_by';");
  assert_refused(e->db, LOOM_ERR_UNSUPPORTED, "records format version 2 is newer than this Loom reads (1)");
  assert_refused(e->db, LOOM_ERR_UNSUPPORTED, "loom 0.9.0");
  /* still intact for the newer Loom */
  assert_int_equal(sql_int(e->db, "PRAGMA user_version"), 2);
}

static void test_refuse_damaged(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  TuneRecord r = rec("w", "x86_64-avx2", 1, "t", 1.0);
  add_ok(s, &r, true);
  records_close(s);
  /* meta disagrees with user_version */
  sql(e->db, "UPDATE meta SET value = '7' WHERE key = 'format_version';");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "format_version \"7\"");
  sql(e->db, "UPDATE meta SET value = '1' WHERE key = 'format_version';"
             "UPDATE meta SET value = 'not-loom' WHERE key = 'application';");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "application \"not-loom\"");
  sql(e->db, "UPDATE meta SET value = 'loom-records' WHERE key = 'application';");
  records_close(open_ok(e->db));
  /* a trigger (it would run on our statements) */
  sql(e->db, "CREATE TRIGGER wipe AFTER INSERT ON records BEGIN DELETE FROM records; END;");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "trigger \"wipe\"");
  sql(e->db, "DROP TRIGGER wipe; CREATE VIEW v AS SELECT * FROM records;");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "view \"v\"");
  sql(e->db, "DROP VIEW v; ALTER TABLE records DROP COLUMN provenance;");
  assert_refused(e->db, LOOM_ERR_INVALID_ARG, "not the ones Loom made");
}

/* A value that does not decode stops a walk with the record's id. */
static void test_damaged_values(void **state) {
  Env *e = *state;
  RecordStore *s = open_ok(e->db);
  TuneRecord r = rec("w", "x86_64-avx2", 1, "t", 1.0);
  add_ok(s, &r, true);
  records_close(s);
  sql(e->db, "UPDATE records SET times_us = '[1,oops]'");
  s = open_ok(e->db);
  LoomError err = {0};
  Seen seen = {0};
  assert_int_equal(records_foreach(s, NULL, NULL, visit, &seen, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "record 1: column times_us"));
  assert_int_equal(seen.n, 0);
  Arena *a = arena_new();
  TuneRecord best;
  bool found = true;
  assert_int_equal(records_best(s, "w", "x86_64-avx2", 1, a, &best, &found, &err), LOOM_ERR_INVALID_ARG);
  assert_false(found);
  records_close(s);
  sql(e->db, "UPDATE records SET times_us = '[1]', status = 'fast'");
  s = open_ok(e->db);
  assert_int_equal(records_foreach(s, NULL, NULL, visit, &seen, &err), LOOM_ERR_INVALID_ARG);
  assert_non_null(strstr(err.msg, "status \"fast\""));
  records_close(s);
  arena_free(a);
}

/* ---- kill -9 ---- */

enum { BATCH = 20 };

static void batch_trace(char *out, size_t cap, int batch, int i) {
  snprintf(out, cap, "b0 = get_block(\"C\")\n# batch %d candidate %d\n", batch, i);
}

/* The child's side: errors end it with exit status 3 (the parent expects
 * it to die by SIGKILL instead). */
static void child_add_batch(RecordStore *s, int batch) {
  LoomError err = {0};
  char trace[96];
  for (int i = 0; i < BATCH; i++) {
    batch_trace(trace, sizeof trace, batch, i);
    TuneRecord r = rec("w-kill", "x86_64-avx2", 4, trace, 1.0 + i);
    bool found = false;
    if (records_contains(s, r.workload, r.target, r.threads, trace, &found, &err)) _exit(3);
    if (!found && records_add(s, &r, NULL, &err)) _exit(3);
  }
}

static void test_kill_mid_batch(void **state) {
  Env *e = *state;
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    RecordStore *s = NULL;
    LoomError err = {0};
    if (records_open(e->db, &s, &err)) _exit(3);
    if (records_begin(s, &err)) _exit(3);
    child_add_batch(s, 1);
    if (records_commit(s, &err)) _exit(3);
    if (records_begin(s, &err)) _exit(3);
    child_add_batch(s, 2);
    raise(SIGKILL); /* no commit, no close, no exit handlers */
    _exit(4);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);

  RecordStore *s = open_ok(e->db);
  LoomError err = {0};
  assert_int_equal(records_check(s, &err), LOOM_OK);
  assert_int_equal(count(s, NULL, NULL), BATCH);
  char trace[96];
  for (int i = 0; i < BATCH; i++) {
    batch_trace(trace, sizeof trace, 1, i);
    assert_true(contains(s, "w-kill", "x86_64-avx2", 4, trace));
    batch_trace(trace, sizeof trace, 2, i);
    assert_false(contains(s, "w-kill", "x86_64-avx2", 4, trace));
  }
  /* resume: the same work again; only batch 2 is new */
  int added_n = 0;
  assert_int_equal(records_begin(s, &err), LOOM_OK);
  for (int b = 1; b <= 2; b++)
    for (int i = 0; i < BATCH; i++) {
      batch_trace(trace, sizeof trace, b, i);
      TuneRecord r = rec("w-kill", "x86_64-avx2", 4, trace, 1.0 + i);
      bool added = false;
      assert_int_equal(records_add(s, &r, &added, &err), LOOM_OK);
      added_n += added;
    }
  assert_int_equal(records_commit(s, &err), LOOM_OK);
  assert_int_equal(added_n, BATCH);
  assert_int_equal(count(s, NULL, NULL), 2 * BATCH);
  assert_int_equal(records_check(s, &err), LOOM_OK);
  records_close(s);
  assert_int_equal(sql_int(e->db, "SELECT count(*) FROM (SELECT trace FROM records GROUP BY trace HAVING count(*) > 1)"),
                   0);
}

typedef struct BatchCount {
  int per_batch[4096];
  int max_batch;
} BatchCount;

static bool count_batches(const TuneRecord *r, void *user) {
  BatchCount *bc = user;
  int b = -1, i = -1;
  const char *mark = strchr(r->trace, '#');
  if (mark && sscanf(mark, "# batch %d candidate %d", &b, &i) == 2 && b >= 0 && b < 4096) {
    bc->per_batch[b]++;
    if (b > bc->max_batch) bc->max_batch = b;
  }
  return true;
}

/* A writer that commits batch after batch, resuming from what is stored,
 * killed at random moments: every batch is all there or absent, and the
 * batches present are 0..n-1 (the writer commits them in order). */
static void test_kill_at_random_moments(void **state) {
  Env *e = *state;
  srand((unsigned)time(NULL));
  int rounds = 12, batches_seen = 0;
  for (int round = 0; round < rounds; round++) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      RecordStore *s = NULL;
      LoomError err = {0};
      if (records_open(e->db, &s, &err)) _exit(3);
      for (int b = 0; b < 4096; b++) {
        if (records_begin(s, &err)) _exit(3);
        child_add_batch(s, b);
        if (records_commit(s, &err)) _exit(3);
      }
      _exit(5);
    }
    usleep((useconds_t)(2000 + rand() % 40000));
    kill(pid, SIGKILL);
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    if (!WIFSIGNALED(ws)) fprintf(stderr, "writer exited with %d\n", WEXITSTATUS(ws));
    assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);

    RecordStore *s = open_ok(e->db);
    LoomError err = {0};
    assert_int_equal(records_check(s, &err), LOOM_OK);
    BatchCount *bc = calloc(1, sizeof *bc);
    bc->max_batch = -1;
    assert_int_equal(records_foreach(s, NULL, NULL, count_batches, bc, &err), LOOM_OK);
    for (int b = 0; b <= bc->max_batch; b++) {
      if (bc->per_batch[b] != BATCH) fprintf(stderr, "round %d: batch %d has %d records\n", round, b, bc->per_batch[b]);
      assert_int_equal(bc->per_batch[b], BATCH);
    }
    assert_int_equal(count(s, NULL, NULL), (int64_t)(bc->max_batch + 1) * BATCH);
    assert_true(bc->max_batch + 1 >= batches_seen); /* nothing committed was lost */
    batches_seen = bc->max_batch + 1;
    free(bc);
    records_close(s);
  }
  assert_true(batches_seen > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_helpers),
      cmocka_unit_test_setup_teardown(test_create_reopen, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_best_contains_foreach, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_record_roundtrip, setup, teardown),
      cmocka_unit_test_setup_teardown(test_add_time, setup, teardown),
      cmocka_unit_test_setup_teardown(test_rollback, setup, teardown),
      cmocka_unit_test_setup_teardown(test_duplicates_ignored, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_records, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_text_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_other_sqlite, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_newer_version, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuse_damaged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_damaged_values, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kill_mid_batch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_kill_at_random_moments, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

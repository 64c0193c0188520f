/* libFuzzer target: arbitrary bytes as a tuning records file
 * (src/autotune/records.h). The input is written to a file and opened with
 * records_open; when it opens, every record is read (records_foreach,
 * touching every field), the first record's key is looked up
 * (records_best, records_contains), counted, checked (integrity_check),
 * and one batch is written and committed, since a tuner resumes into files
 * it did not write. Any crash, leak or sanitizer report is a bug; errors
 * are expected.
 *
 * SQLite is the system library, not instrumented: coverage guides the
 * mutations through Loom's checks (header, application_id, user_version,
 * meta, schema objects, column types, the times JSON, the record checks),
 * while SQLite's own parsing of damaged pages runs unguided. Seeds in
 * tests/fuzz/corpus/records (docs/autotune.md says what each is), dictionary
 * tests/fuzz/records.dict. */
#include "autotune/records.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Walk {
  int n;
  char workload[256], target[256];
  int threads;
  char *trace; /* malloc'd copy of the first record's */
  volatile size_t sink;
} Walk;

static bool visit(const TuneRecord *r, void *user) {
  Walk *w = user;
  /* every byte of every string, every time: ASan checks they are readable */
  const char *strs[] = {r->workload, r->target, r->trace, r->status, r->error, r->provenance, r->loom_version};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++)
    if (strs[i]) w->sink += strlen(strs[i]);
  for (int i = 0; i < r->n_times; i++) w->sink += (size_t)r->times_us[i];
  if (w->n++ == 0) {
    snprintf(w->workload, sizeof w->workload, "%s", r->workload);
    snprintf(w->target, sizeof w->target, "%s", r->target);
    w->threads = r->threads;
    w->trace = strdup(r->trace);
  }
  return w->n < 10000;
}

static void remove_files(const char *path) {
  char p[600];
  const char *suffixes[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
    snprintf(p, sizeof p, "%s%s", path, suffixes[i]);
    unlink(p);
  }
}

/* One directory for the whole run (inputs are written to the same path),
 * removed at exit. */
static char dir[256], path[300];

static void remove_dir(void) {
  remove_files(path);
  rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/loom-fuzz-records-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/records.db", dir);
    atexit(remove_dir);
  }
  remove_files(path);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);

  LoomError err = {0};
  RecordStore *s = NULL;
  if (records_open(path, &s, &err) == LOOM_OK) {
    Walk w = {0};
    records_foreach(s, NULL, NULL, visit, &w, &err);
    int64_t n = 0;
    records_count(s, NULL, NULL, &n, &err);
    if (w.n > 0) {
      Arena *a = arena_new();
      TuneRecord best;
      bool found = false;
      if (records_best(s, w.workload, w.target, w.threads, a, &best, &found, &err) == LOOM_OK && found)
        w.sink += strlen(best.trace) + (size_t)best.n_times;
      records_contains(s, w.workload, w.target, w.threads, w.trace, &found, &err);
      records_count(s, w.workload, w.target, &n, &err);
      arena_free(a);
    }
    records_check(s, &err);
    if (records_begin(s, &err) == LOOM_OK) {
      double t[] = {1.0, 2.0};
      TuneRecord r = {.workload = w.n ? w.workload : "0123456789abcdef0123456789abcdef",
                      .target = w.n ? w.target : "x86_64-avx2",
                      .threads = w.n ? w.threads : 1,
                      .trace = "b0 = get_block(\"C\")\n",
                      .status = "ok",
                      .median_us = 1.5,
                      .times_us = t,
                      .n_times = 2,
                      .provenance = "fuzz"};
      bool added;
      records_add(s, &r, &added, &err);
      records_add(s, &r, &added, &err);
      records_commit(s, &err);
    }
    free(w.trace);
    records_close(s);
  }
  remove_files(path);
  return 0;
}

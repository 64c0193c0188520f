/* Tuning records: every measured schedule, kept so that a tuning run can
 * stop and resume, the best schedule found can be looked up when a model is
 * compiled, and the cost model has a training set.
 *
 * A record is keyed by the workload (autotune_workload_key of the
 * unscheduled PrimFunc, workload.h), the target name and the thread count,
 * and holds the schedule's trace text, its times or why it failed, the Loom
 * version that measured it and where its decisions came from.
 *
 * The store is an interface (RecordStore, a table of functions) so that
 * callers never see the database: records_open picks the implementation
 * from the path. Today there is one, an embedded SQLite file
 * (records_sqlite.c); a later issue adds a PostgreSQL store shared by many
 * machines behind the same functions. docs/autotune.md ("Records") has the
 * schema, the guarantees and how to look inside with the sqlite3 shell.
 *
 * Guarantees (SQLite store):
 *   - A batch (records_begin .. records_commit) is one transaction: a
 *     process killed at any moment (kill -9) loses at most the batch it had
 *     open, and the file stays consistent (PRAGMA integrity_check).
 *     Committed batches also survive an OS crash or power loss
 *     (synchronous=FULL: the write-ahead log is synced at every commit).
 *   - One record per (workload, target, threads, Loom version family,
 *     trace): adding it again is ignored (records_add's *added says so), so
 *     a resumed run cannot duplicate records and a duplicate does not spoil
 *     the batch it is in.
 *   - A file that is not a Loom records file, or has a newer format
 *     version, is refused and never written to.
 *
 * Version family: a Loom version's MAJOR.MINOR ("0.1" for "0.1.3").
 * Schedules are compared within one family: records_best and
 * records_contains only see records of the running Loom's family
 * (LOOM_VERSION_STRING), since another release may replay a trace
 * differently or generate different code; records_foreach sees them all.
 *
 * A RecordStore is used by one thread at a time; several processes may
 * share one file (SQLite locks it; a writer waits up to
 * RECORDS_BUSY_TIMEOUT_MS for another's batch to end). */
#ifndef LOOM_AUTOTUNE_RECORDS_H
#define LOOM_AUTOTUNE_RECORDS_H

#include "support/arena.h"
#include "support/error.h"

#include <stdbool.h>
#include <stdint.h>

/* The SQLite store's file format: bumped when the schema changes. A file
 * with a newer version is refused (LOOM_ERR_UNSUPPORTED). */
#define RECORDS_FORMAT_VERSION 1
/* PRAGMA application_id of a records file: "LOOM" in ASCII. */
#define RECORDS_APPLICATION_ID 0x4c4f4f4d
/* The meta table's application marker. */
#define RECORDS_APPLICATION "loom-records"
#define RECORDS_BUSY_TIMEOUT_MS 30000
/* Limits records_add enforces (bigger is a caller's bug, not a schedule). */
#define RECORDS_MAX_TIMES 4096
#define RECORDS_MAX_TEXT (16 * 1024 * 1024) /* bytes of a trace or an error */

typedef struct TuneRecord {
  int64_t id;               /* set by reads (the store's row id); ignored by records_add */
  const char *workload;     /* autotune_workload_key (workload.h) */
  const char *target;       /* target name, e.g. "x86_64-avx2" */
  int threads;              /* threads the schedule was measured with, >= 1 */
  const char *trace;        /* the schedule's trace (trace_to_text) */
  const char *status;       /* "ok", or why it failed: "build", "crash", "timeout", "wrong" */
  double median_us;         /* >= 0 when "ok"; < 0 when failed */
  const double *times_us;   /* each run's time; at least one when "ok" */
  int n_times;              /* 0 .. RECORDS_MAX_TIMES */
  const char *error;        /* failure message, or NULL */
  const char *provenance;   /* where the decisions came from: "default", "random",
                               "evolutionary", "transfer", ... */
  const char *loom_version; /* MAJOR.MINOR[.PATCH...]; NULL on add: LOOM_VERSION_STRING */
  int64_t created_unix;     /* seconds since 1970; 0 on add: now */
} TuneRecord;

/* Called for each record; the record and its strings live until the
 * visitor returns. Return false to stop. The visitor must not call
 * records_foreach on the same store. */
typedef bool (*RecordVisitor)(const TuneRecord *r, void *user);

typedef struct RecordStore RecordStore;

/* ---- opening ---- */

/* Opens the records store at `path`, creating it when no file is there.
 * A new file appears complete or not at all (it is built beside the path
 * and linked into place), so a creation killed half-way leaves no
 * half-made records file behind (at most a "<path>.new.PID.N" leftover).
 * An existing file is checked read-only before it is opened for writing;
 * refused files are never written to:
 *   - not an SQLite database (an empty file included) ->
 *     LOOM_ERR_INVALID_ARG, "<path>: not a Loom records file: ...";
 *   - an SQLite database of another application, or a damaged records
 *     file -> LOOM_ERR_INVALID_ARG naming what was found;
 *   - a records file of a newer format version -> LOOM_ERR_UNSUPPORTED;
 *   - unreadable, or a missing file whose directory cannot be written ->
 *     LOOM_ERR_IO.
 * A write-protected file opens for reading (SQLite falls back to read-only
 * when the OS refuses write access); records_begin and records_add then
 * fail with LOOM_ERR_IO. Every message starts with the path. On success
 * *out is the store; close it with records_close. */
loom_status records_open(const char *path, RecordStore **out, LoomError *err);
/* Closes the store; a batch still open is rolled back (lost, as it would
 * be if the process were killed). NULL is allowed. */
void records_close(RecordStore *s);
/* The path or address the store was opened with. */
const char *records_path(const RecordStore *s);

/* ---- batches ---- */

/* Starts a batch: the records added until records_commit are one
 * transaction. Waits up to RECORDS_BUSY_TIMEOUT_MS while another process
 * writes (then LOOM_ERR_IO). LOOM_ERR_INVALID_ARG if a batch is open. */
loom_status records_begin(RecordStore *s, LoomError *err);
/* Makes the batch durable. LOOM_ERR_INVALID_ARG when no batch is open;
 * LOOM_ERR_IO when the commit failed (the batch is then rolled back). */
loom_status records_commit(RecordStore *s, LoomError *err);
/* Drops the open batch (nothing when none is open). */
void records_rollback(RecordStore *s);

/* ---- writing and reading ---- */

/* Adds a record, inside the open batch or, when none is open, as a
 * transaction of its own. The record is checked first
 * (LOOM_ERR_INVALID_ARG naming the field and what was expected; nothing is
 * written and the batch stays open). A record whose (workload, target,
 * threads, version family, trace) is already stored is ignored: the first
 * measurement stands. *added (may be NULL) says whether it was stored. */
loom_status records_add(RecordStore *s, const TuneRecord *r, bool *added, LoomError *err);

/* A re-measurement of "ok" record `id` (the tuner's final round for its
 * best candidates): the median us of the new measurement is appended to
 * its times_us, and its median_us becomes the median of all of them, so
 * one lucky measurement no longer decides which record is the fastest.
 * Inside the open batch or a transaction of its own. LOOM_ERR_INVALID_ARG
 * when there is no "ok" record `id`, it holds RECORDS_MAX_TIMES times
 * already, or the time is not finite and >= 0. */
loom_status records_add_time(RecordStore *s, int64_t id, double median_us, LoomError *err);

/* The fastest "ok" record for (workload, target, threads) of the running
 * Loom's version family (ties: the earliest). *found is false when there
 * is none. out's strings and times are copied into `a`. */
loom_status records_best(RecordStore *s, const char *workload, const char *target, int threads, Arena *a,
                         TuneRecord *out, bool *found, LoomError *err);

/* Whether this exact trace (any status) is stored for (workload, target,
 * threads) in the running Loom's version family: the tuner never measures
 * a candidate twice, and a resumed run skips what was measured. */
loom_status records_contains(RecordStore *s, const char *workload, const char *target, int threads,
                             const char *trace, bool *found, LoomError *err);

/* Visits the records of `workload` on `target` (either NULL: all), every
 * version family, in the order they were added. A stored record that does
 * not decode (a damaged or hand-edited file) stops the walk with
 * LOOM_ERR_INVALID_ARG naming the record's id and column. */
loom_status records_foreach(RecordStore *s, const char *workload, const char *target, RecordVisitor fn,
                            void *user, LoomError *err);

/* Number of records of `workload` on `target` (either NULL: all), every
 * version family. */
loom_status records_count(RecordStore *s, const char *workload, const char *target, int64_t *count,
                          LoomError *err);

/* The store's own consistency check (SQLite: PRAGMA integrity_check). LOOM_OK
 * when clean; LOOM_ERR_INVALID_ARG with the first problems otherwise. */
loom_status records_check(RecordStore *s, LoomError *err);

/* ---- helpers shared by the stores ---- */

/* "ok", "build", "crash", "timeout", "wrong". */
bool records_status_valid(const char *status);
/* Writes "MAJOR.MINOR" of `version` into out; false when it does not
 * start with two dot-separated numbers. */
bool records_version_family(const char *version, char out[32]);
/* Checks a record for records_add (see TuneRecord); LOOM_OK or
 * LOOM_ERR_INVALID_ARG naming the field. */
loom_status records_validate(const TuneRecord *r, LoomError *err);
/* times_us as stored: a JSON array of numbers ("[12.5,13.25]"),
 * malloc'd. Numbers print with 17 significant digits, so they read back
 * exactly. */
char *records_times_to_json(const double *times, int n);
/* Parses what records_times_to_json writes; NULL (and *n = -1) when `text`
 * is not a JSON array of at most RECORDS_MAX_TIMES finite numbers.
 * malloc'd (non-NULL even when empty). */
double *records_times_from_json(const char *text, int *n);

/* ---- the interface a store implements ---- */

/* Each store embeds RecordStore first and fills `ops`. records.c checks the
 * arguments (non-NULL, valid record, batch state) before calling an op,
 * so an op can trust them. */
typedef struct RecordStoreOps {
  const char *kind; /* "sqlite" */
  void (*close)(RecordStore *s);
  loom_status (*begin)(RecordStore *s, LoomError *err);
  loom_status (*commit)(RecordStore *s, LoomError *err);
  void (*rollback)(RecordStore *s);
  /* r is validated, with loom_version and created_unix filled in. */
  loom_status (*add)(RecordStore *s, const TuneRecord *r, const char *family, bool *added, LoomError *err);
  /* the times and median are checked; the record must exist and be "ok" */
  loom_status (*set_times)(RecordStore *s, int64_t id, const char *times_json, double median_us, LoomError *err);
  /* the times of "ok" record id (*n = -1: no such record); malloc'd */
  loom_status (*get_times)(RecordStore *s, int64_t id, double **times, int *n, LoomError *err);
  loom_status (*best)(RecordStore *s, const char *workload, const char *target, int threads,
                      const char *family, Arena *a, TuneRecord *out, bool *found, LoomError *err);
  loom_status (*contains)(RecordStore *s, const char *workload, const char *target, int threads,
                          const char *family, const char *trace, bool *found, LoomError *err);
  loom_status (*foreach)(RecordStore *s, const char *workload, const char *target, RecordVisitor fn,
                         void *user, LoomError *err);
  loom_status (*count)(RecordStore *s, const char *workload, const char *target, int64_t *count,
                       LoomError *err);
  loom_status (*check)(RecordStore *s, LoomError *err);
} RecordStoreOps;

struct RecordStore {
  const RecordStoreOps *ops;
  char *path;    /* malloc'd */
  bool in_batch; /* records_begin .. commit/rollback */
  bool visiting; /* inside records_foreach */
};

/* The SQLite store (records_sqlite.c); records_open calls it for a path. */
loom_status records_sqlite_open(const char *path, RecordStore **out, LoomError *err);

#endif

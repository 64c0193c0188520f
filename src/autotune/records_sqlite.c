/* The SQLite record store: one file, WAL journal, synchronous=FULL.
 *
 * Why these settings: a batch is one transaction (BEGIN IMMEDIATE ..
 * COMMIT), so a process killed at any moment leaves either the whole batch
 * or none of it; in WAL mode a commit appends the batch's pages to the
 * write-ahead log, and a kill mid-append leaves frames whose checksums do
 * not match, which the next opener discards. synchronous=NORMAL would be
 * enough for kill -9 (the written log is in the OS's cache) but may lose
 * the last committed batches on an OS crash or power loss; FULL syncs the
 * log at every commit, which costs one fsync per batch while a batch takes
 * seconds of measuring, so the guarantee holds for those too.
 *
 * Files from elsewhere are not trusted: an existing file is checked over a
 * read-only connection first (SQLite's header, application_id,
 * user_version, the meta table, no objects besides ours), every connection
 * runs in SQLite's defensive mode with triggers and views disabled and the
 * schema untrusted, and every value read back is checked before a caller
 * sees it (records_validate). Every statement is prepared once from the
 * constant SQL below and takes its values as bound parameters.
 *
 * docs/autotune.md ("Records") describes the schema for readers. */
#include "autotune/records.h"

#include "runtime/artifact.h" /* LOOM_VERSION_STRING */
#include "support/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- schema ---- */

/* The pragmas take literals; these are RECORDS_APPLICATION_ID ("LOOM") and
 * RECORDS_FORMAT_VERSION in decimal. */
_Static_assert(RECORDS_APPLICATION_ID == 1280266061, "records: application_id literal below");
_Static_assert(RECORDS_FORMAT_VERSION == 1, "records: user_version literal below");

/* The meta table's (key, value) shape and its "application" and
 * "format_version" keys never change, so any Loom can tell what a records
 * file is and how new it is. */
static const char schema_sql[] =
    "PRAGMA application_id = 1280266061;\n"
    "PRAGMA user_version = 1;\n"
    "CREATE TABLE meta (\n"
    "  key TEXT PRIMARY KEY NOT NULL,\n"
    "  value TEXT NOT NULL\n"
    ") STRICT;\n"
    "CREATE TABLE records (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  workload TEXT NOT NULL,\n"
    "  target TEXT NOT NULL,\n"
    "  threads INTEGER NOT NULL,\n"
    "  version_family TEXT NOT NULL,\n" /* MAJOR.MINOR of loom_version */
    "  trace TEXT NOT NULL,\n"
    "  status TEXT NOT NULL,\n"         /* ok, build, crash, timeout, wrong */
    "  median_us REAL,\n"               /* NULL unless status = 'ok' */
    "  times_us TEXT NOT NULL,\n"       /* JSON array of numbers */
    "  error TEXT,\n"
    "  provenance TEXT NOT NULL,\n"
    "  loom_version TEXT NOT NULL,\n"
    "  created_unix INTEGER NOT NULL,\n"
    "  UNIQUE (workload, target, threads, version_family, trace)\n"
    ") STRICT;\n"
    "CREATE INDEX records_fastest ON records (workload, target, threads, version_family, median_us)\n"
    "  WHERE status = 'ok';\n";

#define RECORD_COLUMNS \
  "id, workload, target, threads, trace, status, median_us, times_us, error, provenance, loom_version, created_unix"

typedef enum Query {
  Q_META,
  Q_INSERT,
  Q_BEST,
  Q_CONTAINS,
  Q_GET_TIMES,
  Q_SET_TIMES,
  /* foreach and count: by workload and target, either NULL */
  Q_EACH_ALL, Q_EACH_W, Q_EACH_T, Q_EACH_WT,
  Q_COUNT_ALL, Q_COUNT_W, Q_COUNT_T, Q_COUNT_WT,
  Q_CHECK,
  Q_COUNT
} Query;

static const char *const query_sql[Q_COUNT] = {
    [Q_META] = "SELECT value FROM meta WHERE key = ?1",
    [Q_INSERT] = "INSERT INTO records (workload, target, threads, version_family, trace, status, median_us,"
                 " times_us, error, provenance, loom_version, created_unix)"
                 " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
                 " ON CONFLICT (workload, target, threads, version_family, trace) DO NOTHING",
    [Q_GET_TIMES] = "SELECT times_us FROM records WHERE id = ?1 AND status = 'ok'",
    [Q_SET_TIMES] = "UPDATE records SET times_us = ?2, median_us = ?3 WHERE id = ?1 AND status = 'ok'",
    [Q_BEST] = "SELECT " RECORD_COLUMNS " FROM records"
               " WHERE workload = ?1 AND target = ?2 AND threads = ?3 AND version_family = ?4 AND status = 'ok'"
               " ORDER BY median_us, id LIMIT 1",
    [Q_CONTAINS] = "SELECT 1 FROM records WHERE workload = ?1 AND target = ?2 AND threads = ?3"
                   " AND version_family = ?4 AND trace = ?5 LIMIT 1",
    [Q_EACH_ALL] = "SELECT " RECORD_COLUMNS " FROM records ORDER BY id",
    [Q_EACH_W] = "SELECT " RECORD_COLUMNS " FROM records WHERE workload = ?1 ORDER BY id",
    [Q_EACH_T] = "SELECT " RECORD_COLUMNS " FROM records WHERE target = ?2 ORDER BY id",
    [Q_EACH_WT] = "SELECT " RECORD_COLUMNS " FROM records WHERE workload = ?1 AND target = ?2 ORDER BY id",
    [Q_COUNT_ALL] = "SELECT count(*) FROM records",
    [Q_COUNT_W] = "SELECT count(*) FROM records WHERE workload = ?1",
    [Q_COUNT_T] = "SELECT count(*) FROM records WHERE target = ?2",
    [Q_COUNT_WT] = "SELECT count(*) FROM records WHERE workload = ?1 AND target = ?2",
    [Q_CHECK] = "PRAGMA integrity_check(20)",
};

/* Column positions of RECORD_COLUMNS. */
enum {
  C_ID, C_WORKLOAD, C_TARGET, C_THREADS, C_TRACE, C_STATUS, C_MEDIAN, C_TIMES, C_ERROR, C_PROVENANCE,
  C_VERSION, C_CREATED
};
static const char *const column_names[] = {"id", "workload", "target", "threads", "trace", "status", "median_us",
                                           "times_us", "error", "provenance", "loom_version", "created_unix"};

typedef struct SqliteStore {
  RecordStore base; /* first: a RecordStore * is a SqliteStore * */
  sqlite3 *db;
  sqlite3_stmt *q[Q_COUNT];
} SqliteStore;

/* ---- errors ---- */

/* The status a failed SQLite call maps to: the file is damaged or not ours
 * (INVALID_ARG), or the file system said no (IO). */
static loom_status status_of(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
    case SQLITE_ERROR:    /* SQL that does not fit the file's schema */
    case SQLITE_MISMATCH: /* a value of the wrong type in the file */
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return LOOM_ERR_INVALID_ARG;
    case SQLITE_NOMEM:
    case SQLITE_MISUSE:
    case SQLITE_INTERNAL:
      return LOOM_ERR_INTERNAL;
    default: /* BUSY, LOCKED, IOERR, FULL, CANTOPEN, PERM, READONLY, PROTOCOL, ... */
      return LOOM_ERR_IO;
  }
}

static loom_status db_error(sqlite3 *db, const char *path, int rc, const char *what, LoomError *err) {
  const char *msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  int base = rc & 0xff;
  if (base == SQLITE_BUSY || base == SQLITE_LOCKED)
    return err_set(err, LOOM_ERR_IO, "%s: %s: the records file is locked by another process (waited %d ms): %s",
                   path, what, RECORDS_BUSY_TIMEOUT_MS, msg);
  if (base == SQLITE_CORRUPT || base == SQLITE_NOTADB)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s: the records file is damaged: %s", path, what, msg);
  return err_set(err, status_of(rc), "%s: %s: %s", path, what, msg);
}

static SqliteStore *as_sqlite(RecordStore *s) { return (SqliteStore *)s; }

/* ---- connections ---- */

/* Settings for a file that may come from anywhere (SQLite's "Defense
 * against dark arts"): no writable schema tricks, no triggers or views, no
 * functions with side effects from the schema, page checks on read. */
static int harden(sqlite3 *db) {
  int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
  if (!rc) rc = sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, (int *)NULL);
  if (!rc) rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, (int *)NULL);
  if (!rc) rc = sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, (int *)NULL);
  if (!rc) rc = sqlite3_exec(db, "PRAGMA cell_size_check = ON", NULL, NULL, NULL);
  if (!rc) rc = sqlite3_busy_timeout(db, RECORDS_BUSY_TIMEOUT_MS);
  return rc;
}

static loom_status open_db(const char *path, int flags, sqlite3 **out, LoomError *err) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, flags, NULL);
  if (rc == SQLITE_OK) rc = harden(db);
  if (rc != SQLITE_OK) {
    loom_status st = db_error(db, path, rc, "cannot open the records file", err);
    sqlite3_close(db);
    return st;
  }
  *out = db;
  return LOOM_OK;
}

/* One integer from a pragma or query without parameters. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out) {
  sqlite3_stmt *q = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &q, NULL);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
      *out = sqlite3_column_int64(q, 0);
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_CORRUPT; /* a pragma that returns no row: not a database we can read */
    }
  }
  sqlite3_finalize(q);
  return rc;
}

/* meta[key] into buf ("" when absent); an SQLite result code. */
static int meta_get(sqlite3 *db, const char *key, char *buf, size_t cap) {
  sqlite3_stmt *q = NULL;
  buf[0] = '\0';
  int rc = sqlite3_prepare_v2(db, query_sql[Q_META], -1, &q, NULL);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
      const unsigned char *v = sqlite3_column_text(q, 0);
      snprintf(buf, cap, "%s", v ? (const char *)v : "");
      rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
      rc = SQLITE_OK;
    }
  }
  sqlite3_finalize(q);
  return rc;
}

/* A printable excerpt of a value from a file, for messages. */
static void excerpt(const char *s, char out[48]) {
  size_t k = 0;
  for (; *s && k < 40; s++) out[k++] = (*s >= 0x20 && *s < 0x7f && *s != '"') ? *s : '?';
  if (*s) out[k++] = '.', out[k++] = '.', out[k++] = '.';
  out[k] = '\0';
}

/* Everything that makes an SQLite file a records file this Loom can use,
 * read without writing. */
static loom_status check_db(sqlite3 *db, const char *path, LoomError *err) {
  int64_t app_id = 0, version = 0;
  int rc = query_int(db, "PRAGMA application_id", &app_id);
  if (rc == SQLITE_OK) rc = query_int(db, "PRAGMA user_version", &version);
  if (rc != SQLITE_OK) {
    if (status_of(rc) == LOOM_ERR_INVALID_ARG)
      return err_set(err, LOOM_ERR_INVALID_ARG, "%s: not a Loom records file: SQLite cannot read it (%s)", path,
                     sqlite3_errmsg(db));
    return db_error(db, path, rc, "cannot read the records file", err);
  }
  if (app_id != RECORDS_APPLICATION_ID)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s: not a Loom records file: an SQLite database with application_id %lld (0x%08llx); "
                   "a records file has 0x%08x (\"LOOM\")",
                   path, (long long)app_id, (unsigned long long)app_id & 0xffffffffULL, RECORDS_APPLICATION_ID);
  char created_by[64] = "", app[64], fmt[64], shown[48];
  if (version > RECORDS_FORMAT_VERSION) {
    meta_get(db, "created_by", created_by, sizeof created_by); /* best effort, for the message */
    excerpt(created_by, shown);
    return err_set(err, LOOM_ERR_UNSUPPORTED,
                   "%s: records format version %lld is newer than this Loom reads (%d); written by \"%s\": "
                   "use a Loom at least that new, or another records file",
                   path, (long long)version, RECORDS_FORMAT_VERSION, shown[0] ? shown : "a newer Loom");
  }
  if (version < 1)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: damaged records file: format version %lld, expected 1..%d", path,
                   (long long)version, RECORDS_FORMAT_VERSION);
  rc = meta_get(db, "application", app, sizeof app);
  if (rc == SQLITE_OK) rc = meta_get(db, "format_version", fmt, sizeof fmt);
  if (rc != SQLITE_OK)
    return err_set(err, status_of(rc) == LOOM_ERR_INVALID_ARG ? LOOM_ERR_INVALID_ARG : status_of(rc),
                   "%s: damaged records file: cannot read its meta table (%s)", path, sqlite3_errmsg(db));
  char want_fmt[16];
  snprintf(want_fmt, sizeof want_fmt, "%lld", (long long)version);
  if (strcmp(app, RECORDS_APPLICATION) != 0 || strcmp(fmt, want_fmt) != 0) {
    excerpt(strcmp(app, RECORDS_APPLICATION) != 0 ? app : fmt, shown);
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s: damaged records file: meta says application \"%s\", format_version \"%s\"; expected \"%s\" "
                   "and \"%lld\" (its user_version)",
                   path, strcmp(app, RECORDS_APPLICATION) != 0 ? shown : app,
                   strcmp(app, RECORDS_APPLICATION) != 0 ? fmt : shown, RECORDS_APPLICATION, (long long)version);
  }
  /* Only our tables and indexes on them (SQLite's own sqlite_* objects
   * too): a trigger or view would run on our statements. */
  sqlite3_stmt *q = NULL;
  rc = sqlite3_prepare_v2(db, "SELECT type, name, tbl_name FROM sqlite_schema", -1, &q, NULL);
  loom_status st = LOOM_OK;
  bool have_records = false;
  while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    rc = SQLITE_OK;
    const char *type = (const char *)sqlite3_column_text(q, 0), *name = (const char *)sqlite3_column_text(q, 1),
               *table = (const char *)sqlite3_column_text(q, 2);
    if (!type || !name || !table) continue;
    bool ours_table = strcmp(table, "meta") == 0 || strcmp(table, "records") == 0;
    if (strcmp(type, "table") == 0 && strcmp(name, "records") == 0) have_records = true;
    if ((strcmp(type, "table") == 0 && (ours_table || strncmp(name, "sqlite_", 7) == 0)) ||
        (strcmp(type, "index") == 0 && ours_table))
      continue;
    excerpt(name, shown);
    char kind[48];
    excerpt(type, kind);
    kind[16] = '\0';
    st = err_set(err, LOOM_ERR_INVALID_ARG, "%s: not a Loom records file: it has %s %s \"%s\" that Loom does not make",
                 path, strchr("aeiouAEIOU", kind[0]) && kind[0] ? "an" : "a", kind, shown);
    break;
  }
  if (!st && rc != SQLITE_DONE && rc != SQLITE_OK)
    st = db_error(db, path, rc, "cannot read the schema of the records file", err);
  sqlite3_finalize(q);
  if (!st && !have_records)
    st = err_set(err, LOOM_ERR_INVALID_ARG, "%s: damaged records file: it has no records table", path);
  return st;
}

/* The first bytes must be SQLite's header: checked with plain reads, so a
 * file that is not a database never reaches SQLite at all. */
static loom_status check_header(const char *path, LoomError *err) {
  static const char magic[16] = "SQLite format 3";
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "%s: cannot read the records file: %s", path, strerror(errno));
  char head[100];
  ssize_t n = read(fd, head, sizeof head);
  int e = errno;
  close(fd);
  if (n < 0) return err_set(err, LOOM_ERR_IO, "%s: cannot read the records file: %s", path, strerror(e));
  if (n == 0)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s: not a Loom records file: the file is empty (remove it, or name a file that does not exist "
                   "to create one)",
                   path);
  if (n < (ssize_t)sizeof head || memcmp(head, magic, sizeof magic) != 0)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s: not a Loom records file: not an SQLite database (its first bytes are not \"SQLite format 3\")",
                   path);
  return LOOM_OK;
}

/* Builds a new records file beside `path` and links it into place, so the
 * path never shows a half-made file. LOOM_OK also when another process
 * created the file first (the caller then checks theirs). */
static loom_status create_file(const char *path, LoomError *err) {
  size_t cap = strlen(path) + 48;
  char *tmp = loom_malloc(cap);
  if (!tmp) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  /* Not mkstemp: its files are 0600, and a records file gets the mode of
   * any new file (0666 less the umask), so others can read a shared one. */
  int fd = -1;
  for (unsigned attempt = 0; fd < 0 && attempt < 100; attempt++) {
    snprintf(tmp, cap, "%s.new.%ld.%u", path, (long)getpid(), attempt);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    loom_status st = err_set(err, LOOM_ERR_IO, "%s: cannot create the records file: %s", path, strerror(errno));
    loom_free(tmp);
    return st;
  }
  close(fd);
  sqlite3 *db = NULL;
  loom_status st = open_db(tmp, SQLITE_OPEN_READWRITE, &db, err);
  if (!st) {
    /* One transaction: the schema, the pragmas and meta appear together. */
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, schema_sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, "INSERT INTO meta (key, value) VALUES (?1, ?2)", -1, &q, NULL);
    const char *meta[][2] = {{"application", RECORDS_APPLICATION},
                             {"format_version", "1"},
                             {"created_by", "loom " LOOM_VERSION_STRING}};
    for (size_t i = 0; rc == SQLITE_OK && i < sizeof meta / sizeof meta[0]; i++) {
      rc = sqlite3_bind_text(q, 1, meta[i][0], -1, SQLITE_STATIC);
      if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 2, meta[i][1], -1, SQLITE_STATIC);
      if (rc == SQLITE_OK) rc = sqlite3_step(q) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
      sqlite3_reset(q);
    }
    sqlite3_finalize(q);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    /* WAL is a property of the file: every later connection uses it. */
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) st = db_error(db, path, rc, "cannot create the records file", err);
    int crc = sqlite3_close(db);
    if (!st && crc != SQLITE_OK) st = db_error(NULL, path, crc, "cannot create the records file", err);
  }
  if (!st && link(tmp, path) != 0 && errno != EEXIST) {
    /* File systems without hard links: rename, unless the path appeared. */
    struct stat sb;
    if (stat(path, &sb) != 0 && rename(tmp, path) != 0)
      st = err_set(err, LOOM_ERR_IO, "%s: cannot create the records file: %s", path, strerror(errno));
  }
  unlink(tmp);
  loom_free(tmp);
  return st;
}

static loom_status prepare_all(SqliteStore *s, LoomError *err) {
  for (int i = 0; i < Q_COUNT; i++) {
    int rc = sqlite3_prepare_v3(s->db, query_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->q[i], NULL);
    if (rc != SQLITE_OK)
      return err_set(err, status_of(rc) == LOOM_ERR_INVALID_ARG ? LOOM_ERR_INVALID_ARG : status_of(rc),
                     "%s: damaged records file: its tables are not the ones Loom made (%s)", s->base.path,
                     sqlite3_errmsg(s->db));
  }
  return LOOM_OK;
}

static const RecordStoreOps sqlite_ops;

loom_status records_sqlite_open(const char *path, RecordStore **out, LoomError *err) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    if (errno != ENOENT)
      return err_set(err, LOOM_ERR_IO, "%s: cannot open the records file: %s", path, strerror(errno));
    loom_status st = create_file(path, err);
    if (st) return st;
  } else if (!S_ISREG(sb.st_mode)) {
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: not a Loom records file: not a regular file", path);
  }
  loom_status st = check_header(path, err);
  if (st) return st;
  /* Read-only first: a file that is refused is never opened for writing. */
  sqlite3 *db = NULL;
  st = open_db(path, SQLITE_OPEN_READONLY, &db, err);
  if (st) return st;
  st = check_db(db, path, err);
  sqlite3_close(db);
  if (st) return st;

  SqliteStore *s = loom_calloc(1, sizeof *s);
  char *p = loom_strdup(path);
  if (!s || !p) {
    loom_free(s);
    loom_free(p);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
  }
  s->base.ops = &sqlite_ops;
  s->base.path = p;
  st = open_db(path, SQLITE_OPEN_READWRITE, &s->db, err);
  /* again on this connection: the file may have changed in between */
  if (!st) st = check_db(s->db, path, err);
  if (!st) {
    int rc = sqlite3_exec(s->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) st = db_error(s->db, path, rc, "cannot open the records file", err);
  }
  if (!st) st = prepare_all(s, err);
  if (st) {
    sqlite_ops.close(&s->base);
    return st;
  }
  *out = &s->base;
  return LOOM_OK;
}

/* ---- ops ---- */

static void sqlite_close(RecordStore *base) {
  SqliteStore *s = as_sqlite(base);
  if (s->db && !sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  for (int i = 0; i < Q_COUNT; i++) sqlite3_finalize(s->q[i]);
  sqlite3_close(s->db);
  loom_free(s->base.path);
  loom_free(s);
}

static loom_status sqlite_begin(RecordStore *base, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  /* IMMEDIATE takes the write lock now, so adds never wait half-way */
  int rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
  return rc == SQLITE_OK ? LOOM_OK : db_error(s->db, base->path, rc, "cannot start a batch", err);
}

static loom_status sqlite_commit(RecordStore *base, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  int rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
  if (rc == SQLITE_OK) return LOOM_OK;
  loom_status st = db_error(s->db, base->path, rc, "cannot commit the batch (rolled back)", err);
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
  return st;
}

static void sqlite_rollback(RecordStore *base) {
  SqliteStore *s = as_sqlite(base);
  if (!sqlite3_get_autocommit(s->db)) sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Runs a statement that returns no row; resets it either way. */
static int step_done(sqlite3_stmt *q) {
  int rc = sqlite3_step(q);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static loom_status sqlite_add(RecordStore *base, const TuneRecord *r, const char *family, bool *added,
                              LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_INSERT];
  char *times = records_times_to_json(r->times_us, r->n_times);
  if (!times) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory", base->path);
  int rc = sqlite3_bind_text(q, 1, r->workload, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 2, r->target, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(q, 3, r->threads);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 4, family, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 5, r->trace, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 6, r->status, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK)
    rc = strcmp(r->status, "ok") == 0 ? sqlite3_bind_double(q, 7, r->median_us) : sqlite3_bind_null(q, 7);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 8, times, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = r->error ? sqlite3_bind_text(q, 9, r->error, -1, SQLITE_STATIC) : sqlite3_bind_null(q, 9);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 10, r->provenance, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 11, r->loom_version, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(q, 12, r->created_unix);
  if (rc == SQLITE_OK) {
    rc = step_done(q);
  } else {
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
  }
  loom_free(times);
  if (rc == SQLITE_OK) {
    *added = sqlite3_changes(s->db) > 0;
    return LOOM_OK;
  }
  /* Some errors (disk full, I/O) end the transaction: say the batch is gone. */
  bool lost = base->in_batch && sqlite3_get_autocommit(s->db);
  if (lost) base->in_batch = false;
  return db_error(s->db, base->path, rc, lost ? "cannot add the record (the batch was rolled back)"
                                              : "cannot add the record", err);
}

static loom_status sqlite_get_times(RecordStore *base, int64_t id, double **times, int *n, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_GET_TIMES];
  *times = NULL, *n = -1;
  int rc = sqlite3_bind_int64(q, 1, id);
  if (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    *times = records_times_from_json((const char *)sqlite3_column_text(q, 0), n);
    rc = *times || *n == 0 ? SQLITE_OK : SQLITE_MISMATCH;
  } else if (rc == SQLITE_DONE) {
    rc = SQLITE_OK; /* no such ok record: *n = -1 */
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  if (rc == SQLITE_MISMATCH)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: record %lld: times_us does not decode", base->path, (long long)id);
  return rc == SQLITE_OK ? LOOM_OK : db_error(s->db, base->path, rc, "cannot read a record's times", err);
}

static loom_status sqlite_set_times(RecordStore *base, int64_t id, const char *times_json, double median_us,
                                    LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_SET_TIMES];
  int rc = sqlite3_bind_int64(q, 1, id);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 2, times_json, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(q, 3, median_us);
  if (rc == SQLITE_OK) {
    rc = step_done(q);
  } else {
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
  }
  if (rc == SQLITE_OK)
    return sqlite3_changes(s->db) > 0
               ? LOOM_OK
               : err_set(err, LOOM_ERR_INVALID_ARG, "%s: record %lld is not an \"ok\" record", base->path,
                         (long long)id);
  bool lost = base->in_batch && sqlite3_get_autocommit(s->db);
  if (lost) base->in_batch = false;
  return db_error(s->db, base->path, rc, lost ? "cannot update the record (the batch was rolled back)"
                                              : "cannot update the record", err);
}

/* Reads the current row into r (strings and times valid until the next
 * step or reset; *times is malloc'd for the caller to free). NULL, or the
 * name of the column that does not decode. */
static const char *decode_row(sqlite3_stmt *q, TuneRecord *r, double **times) {
  memset(r, 0, sizeof *r);
  *times = NULL;
  const char *const *names = column_names;
  int text_cols[] = {C_WORKLOAD, C_TARGET, C_TRACE, C_STATUS, C_TIMES, C_PROVENANCE, C_VERSION};
  for (size_t i = 0; i < sizeof text_cols / sizeof text_cols[0]; i++)
    if (sqlite3_column_type(q, text_cols[i]) != SQLITE_TEXT) return names[text_cols[i]];
  if (sqlite3_column_type(q, C_ID) != SQLITE_INTEGER) return names[C_ID];
  if (sqlite3_column_type(q, C_THREADS) != SQLITE_INTEGER) return names[C_THREADS];
  if (sqlite3_column_type(q, C_CREATED) != SQLITE_INTEGER) return names[C_CREATED];
  int median_type = sqlite3_column_type(q, C_MEDIAN), error_type = sqlite3_column_type(q, C_ERROR);
  if (median_type != SQLITE_FLOAT && median_type != SQLITE_INTEGER && median_type != SQLITE_NULL)
    return names[C_MEDIAN];
  if (error_type != SQLITE_TEXT && error_type != SQLITE_NULL) return names[C_ERROR];
  int64_t threads = sqlite3_column_int64(q, C_THREADS);
  if (threads < 1 || threads > INT_MAX) return names[C_THREADS];
  r->id = sqlite3_column_int64(q, C_ID);
  r->workload = (const char *)sqlite3_column_text(q, C_WORKLOAD);
  r->target = (const char *)sqlite3_column_text(q, C_TARGET);
  r->threads = (int)threads;
  r->trace = (const char *)sqlite3_column_text(q, C_TRACE);
  r->status = (const char *)sqlite3_column_text(q, C_STATUS);
  r->median_us = median_type == SQLITE_NULL ? -1.0 : sqlite3_column_double(q, C_MEDIAN);
  r->error = error_type == SQLITE_NULL ? NULL : (const char *)sqlite3_column_text(q, C_ERROR);
  r->provenance = (const char *)sqlite3_column_text(q, C_PROVENANCE);
  r->loom_version = (const char *)sqlite3_column_text(q, C_VERSION);
  r->created_unix = sqlite3_column_int64(q, C_CREATED);
  if (!r->workload || !r->target || !r->trace || !r->status || !r->provenance || !r->loom_version ||
      (error_type != SQLITE_NULL && !r->error))
    return "(out of memory)";
  *times = records_times_from_json((const char *)sqlite3_column_text(q, C_TIMES), &r->n_times);
  if (!*times) {
    r->n_times = 0;
    return names[C_TIMES];
  }
  r->times_us = *times;
  return NULL;
}

/* decode_row, then the checks records_add makes: what a caller reads
 * satisfies what a writer had to. */
static loom_status read_row(SqliteStore *s, sqlite3_stmt *q, TuneRecord *r, double **times, LoomError *err) {
  const char *bad = decode_row(q, r, times);
  if (bad)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: damaged records file: record %lld: column %s does not decode",
                   s->base.path, (long long)sqlite3_column_int64(q, C_ID), bad);
  LoomError why = {0};
  if (records_validate(r, &why))
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: damaged records file: record %lld: %s", s->base.path,
                   (long long)r->id, why.msg);
  return LOOM_OK;
}

static int bind_key(sqlite3_stmt *q, const char *workload, const char *target, int threads, const char *family) {
  int rc = sqlite3_bind_text(q, 1, workload, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 2, target, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(q, 3, threads);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 4, family, -1, SQLITE_STATIC);
  return rc;
}

static void finish(sqlite3_stmt *q) {
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
}

static loom_status sqlite_best(RecordStore *base, const char *workload, const char *target, int threads,
                               const char *family, Arena *a, TuneRecord *out, bool *found, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_BEST];
  int rc = bind_key(q, workload, target, threads, family);
  if (rc == SQLITE_OK) rc = sqlite3_step(q);
  if (rc == SQLITE_DONE) {
    finish(q);
    return LOOM_OK;
  }
  if (rc != SQLITE_ROW) {
    loom_status st = db_error(s->db, base->path, rc, "cannot look up the best record", err);
    finish(q);
    return st;
  }
  TuneRecord r;
  double *times = NULL;
  loom_status st = read_row(s, q, &r, &times, err);
  if (!st) {
    *out = r;
    out->workload = arena_strdup(a, r.workload);
    out->target = arena_strdup(a, r.target);
    out->trace = arena_strdup(a, r.trace);
    out->status = arena_strdup(a, r.status);
    out->error = r.error ? arena_strdup(a, r.error) : NULL;
    out->provenance = arena_strdup(a, r.provenance);
    out->loom_version = arena_strdup(a, r.loom_version);
    out->times_us = arena_memdup(a, times, sizeof(double) * (size_t)(r.n_times > 0 ? r.n_times : 1));
    *found = true;
  }
  loom_free(times);
  finish(q);
  return st;
}

static loom_status sqlite_contains(RecordStore *base, const char *workload, const char *target, int threads,
                                   const char *family, const char *trace, bool *found, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_CONTAINS];
  int rc = bind_key(q, workload, target, threads, family);
  if (rc == SQLITE_OK) rc = sqlite3_bind_text(q, 5, trace, -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_step(q);
  finish(q);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
    *found = rc == SQLITE_ROW;
    return LOOM_OK;
  }
  return db_error(s->db, base->path, rc, "cannot look up a trace", err);
}

/* The foreach or count statement for the filters given, bound. */
static sqlite3_stmt *filtered(SqliteStore *s, Query all, const char *workload, const char *target, int *rc) {
  /* all, _W, _T, _WT are consecutive in Query */
  sqlite3_stmt *q = s->q[all + (workload ? 1 : 0) + (target ? 2 : 0)];
  *rc = SQLITE_OK;
  if (workload) *rc = sqlite3_bind_text(q, 1, workload, -1, SQLITE_STATIC);
  if (target && *rc == SQLITE_OK) *rc = sqlite3_bind_text(q, 2, target, -1, SQLITE_STATIC);
  return q;
}

static loom_status sqlite_foreach(RecordStore *base, const char *workload, const char *target, RecordVisitor fn,
                                  void *user, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  int rc;
  sqlite3_stmt *q = filtered(s, Q_EACH_ALL, workload, target, &rc);
  loom_status st = LOOM_OK;
  while (rc == SQLITE_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    rc = SQLITE_OK;
    TuneRecord r;
    double *times = NULL;
    st = read_row(s, q, &r, &times, err);
    bool more = !st && fn(&r, user);
    loom_free(times);
    if (!more) break;
  }
  if (!st && rc != SQLITE_OK && rc != SQLITE_DONE)
    st = db_error(s->db, base->path, rc, "cannot read the records", err);
  finish(q);
  return st;
}

static loom_status sqlite_count(RecordStore *base, const char *workload, const char *target, int64_t *count,
                                LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  int rc;
  sqlite3_stmt *q = filtered(s, Q_COUNT_ALL, workload, target, &rc);
  if (rc == SQLITE_OK) rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) *count = sqlite3_column_int64(q, 0);
  finish(q);
  return rc == SQLITE_ROW ? LOOM_OK : db_error(s->db, base->path, rc, "cannot count the records", err);
}

static loom_status sqlite_check(RecordStore *base, LoomError *err) {
  SqliteStore *s = as_sqlite(base);
  sqlite3_stmt *q = s->q[Q_CHECK];
  char report[512] = "";
  size_t len = 0;
  int rc, rows = 0;
  bool clean = false;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(q, 0);
    if (!line) continue;
    if (rows++ == 0 && strcmp(line, "ok") == 0) clean = true;
    if (len < sizeof report - 1)
      len += (size_t)snprintf(report + len, sizeof report - len, "%s%s", len ? "; " : "", line);
  }
  finish(q);
  if (rc != SQLITE_DONE) return db_error(s->db, base->path, rc, "integrity check", err);
  if (clean && rows == 1) return LOOM_OK;
  return err_set(err, LOOM_ERR_INVALID_ARG, "%s: damaged records file: integrity_check: %s", base->path, report);
}

static const RecordStoreOps sqlite_ops = {
    .kind = "sqlite",
    .close = sqlite_close,
    .begin = sqlite_begin,
    .commit = sqlite_commit,
    .rollback = sqlite_rollback,
    .add = sqlite_add,
    .get_times = sqlite_get_times,
    .set_times = sqlite_set_times,
    .best = sqlite_best,
    .contains = sqlite_contains,
    .foreach = sqlite_foreach,
    .count = sqlite_count,
    .check = sqlite_check,
};

/* The records interface: argument checks shared by every store, then a call
 * through the store's ops (records.h). The SQLite store is
 * records_sqlite.c. */
#include "autotune/records.h"

#include "runtime/artifact.h" /* LOOM_VERSION_STRING */
#include "support/alloc.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- helpers ---- */

bool records_status_valid(const char *status) {
  static const char *const known[] = {"ok", "build", "crash", "timeout", "wrong"};
  if (!status) return false;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(status, known[i]) == 0) return true;
  return false;
}

bool records_version_family(const char *version, char out[32]) {
  if (!version) return false;
  const char *p = version;
  size_t n_major = 0, n_minor = 0;
  while (isdigit((unsigned char)p[n_major])) n_major++;
  if (n_major == 0 || p[n_major] != '.') return false;
  p += n_major + 1;
  while (isdigit((unsigned char)p[n_minor])) n_minor++;
  if (n_minor == 0 || (p[n_minor] != '\0' && p[n_minor] != '.') || n_major + n_minor + 2 > 32) return false;
  snprintf(out, 32, "%.*s.%.*s", (int)n_major, version, (int)n_minor, p);
  return true;
}

/* A non-empty string without control characters, at most `max` bytes. */
static bool text_valid(const char *s, size_t max) {
  if (!s || !*s) return false;
  size_t n = 0;
  for (const unsigned char *c = (const unsigned char *)s; *c; c++, n++)
    if ((*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f || n >= max) return false;
  return true;
}

loom_status records_validate(const TuneRecord *r, LoomError *err) {
  if (!r) return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: record is NULL");
  const char *fields[] = {"workload", "target", "provenance"};
  const char *values[] = {r->workload, r->target, r->provenance};
  for (int i = 0; i < 3; i++)
    if (!text_valid(values[i], 256) || strchr(values[i], '\n') || strchr(values[i], '\t'))
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "records_add: %s: expected a non-empty single-line string of at most 255 bytes", fields[i]);
  if (r->threads < 1)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: threads is %d, expected >= 1 (the count measured with)",
                   r->threads);
  if (!text_valid(r->trace, RECORDS_MAX_TEXT))
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "records_add: trace: expected non-empty trace text of printable characters, under %d bytes",
                   RECORDS_MAX_TEXT);
  if (!records_status_valid(r->status))
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "records_add: status \"%.40s\": expected \"ok\", \"build\", \"crash\", \"timeout\" or \"wrong\"",
                   r->status ? r->status : "(null)");
  bool ok = strcmp(r->status, "ok") == 0;
  if (ok && !(isfinite(r->median_us) && r->median_us >= 0))
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: median_us is %g, expected a finite time >= 0 for \"ok\"",
                   r->median_us);
  if (!ok && !(r->median_us < 0))
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: median_us is %g, expected < 0 for a failed (\"%s\") record",
                   r->median_us, r->status);
  if (r->n_times < (ok ? 1 : 0) || r->n_times > RECORDS_MAX_TIMES || (r->n_times > 0 && !r->times_us))
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: n_times is %d, expected %d..%d times in times_us",
                   r->n_times, ok ? 1 : 0, RECORDS_MAX_TIMES);
  for (int i = 0; i < r->n_times; i++)
    if (!(isfinite(r->times_us[i]) && r->times_us[i] >= 0))
      return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: times_us[%d] is %g, expected a finite time >= 0", i,
                     r->times_us[i]);
  if (r->error && (strlen(r->error) >= RECORDS_MAX_TEXT))
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: error: expected under %d bytes", RECORDS_MAX_TEXT);
  char family[32];
  if (r->loom_version && !records_version_family(r->loom_version, family))
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: loom_version \"%.40s\": expected MAJOR.MINOR[.PATCH]",
                   r->loom_version);
  if (r->created_unix < 0)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_add: created_unix is %lld, expected >= 0 (0: now)",
                   (long long)r->created_unix);
  return LOOM_OK;
}

char *records_times_to_json(const double *times, int n) {
  /* "%.17g" is at most 24 characters, plus a comma each */
  size_t cap = 3 + (size_t)(n > 0 ? n : 0) * 26;
  char *out = loom_malloc(cap);
  if (!out) return NULL;
  size_t len = 0;
  out[len++] = '[';
  for (int i = 0; i < n; i++) {
    if (i) out[len++] = ',';
    len += (size_t)snprintf(out + len, cap - len, "%.17g", times[i]);
  }
  out[len++] = ']';
  out[len] = '\0';
  return out;
}

double *records_times_from_json(const char *text, int *n) {
  *n = -1;
  if (!text) return NULL;
  int cap = 1;
  for (const char *c = text; *c; c++) cap += *c == ',';
  if (cap > RECORDS_MAX_TIMES + 1) return NULL;
  double *v = loom_malloc(sizeof(double) * (size_t)cap);
  if (!v) return NULL;
  const char *p = text;
  int k = 0;
  while (isspace((unsigned char)*p)) p++;
  if (*p++ != '[') goto bad;
  while (isspace((unsigned char)*p)) p++;
  if (*p == ']') {
    p++;
  } else {
    for (;;) {
      /* JSON numbers only: strtod would also take "inf", "nan" and hex */
      if (!(isdigit((unsigned char)*p) || *p == '-')) goto bad;
      char *end;
      double x = strtod(p, &end);
      if (end == p || !isfinite(x) || k >= cap) goto bad;
      for (const char *c = p; c < end; c++)
        if (!(isdigit((unsigned char)*c) || strchr("+-.eE", *c))) goto bad;
      v[k++] = x;
      p = end;
      while (isspace((unsigned char)*p)) p++;
      if (*p == ']') {
        p++;
        break;
      }
      if (*p++ != ',') goto bad;
      while (isspace((unsigned char)*p)) p++;
    }
  }
  while (isspace((unsigned char)*p)) p++;
  if (*p || k > RECORDS_MAX_TIMES) goto bad;
  *n = k;
  return v;
bad:
  loom_free(v);
  return NULL;
}

/* ---- the interface ---- */

loom_status records_open(const char *path, RecordStore **out, LoomError *err) {
  if (out) *out = NULL;
  if (!path || !*path || !out)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_open: expected a path and an output pointer");
  /* A later store is picked here by its address, e.g. "postgresql://...". */
  if (strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "%s: PostgreSQL record stores are not supported yet; give a file path",
                   path);
  return records_sqlite_open(path, out, err);
}

void records_close(RecordStore *s) {
  if (s) s->ops->close(s);
}

const char *records_path(const RecordStore *s) { return s ? s->path : NULL; }

static loom_status check_store(RecordStore *s, const char *fn, LoomError *err) {
  if (!s) return err_set(err, LOOM_ERR_INVALID_ARG, "%s: store is NULL", fn);
  return LOOM_OK;
}

static loom_status check_key(RecordStore *s, const char *fn, const char *workload, const char *target, int threads,
                             LoomError *err) {
  if (!s) return err_set(err, LOOM_ERR_INVALID_ARG, "%s: store is NULL", fn);
  if (!workload || !target)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s: expected a workload and a target", fn, s->path);
  if (threads < 1) return err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s: threads is %d, expected >= 1", fn, s->path, threads);
  return LOOM_OK;
}

loom_status records_begin(RecordStore *s, LoomError *err) {
  loom_status st = check_store(s, "records_begin", err);
  if (st) return st;
  if (s->in_batch)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_begin: %s: a batch is already open (commit or roll it back)",
                   s->path);
  st = s->ops->begin(s, err);
  if (!st) s->in_batch = true;
  return st;
}

loom_status records_commit(RecordStore *s, LoomError *err) {
  loom_status st = check_store(s, "records_commit", err);
  if (st) return st;
  if (!s->in_batch)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_commit: %s: no batch is open (records_begin first)", s->path);
  s->in_batch = false;
  return s->ops->commit(s, err);
}

void records_rollback(RecordStore *s) {
  if (!s || !s->in_batch) return;
  s->in_batch = false;
  s->ops->rollback(s);
}

loom_status records_add(RecordStore *s, const TuneRecord *r, bool *added, LoomError *err) {
  if (added) *added = false;
  loom_status st = check_store(s, "records_add", err);
  if (st) return st;
  st = records_validate(r, err);
  if (st) {
    err_prefix(err, "%s", s->path);
    return st;
  }
  TuneRecord filled = *r;
  if (!filled.loom_version) filled.loom_version = LOOM_VERSION_STRING;
  if (!filled.created_unix) filled.created_unix = (int64_t)time(NULL);
  char family[32];
  LOOM_ASSERT(records_version_family(filled.loom_version, family));
  bool ignored;
  return s->ops->add(s, &filled, family, added ? added : &ignored, err);
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

loom_status records_add_time(RecordStore *s, int64_t id, double median_us, LoomError *err) {
  loom_status st = check_store(s, "records_add_time", err);
  if (st) return st;
  if (!(isfinite(median_us) && median_us >= 0))
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: records_add_time: %g us, expected a finite time >= 0", s->path,
                   median_us);
  double *times = NULL;
  int n = -1;
  if ((st = s->ops->get_times(s, id, &times, &n, err))) return st;
  if (n < 0 || n >= RECORDS_MAX_TIMES) {
    loom_free(times);
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: records_add_time: record %lld %s", s->path, (long long)id,
                   n < 0 ? "is not an \"ok\" record" : "holds the most times a record can");
  }
  double *all = loom_realloc(times, sizeof(double) * (size_t)(n + 1)), *sorted = loom_malloc(sizeof(double) * (size_t)(n + 1));
  if (!all || !sorted) {
    loom_free(all ? all : times);
    loom_free(sorted);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory", s->path);
  }
  all[n++] = median_us;
  memcpy(sorted, all, sizeof(double) * (size_t)n);
  qsort(sorted, (size_t)n, sizeof(double), compare_double);
  double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  char *json = records_times_to_json(all, n);
  st = json ? s->ops->set_times(s, id, json, median, err) : err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory", s->path);
  loom_free(json);
  loom_free(all);
  loom_free(sorted);
  return st;
}

/* The running Loom's version family, which best and contains look in. */
static void current_family(char out[32]) { LOOM_ASSERT(records_version_family(LOOM_VERSION_STRING, out)); }

loom_status records_best(RecordStore *s, const char *workload, const char *target, int threads, Arena *a,
                         TuneRecord *out, bool *found, LoomError *err) {
  if (found) *found = false;
  loom_status st = check_key(s, "records_best", workload, target, threads, err);
  if (st) return st;
  if (!a || !out || !found)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_best: %s: expected an arena, a record and a found flag",
                   s->path);
  memset(out, 0, sizeof *out);
  char family[32];
  current_family(family);
  return s->ops->best(s, workload, target, threads, family, a, out, found, err);
}

loom_status records_contains(RecordStore *s, const char *workload, const char *target, int threads,
                             const char *trace, bool *found, LoomError *err) {
  if (found) *found = false;
  loom_status st = check_key(s, "records_contains", workload, target, threads, err);
  if (st) return st;
  if (!trace || !found)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_contains: %s: expected a trace and a found flag", s->path);
  char family[32];
  current_family(family);
  return s->ops->contains(s, workload, target, threads, family, trace, found, err);
}

loom_status records_foreach(RecordStore *s, const char *workload, const char *target, RecordVisitor fn,
                            void *user, LoomError *err) {
  loom_status st = check_store(s, "records_foreach", err);
  if (st) return st;
  if (!fn) return err_set(err, LOOM_ERR_INVALID_ARG, "records_foreach: %s: expected a visitor", s->path);
  if (s->visiting)
    return err_set(err, LOOM_ERR_INVALID_ARG, "records_foreach: %s: called from a visitor of the same store",
                   s->path);
  s->visiting = true;
  st = s->ops->foreach(s, workload, target, fn, user, err);
  s->visiting = false;
  return st;
}

loom_status records_count(RecordStore *s, const char *workload, const char *target, int64_t *count,
                          LoomError *err) {
  if (count) *count = 0;
  loom_status st = check_store(s, "records_count", err);
  if (st) return st;
  if (!count) return err_set(err, LOOM_ERR_INVALID_ARG, "records_count: %s: expected a count pointer", s->path);
  return s->ops->count(s, workload, target, count, err);
}

loom_status records_check(RecordStore *s, LoomError *err) {
  loom_status st = check_store(s, "records_check", err);
  if (st) return st;
  return s->ops->check(s, err);
}

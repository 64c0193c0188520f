/* The tuner's side of measurement: the measurer process and its protocol
 * (measure_protocol.h), and building candidates in parallel. */
#include "autotune/measure.h"

#include "runtime/dl_dtype.h"
#include "support/alloc.h"
#include "support/clock.h"
#include "support/strbuf.h"
#include "support/subprocess.h"
#include "target/codegen_c.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
  START_TIMEOUT_MS = 10000, /* from exec to the hello line */
  STOP_GRACE_MS = 1000,     /* from closing its input to the kill */
  STDERR_TAIL = 1024,       /* bytes of the measurer's stderr kept for messages */
};

struct Measurer {
  char exe[PATH_MAX];
  pid_t pid; /* 0: not running */
  SubprocessPipes io;
  char *out; /* stdout received and not yet consumed */
  size_t out_len, out_cap;
  char err_tail[STDERR_TAIL + 1]; /* the last bytes of stderr during this request */
  size_t err_len;
  int starts;
};

const char *measure_status_name(MeasureStatus s) {
  switch (s) {
    case MEASURE_OK: return "ok";
    case MEASURE_WRONG: return "wrong";
    case MEASURE_CRASH: return "crash";
    case MEASURE_TIMEOUT: return "timeout";
    case MEASURE_ERROR: return "error";
  }
  return "unknown";
}

static void result_set(MeasureResult *r, MeasureStatus status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void result_set(MeasureResult *r, MeasureStatus status, const char *fmt, ...) {
  r->status = status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->message, sizeof r->message, fmt, ap);
  va_end(ap);
}

/* ---- the process ---- */

/* The measurer's executable (measure.h says where it is looked for). */
static loom_status find_executable(char *buf, size_t cap, LoomError *err) {
  const char *env = getenv("LOOM_MEASURE");
  if (env && *env) {
    if (snprintf(buf, cap, "%s", env) >= (int)cap)
      return err_set(err, LOOM_ERR_IO, "LOOM_MEASURE is longer than %zu bytes", cap - 1);
    return LOOM_OK;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) {
      *slash = '\0';
      if (snprintf(buf, cap, "%s/loom-measure", self) < (int)cap && access(buf, X_OK) == 0) return LOOM_OK;
    }
  }
#ifdef LOOM_MEASURE_DEFAULT_PATH
  if (access(LOOM_MEASURE_DEFAULT_PATH, X_OK) == 0) {
    snprintf(buf, cap, "%s", LOOM_MEASURE_DEFAULT_PATH);
    return LOOM_OK;
  }
#endif
  return err_set(err, LOOM_ERR_IO,
                 "cannot find the measurer: expected loom-measure next to \"%s\"%s, or its path in "
                 "$LOOM_MEASURE",
                 n > 0 ? self : "the running program",
#ifdef LOOM_MEASURE_DEFAULT_PATH
                 " or at \"" LOOM_MEASURE_DEFAULT_PATH "\""
#else
                 ""
#endif
  );
}

static void keep_stderr(Measurer *m, const char *data, size_t n) {
  if (n >= STDERR_TAIL) {
    memcpy(m->err_tail, data + n - STDERR_TAIL, STDERR_TAIL);
    m->err_len = STDERR_TAIL;
  } else {
    size_t keep = m->err_len + n > STDERR_TAIL ? STDERR_TAIL - n : m->err_len;
    memmove(m->err_tail, m->err_tail + m->err_len - keep, keep);
    memcpy(m->err_tail + keep, data, n);
    m->err_len = keep + n;
  }
  m->err_tail[m->err_len] = '\0';
}

/* Reads what is there on fd into the stdout buffer or the stderr tail.
 * false at the end of the stream (or an error). */
static bool drain(Measurer *m, int fd) {
  char buf[4096];
  ssize_t got;
  while ((got = read(fd, buf, sizeof buf)) < 0 && errno == EINTR) {
  }
  if (got <= 0) return false;
  if (fd == m->io.err) {
    keep_stderr(m, buf, (size_t)got);
    return true;
  }
  if (m->out_len + (size_t)got + 1 > m->out_cap) {
    size_t cap = m->out_cap ? m->out_cap : 4096;
    while (cap < m->out_len + (size_t)got + 1) cap *= 2;
    char *p = loom_realloc(m->out, cap);
    if (!p) return false;
    m->out = p;
    m->out_cap = cap;
  }
  memcpy(m->out + m->out_len, buf, (size_t)got);
  m->out_len += (size_t)got;
  m->out[m->out_len] = '\0';
  return true;
}

typedef enum { WAIT_OK, WAIT_EOF, WAIT_TIMEOUT } WaitResult;

/* Does the stdout buffer hold the line `line` ("end"), or any whole line
 * when line is NULL? */
static bool have_line(const Measurer *m, const char *line) {
  if (!m->out) return false;
  if (!line) return memchr(m->out, '\n', m->out_len) != NULL;
  size_t n = strlen(line);
  for (size_t at = 0; at + n < m->out_len; at++)
    if ((at == 0 || m->out[at - 1] == '\n') && memcmp(m->out + at, line, n) == 0 && m->out[at + n] == '\n')
      return true;
  return false;
}

/* Waits until the stdout buffer holds `line` (have_line), draining
 * stderr meanwhile, or until deadline_ms. */
static WaitResult wait_for(Measurer *m, const char *line, double deadline_ms) {
  for (;;) {
    if (have_line(m, line)) return WAIT_OK;
    double left = deadline_ms - loom_clock_ms();
    if (left <= 0) return WAIT_TIMEOUT;
    struct pollfd p[2] = {{.fd = m->io.out, .events = POLLIN}, {.fd = m->io.err, .events = POLLIN}};
    int nfds = m->io.err >= 0 ? 2 : 1;
    int r = poll(p, (nfds_t)nfds, left > 60000 ? 60000 : (int)ceil(left));
    if (r < 0 && errno != EINTR) return WAIT_EOF;
    if (r <= 0) continue;
    if (nfds == 2 && (p[1].revents & (POLLIN | POLLHUP)) && !drain(m, m->io.err)) {
      close(m->io.err);
      m->io.err = -1;
    }
    if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(m, m->io.out)) {
      /* The end of stdout: collect the rest of stderr (a sanitizer's
       * report) without waiting for it. */
      while (m->io.err >= 0 && poll(&(struct pollfd){.fd = m->io.err, .events = POLLIN}, 1, 0) > 0 &&
             drain(m, m->io.err)) {
      }
      return WAIT_EOF;
    }
  }
}

static void forget_process(Measurer *m) {
  subprocess_close_pipes(&m->io);
  m->pid = 0;
  m->out_len = 0;
}

static void kill_process(Measurer *m) {
  if (m->pid > 0) subprocess_kill(m->pid);
  forget_process(m);
}

/* How the measurer ended, once its stdout has closed: it is normally
 * exiting; one that lingers is killed. Returns the exit code (128 + the
 * signal for a signal; -1 when it had to be killed). */
static int describe_exit(Measurer *m, char *buf, size_t cap) {
  bool done = false;
  int code = 0;
  double until = loom_clock_ms() + STOP_GRACE_MS;
  while (subprocess_wait(m->pid, false, &done, &code, NULL) == LOOM_OK && !done && loom_clock_ms() < until)
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  if (!done) {
    subprocess_kill(m->pid);
    code = -1;
    snprintf(buf, cap, "closed its output and was killed");
  } else if (code > 128) {
    static const struct {
      int sig;
      const char *name;
    } names[] = {{SIGSEGV, "SIGSEGV (invalid memory access)"}, {SIGBUS, "SIGBUS (bus error)"},
                 {SIGILL, "SIGILL (illegal instruction)"},     {SIGFPE, "SIGFPE (arithmetic exception)"},
                 {SIGABRT, "SIGABRT (abort)"},                  {SIGKILL, "SIGKILL"},
                 {SIGTRAP, "SIGTRAP"},                          {SIGSYS, "SIGSYS (bad system call)"}};
    const char *name = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if (names[i].sig == code - 128) name = names[i].name;
    if (name) snprintf(buf, cap, "was killed by %s", name);
    else snprintf(buf, cap, "was killed by signal %d", code - 128);
  } else {
    snprintf(buf, cap, "exited with status %d%s", code, code == 127 ? " (not found or not executable)" : "");
  }
  forget_process(m);
  return code;
}

/* The most telling line of the stderr tail, for a message: a sanitizer's
 * "SUMMARY:" line (ASan's report ends with "ABORTING"), else UBSan's
 * "runtime error:" line, else the last line. */
static const char *stderr_last_words(Measurer *m) {
  size_t n = m->err_len;
  while (n > 0 && (m->err_tail[n - 1] == '\n' || m->err_tail[n - 1] == ' ')) m->err_tail[--n] = '\0';
  static const char *const marks[] = {"SUMMARY:", "runtime error:"};
  for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
    char *at = strstr(m->err_tail, marks[i]);
    if (!at) continue;
    while (at > m->err_tail && at[-1] != '\n') at--; /* the whole line */
    char *nl = strchr(at, '\n');
    if (nl) *nl = '\0';
    return at;
  }
  const char *nl = strrchr(m->err_tail, '\n');
  return nl ? nl + 1 : m->err_tail;
}

/* Removes the first `upto` bytes of the stdout buffer. */
static void consume(Measurer *m, size_t upto) {
  memmove(m->out, m->out + upto, m->out_len - upto + 1);
  m->out_len -= upto;
}

static loom_status start_process(Measurer *m, LoomError *err) {
  char *argv[] = {m->exe, NULL};
  m->out_len = 0;
  m->err_len = 0;
  m->err_tail[0] = '\0';
  loom_status st = subprocess_start_piped(argv, &m->io, &m->pid, err);
  if (st) return st;
  m->starts++;
  char hello[64];
  snprintf(hello, sizeof hello, "%s ", MEASURE_HELLO);
  WaitResult w = wait_for(m, NULL, loom_clock_ms() + START_TIMEOUT_MS);
  if (w == WAIT_OK) {
    char *nl = strchr(m->out, '\n');
    *nl = '\0';
    bool ours = strncmp(m->out, hello, strlen(hello)) == 0;
    long version = ours ? strtol(m->out + strlen(hello), NULL, 10) : -1;
    if (version == MEASURE_PROTOCOL_VERSION) {
      consume(m, (size_t)(nl + 1 - m->out));
      return LOOM_OK;
    }
    st = err_set(err, LOOM_ERR_IO, "the measurer \"%s\" said \"%.80s\", expected \"%s%d\" (protocol version)", m->exe,
                 m->out, hello, MEASURE_PROTOCOL_VERSION);
    kill_process(m);
    return st;
  }
  if (w == WAIT_TIMEOUT) {
    kill_process(m);
    return err_set(err, LOOM_ERR_IO, "the measurer \"%s\" did not answer within %d s of its start", m->exe,
                   START_TIMEOUT_MS / 1000);
  }
  char how[128];
  describe_exit(m, how, sizeof how);
  return err_set(err, LOOM_ERR_IO, "cannot start the measurer \"%s\": it %s%s%s", m->exe, how, m->err_len ? ": " : "",
                 stderr_last_words(m));
}

loom_status measurer_start(Measurer **out, LoomError *err) {
  if (!out) return err_set(err, LOOM_ERR_INVALID_ARG, "measurer_start: out must be non-NULL");
  *out = NULL;
  Measurer *m = loom_calloc(1, sizeof *m);
  if (!m) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "measurer_start: out of memory");
  m->io.in = m->io.out = m->io.err = -1;
  loom_status st = find_executable(m->exe, sizeof m->exe, err);
  if (!st) st = start_process(m, err);
  if (st) {
    loom_free(m->out);
    loom_free(m);
    return st;
  }
  *out = m;
  return LOOM_OK;
}

int measurer_starts(const Measurer *m) { return m ? m->starts : 0; }

void measurer_stop(Measurer *m) {
  if (!m) return;
  if (m->pid > 0) {
    /* The end of its input makes it exit; one that does not is killed. */
    close(m->io.in);
    m->io.in = -1;
    bool done = false;
    int code;
    double until = loom_clock_ms() + STOP_GRACE_MS;
    while (subprocess_wait(m->pid, false, &done, &code, NULL) == LOOM_OK && !done && loom_clock_ms() < until) {
      /* keep its stderr from filling up (a sanitizer's exit report) */
      while (m->io.err >= 0 && poll(&(struct pollfd){.fd = m->io.err, .events = POLLIN}, 1, 0) > 0 &&
             drain(m, m->io.err)) {
      }
      nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    if (!done) subprocess_kill(m->pid);
    forget_process(m);
  }
  loom_free(m->out);
  loom_free(m);
}

/* ---- requests ---- */

/* The DLPack dtype the kernels check (bool is one byte of code 6). */
static DLDataType dl_dtype_of(DType t) {
  DLDataType d = {.code = t.code, .bits = t.bits, .lanes = t.lanes};
  if (t.code == DT_BOOL) d.bits = 8;
  return d;
}

static bool kernel_name_ok(const char *s) {
  if (!s || !*s || strlen(s) >= 128) return false;
  for (; *s; s++)
    if (*s == ' ' || *s == '\n' || *s == '\r') return false;
  return true;
}

static bool path_ok(const char *s) { return s && *s && strlen(s) < PATH_MAX && !strpbrk(s, "\n\r"); }

/* The request's text, or NULL with out set to MEASURE_ERROR. */
static char *request_text(const MeasureRequest *q, MeasureResult *out) {
  if (!kernel_name_ok(q->candidate.name) || !path_ok(q->candidate.so_path) || !kernel_name_ok(q->reference.name) ||
      !path_ok(q->reference.so_path)) {
    result_set(out, MEASURE_ERROR,
               "request: the candidate and reference need a kernel name (no spaces, under 128 bytes) and a "
               "shared object path (no newline)");
    return NULL;
  }
  if (q->n_args < 1 || q->n_args > MEASURE_MAX_ARGS || !q->args) {
    result_set(out, MEASURE_ERROR, "request: %d arguments, expected 1..%d", q->n_args, MEASURE_MAX_ARGS);
    return NULL;
  }
  if (q->threads < 1 || q->threads > MEASURE_MAX_THREADS) {
    result_set(out, MEASURE_ERROR, "request: threads %d, expected 1..%d", q->threads, MEASURE_MAX_THREADS);
    return NULL;
  }
  if (!(q->min_seconds >= 0 && q->min_seconds <= 3600)) {
    result_set(out, MEASURE_ERROR, "request: min_seconds %g, expected 0..3600", q->min_seconds);
    return NULL;
  }
  StrBuf sb;
  sb_init(&sb);
  sb_printf(&sb, "measure\ncandidate %s %s\nreference %s %s\nthreads %d\nseed %llu\nmin_seconds %.17g\n",
            q->candidate.name, q->candidate.so_path, q->reference.name, q->reference.so_path, q->threads,
            (unsigned long long)q->seed, q->min_seconds);
  for (int i = 0; i < q->n_args; i++) {
    const MeasureArg *a = &q->args[i];
    const char *dtype = dl_dtype_name(dl_dtype_of(a->dtype));
    if (!dtype || a->ndim < 0 || a->ndim > MEASURE_MAX_NDIM) {
      char buf[16];
      result_set(out, MEASURE_ERROR, "request: argument %d has dtype %s and %d dimensions, expected a scalar dtype "
                 "and 0..%d dimensions", i, dtype_str(a->dtype, buf), a->ndim, MEASURE_MAX_NDIM);
      sb_free(&sb);
      return NULL;
    }
    sb_printf(&sb, "arg %s %s %d", dtype, a->written ? "out" : "in", a->ndim);
    for (int d = 0; d < a->ndim; d++) sb_printf(&sb, " %lld", (long long)a->shape[d]);
    sb_puts(&sb, "\n");
  }
  sb_puts(&sb, "end\n");
  return sb_take(&sb);
}

/* Reads the response (the buffer holds it up to "end\n"). A measurer
 * that says it is exiting (a candidate wrote out of bounds) is reaped now,
 * so that its exit is not blamed on the next candidate. */
static void parse_response(Measurer *m, MeasureResult *out) {
  char *end = NULL;
  bool exiting = false;
  result_set(out, MEASURE_ERROR, "the measurer's response has no status line");
  for (char *line = m->out; line < m->out + m->out_len; line = end + 1) {
    end = strchr(line, '\n');
    if (!end) break;
    *end = '\0';
    char *value = strchr(line, ' ');
    if (value) *value++ = '\0';
    else value = end;
    if (strcmp(line, "end") == 0) break;
    if (strcmp(line, "status") == 0)
      out->status = strcmp(value, "ok") == 0 ? MEASURE_OK : strcmp(value, "wrong") == 0 ? MEASURE_WRONG : MEASURE_ERROR;
    else if (strcmp(line, "median_us") == 0) out->median_us = strtod(value, NULL);
    else if (strcmp(line, "min_us") == 0) out->min_us = strtod(value, NULL);
    else if (strcmp(line, "runs") == 0) out->runs = (int)strtol(value, NULL, 10);
    else if (strcmp(line, "max_error") == 0) out->max_error = strtod(value, NULL);
    else if (strcmp(line, "message") == 0) snprintf(out->message, sizeof out->message, "%s", value);
    else if (strcmp(line, "exiting") == 0) exiting = true;
  }
  consume(m, end ? (size_t)(end + 1 - m->out) : m->out_len);
  if (exiting) {
    char how[128];
    describe_exit(m, how, sizeof how);
  }
  if (out->status != MEASURE_OK) out->median_us = out->min_us = 0;
}

/* Whether the last "phase" line of a response cut short names the
 * reference: then the reference crashed or hung, not the candidate. */
static bool reference_was_running(const Measurer *m) {
  const char *last = NULL;
  for (const char *p = m->out; p && (p = strstr(p, "phase ")); p++)
    if (p == m->out || p[-1] == '\n') last = p + 6;
  return last && strncmp(last, "reference\n", 10) == 0;
}

/* Alive between requests? One that died meanwhile (its starting thread
 * exited, someone killed it) is reaped and forgotten, not blamed. */
static void check_alive(Measurer *m) {
  bool done = false;
  int code;
  if (m->pid > 0 && (subprocess_wait(m->pid, false, &done, &code, NULL) != LOOM_OK || done)) forget_process(m);
}

loom_status measurer_run(Measurer *m, const MeasureRequest *req, MeasureResult *out, LoomError *err) {
  if (!m || !req || !out) return err_set(err, LOOM_ERR_INVALID_ARG, "measurer_run: NULL argument");
  memset(out, 0, sizeof *out);
  char *text = request_text(req, out);
  if (!text) return LOOM_OK;
  double limit_s = req->timeout_seconds > 0 ? req->timeout_seconds : 10 + req->min_seconds;
  loom_status st = LOOM_OK;
  check_alive(m);
  /* A measurer that dies between the check and the send shows up as a
   * failed send: start another and send again, once. */
  for (int attempt = 0; attempt < 2; attempt++) {
    if (m->pid == 0 && (st = start_process(m, err))) break;
    while (m->io.err >= 0 && poll(&(struct pollfd){.fd = m->io.err, .events = POLLIN}, 1, 0) > 0 &&
           drain(m, m->io.err)) {
    }
    m->err_len = 0;
    m->err_tail[0] = '\0';
    st = subprocess_write_all(m->io.in, text, strlen(text), err);
    if (!st) break;
    kill_process(m);
  }
  loom_free(text);
  if (st) {
    err_prefix(err, "measurer_run: sending the request to \"%s\"", m->exe);
    return st;
  }
  WaitResult w = wait_for(m, "end", loom_clock_ms() + limit_s * 1e3);
  if (w == WAIT_OK) {
    parse_response(m, out);
    return LOOM_OK;
  }
  bool reference = reference_was_running(m);
  if (w == WAIT_TIMEOUT) {
    kill_process(m);
    result_set(out, reference ? MEASURE_ERROR : MEASURE_TIMEOUT,
               "no answer within the time limit of %.3g s%s: the measurer was killed", limit_s,
               reference ? " while the reference ran" : "");
    return LOOM_OK;
  }
  char how[128];
  describe_exit(m, how, sizeof how);
  result_set(out, reference ? MEASURE_ERROR : MEASURE_CRASH, "the measurer %s%s%s%.160s", how,
             reference ? " while the reference ran" : "", m->err_len ? "; its last words: " : "", stderr_last_words(m));
  return LOOM_OK;
}

/* ---- arguments of a PrimFunc ---- */

typedef struct WrittenScan {
  const PrimFunc *f;
  bool *written;
} WrittenScan;

static void mark_written(WrittenScan *w, const Buffer *b) {
  for (int i = 0; i < w->f->n_params; i++)
    if (b == w->f->params[i] || (w->f->orig_params && b == w->f->orig_params[i])) w->written[i] = true;
}

static bool scan_writes(Visitor *v, const Stmt *s) {
  WrittenScan *w = v->user;
  if (s->kind == STMT_STORE) mark_written(w, s->store.buffer);
  if (s->kind == STMT_BLOCK_REALIZE)
    for (int i = 0; i < s->realize.block->n_writes; i++) mark_written(w, s->realize.block->writes[i].buffer);
  return true;
}

loom_status measure_args_from_func(const PrimFunc *f, MeasureArg *out, int cap, int *n_out, LoomError *err) {
  if (!f || !out || !n_out) return err_set(err, LOOM_ERR_INVALID_ARG, "measure_args_from_func: NULL argument");
  if (f->n_params > cap)
    return err_set(err, LOOM_ERR_INVALID_ARG, "measure_args_from_func: \"%s\" has %d parameters, room for %d",
                   f->name, f->n_params, cap);
  bool written[MEASURE_MAX_ARGS] = {0};
  if (f->n_params > MEASURE_MAX_ARGS)
    return err_set(err, LOOM_ERR_INVALID_ARG, "measure_args_from_func: \"%s\" has %d parameters, at most %d measure",
                   f->name, f->n_params, MEASURE_MAX_ARGS);
  WrittenScan scan = {f, written};
  Visitor v = {.visit_stmt = scan_writes, .user = &scan};
  visit_stmt(&v, f->body);
  for (int i = 0; i < f->n_params; i++) {
    const Buffer *b = f->orig_params ? f->orig_params[i] : f->params[i];
    MeasureArg *a = &out[i];
    memset(a, 0, sizeof *a);
    char buf[16];
    if (b->dtype.lanes != 1 || b->ndim > MEASURE_MAX_NDIM)
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "measure_args_from_func: parameter \"%s\" of \"%s\" is %s with %d dimensions, expected a scalar "
                     "dtype and at most %d",
                     b->name, f->name, dtype_str(b->dtype, buf), b->ndim, MEASURE_MAX_NDIM);
    a->dtype = b->dtype;
    a->ndim = b->ndim;
    a->written = written[i];
    for (int d = 0; d < b->ndim; d++) {
      if (b->shape[d]->kind != EXPR_INT || b->shape[d]->int_value < 0)
        return err_set(err, LOOM_ERR_INVALID_ARG,
                       "measure_args_from_func: dimension %d of parameter \"%s\" of \"%s\" is not a non-negative "
                       "constant",
                       d, b->name, f->name);
      a->shape[d] = b->shape[d]->int_value;
    }
  }
  *n_out = f->n_params;
  return LOOM_OK;
}

/* ---- building ---- */

enum { MAX_UNITS = 64 }; /* objects one link command takes comfortably (build.c's argument limit) */

static void build_fail(MeasureBuild *b, loom_status st, const char *what, const LoomError *e) {
  b->status = st ? st : LOOM_ERR_INTERNAL;
  snprintf(b->message, sizeof b->message, "%s: %.480s", what, e->msg);
  b->so_path[0] = '\0';
}

loom_status measure_build_batch(Arena *a, const PrimFunc *const *funcs, int n, const LowerOptions *lower,
                                const BuildOptions *build, MeasureBuild *out, LoomError *err) {
  if (!a || !funcs || !out || n < 1)
    return err_set(err, LOOM_ERR_INVALID_ARG, "measure_build_batch: need an arena, %d >= 1 functions and results",
                   n);
  LowerOptions lo = lower ? *lower : lower_options_default();
  char **code = loom_calloc((size_t)n, sizeof *code); /* each candidate's C, NULL when it has none */
  if (!code) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "measure_build_batch: out of memory");
  int n_ok = 0;
  for (int i = 0; i < n; i++) {
    MeasureBuild *b = &out[i];
    memset(b, 0, sizeof *b);
    LoomError e = {0};
    if (!funcs[i] || !funcs[i]->name || strlen(funcs[i]->name) > sizeof b->kernel - 16) {
      b->status = LOOM_ERR_INVALID_ARG;
      snprintf(b->message, sizeof b->message, "candidate %d: no function, or its name is over %zu bytes", i,
               sizeof b->kernel - 16);
      continue;
    }
    snprintf(b->kernel, sizeof b->kernel, "%s_c%d", funcs[i]->name, i);
    PrimFunc *named = ARENA_NEW(a, PrimFunc);
    *named = *funcs[i];
    named->name = arena_strdup(a, b->kernel);
    b->lowered = tir_lower(a, named, &lo, &e);
    if (!b->lowered) {
      build_fail(b, e.status, "lowering", &e);
      continue;
    }
    StrBuf sb;
    sb_init(&sb);
    loom_status st = codegen_c_func(&sb, b->lowered, &e);
    if (st) {
      sb_free(&sb);
      build_fail(b, st, "generating C", &e);
      continue;
    }
    code[i] = sb_take(&sb);
    n_ok++;
  }

  /* Candidates in up to MAX_UNITS translation units, consecutive ones
   * together, each unit opening with the prelude. */
  int n_units = n_ok < MAX_UNITS ? n_ok : MAX_UNITS, per_unit = n_units ? (n_ok + n_units - 1) / n_units : 0;
  char **units = loom_calloc((size_t)(n_units ? n_units : 1), sizeof *units);
  int u = 0, in_unit = 0;
  StrBuf sb;
  sb_init(&sb);
  for (int i = 0; units && i < n; i++) {
    if (!code[i]) continue;
    if (in_unit == 0) codegen_c_prelude(&sb);
    sb_puts(&sb, code[i]);
    if (++in_unit == per_unit) {
      units[u++] = sb_take(&sb);
      sb_init(&sb);
      in_unit = 0;
    }
  }
  if (units && in_unit > 0) units[u++] = sb_take(&sb);
  sb_free(&sb);

  BuildResult r;
  LoomError e = {0};
  loom_status st = !units ? err_set(&e, LOOM_ERR_OUT_OF_MEMORY, "out of memory")
                   : u > 0 ? build_shared_object_units((const char *const *)units, u, build, &r, &e)
                           : LOOM_OK;
  for (int i = 0; u > 0 && i < n; i++) {
    if (!code[i]) continue;
    if (st == LOOM_OK) {
      snprintf(out[i].so_path, sizeof out[i].so_path, "%s", r.so_path);
      continue;
    }
    /* The batch failed: each alone, so one broken candidate fails alone. */
    StrBuf one;
    sb_init(&one);
    codegen_c_prelude(&one);
    sb_puts(&one, code[i]);
    LoomError ei = {0};
    BuildResult ri;
    loom_status sti = build_shared_object(sb_cstr(&one), build, &ri, &ei);
    sb_free(&one);
    if (sti) build_fail(&out[i], sti, "building", &ei);
    else snprintf(out[i].so_path, sizeof out[i].so_path, "%s", ri.so_path);
  }
  for (int k = 0; units && k < u; k++) loom_free(units[k]);
  loom_free(units);
  for (int i = 0; i < n; i++) loom_free(code[i]);
  loom_free(code);
  return LOOM_OK;
}

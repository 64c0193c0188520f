#include "support/error.h"

#include <string.h>

loom_status err_vset(LoomError *err, loom_status status, const char *fmt, va_list ap) {
  if (err) {
    err->status = status;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  }
  return status;
}

loom_status err_set(LoomError *err, loom_status status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  err_vset(err, status, fmt, ap);
  va_end(ap);
  return status;
}

void err_prefix(LoomError *err, const char *fmt, ...) {
  if (!err) return;
  char pre[512], old[sizeof err->msg];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(pre, sizeof pre, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  /* Truncation is acceptable for very long messages. */
  size_t n = strlen(pre);
  if (n > sizeof err->msg - 3) n = sizeof err->msg - 3;
  memcpy(err->msg, pre, n);
  memcpy(err->msg + n, ": ", 2);
  size_t rest = sizeof err->msg - n - 3;
  size_t m = strlen(old);
  if (m > rest) m = rest;
  memcpy(err->msg + n + 2, old, m);
  err->msg[n + 2 + m] = 0;
}

void err_clear(LoomError *err) {
  if (!err) return;
  err->status = LOOM_OK;
  err->msg[0] = 0;
}

const char *loom_status_name(loom_status s) {
  switch (s) {
    case LOOM_OK: return "ok";
    case LOOM_ERR_INVALID_ARG: return "invalid argument";
    case LOOM_ERR_PARSE: return "parse error";
    case LOOM_ERR_SCHEDULE: return "schedule error";
    case LOOM_ERR_UNSUPPORTED: return "unsupported";
    case LOOM_ERR_IO: return "i/o error";
    case LOOM_ERR_BUILD: return "build error";
    case LOOM_ERR_RUNTIME: return "runtime error";
    case LOOM_ERR_INTERNAL: return "internal error";
    case LOOM_ERR_OUT_OF_MEMORY: return "out of memory";
  }
  return "unknown error";
}

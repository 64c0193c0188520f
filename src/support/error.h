/* Errors are values: a function that can fail on user input returns a
 * loom_status (or NULL) and leaves a message in the caller's LoomError. The
 * message names the thing at fault (file, node, block, loop, argument) and
 * what was expected. */
#ifndef LOOM_SUPPORT_ERROR_H
#define LOOM_SUPPORT_ERROR_H

#include "loom/loom_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct LoomError {
  loom_status status;
  char msg[1024];
} LoomError;

/* Sets status and message; returns status so callers can `return err_set(...)`.
 * A NULL err is allowed (the error is dropped). */
loom_status err_set(LoomError *err, loom_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
loom_status err_vset(LoomError *err, loom_status status, const char *fmt, va_list ap);
/* Prefixes the existing message with context ("in block \"C\": ..."). */
void err_prefix(LoomError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void err_clear(LoomError *err);
const char *loom_status_name(loom_status s);

/* Internal invariants (bugs, not user errors). */
#define LOOM_ASSERT(cond)                                                              \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "loom: internal error at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                         \
    }                                                                                  \
  } while (0)

#endif

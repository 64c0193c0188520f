/* Status codes shared by the compiler API (loom.h) and the runtime API
 * (loom_runtime.h). Zero is success. */
#ifndef LOOM_STATUS_H
#define LOOM_STATUS_H

typedef enum loom_status {
  LOOM_OK = 0,
  LOOM_ERR_INVALID_ARG = 1, /* a caller passed something malformed or out of range */
  LOOM_ERR_PARSE = 2,       /* text or file did not parse (message has line:column) */
  LOOM_ERR_SCHEDULE = 3,    /* a schedule primitive refused the request */
  LOOM_ERR_UNSUPPORTED = 4, /* valid, but not supported yet (dtype, op, target) */
  LOOM_ERR_IO = 5,          /* missing, unreadable or unwritable file */
  LOOM_ERR_BUILD = 6,       /* the system C compiler failed on generated code */
  LOOM_ERR_RUNTIME = 7,     /* a kernel or artifact failed at run time */
  LOOM_ERR_INTERNAL = 8,
  LOOM_ERR_OUT_OF_MEMORY = 9, /* an allocation failed; the message names what was being allocated */
} loom_status;

#endif

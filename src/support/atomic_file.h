/* Writing a file atomically: the bytes go to a temporary file in the same
 * directory (so rename() cannot cross file systems), which is renamed over
 * the final path only when everything was written and flushed. A failure at
 * any point removes the temporary: the final path holds either its old
 * content or the complete new file, never a half-written one. */
#ifndef LOOM_SUPPORT_ATOMIC_FILE_H
#define LOOM_SUPPORT_ATOMIC_FILE_H

#include "support/error.h"

#include <stdbool.h>
#include <stdio.h>

typedef struct AtomicFile {
  FILE *f;     /* write here */
  char *path;  /* the final path */
  char *tmp;   /* "<path>.tmp.<pid>.<unique>" (subprocess_temp_name) */
  bool failed; /* a write failed: commit refuses */
} AtomicFile;

/* LOOM_ERR_IO naming the directory when the temporary cannot be created. */
loom_status atomic_file_open(AtomicFile *af, const char *path, LoomError *err);
/* fwrite that remembers failure (commit reports it). */
void atomic_file_write(AtomicFile *af, const void *data, size_t n);
/* Flushes, fsyncs, closes and renames. On failure removes the temporary and
 * returns LOOM_ERR_IO naming the path. The AtomicFile is finished either way. */
loom_status atomic_file_commit(AtomicFile *af, LoomError *err);
/* Closes and removes the temporary. Safe on a finished or zeroed AtomicFile. */
void atomic_file_abort(AtomicFile *af);

#endif

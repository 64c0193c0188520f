#include "support/atomic_file.h"

#include "support/alloc.h"
#include "support/subprocess.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

loom_status atomic_file_open(AtomicFile *af, const char *path, LoomError *err) {
  memset(af, 0, sizeof *af);
  if (!path || !*path) return err_set(err, LOOM_ERR_INVALID_ARG, "cannot write a file with an empty path");
  size_t n = strlen(path);
  af->path = loom_strdup(path);
  af->tmp = loom_malloc(n + 16);
  if (!af->path || !af->tmp) {
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory writing \"%s\"", path);
  }
  memcpy(af->tmp, path, n);
  memcpy(af->tmp + n, ".tmp.XXXXXX", 12);
  int fd = mkstemp(af->tmp);
  if (fd < 0) {
    int e = errno;
    loom_free(af->tmp);
    af->tmp = NULL;
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(e));
  }
  subprocess_track_file(af->tmp); /* removed if a signal ends the process first */
  /* mkstemp makes 0600; an output file should get the usual 0666 & ~umask. */
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  af->f = fdopen(fd, "wb");
  if (!af->f) {
    int e = errno;
    close(fd);
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(e));
  }
  return LOOM_OK;
}

void atomic_file_write(AtomicFile *af, const void *data, size_t n) {
  if (af->failed || !af->f || n == 0) return;
  if (fwrite(data, 1, n, af->f) != n) af->failed = true;
}

static void finish(AtomicFile *af) {
  if (af->tmp) subprocess_untrack_file(af->tmp);
  loom_free(af->path);
  loom_free(af->tmp);
  af->path = af->tmp = NULL;
  af->f = NULL;
}

loom_status atomic_file_commit(AtomicFile *af, LoomError *err) {
  if (!af->f) {
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_INTERNAL, "atomic_file_commit on a file that is not open");
  }
  int e = 0;
  if (af->failed || fflush(af->f) != 0) e = errno ? errno : EIO;
  if (!e && fsync(fileno(af->f)) != 0 && errno != EINVAL) e = errno;
  if (fclose(af->f) != 0 && !e) e = errno ? errno : EIO;
  af->f = NULL;
  if (!e && rename(af->tmp, af->path) != 0) e = errno;
  if (e) {
    loom_status st = err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", af->path, strerror(e));
    atomic_file_abort(af);
    return st;
  }
  finish(af);
  return LOOM_OK;
}

void atomic_file_abort(AtomicFile *af) {
  if (af->f) fclose(af->f);
  if (af->tmp) unlink(af->tmp);
  finish(af);
}

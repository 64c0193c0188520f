#include "support/atomic_file.h"

#include "support/alloc.h"
#include "support/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory of path and its last component, for the sweep. */
static void split_path(const char *path, char *dir, size_t cap, const char **base) {
  const char *slash = strrchr(path, '/');
  *base = slash ? slash + 1 : path;
  if (!slash) snprintf(dir, cap, ".");
  else if (slash == path) snprintf(dir, cap, "/");
  else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

loom_status atomic_file_open(AtomicFile *af, const char *path, LoomError *err) {
  memset(af, 0, sizeof *af);
  if (!path || !*path) return err_set(err, LOOM_ERR_INVALID_ARG, "cannot write a file with an empty path");
  size_t cap = strlen(path) + 64;
  af->path = loom_strdup(path);
  af->tmp = loom_malloc(cap);
  if (!af->path || !af->tmp) {
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory writing \"%s\"", path);
  }
  /* A temporary named as the subprocess module names them (".tmp.<pid>."):
   * a signal's cleanup removes it with the directory swept, and a write of
   * the same path after a process died mid-write removes that one's. */
  char dir[PATH_MAX];
  const char *base;
  split_path(path, dir, sizeof dir, &base);
  subprocess_sweep_stale_temps(dir, base);
  subprocess_track_dir(dir);
  subprocess_temp_name(af->tmp, cap, path);
  subprocess_track_file(af->tmp);
  int fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); /* 0666 & ~umask, as any output */
  if (fd < 0) {
    int e = errno;
    subprocess_untrack_file(af->tmp);
    loom_free(af->tmp);
    af->tmp = NULL;
    atomic_file_abort(af);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(e));
  }
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

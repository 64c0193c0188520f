/* A BYOC runtime library by the name an artifact records (byoc_library.h).
 * Loom's own back ends record a bare file name, never the build's path, so
 * an artifact runs wherever Loom is installed or moved to. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr */
#endif
#include "runtime/byoc_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPEN_FLAGS = RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE };

void *byoc_library_open(const char *name, char *why, size_t len) {
  void *h = dlopen(name, OPEN_FLAGS);
  const char *first = h ? NULL : dlerror();
  if (h || strchr(name, '/')) {
    if (!h) snprintf(why, len, "%s", first ? first : "unknown dlopen error");
    return h;
  }
  char reason[512];
  snprintf(reason, sizeof reason, "%s", first ? first : "unknown dlopen error");
  /* The directory of the object this function is in: libloomrt.so, or the
   * program that links Loom's runtime statically. */
  Dl_info info;
  char dir[PATH_MAX] = "";
  /* realpath: a program started by a relative path (build/tools/loom) or
   * through a symlink still finds the libraries beside its real file, and
   * the message names an absolute directory */
  if (dladdr((void *)byoc_library_open, &info) && info.dli_fname && strchr(info.dli_fname, '/') &&
      realpath(info.dli_fname, dir))
    *strrchr(dir, '/') = 0;
  else
    dir[0] = 0;
  static const char *const k_rel[] = {"", "/..", "/../lib"};
  for (size_t i = 0; dir[0] && i < sizeof k_rel / sizeof *k_rel; i++) {
    char path[PATH_MAX + 64];
    if (snprintf(path, sizeof path, "%s%s/%s", dir, k_rel[i], name) >= (int)sizeof path) continue;
    if ((h = dlopen(path, OPEN_FLAGS))) return h;
    const char *e = dlerror();
    /* a library that is there but does not load says why; a missing one does not */
    if (e && !strstr(e, "No such file")) snprintf(reason, sizeof reason, "%s", e);
  }
  if (dir[0])
    snprintf(why, len, "%s (looked on the library path, then in %s, %s/.. and %s/../lib)", reason, dir, dir, dir);
  else
    snprintf(why, len, "%s (looked on the library path)", reason);
  return NULL;
}

/* Building generated C into a shared object, through a content-hash cache.
 *
 * The source is written to <cache>/<hash>.c and compiled to <cache>/<hash>.so,
 * where hash = FNV-1a 64 of (source, compiler, flags, the kernel ABI header).
 * When the .so exists it is reused without running the compiler. The compiler
 * writes to a temporary name that is renamed into place, so a concurrent or
 * interrupted build never leaves a half-written .so under the final name.
 * The compiler is run with posix_spawn (no shell), so paths need no quoting. */
#ifndef LOOM_TARGET_BUILD_H
#define LOOM_TARGET_BUILD_H

#include "support/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The flags for code of one -march level; the default is this machine's. */
#define BUILD_CFLAGS_MARCH(march) "-O3 -march=" march " -ffp-contract=fast -fno-math-errno -fPIC -shared -std=c11"
#define BUILD_DEFAULT_CFLAGS BUILD_CFLAGS_MARCH("native")

typedef struct BuildOptions {
  const char *cc;          /* NULL: build_default_cc() */
  const char *cflags;      /* NULL: BUILD_DEFAULT_CFLAGS; split on spaces */
  const char *extra_flags; /* appended to cflags (tests add "-Wall -Wextra -Werror"); may be NULL */
  const char *cache_dir;   /* NULL: $LOOM_CACHE_DIR, else $HOME/.cache/loom */
  const char *include_dir; /* holds loom/loom_kernel.h; NULL: $LOOM_INCLUDE_DIR, else the
                            * source tree's include/ (compiled in by CMake) */
} BuildOptions;

typedef struct BuildResult {
  char so_path[PATH_MAX];
  bool cache_hit; /* true when the compiler was not run */
} BuildResult;

/* Compiles `source` (NUL-terminated C) into a shared object. Errors:
 * LOOM_ERR_IO (cache directory or file unwritable, missing ABI header),
 * LOOM_ERR_BUILD (the compiler failed: its stderr, truncated, is in the
 * message). */
loom_status build_shared_object(const char *source, const BuildOptions *opt, BuildResult *out, LoomError *err);

/* The compiler for generated code: $LOOM_CC, else clang when on $PATH, else
 * cc. ($CC is deliberately not used: it names the compiler that builds Loom,
 * which need not be the best one for the kernels.) */
const char *build_default_cc(void);

/* FNV-1a 64, exposed for tests and for other caches. */
uint64_t build_fnv1a64(uint64_t h, const void *data, size_t n);
#define BUILD_FNV_OFFSET 0xcbf29ce484222325ULL

#endif

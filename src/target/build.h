/* Building generated C into a shared object, through a content-hash cache.
 *
 * A source (a translation unit) is written to <cache>/<hash>.c, where hash =
 * FNV-1a 64 of (source, compiler, flags, the headers generated code
 * includes). One unit is compiled and linked by one compiler run into
 * <cache>/<hash>.so. Several units are compiled to <cache>/<hash>.o each, as
 * many at once as BuildOptions.jobs, then linked into <cache>/<key>.so, key
 * over the units' hashes: a unit seen by an earlier build is not compiled
 * again. When the .so exists it is reused without running anything. The
 * compiler writes to temporary names renamed into place, so a concurrent or
 * interrupted build never leaves a half-written file under a final name.
 * It runs without a shell (no quoting), in its own process group, and dies
 * with Loom (support/subprocess.h). */
#ifndef LOOM_TARGET_BUILD_H
#define LOOM_TARGET_BUILD_H

#include "support/error.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The flags for code of one -march level; the default is this machine's. */
/* -Wno-psabi: a schedule's vectors may be wider than the target's registers
 * (16 floats on AVX2); the C compiler's back end splits them into native
 * ones. It warns that returning such a vector changes the calling
 * convention, which only the generated static helpers do, always called
 * from the same translation unit: no ABI is crossed (docs/target.md,
 * "Vector width legalization"). */
#define BUILD_CFLAGS_MARCH(march) \
  "-O3 -march=" march " -ffp-contract=fast -fno-math-errno -fPIC -std=c11 -Wno-psabi"
#define BUILD_DEFAULT_CFLAGS BUILD_CFLAGS_MARCH("native")

typedef struct BuildOptions {
  const char *cc;          /* NULL: build_default_cc() */
  const char *cflags;      /* NULL: BUILD_DEFAULT_CFLAGS; split on spaces */
  const char *extra_flags; /* appended to cflags (tests add "-Wall -Wextra -Werror"); may be NULL */
  const char *cache_dir;   /* NULL: $LOOM_CACHE_DIR, else $HOME/.cache/loom */
  const char *include_dir; /* holds loom/loom_kernel.h; NULL: $LOOM_INCLUDE_DIR, else the
                            * source tree's include/ (compiled in by CMake) */
  int jobs;                /* compilers run at once; 0: $LOOM_BUILD_JOBS, else the online CPUs */
  double timeout_seconds;  /* a compiler run longer than this is killed (LOOM_ERR_BUILD); 0: no limit */
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
/* The same for n translation units linked into one shared object (their
 * external symbols must be distinct). Errors as above; the first failing
 * unit's messages are reported and the other compilers stopped. */
loom_status build_shared_object_units(const char *const *units, int n, const BuildOptions *opt, BuildResult *out,
                                      LoomError *err);

/* The compiler for generated code: $LOOM_CC, else clang when on $PATH, else
 * cc. ($CC is deliberately not used: it names the compiler that builds Loom,
 * which need not be the best one for the kernels.) */
const char *build_default_cc(void);

/* FNV-1a 64, exposed for tests and for other caches. */
uint64_t build_fnv1a64(uint64_t h, const void *data, size_t n);
#define BUILD_FNV_OFFSET 0xcbf29ce484222325ULL

#endif

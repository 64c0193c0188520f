/* Finding a BYOC back end's runtime library (docs/byoc.md), for the
 * runtime loading an artifact and for the compiler that plans and test-loads
 * one. */
#ifndef LOOM_RUNTIME_BYOC_LIBRARY_H
#define LOOM_RUNTIME_BYOC_LIBRARY_H

#include <stddef.h>

/* dlopen (RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE: vendor libraries keep
 * thread pools alive) of the library an artifact names. A name with a '/'
 * is a path, loaded as it is. A bare file name is looked up on the library
 * path first (dlopen's own search: LD_LIBRARY_PATH, the system's), then
 * next to the Loom code doing the load (the directory of libloomrt.so, or
 * of the program Loom is linked into), in its parent and in ../lib: where
 * a build, an install or a moved install of Loom keeps the runtimes it
 * ships. NULL on failure, with dlopen's reason and the directories tried
 * in why. */
void *byoc_library_open(const char *name, char *why, size_t len);

#endif

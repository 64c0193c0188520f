/* A target is a value (DESIGN.md): what schedules and the cost model need to
 * know about the machine code is generated for. Code generators take it too
 * (the C back end turns vector_bits into vector types and -march flags). */
#ifndef LOOM_TARGET_TARGET_H
#define LOOM_TARGET_TARGET_H

#include "ir/dtype.h"

typedef struct Target {
  char name[64];   /* "x86_64-avx512", "x86_64-avx2", "x86_64", ... */
  int vector_bits; /* widest SIMD register: 512, 256, 128 */
  int num_cores;   /* cores the runtime may use */
  int l1d_bytes, l2_bytes;
} Target;

/* The machine we run on (cpuid through the compiler's builtins, sysconf). */
Target target_host(void);
/* Lanes of dtype t that fill one vector register (at least 1). */
int target_lanes(const Target *t, DType dt);

#endif

/* A target is a value (DESIGN.md): what schedules and the cost model need to
 * know about the machine code is generated for. Code generators take it too
 * (the C back end turns vector_bits into vector types and -march flags). */
#ifndef LOOM_TARGET_TARGET_H
#define LOOM_TARGET_TARGET_H

#include "ir/dtype.h"
#include "support/error.h"

typedef struct Target {
  char name[64];        /* "x86_64-avx512", "x86_64-avx2", "x86_64", ... */
  int vector_bits;      /* widest SIMD register: 512, 256, 128 */
  int vector_registers; /* of that width: 32 with AVX-512, else 16 */
  int num_cores;        /* cores the runtime may use */
  int l1d_bytes, l2_bytes, l3_bytes; /* per core (L1d, L2) and in all (L3) */
  /* fp32 FLOP per cycle per core at the widest vectors (FMA units x lanes
   * x 2; target_host's table, conservative where the core is unknown) and
   * the clock in GHz (0: unknown): their product is the peak. */
  int flops_per_cycle;
  double ghz;
  /* Cycles from one FMA to the next that reads its result: a register tile
   * needs FMA units x latency independent accumulators to keep the units
   * busy (4 on every x86 core of the table). */
  int fma_latency;
  /* Bytes per cycle the L2 cache delivers to L1 (32 on the Zen and
   * Skylake client cores of the table): what a vector streamed from L2
   * costs beyond an L1 load. */
  int l2_bytes_per_cycle;
  /* A named ISA level (target_parse): the C compiler's flags for it and the
   * features an artifact records, which its loader checks on the CPU it
   * runs on. NULL for the host (-march=native; the host's features). */
  const char *cflags;
  const char *artifact_target;
  /* A target of another ISA (aarch64, riscv64): the Debian cross compiler
   * that builds its code (scripts/setup installs it). Only loom export-c
   * produces code for it; NULL for targets this machine runs. */
  const char *cross_cc;
  /* A scratchpad (swTVM's local memory, the Sunway LDM): bytes of on-chip
   * memory that kernels stage their tiles in, filled and drained by DMA
   * copies (loom_dma_get/loom_dma_put, docs/export.md "Scratchpad
   * targets"); 0 = none, the default: the machine's caches do it. Only
   * ever declared (--target-opt local_mem=64KiB), never this host's. */
  int64_t local_mem_bytes;
  /* With a local memory: whether the DMA engine copies while the core
   * computes (dma=double: the conv and matmul schedules double-buffer their
   * input tiles, prefetching tile i+1 while tile i is computed, so each
   * staged input takes twice its tile in local memory), or only between
   * computations (dma=sync, the default). */
  bool dma_double_buffer;
} Target;

/* The machine we run on (cpuid through the compiler's builtins, sysconf). */
Target target_host(void);
/* A target by name: NULL, "", "host" or "x86_64" is this machine (with
 * every feature it has); "x86_64-sse2" (the x86-64 baseline: SSE2, 128-bit
 * vectors, no AVX or FMA; runs on any x86-64 CPU), "x86_64-avx2" (x86-64-v3:
 * AVX2, FMA; 256-bit vectors) and "x86_64-avx512" (x86-64-v4: AVX-512
 * F/BW/CD/DQ/VL) are those ISA levels whatever this machine has, so an
 * artifact can be built here for an older x86 CPU. Cores and caches are this machine's.
 * "generic": plain C for any machine (no vector types). "aarch64" (128-bit
 * NEON through GCC vector types, 32 registers) and "riscv64" (scalar
 * RV64GC) describe a typical core of that ISA (one core, its caches), set
 * cross_cc and are for loom export-c only. Anything else:
 * LOOM_ERR_UNSUPPORTED naming the target and the accepted ones. */
loom_status target_parse(const char *spec, Target *out, LoomError *err);
/* Overrides of single properties, "key=value[,key=value...]": cores, l1d,
 * l2, l3 (bytes, or with K/KiB/M/MiB), ghz, flops_per_cycle,
 * vector_registers, fma_latency, l2_bytes_per_cycle; e.g. "l2=1MiB,cores=8" to build for another machine.
 * local_mem=SIZE (at least 1KiB) declares a scratchpad and dma=sync|double
 * how its DMA copies overlap the compute (dma needs local_mem).
 * LOOM_ERR_INVALID_ARG naming the key and what was expected. */
loom_status target_apply_options(Target *t, const char *options, LoomError *err);
/* The machine as an artifact built for `artifact_target` (its recorded ISA
 * features, e.g. "x86_64-avx2-fma") uses it: the host, narrowed to that ISA
 * level's vectors and peak. Unknown strings (the host's own, -march=native)
 * give the host. */
Target target_for_artifact(const char *artifact_target);
/* fp32 peak of one core in GFLOP/s; 0 when the clock is unknown. */
double target_peak_gflops_per_core(const Target *t);
/* A description for `loom target`, one property a line. */
void target_describe(const Target *t, char *buf, size_t cap);
/* Lanes of dtype t that fill one vector register (at least 1). */
int target_lanes(const Target *t, DType dt);

#endif

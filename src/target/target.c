#include "target/target.h"

#include "target/build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

Target target_host(void) {
  Target t;
  memset(&t, 0, sizeof t);
  t.vector_bits = 128;
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) t.vector_bits = 512;
  else if (__builtin_cpu_supports("avx2")) t.vector_bits = 256;
  /* LOOM_HOST_ISA=avx2 (or sse) makes an AVX-512 machine act as an older
   * one, so its tests and kernels run as on such a host (CI's AVX2 leg). It
   * only narrows: a feature the CPU lacks is never claimed. */
  const char *isa = getenv("LOOM_HOST_ISA");
  if (isa && !strcmp(isa, "avx2") && t.vector_bits > 256) t.vector_bits = 256;
  if (isa && !strcmp(isa, "sse")) t.vector_bits = 128;
  snprintf(t.name, sizeof t.name, "x86_64%s", t.vector_bits == 512 ? "-avx512" : t.vector_bits == 256 ? "-avx2" : "");
#else
  snprintf(t.name, sizeof t.name, "generic");
#endif
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  t.num_cores = cores > 0 ? (int)cores : 1;
  long l1 = -1, l2 = -1;
#ifdef _SC_LEVEL1_DCACHE_SIZE
  l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  t.l1d_bytes = l1 > 0 ? (int)l1 : 32 * 1024;
  t.l2_bytes = l2 > 0 ? (int)l2 : 512 * 1024;
  return t;
}

int target_lanes(const Target *t, DType dt) {
  int bits = dt.bits == 1 ? 8 : dt.bits;
  int lanes = bits ? t->vector_bits / bits : 1;
  return lanes > 0 ? lanes : 1;
}

loom_status target_parse(const char *spec, Target *out, LoomError *err) {
  static const struct {
    const char *name;
    int vector_bits;
    const char *cflags, *artifact_target;
  } levels[] = {
      {"x86_64-avx2", 256, BUILD_CFLAGS_MARCH("x86-64-v3"), "x86_64-avx2-fma"},
      {"x86_64-avx512", 512, BUILD_CFLAGS_MARCH("x86-64-v4"), "x86_64-avx2-fma-avx512"},
  };
  *out = target_host();
  if (!spec || !*spec || !strcmp(spec, "host")) return LOOM_OK;
#if defined(__x86_64__)
  if (!strcmp(spec, "x86_64")) return LOOM_OK;
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
    if (!strcmp(spec, levels[i].name)) {
      snprintf(out->name, sizeof out->name, "%s", levels[i].name);
      out->vector_bits = levels[i].vector_bits;
      out->cflags = levels[i].cflags;
      out->artifact_target = levels[i].artifact_target;
      return LOOM_OK;
    }
#endif
  return err_set(err, LOOM_ERR_UNSUPPORTED,
                 "target \"%s\" is not supported: expected host, x86_64 (this machine, %s), x86_64-avx2 or "
                 "x86_64-avx512 (on an x86_64 machine)",
                 spec, out->name);
}

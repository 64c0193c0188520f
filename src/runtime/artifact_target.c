/* Target strings: "<arch>[-<feature>]...", e.g. "x86_64", "x86_64-avx2-fma",
 * "x86_64-avx512". An artifact runs here when the arch matches and the CPU
 * has every listed feature: a kernel built with -mavx512f dies with SIGILL on
 * a CPU without it, so refusing at load time is the only clean failure. */
#include "runtime/artifact.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#define HOST_ARCH "x86_64"
#elif defined(__aarch64__)
#define HOST_ARCH "aarch64"
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_ARCH "riscv64"
#else
#define HOST_ARCH "unknown"
#endif

typedef enum Feature { F_SSE42, F_AVX, F_AVX2, F_FMA, F_AVX512, F_AVX512F, F_AVX512BW, F_AVX512VL, F_AVX512VNNI, F_COUNT } Feature;

static const char *const k_feature_names[F_COUNT] = {
    "sse4.2", "avx", "avx2", "fma", "avx512", "avx512f", "avx512bw", "avx512vl", "avx512vnni",
};

/* __builtin_cpu_supports takes string literals only, hence the switch. */
static bool host_has(Feature f) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  switch (f) {
    case F_SSE42: return __builtin_cpu_supports("sse4.2");
    case F_AVX: return __builtin_cpu_supports("avx");
    case F_AVX2: return __builtin_cpu_supports("avx2");
    case F_FMA: return __builtin_cpu_supports("fma");
    /* "avx512" is the Skylake-server set the C compiler's -mavx512 flags
     * imply together. */
    case F_AVX512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    case F_AVX512F: return __builtin_cpu_supports("avx512f");
    case F_AVX512BW: return __builtin_cpu_supports("avx512bw");
    case F_AVX512VL: return __builtin_cpu_supports("avx512vl");
    case F_AVX512VNNI: return __builtin_cpu_supports("avx512vnni");
    case F_COUNT: break;
  }
#endif
  (void)f;
  return false;
}

/* The host names only the features -march=native code is likely to depend
 * on, so the string stays short (it must fit the header's 64 bytes). */
char *artifact_host_target(char *buf, size_t len) {
  static const Feature shown[] = {F_AVX2, F_FMA, F_AVX512, F_AVX512VNNI};
  if (!len) return buf;
  size_t at = (size_t)snprintf(buf, len, "%s", HOST_ARCH);
  for (size_t i = 0; i < sizeof shown / sizeof shown[0] && at < len; i++)
    if (host_has(shown[i])) at += (size_t)snprintf(buf + at, len - at, "-%s", k_feature_names[shown[i]]);
  return buf;
}

loom_status artifact_check_target(const char *target, LoomError *err) {
  char host[256];
  artifact_host_target(host, sizeof host);
  size_t arch_len = strcspn(target, "-");
  if (arch_len != strlen(HOST_ARCH) || strncmp(target, HOST_ARCH, arch_len))
    return err_set(err, LOOM_ERR_UNSUPPORTED, "compiled for target \"%s\", but this machine is \"%s\"", target, host);
  const char *p = target + arch_len;
  while (*p == '-') {
    p++;
    size_t n = strcspn(p, "-");
    int found = -1;
    for (int f = 0; f < F_COUNT; f++)
      if (strlen(k_feature_names[f]) == n && !strncmp(p, k_feature_names[f], n)) found = f;
    if (found < 0)
      return err_set(err, LOOM_ERR_UNSUPPORTED, "compiled for target \"%s\": unknown ISA feature \"%.*s\" (this machine is \"%s\")",
                     target, (int)n, p, host);
    if (!host_has((Feature)found))
      return err_set(err, LOOM_ERR_UNSUPPORTED,
                     "compiled for target \"%s\", but this machine (\"%s\") lacks the ISA feature \"%s\"", target, host,
                     k_feature_names[found]);
    p += n;
  }
  if (*p) return err_set(err, LOOM_ERR_UNSUPPORTED, "malformed target \"%s\"", target);
  return LOOM_OK;
}

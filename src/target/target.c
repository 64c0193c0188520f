#include "target/target.h"

#include "target/build.h"

#include <stdbool.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A cache's size from sysfs (cpu0's index<i>), of `level` and a type that
 * holds data; 0 when absent. */
static long sysfs_cache_bytes(int level) {
  for (int i = 0; i < 8; i++) {
    char path[96], buf[32];
    long lv = 0, kb = 0;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    FILE *f = fopen(path, "r");
    if (!f) break;
    bool ok = fscanf(f, "%ld", &lv) == 1;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (!ok || lv != level || !(f = fopen(path, "r"))) continue;
    ok = fgets(buf, sizeof buf, f) && strncmp(buf, "Instruction", 11) != 0;
    fclose(f);
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!ok || !(f = fopen(path, "r"))) continue;
    ok = fscanf(f, "%ldK", &kb) == 1;
    fclose(f);
    if (ok && kb > 0) return kb * 1024;
  }
  return 0;
}

/* The clock in GHz: the highest frequency sysfs gives; else, on x86, timed
 * (a chain of dependent adds runs one a cycle: a VM's /proc/cpuinfo shows
 * the nominal clock, 2.6 GHz on a Zen 4 that runs its FMAs at ~3.6);
 * else /proc/cpuinfo's; 0 unknown. */
static double measure_ghz(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
  long khz = 0;
  if (f) {
    if (fscanf(f, "%ld", &khz) != 1) khz = 0;
    fclose(f);
    if (khz > 0) return (double)khz / 1e6;
  }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  double best = 0;
  for (int rep = 0; rep < 5; rep++) { /* the fastest of five: a busy host only slows a try */
    enum { ITERS = 2000000 };
    struct timespec t0, t1;
    uint64_t x = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < ITERS; i++)
      __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                       "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                       : "+r"(x));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (s > 0 && 8.0 * ITERS / s / 1e9 > best) best = 8.0 * ITERS / s / 1e9;
  }
  if (best > 0.2 && best < 10) return best;
#endif
  double mhz = 0;
  char line[256];
  if ((f = fopen("/proc/cpuinfo", "r"))) {
    while (fgets(line, sizeof line, f))
      if (!strncmp(line, "cpu MHz", 7) && sscanf(strchr(line, ':') ? strchr(line, ':') + 1 : "", "%lf", &mhz) == 1)
        break;
    fclose(f);
  }
  return mhz > 0 ? mhz / 1000 : 0;
}

/* Measured once per process (about 15 ms): target_host is called often. */
static double host_ghz_value;
static void host_ghz_init(void) { host_ghz_value = measure_ghz(); }
static double host_ghz(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, host_ghz_init);
  return host_ghz_value;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* fp32 FLOP per cycle of one core: FMA units x lanes x 2, by
 * microarchitecture. Zen 2-4 have two 256-bit FMA pipes (Zen 4 runs
 * AVX-512 through them in two halves); Intel's AVX-512 server cores
 * (Skylake-SP to Sapphire Rapids) two 512-bit ones. A hypervisor may
 * report another model (a KVM guest on Sapphire Rapids shows model 167,
 * Rocket Lake's, a client core with one 512-bit FMA unit), so a feature
 * only the server cores have counts too: AMX (CPUID 7.0 EDX bit 24,
 * Sapphire Rapids and later Xeons; no client core has it). Anything else:
 * one FMA unit of the vector width, a floor the real core reaches or
 * beats. */
static int host_flops_per_cycle(int vector_bits) {
  unsigned eax, ebx, ecx, edx;
  char vendor[13] = {0};
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return vector_bits / 32 * 2;
  memcpy(vendor, &ebx, 4);
  memcpy(vendor + 4, &edx, 4);
  memcpy(vendor + 8, &ecx, 4);
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  unsigned family = (eax >> 8) & 0xf, model = (eax >> 4) & 0xf;
  if (family == 0xf) family += (eax >> 20) & 0xff;
  if (family == 0x6 || family >= 0xf) model |= ((eax >> 16) & 0xf) << 4;
  int lanes = vector_bits / 32;
  if (!strcmp(vendor, "AuthenticAMD") && (family == 0x17 || family == 0x19 || family == 0x1a))
    return 2 * (lanes < 8 ? lanes : 8) * 2; /* the pipes are 256 bits wide */
  unsigned max_leaf = __get_cpuid_max(0, NULL), amx_tile = 0;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    amx_tile = (edx >> 24) & 1;
  }
  if (!strcmp(vendor, "GenuineIntel") && family == 6 &&
      (model == 0x55 || model == 0x6a || model == 0x6c || model == 0x8f || model == 0xcf || amx_tile))
    return 2 * lanes * 2;
  return lanes * 2;
}
#else
static int host_flops_per_cycle(int vector_bits) { return vector_bits / 32 * 2; }
#endif

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
  t.vector_registers = t.vector_bits == 512 ? 32 : 16;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  t.num_cores = cores > 0 ? (int)cores : 1;
  long l1 = sysfs_cache_bytes(1), l2 = sysfs_cache_bytes(2), l3 = sysfs_cache_bytes(3);
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (l1 <= 0) l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (l2 <= 0) l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l3 <= 0) l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  /* Unknown: the smallest of the x86 cores Loom has met, so tiles still fit. */
  t.l1d_bytes = l1 > 0 ? (int)l1 : 32 * 1024;
  t.l2_bytes = l2 > 0 ? (int)l2 : 512 * 1024;
  t.l3_bytes = l3 > 0 && l3 < (1L << 31) ? (int)l3 : 0;
  t.flops_per_cycle = host_flops_per_cycle(t.vector_bits);
  t.fma_latency = 4; /* Haswell through Sapphire Rapids, Zen 1 through Zen 4 */
  t.l2_bytes_per_cycle = 32;
  t.ghz = host_ghz();
  return t;
}

double target_peak_gflops_per_core(const Target *t) { return t->flops_per_cycle * t->ghz; }

/* "1MiB", "512K", "32768": bytes; false when malformed or over 1 GiB. */
static bool parse_bytes(const char *s, size_t n, long *out) {
  char buf[32];
  if (n == 0 || n >= sizeof buf) return false;
  memcpy(buf, s, n);
  buf[n] = '\0';
  char *end;
  double v = strtod(buf, &end);
  long mul = 1;
  if (!strcmp(end, "K") || !strcmp(end, "KiB") || !strcmp(end, "k")) mul = 1024;
  else if (!strcmp(end, "M") || !strcmp(end, "MiB")) mul = 1024 * 1024;
  else if (*end) return false;
  if (!(v > 0) || v * mul > (double)(1L << 30)) return false;
  *out = (long)(v * mul);
  return true;
}

loom_status target_apply_options(Target *t, const char *options, LoomError *err) {
  bool dma_given = false;
  for (const char *p = options; p && *p;) {
    size_t len = strcspn(p, ",");
    const char *eq = memchr(p, '=', len);
    if (!eq)
      return err_set(err, LOOM_ERR_INVALID_ARG, "--target-opt \"%.*s\": expected key=value", (int)len, p);
    size_t klen = (size_t)(eq - p), vlen = len - klen - 1;
    const char *v = eq + 1;
    char vbuf[32] = {0};
    if (vlen < sizeof vbuf) memcpy(vbuf, v, vlen);
    long n = 0;
    char *end = NULL;
#define KEY(k) (klen == strlen(k) && !strncmp(p, k, klen))
    if (KEY("l1d") || KEY("l2") || KEY("l3")) {
      if (!parse_bytes(v, vlen, &n))
        return err_set(err, LOOM_ERR_INVALID_ARG, "--target-opt %.*s=%.*s: expected a size such as 48K or 1MiB",
                       (int)klen, p, (int)vlen, v);
      *(KEY("l1d") ? &t->l1d_bytes : KEY("l2") ? &t->l2_bytes : &t->l3_bytes) = (int)n;
    } else if (KEY("cores") || KEY("flops_per_cycle") || KEY("vector_registers") || KEY("fma_latency") ||
               KEY("l2_bytes_per_cycle")) {
      n = strtol(vbuf, &end, 10);
      if (vlen == 0 || vlen >= sizeof vbuf || *end || n < 1 || n > 4096)
        return err_set(err, LOOM_ERR_INVALID_ARG, "--target-opt %.*s=%.*s: expected a whole number from 1 to 4096",
                       (int)klen, p, (int)vlen, v);
      *(KEY("cores")             ? &t->num_cores
        : KEY("flops_per_cycle") ? &t->flops_per_cycle
        : KEY("fma_latency")     ? &t->fma_latency
        : KEY("l2_bytes_per_cycle") ? &t->l2_bytes_per_cycle
                                 : &t->vector_registers) = (int)n;
    } else if (KEY("local_mem")) {
      if (!parse_bytes(v, vlen, &n) || n < 1024)
        return err_set(err, LOOM_ERR_INVALID_ARG,
                       "--target-opt local_mem=%.*s: expected the scratchpad's size, from 1KiB to 1GiB, such as 64KiB",
                       (int)vlen, v);
      t->local_mem_bytes = n;
    } else if (KEY("dma")) {
      if (strcmp(vbuf, "sync") && strcmp(vbuf, "double"))
        return err_set(err, LOOM_ERR_INVALID_ARG,
                       "--target-opt dma=%.*s: expected sync (copies between computations) or double "
                       "(double-buffered tiles: copies overlap the compute)",
                       (int)vlen, v);
      t->dma_double_buffer = !strcmp(vbuf, "double");
      dma_given = true;
    } else if (KEY("ghz")) {
      double g = strtod(vbuf, &end);
      if (vlen == 0 || vlen >= sizeof vbuf || *end || !(g > 0 && g < 100))
        return err_set(err, LOOM_ERR_INVALID_ARG, "--target-opt ghz=%.*s: expected a clock in GHz such as 3.5",
                       (int)vlen, v);
      t->ghz = g;
    } else {
      return err_set(err, LOOM_ERR_INVALID_ARG,
                     "--target-opt: unknown key \"%.*s\" (expected cores, l1d, l2, l3, ghz, flops_per_cycle, "
                     "vector_registers, fma_latency, l2_bytes_per_cycle, local_mem or dma)",
                     (int)klen, p);
    }
#undef KEY
    p += len + (p[len] == ',');
  }
  if (dma_given && t->local_mem_bytes == 0)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "--target-opt dma: the target has no local memory to copy into (add local_mem=SIZE)");
  return LOOM_OK;
}

void target_describe(const Target *t, char *buf, size_t cap) {
  double peak = target_peak_gflops_per_core(t);
  char clock[64] = "unknown", gflops[64] = "unknown (clock unknown)";
  if (t->ghz > 0) snprintf(clock, sizeof clock, "%.2f GHz", t->ghz);
  if (peak > 0) snprintf(gflops, sizeof gflops, "%.1f GFLOP/s per core, %.1f in all", peak, peak * t->num_cores);
  snprintf(buf, cap,
           "target: %s\nvector: %d bits, %d registers\ncores: %d\nl1d: %d KiB\nl2: %d KiB\nl3: %d KiB\n"
           "clock: %s\nfp32 FLOP/cycle per core: %d\nFMA latency: %d cycles\nL2 to L1: %d bytes/cycle\npeak: %s\n",
           t->name, t->vector_bits, t->vector_registers, t->num_cores, t->l1d_bytes / 1024, t->l2_bytes / 1024,
           t->l3_bytes / 1024, clock, t->flops_per_cycle, t->fma_latency,
           t->l2_bytes_per_cycle, gflops);
  size_t len = strlen(buf);
  if (t->local_mem_bytes > 0 && len < cap)
    snprintf(buf + len, cap - len,
             "local memory: %lld KiB (scratchpad: conv2d and matmul tiles staged in it)\n"
             "DMA: loom_dma_get/loom_dma_put (and _2d for strided rows), %s\n",
             (long long)(t->local_mem_bytes / 1024),
             t->dma_double_buffer ? "double-buffered (the next tile is fetched while this one is computed)"
                                  : "synchronous (between computations)");
}

int target_lanes(const Target *t, DType dt) {
  int bits = dt.bits == 1 ? 8 : dt.bits;
  int lanes = bits ? t->vector_bits / bits : 1;
  return lanes > 0 ? lanes : 1;
}

static const struct {
  const char *name;
  int vector_bits;
  const char *cflags, *artifact_target;
} levels[] = {
    /* The x86-64 baseline every x86-64 CPU runs: SSE2, 128-bit vectors,
     * no AVX or FMA. Its artifact needs no feature ("x86_64"). */
    {"x86_64-sse2", 128, BUILD_CFLAGS_MARCH("x86-64"), "x86_64"},
    {"x86_64-avx2", 256, BUILD_CFLAGS_MARCH("x86-64-v3"), "x86_64-avx2-fma"},
    {"x86_64-avx512", 512, BUILD_CFLAGS_MARCH("x86-64-v4"), "x86_64-avx2-fma-avx512"},
};

Target target_for_artifact(const char *artifact_target) {
  Target t = target_host();
  for (size_t i = 0; artifact_target && i < sizeof levels / sizeof levels[0]; i++)
    if (!strcmp(artifact_target, levels[i].artifact_target) && levels[i].vector_bits <= t.vector_bits) {
      snprintf(t.name, sizeof t.name, "%s", levels[i].name);
      t.vector_bits = levels[i].vector_bits;
      t.vector_registers = t.vector_bits == 512 ? 32 : 16;
      t.flops_per_cycle = host_flops_per_cycle(t.vector_bits);
    }
  return t;
}

/* Targets of other ISAs, for loom export-c: every constant is the target's
 * (a typical core of it), none this machine's. */
static const struct {
  const char *name;
  int vector_bits, vector_registers, flops_per_cycle, l1d_kib, l2_kib;
  const char *cflags, *cross_cc;
} cross_targets[] = {
    /* Cortex-A72/Neoverse-N1 class: 2 NEON FMA pipes x 4 fp32 lanes x 2. */
    {"aarch64", 128, 32, 16, 32, 512, "-O3 -march=armv8-a -ffp-contract=fast -fno-math-errno -Wno-psabi",
     "aarch64-linux-gnu-gcc"},
    /* SiFive U74 class, scalar: one FMA a cycle. */
    {"riscv64", 0, 32, 2, 32, 512, "-O3 -march=rv64gc -mabi=lp64d -ffp-contract=fast -fno-math-errno",
     "riscv64-linux-gnu-gcc"},
};

loom_status target_parse(const char *spec, Target *out, LoomError *err) {
  *out = target_host();
  if (!spec || !*spec || !strcmp(spec, "host")) return LOOM_OK;
  if (!strcmp(spec, "generic")) {
    /* Plain C11 for any machine (loom export-c): no vector types;
     * one scalar FMA per cycle. Cores and caches stay this machine's. */
    snprintf(out->name, sizeof out->name, "generic");
    out->vector_bits = 0;
    out->vector_registers = 16;
    out->flops_per_cycle = 2;
    return LOOM_OK; /* built here (loom compile): the host's flags and features */
  }
  for (size_t i = 0; i < sizeof cross_targets / sizeof cross_targets[0]; i++)
    if (!strcmp(spec, cross_targets[i].name)) {
      memset(out, 0, sizeof *out);
      snprintf(out->name, sizeof out->name, "%s", cross_targets[i].name);
      out->vector_bits = cross_targets[i].vector_bits;
      out->vector_registers = cross_targets[i].vector_registers;
      out->flops_per_cycle = cross_targets[i].flops_per_cycle;
      out->num_cores = 1;
      out->l1d_bytes = cross_targets[i].l1d_kib * 1024;
      out->l2_bytes = cross_targets[i].l2_kib * 1024;
      out->fma_latency = 4;
      out->l2_bytes_per_cycle = 32;
      out->cflags = cross_targets[i].cflags;
      out->cross_cc = cross_targets[i].cross_cc;
      return LOOM_OK;
    }
#if defined(__x86_64__)
  if (!strcmp(spec, "x86_64")) return LOOM_OK;
  for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
    if (!strcmp(spec, levels[i].name)) {
      snprintf(out->name, sizeof out->name, "%s", levels[i].name);
      out->vector_bits = levels[i].vector_bits;
      out->vector_registers = out->vector_bits == 512 ? 32 : 16;
      out->flops_per_cycle = host_flops_per_cycle(out->vector_bits);
      out->cflags = levels[i].cflags;
      out->artifact_target = levels[i].artifact_target;
      return LOOM_OK;
    }
#endif
  return err_set(err, LOOM_ERR_UNSUPPORTED,
                 "target \"%s\" is not supported: expected host, generic, aarch64, riscv64, x86_64 (this machine, %s), "
                 "x86_64-sse2, x86_64-avx2 or x86_64-avx512 (on an x86_64 machine)",
                 spec, out->name);
}

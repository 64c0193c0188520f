#include "target/build.h"
#include "target/target.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Longest compiler output quoted in an error: enough for the first errors,
 * not a screenful of cascades. */
enum { BUILD_STDERR_MAX = 700, BUILD_MAX_ARGS = 96 };

uint64_t build_fnv1a64(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static uint64_t hash_str(uint64_t h, const char *s) {
  h = build_fnv1a64(h, s ? s : "", s ? strlen(s) + 1 : 1); /* NUL keeps fields apart */
  return h;
}

/* mkdir -p. */
static loom_status make_dirs(const char *path, LoomError *err) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
    return err_set(err, LOOM_ERR_IO, "cache directory path too long: \"%s\"", path);
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST)
        return err_set(err, LOOM_ERR_IO, "cannot create cache directory \"%s\": %s", buf, strerror(errno));
      *p = saved;
      if (saved == '\0') break;
    }
  }
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return err_set(err, LOOM_ERR_IO, "cache directory \"%s\" is not a directory", path);
  return LOOM_OK;
}

/* Reads a whole file into a malloc'ed NUL-terminated string (NULL on error). */
static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *s = malloc(cap);
  while (s) {
    size_t got = fread(s + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    cap *= 2;
    char *t = realloc(s, cap);
    if (!t) {
      free(s);
      s = NULL;
    } else {
      s = t;
    }
  }
  fclose(f);
  if (s) s[n] = '\0';
  if (len) *len = n;
  return s;
}

/* Writes data to path through a temporary name + rename. */
/* A temporary name unique across processes (pid), threads (the address of a
 * stack variable) and time, so concurrent builds of one key never share it. */
static void temp_name(char *buf, size_t cap, const char *path) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(buf, cap, "%s.tmp.%ld.%lx.%ld", path, (long)getpid(), (unsigned long)(uintptr_t)&ts, (long)ts.tv_nsec);
}

static loom_status write_file_atomic(const char *path, const char *data, LoomError *err) {
  char tmp[PATH_MAX + 64];
  temp_name(tmp, sizeof tmp, path);
  FILE *f = fopen(tmp, "wb");
  if (!f) return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", tmp, strerror(errno));
  size_t n = strlen(data);
  bool ok = fwrite(data, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(e));
  }
  return LOOM_OK;
}

/* Splits flags on spaces into argv (in place in `buf`). */
static int split_flags(char *buf, char **argv, int argc, int max) {
  for (char *tok = strtok(buf, " \t\n"); tok && argc < max; tok = strtok(NULL, " \t\n")) argv[argc++] = tok;
  return argc;
}

static loom_status run_compiler(char *const argv[], const char *err_path, int *exit_code, LoomError *err) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 2, 1);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return err_set(err, LOOM_ERR_BUILD, "cannot run the C compiler \"%s\": %s", argv[0], strerror(rc));
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return err_set(err, LOOM_ERR_BUILD, "waiting for the C compiler \"%s\": %s", argv[0], strerror(errno));
  }
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return LOOM_OK;
}

/* An executable named `name` somewhere on $PATH? */
static bool on_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path) return false;
  char buf[PATH_MAX];
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && n + strlen(name) + 2 < sizeof buf) {
      memcpy(buf, path, n);
      buf[n] = '/';
      strcpy(buf + n + 1, name);
      if (access(buf, X_OK) == 0) return true;
    }
    path += n + (path[n] == ':');
  }
  return false;
}

/* clang by default: on the register-tiled matmul microkernel gcc 12 spills
 * and shuffles the accumulators (about half of clang's GFLOP/s in our
 * measurement, docs/codegen.md), while clang 14 keeps them in registers. */
const char *build_default_cc(void) {
  const char *cc = getenv("LOOM_CC");
  if (cc && *cc) return cc;
  return on_path("clang") ? "clang" : "cc";
}

loom_status build_shared_object(const char *source, const BuildOptions *opt, BuildResult *out, LoomError *err) {
  static const BuildOptions defaults = {0};
  if (!opt) opt = &defaults;
  memset(out, 0, sizeof *out);
  const char *cc = opt->cc ? opt->cc : build_default_cc();
  /* -march=native asks the compiler's own view of the CPU. When the host
   * target has no AVX-512 where the CPU does (under valgrind, which hides
   * it from this process but not from the compiler it starts), the code
   * must not use it either. */
#if defined(__x86_64__)
  bool no_avx512 = target_host().vector_bits < 512;
#else
  bool no_avx512 = false;
#endif
  const char *cflags = opt->cflags ? opt->cflags : no_avx512 ? BUILD_DEFAULT_CFLAGS " -mno-avx512f" : BUILD_DEFAULT_CFLAGS;
  const char *extra = opt->extra_flags ? opt->extra_flags : "";
  const char *inc = opt->include_dir ? opt->include_dir : getenv("LOOM_INCLUDE_DIR");
#ifdef LOOM_DEFAULT_INCLUDE_DIR
  if (!inc || !*inc) inc = LOOM_DEFAULT_INCLUDE_DIR;
#endif

  char cache[PATH_MAX];
  if (opt->cache_dir) {
    snprintf(cache, sizeof cache, "%s", opt->cache_dir);
  } else if (getenv("LOOM_CACHE_DIR") && *getenv("LOOM_CACHE_DIR")) {
    snprintf(cache, sizeof cache, "%s", getenv("LOOM_CACHE_DIR"));
  } else {
    const char *home = getenv("HOME");
    if (!home || !*home)
      return err_set(err, LOOM_ERR_IO, "no cache directory: set LOOM_CACHE_DIR or HOME (or BuildOptions.cache_dir)");
    snprintf(cache, sizeof cache, "%s/.cache/loom", home);
  }
  loom_status st = make_dirs(cache, err);
  if (st) return st;

  /* The headers generated code includes are part of the key: changing
   * them must rebuild (loom_convert.h: the narrow-type conversions). The
   * compiler is keyed by name only (document: clear the cache after a
   * compiler upgrade) so a cache hit never runs anything. */
  uint64_t h = BUILD_FNV_OFFSET;
  h = hash_str(h, source);
  h = hash_str(h, cc);
  h = hash_str(h, cflags);
  h = hash_str(h, extra);
  if (inc && *inc) {
    char hdr[PATH_MAX];
    snprintf(hdr, sizeof hdr, "%s/loom/loom_kernel.h", inc);
    char *text = read_file(hdr, NULL);
    if (!text) return err_set(err, LOOM_ERR_IO, "kernel ABI header \"%s\" not readable: %s", hdr, strerror(errno));
    h = hash_str(h, text);
    free(text);
    if (strstr(source, "loom/loom_convert.h")) {
      snprintf(hdr, sizeof hdr, "%s/loom/loom_convert.h", inc);
      if (!(text = read_file(hdr, NULL)))
        return err_set(err, LOOM_ERR_IO, "conversion header \"%s\" not readable: %s", hdr, strerror(errno));
      h = hash_str(h, text);
      free(text);
    }
  }
  char base[PATH_MAX - 64], c_path[PATH_MAX], tmp_so[PATH_MAX + 128], err_path[PATH_MAX + 128];
  if (snprintf(base, sizeof base, "%s/%016llx", cache, (unsigned long long)h) >= (int)sizeof base - 4)
    return err_set(err, LOOM_ERR_IO, "cache directory path too long: \"%s\"", cache);
  snprintf(out->so_path, sizeof out->so_path, "%s.so", base);
  snprintf(c_path, sizeof c_path, "%s.c", base);

  struct stat sst;
  if (stat(out->so_path, &sst) == 0 && S_ISREG(sst.st_mode)) {
    out->cache_hit = true;
    return LOOM_OK;
  }
  st = write_file_atomic(c_path, source, err);
  if (st) return st;

  temp_name(tmp_so, sizeof tmp_so, out->so_path);
  temp_name(err_path, sizeof err_path, base);
  strncat(err_path, ".err", sizeof err_path - strlen(err_path) - 1);

  size_t flen = strlen(cflags) + strlen(extra) + 2;
  char *flags = malloc(flen);
  if (!flags) return err_set(err, LOOM_ERR_INTERNAL, "build: out of memory");
  snprintf(flags, flen, "%s %s", cflags, extra);
  char *argv[BUILD_MAX_ARGS];
  int argc = 0;
  argv[argc++] = (char *)cc;
  argc = split_flags(flags, argv, argc, BUILD_MAX_ARGS - 8);
  char inc_flag[PATH_MAX + 3];
  if (inc && *inc) {
    snprintf(inc_flag, sizeof inc_flag, "-I%s", inc);
    argv[argc++] = inc_flag;
  }
  argv[argc++] = "-o";
  argv[argc++] = tmp_so;
  argv[argc++] = c_path;
  argv[argc++] = "-lm"; /* generated code calls libm; the host may not link it */
  argv[argc] = NULL;

  int code = 0;
  st = run_compiler(argv, err_path, &code, err);
  free(flags);
  if (st) {
    unlink(err_path);
    return st;
  }
  if (code != 0) {
    size_t n = 0;
    char *text = read_file(err_path, &n);
    unlink(err_path);
    unlink(tmp_so);
    bool cut = n > BUILD_STDERR_MAX;
    if (text && cut) text[BUILD_STDERR_MAX] = '\0';
    err_set(err, LOOM_ERR_BUILD, "compiling \"%s\" with %s failed (exit %d):\n%s%s", c_path, cc, code,
            text ? text : "(no compiler output)", cut ? "\n[...truncated]" : "");
    free(text);
    return LOOM_ERR_BUILD;
  }
  unlink(err_path);
  if (rename(tmp_so, out->so_path) != 0) {
    int e = errno;
    unlink(tmp_so);
    return err_set(err, LOOM_ERR_IO, "cannot move \"%s\" to \"%s\": %s", tmp_so, out->so_path, strerror(e));
  }
  return LOOM_OK;
}

#include "target/build.h"
#include "support/alloc.h"
#include "target/target.h"

#include "support/clock.h"
#include "support/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Longest compiler output quoted in an error: enough for the first errors,
 * not a screenful of cascades. */
enum { BUILD_STDERR_MAX = 700 };

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
  char *s = loom_malloc(cap);
  while (s) {
    size_t got = fread(s + n, 1, cap - n - 1, f);
    n += got;
    if (n + 1 < cap) break;
    cap *= 2;
    char *t = loom_realloc(s, cap);
    if (!t) {
      loom_free(s);
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

static loom_status write_file_atomic(const char *path, const char *data, LoomError *err) {
  char tmp[PATH_MAX + 64];
  subprocess_temp_name(tmp, sizeof tmp, path);
  subprocess_track_file(tmp);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    subprocess_untrack_file(tmp);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", tmp, strerror(errno));
  }
  size_t n = strlen(data);
  bool ok = fwrite(data, 1, n, f) == n;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    subprocess_untrack_file(tmp);
    return err_set(err, LOOM_ERR_IO, "cannot write \"%s\": %s", path, strerror(e));
  }
  subprocess_untrack_file(tmp);
  return LOOM_OK;
}

/* Splits flags on spaces into argv (in place in `buf`). */
static int split_flags(char *buf, char **argv, int argc) {
  for (char *tok = strtok(buf, " \t\n"); tok; tok = strtok(NULL, " \t\n")) argv[argc++] = tok;
  return argc;
}

/* The file exec runs for `name` (a path, or searched on $PATH as execvp
 * does) into buf; false when there is none. */
static bool find_program(const char *name, char *buf, size_t cap) {
  if (strchr(name, '/')) return snprintf(buf, cap, "%s", name) < (int)cap && access(buf, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) return false;
  while (*path) {
    size_t n = strcspn(path, ":");
    if (n > 0 && n + strlen(name) + 2 < cap) {
      memcpy(buf, path, n);
      buf[n] = '/';
      strcpy(buf + n + 1, name);
      if (access(buf, X_OK) == 0) return true;
    }
    path += n + (path[n] == ':');
  }
  return false;
}

/* An executable named `name` somewhere on $PATH? */
static bool on_path(const char *name) {
  char buf[PATH_MAX];
  return !strchr(name, '/') && find_program(name, buf, sizeof buf);
}

/* The compiler's version as the cache key sees it: the file that runs
 * (symlinks resolved: /usr/bin/clang -> .../llvm-14/bin/clang), its size
 * and modification time. An upgrade replaces that file, so objects built
 * by the old compiler are not reused; a stat, so a cache hit still runs
 * nothing. A wrapper script is keyed by the script's own file. */
static uint64_t hash_compiler_file(uint64_t h, const char *cc) {
  char found[PATH_MAX], real[PATH_MAX];
  struct stat st;
  if (!find_program(cc, found, sizeof found) || !realpath(found, real) || stat(real, &st) != 0)
    return hash_str(h, "(compiler not found)"); /* the build itself reports it */
  h = hash_str(h, real);
  int64_t id[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec, (int64_t)st.st_mtim.tv_nsec};
  return build_fnv1a64(h, id, sizeof id);
}

/* clang by default: on the register-tiled matmul microkernel gcc 12 spills
 * and shuffles the accumulators (about half of clang's GFLOP/s in our
 * measurement, docs/target.md), while clang 14 keeps them in registers. */
const char *build_default_cc(void) {
  const char *cc = getenv("LOOM_CC");
  if (cc && *cc) return cc;
  return on_path("clang") ? "clang" : "cc";
}

/* One run of the compiler: its arguments, the temporary file it writes
 * (renamed to `dest` when it succeeds) and the file its messages go to. */
typedef struct CompileJob {
  char **argv; /* as long as the flags and inputs need: a link takes every object of a model */
  char **envp; /* the build's (BuildEnv.envp), not owned */
  char *flags;  /* storage of the split flags */
  char source[PATH_MAX], dest[PATH_MAX], tmp[PATH_MAX + 64], log[PATH_MAX + 64];
  pid_t pid;
  bool started, finished;
  double started_at; /* loom_clock_s() */
} CompileJob;


/* What every compile of one build shares. */
typedef struct BuildEnv {
  const char *cc, *cflags, *extra, *inc;
  char inc_flag[PATH_MAX + 3];
  char cache[PATH_MAX];
  uint64_t key; /* of compiler, flags and the headers generated code includes */
  int parallel;
  double timeout; /* seconds a compiler may run; 0: no limit */
  /* The compilers' TMPDIR: a directory of this build in the cache named as
   * a temporary, so that what a compiler driver keeps there (gcc's cc1
   * output before `as` reads it, clang's object before the link) goes with
   * the build's other temporaries when a signal ends it. */
  char tmpdir[PATH_MAX + 64], tmpdir_assignment[PATH_MAX + 80];
  char **envp; /* this process's environment with TMPDIR=tmpdir */
} BuildEnv;

static void job_free(CompileJob *j) {
  if (j->started && !j->finished) subprocess_kill(j->pid);
  if (j->started) {
    unlink(j->tmp);
    unlink(j->log);
    subprocess_untrack_file(j->tmp);
    subprocess_untrack_file(j->log);
  }
  loom_free(j->flags);
  loom_free(j->argv);
}

/* cc <cflags> <extra> [-I inc] <mode...> -o <tmp> <inputs...> [-lm]. */
static loom_status job_init(CompileJob *j, const BuildEnv *env, const char *dest, const char *const *mode,
                            const char *const *inputs, int ninputs, bool link, LoomError *err) {
  memset(j, 0, sizeof *j);
  j->envp = env->envp;
  snprintf(j->dest, sizeof j->dest, "%s", dest);
  snprintf(j->source, sizeof j->source, "%s", ninputs == 1 ? inputs[0] : dest);
  subprocess_temp_name(j->tmp, sizeof j->tmp, dest);
  subprocess_temp_name(j->log, sizeof j->log, dest);
  strncat(j->log, ".log", sizeof j->log - strlen(j->log) - 1);
  size_t flen = strlen(env->cflags) + strlen(env->extra) + 2;
  if (!(j->flags = loom_malloc(flen))) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  snprintf(j->flags, flen, "%s %s", env->cflags, env->extra);
  int nmode = 0;
  while (mode[nmode]) nmode++;
  /* a flag takes two characters of flen at least (itself and a space) */
  if (!(j->argv = loom_calloc(flen / 2 + (size_t)nmode + (size_t)ninputs + 8, sizeof *j->argv)))
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  int argc = 0;
  j->argv[argc++] = (char *)env->cc;
  argc = split_flags(j->flags, j->argv, argc);
  if (env->inc_flag[0]) j->argv[argc++] = (char *)env->inc_flag;
  for (; *mode; mode++) j->argv[argc++] = (char *)*mode;
  j->argv[argc++] = "-o";
  j->argv[argc++] = j->tmp;
  for (int i = 0; i < ninputs; i++) j->argv[argc++] = (char *)inputs[i];
  if (link) j->argv[argc++] = "-lm"; /* generated code calls libm; the host may not link it */
  j->argv[argc] = NULL;
  return LOOM_OK;
}

static loom_status job_start(CompileJob *j, LoomError *err) {
  subprocess_track_file(j->tmp);
  subprocess_track_file(j->log);
  j->started = true;
  j->started_at = loom_clock_s();
  loom_status st = subprocess_start(j->argv, j->envp, j->log, &j->pid, err);
  if (st) j->finished = true;
  return st;
}

/* The finished job's result: its output renamed into place, or the
 * compiler's first messages as the error. */
static loom_status job_finish(CompileJob *j, int code, LoomError *err) {
  j->finished = true;
  if (code != 0) {
    size_t n = 0;
    char *text = read_file(j->log, &n);
    bool cut = n > BUILD_STDERR_MAX;
    if (text && cut) text[BUILD_STDERR_MAX] = '\0';
    if (code == 127 && (!text || !*text))
      err_set(err, LOOM_ERR_BUILD, "cannot run the C compiler \"%s\" (not found or not executable)", j->argv[0]);
    else
      err_set(err, LOOM_ERR_BUILD, "compiling \"%s\" with %s failed (exit %d):\n%s%s", j->source, j->argv[0], code,
              text ? text : "(no compiler output)", cut ? "\n[...truncated]" : "");
    loom_free(text);
    return LOOM_ERR_BUILD;
  }
  if (rename(j->tmp, j->dest) != 0)
    return err_set(err, LOOM_ERR_IO, "cannot move \"%s\" to \"%s\": %s", j->tmp, j->dest, strerror(errno));
  return LOOM_OK;
}

/* A compiler run past the time limit: killed and reaped, a build error.
 * (Generated code can send a C compiler's optimizer into minutes of work:
 * a tuner must not wait for it.) */
static loom_status job_timed_out(CompileJob *j, double timeout, LoomError *err) {
  subprocess_kill(j->pid);
  j->finished = true;
  return err_set(err, LOOM_ERR_BUILD, "compiling \"%s\" with %s timed out after %.0f s (killed)", j->source,
                 j->argv[0], timeout);
}

/* Runs the jobs, at most `parallel` at once, each for at most `timeout`
 * seconds (0: no limit). On the first failure the others are killed and
 * its error returned. */
static loom_status run_jobs(CompileJob *jobs, int n, int parallel, double timeout, LoomError *err) {
  int next = 0, running = 0, done = 0;
  loom_status st = LOOM_OK;
  while (!st && done < n) {
    while (!st && next < n && running < parallel) {
      st = job_start(&jobs[next++], err);
      running += !st;
    }
    bool progressed = false;
    for (int i = 0; !st && i < next; i++) {
      CompileJob *j = &jobs[i];
      if (!j->started || j->finished) continue;
      bool exited = false;
      int code = 0;
      st = subprocess_wait(j->pid, running == 1 && timeout <= 0, &exited, &code, err);
      if (st) {
        j->finished = true;
        break;
      }
      if (!exited && timeout > 0 && loom_clock_s() - j->started_at > timeout) st = job_timed_out(j, timeout, err);
      if (!exited) continue;
      running--;
      done++;
      progressed = true;
      st = job_finish(j, code, err);
    }
    if (!st && !progressed && running > 0) nanosleep(&(struct timespec){0, 2000000}, NULL);
  }
  return st;
}

static bool file_exists(const char *path) {
  struct stat sst;
  return stat(path, &sst) == 0 && S_ISREG(sst.st_mode);
}

static int default_parallel(void) {
  const char *s = getenv("LOOM_BUILD_JOBS");
  long n = s && *s ? strtol(s, NULL, 10) : sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static loom_status build_env_init(const BuildOptions *opt, BuildEnv *env, LoomError *err) {
  memset(env, 0, sizeof *env);
  env->cc = opt->cc ? opt->cc : build_default_cc();
  /* -march=native asks the compiler's own view of the CPU. When the host
   * target is narrower than the CPU (under valgrind, which hides AVX-512
   * from this process but not from the compiler it starts; LOOM_HOST_ISA),
   * the code must not use what the target lacks either. */
#if defined(__x86_64__)
  int host_bits = target_host().vector_bits;
#else
  int host_bits = 512;
#endif
  env->cflags = opt->cflags           ? opt->cflags
                : host_bits < 256 ? BUILD_DEFAULT_CFLAGS " -mno-avx" /* and so no AVX2, FMA, AVX-512 */
                : host_bits < 512 ? BUILD_DEFAULT_CFLAGS " -mno-avx512f"
                                  : BUILD_DEFAULT_CFLAGS;
  env->extra = opt->extra_flags ? opt->extra_flags : "";
  env->inc = opt->include_dir ? opt->include_dir : getenv("LOOM_INCLUDE_DIR");
#ifdef LOOM_DEFAULT_INCLUDE_DIR
  if (!env->inc || !*env->inc) env->inc = LOOM_DEFAULT_INCLUDE_DIR;
#endif
  if (env->inc && *env->inc) snprintf(env->inc_flag, sizeof env->inc_flag, "-I%s", env->inc);
  env->parallel = opt->jobs > 0 ? opt->jobs : default_parallel();
  env->timeout = opt->timeout_seconds > 0 ? opt->timeout_seconds : 0;

  if (opt->cache_dir) {
    snprintf(env->cache, sizeof env->cache, "%s", opt->cache_dir);
  } else if (getenv("LOOM_CACHE_DIR") && *getenv("LOOM_CACHE_DIR")) {
    snprintf(env->cache, sizeof env->cache, "%s", getenv("LOOM_CACHE_DIR"));
  } else {
    const char *home = getenv("HOME");
    if (!home || !*home)
      return err_set(err, LOOM_ERR_IO, "no cache directory: set LOOM_CACHE_DIR or HOME (or BuildOptions.cache_dir)");
    snprintf(env->cache, sizeof env->cache, "%s/.cache/loom", home);
  }
  if (strlen(env->cache) > PATH_MAX - 64)
    return err_set(err, LOOM_ERR_IO, "cache directory path too long: \"%s\"", env->cache);
  loom_status st = make_dirs(env->cache, err);
  if (st) return st;
  subprocess_track_dir(env->cache);
  subprocess_sweep_stale_temps(env->cache, NULL);

  /* The key: the compiler (its name and its file, hash_compiler_file), the
   * flags and the headers generated code includes (changing them must
   * rebuild; loom_convert.h: the narrow-type conversions). */
  uint64_t h = BUILD_FNV_OFFSET;
  h = hash_str(h, env->cc);
  h = hash_compiler_file(h, env->cc);
  h = hash_str(h, env->cflags);
  h = hash_str(h, env->extra);
  if (env->inc && *env->inc) {
    static const char *const headers[] = {"loom/loom_kernel.h", "loom/loom_convert.h"};
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++) {
      char hdr[PATH_MAX];
      snprintf(hdr, sizeof hdr, "%s/%s", env->inc, headers[i]);
      char *text = read_file(hdr, NULL);
      if (!text) return err_set(err, LOOM_ERR_IO, "kernel header \"%s\" not readable: %s", hdr, strerror(errno));
      h = hash_str(h, text);
      loom_free(text);
    }
  }
  env->key = h;
  return LOOM_OK;
}

static loom_status build_tmpdir_create(BuildEnv *env, LoomError *err) {
  char base[PATH_MAX];
  if (snprintf(base, sizeof base, "%s/cc", env->cache) >= (int)sizeof base)
    return err_set(err, LOOM_ERR_IO, "cache directory path too long: \"%s\"", env->cache);
  subprocess_temp_name(env->tmpdir, sizeof env->tmpdir, base);
  subprocess_track_file(env->tmpdir);
  snprintf(env->tmpdir_assignment, sizeof env->tmpdir_assignment, "TMPDIR=%s", env->tmpdir);
  if (mkdir(env->tmpdir, 0700) != 0) {
    int e = errno;
    subprocess_untrack_file(env->tmpdir);
    env->tmpdir[0] = '\0';
    return err_set(err, LOOM_ERR_IO, "cannot create \"%s\": %s", env->tmpdir_assignment + 7, strerror(e));
  }
  if (!(env->envp = subprocess_environ_with(env->tmpdir_assignment)))
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  return LOOM_OK;
}

/* After the build's compilers are gone: their TMPDIR and what a killed one
 * left in it. */
static void build_tmpdir_remove(BuildEnv *env) {
  if (!env->tmpdir[0]) return;
  subprocess_remove_temp(env->tmpdir);
  subprocess_untrack_file(env->tmpdir);
  loom_free(env->envp);
  env->envp = NULL;
  env->tmpdir[0] = '\0';
}

static void cache_path(char *buf, size_t cap, const BuildEnv *env, uint64_t h, const char *ext) {
  snprintf(buf, cap, "%s/%016llx%s", env->cache, (unsigned long long)h, ext);
}

loom_status build_shared_object_units(const char *const *units, int n, const BuildOptions *opt, BuildResult *out,
                                      LoomError *err) {
  static const BuildOptions defaults = {0};
  if (!opt) opt = &defaults;
  memset(out, 0, sizeof *out);
  if (n < 1) return err_set(err, LOOM_ERR_INVALID_ARG, "build: no source to compile");
  BuildEnv env;
  loom_status st = build_env_init(opt, &env, err);
  if (st) return st;

  uint64_t *unit_key = loom_calloc((size_t)n, sizeof *unit_key);
  if (!unit_key) return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  uint64_t so_key = n == 1 ? 0 : hash_str(env.key, "link");
  for (int i = 0; i < n; i++) {
    unit_key[i] = hash_str(env.key, units[i]);
    if (n > 1) so_key = build_fnv1a64(so_key, &unit_key[i], sizeof unit_key[i]);
  }
  if (n == 1) so_key = unit_key[0];
  cache_path(out->so_path, sizeof out->so_path, &env, so_key, ".so");
  if (file_exists(out->so_path)) {
    out->cache_hit = true;
    loom_free(unit_key);
    return LOOM_OK;
  }

  /* One unit: compiled and linked by one command. Several: each compiled
   * to an object of its own, cached by its own key (a unit unchanged
   * since an earlier build is not compiled again), in parallel, then
   * linked. */
  CompileJob *jobs = loom_calloc((size_t)n + 1, sizeof *jobs);
  char (*c_paths)[PATH_MAX] = loom_calloc((size_t)n, sizeof *c_paths);
  char (*o_paths)[PATH_MAX] = loom_calloc((size_t)n, sizeof *o_paths);
  const char **objects = loom_calloc((size_t)n, sizeof *objects);
  int njobs = 0, nobjects = 0;
  if (!jobs || !c_paths || !o_paths || !objects) st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  int *order = loom_calloc((size_t)n, sizeof *order), norder = 0;
  if (!order) st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "build: out of memory");
  for (int i = 0; !st && i < n; i++) {
    bool repeated = false;
    for (int k = 0; k < i; k++) repeated |= unit_key[k] == unit_key[i];
    if (repeated) continue; /* the same unit twice would define its symbols twice */
    cache_path(c_paths[i], sizeof c_paths[i], &env, unit_key[i], ".c");
    cache_path(o_paths[i], sizeof o_paths[i], &env, unit_key[i], ".o");
    objects[nobjects++] = o_paths[i];
    if (n == 1 || !file_exists(o_paths[i])) order[norder++] = i;
  }
  if (!st && norder > 0) st = build_tmpdir_create(&env, err);
  /* The biggest units start first, so none is left running alone at the end. */
  for (int i = 1; i < norder; i++)
    for (int k = i; k > 0 && strlen(units[order[k]]) > strlen(units[order[k - 1]]); k--) {
      int t = order[k];
      order[k] = order[k - 1];
      order[k - 1] = t;
    }
  for (int k = 0; !st && k < norder; k++) {
    int i = order[k];
    if ((st = write_file_atomic(c_paths[i], units[i], err))) break;
    static const char *const compile_only[] = {"-c", NULL}, *const shared[] = {"-shared", NULL};
    const char *src = c_paths[i];
    st = n == 1 ? job_init(&jobs[njobs++], &env, out->so_path, shared, &src, 1, true, err)
                : job_init(&jobs[njobs++], &env, o_paths[i], compile_only, &src, 1, false, err);
  }
  loom_free(order);
  if (!st) st = run_jobs(jobs, njobs, env.parallel, env.timeout, err);
  if (!st && n > 1) {
    static const char *const shared[] = {"-shared", NULL};
    CompileJob *link = &jobs[njobs++];
    st = job_init(link, &env, out->so_path, shared, objects, nobjects, true, err);
    if (!st) st = run_jobs(link, 1, 1, env.timeout, err);
  }
  for (int i = 0; jobs && i < njobs; i++) job_free(&jobs[i]);
  build_tmpdir_remove(&env);
  loom_free(jobs);
  loom_free(c_paths);
  loom_free(o_paths);
  loom_free(objects);
  loom_free(unit_key);
  return st;
}

loom_status build_shared_object(const char *source, const BuildOptions *opt, BuildResult *out, LoomError *err) {
  return build_shared_object_units(&source, 1, opt, out, err);
}

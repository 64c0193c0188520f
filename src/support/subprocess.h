/* Child processes that die with Loom, and temporary files that go with it.
 *
 * Loom starts the C compiler for every build; a user who stops Loom (Ctrl-C,
 * `timeout`, a killed CI job) must not be left with compilers running on as
 * orphans or with half-written files in the build cache. So:
 *
 *   - every child runs in a process group of its own (it and whatever it
 *     starts, the linker, can be killed together) and with
 *     PR_SET_PDEATHSIG = SIGKILL (the kernel kills it when Loom dies, even
 *     by SIGKILL, where no handler runs);
 *   - live children, temporary files and the directories they are made in
 *     are tracked in fixed tables that an async-signal-safe cleanup reads:
 *     a program installs it for SIGINT, SIGTERM, SIGHUP and SIGQUIT with
 *     subprocess_install_signal_cleanup (the `loom` CLI does; a library
 *     does not take signals over on its own). The cleanup kills the
 *     children's groups, removes the tracked files and every entry of the
 *     tracked directories named ".tmp.<this pid>." (so also what a compiler
 *     wrote beside its temporary output: clang's "<output>-<random>.tmp");
 *   - the same install starts a janitor process that waits for this one to
 *     die, by any signal including SIGKILL, then kills what is left of the
 *     children's groups (a compiler driver's cc1, as and ld, which
 *     PR_SET_PDEATHSIG does not reach), waits until they are gone and
 *     removes the same files.
 *
 * Temporary names carry the creating process's pid (".tmp.<pid>."), so the
 * files of a process that died anyway (the janitor killed too) can be
 * recognized and removed later (subprocess_sweep_stale_temps, run by each
 * build on its cache and by each atomic file write on its own name). */
#ifndef LOOM_SUPPORT_SUBPROCESS_H
#define LOOM_SUPPORT_SUBPROCESS_H

#include "support/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Starts argv[0] (searched on $PATH) with argv and the environment envp
 * (NULL: this process's), stdout and stderr going to output_path (created
 * or truncated), in its own process group, killed when this process dies.
 * The pid is tracked until subprocess_wait reaps it. LOOM_ERR_IO when the
 * output file cannot be created or fork fails; a program that cannot be
 * executed exits with status 127. */
loom_status subprocess_start(char *const argv[], char *const envp[], const char *output_path, pid_t *pid,
                             LoomError *err);
/* This process's environment with `assignment` ("NAME=value") replacing any
 * NAME: a loom_calloc'ed array of pointers into environ and to assignment
 * (free the array only), or NULL when out of memory. */
char **subprocess_environ_with(const char *assignment);

/* The parent's ends of a child's standard streams. */
typedef struct SubprocessPipes {
  int in;  /* the child's stdin: one end of a Unix socket pair, so that a
            * write to a child that has died fails with EPIPE instead of
            * raising SIGPIPE here (subprocess_write_all sends with
            * MSG_NOSIGNAL) */
  int out; /* read end of the child's stdout (a pipe) */
  int err; /* read end of the child's stderr (a pipe) */
} SubprocessPipes;

/* subprocess_start with the child's stdin, stdout and stderr connected to
 * this process: own process group, killed when this process dies, tracked
 * until subprocess_wait or subprocess_kill. Safe in a threaded process: the
 * child runs only async-signal-safe calls between fork and exec. The
 * descriptors are close-on-exec (other children do not inherit them); the
 * caller closes them (subprocess_close_pipes). LOOM_ERR_IO when the pipes
 * or the fork fail; a program that cannot be executed exits with 127. */
loom_status subprocess_start_piped(char *const argv[], SubprocessPipes *io, pid_t *pid, LoomError *err);
/* Writes all of data to a SubprocessPipes.in (never raises SIGPIPE).
 * LOOM_ERR_IO (EPIPE: the child is gone). */
loom_status subprocess_write_all(int fd, const void *data, size_t n, LoomError *err);
/* Closes the descriptors that are open and sets them to -1. */
void subprocess_close_pipes(SubprocessPipes *io);

/* Reaps pid when it has exited: *done tells whether it had (with block, the
 * call waits until it has, and *done is true). *exit_code: the exit status,
 * or 128 + the signal that ended it. */
loom_status subprocess_wait(pid_t pid, bool block, bool *done, int *exit_code, LoomError *err);

/* Kills pid's process group and reaps pid (an error path's cleanup). */
void subprocess_kill(pid_t pid);

/* A temporary file to remove if a signal ends this process before the
 * caller renames or unlinks it; untrack it afterwards. Paths longer than
 * PATH_MAX, or more than the table holds, are not tracked (best effort). */
void subprocess_track_file(const char *path);
void subprocess_untrack_file(const char *path);

/* "<path>.tmp.<pid>.<unique>": a temporary name for path, unique across
 * processes, threads and time, that subprocess_sweep_stale_temps knows. */
void subprocess_temp_name(char *buf, size_t cap, const char *path);

/* Removes the temporary files and directories (subprocess_temp_name) in dir
 * whose process is gone, only those whose name starts with prefix when it
 * is not NULL: what a process that died without cleaning up left behind. */
void subprocess_sweep_stale_temps(const char *dir, const char *prefix);

/* Removes a temporary file, or a temporary directory with the files in it. */
void subprocess_remove_temp(const char *path);

/* A directory the cleanup sweeps for this process's temporary names (kept
 * for the process's life; a few at most, best effort beyond). */
void subprocess_track_dir(const char *dir);

/* Async-signal-safe: kills every tracked child's process group, reaps the
 * children (waiting 100 ms at most), removes every tracked temporary file
 * and this process's temporaries in the tracked directories. */
void subprocess_cleanup_now(void);

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT run subprocess_cleanup_now, then end
 * the process by the same signal (so the exit status still tells the caller
 * what happened); and the janitor starts (above). Call it once, first thing
 * in main, while the process has one thread: the janitor learns of the
 * death of the thread that forks it (PR_SET_PDEATHSIG). */
void subprocess_install_signal_cleanup(void);

#endif

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
 *   - live children and temporary files are tracked in a fixed table that an
 *     async-signal-safe cleanup reads: a program installs it for SIGINT,
 *     SIGTERM and SIGHUP with subprocess_install_signal_cleanup (the `loom`
 *     CLI does; a library does not take signals over on its own).
 *
 * Temporary names carry the creating process's pid (".tmp.<pid>."), so the
 * files of a process killed by SIGKILL can be recognized and removed later
 * (subprocess_sweep_stale_temps, run by each build on its cache). */
#ifndef LOOM_SUPPORT_SUBPROCESS_H
#define LOOM_SUPPORT_SUBPROCESS_H

#include "support/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Starts argv[0] (searched on $PATH) with argv, stdout and stderr going to
 * output_path (created or truncated), in its own process group, killed when
 * this process dies. The pid is tracked until subprocess_wait reaps it.
 * LOOM_ERR_IO when the output file cannot be created or fork fails;
 * a program that cannot be executed exits with status 127. */
loom_status subprocess_start(char *const argv[], const char *output_path, pid_t *pid, LoomError *err);

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

/* Removes the temporary files (subprocess_temp_name) in dir whose process
 * is gone: what a process killed by SIGKILL left behind. */
void subprocess_sweep_stale_temps(const char *dir);

/* Async-signal-safe: kills every tracked child's process group, removes
 * every tracked temporary file. */
void subprocess_cleanup_now(void);

/* SIGINT, SIGTERM and SIGHUP run subprocess_cleanup_now, then end the
 * process by the same signal (so the exit status still tells the caller
 * what happened). */
void subprocess_install_signal_cleanup(void);

#endif

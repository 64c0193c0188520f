#include "support/subprocess.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The tables a signal handler reads: plain arrays of atomics, no locks (a
 * handler may interrupt the thread that holds one). Parallel builds track
 * a few children and two files per job; 64 slots is plenty. */
enum { TRACK_SLOTS = 64 };
enum { SLOT_FREE, SLOT_FILLING, SLOT_READY };

static atomic_int tracked_pid[TRACK_SLOTS];
static atomic_int file_state[TRACK_SLOTS];
static char file_path[TRACK_SLOTS][PATH_MAX];

static void track_pid(pid_t pid) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = 0;
    if (atomic_compare_exchange_strong(&tracked_pid[i], &expect, (int)pid)) return;
  }
}

static void untrack_pid(pid_t pid) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = (int)pid;
    if (atomic_compare_exchange_strong(&tracked_pid[i], &expect, 0)) return;
  }
}

void subprocess_track_file(const char *path) {
  size_t n = strlen(path);
  if (n >= PATH_MAX) return;
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&file_state[i], &expect, SLOT_FILLING)) continue;
    memcpy(file_path[i], path, n + 1);
    atomic_store(&file_state[i], SLOT_READY);
    return;
  }
}

void subprocess_untrack_file(const char *path) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = SLOT_READY;
    if (!atomic_compare_exchange_strong(&file_state[i], &expect, SLOT_FILLING)) continue;
    if (strcmp(file_path[i], path) == 0) {
      atomic_store(&file_state[i], SLOT_FREE);
      return;
    }
    atomic_store(&file_state[i], SLOT_READY);
  }
}

void subprocess_cleanup_now(void) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    pid_t pid = (pid_t)atomic_load(&tracked_pid[i]);
    if (pid > 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
  }
  for (int i = 0; i < TRACK_SLOTS; i++)
    if (atomic_load(&file_state[i]) == SLOT_READY) unlink(file_path[i]);
}

static void on_fatal_signal(int sig) {
  int saved = errno;
  subprocess_cleanup_now();
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved;
}

void subprocess_install_signal_cleanup(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(sigs[i], &sa, NULL);
  }
}

/* fork + exec with child_fd[k] (k = 0, 1, 2; -1: inherited) as the
 * child's stdin, stdout and stderr. The child makes only async-signal-safe
 * calls before exec, so this may run in a threaded process: the child is
 * a copy of the calling thread alone, and any lock another thread held at
 * the fork stays held in it, so it must touch nothing that takes one. */
static loom_status start_child(char *const argv[], const int child_fd[3], pid_t *pid, LoomError *err) {
  pid_t parent = getpid();
  /* Signals that would run the cleanup are held until the child is in the
   * table, so a Ctrl-C between fork and track_pid cannot miss it. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pid_t child = fork();
  if (child == 0) {
    /* Only async-signal-safe calls until exec. */
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127); /* the parent died before prctl */
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The descriptors are all >= 3 (see subprocess_start_piped) and
     * close-on-exec; dup2 gives the copy the flag cleared. */
    for (int k = 0; k < 3; k++)
      if (child_fd[k] >= 0 && dup2(child_fd[k], k) < 0) _exit(127);
    execvp(argv[0], argv);
    _exit(127);
  }
  int fork_errno = errno;
  if (child > 0) {
    setpgid(child, child); /* also here: whichever runs first, the group exists before a kill */
    track_pid(child);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (child < 0) return err_set(err, LOOM_ERR_IO, "cannot start \"%s\": %s", argv[0], strerror(fork_errno));
  *pid = child;
  return LOOM_OK;
}

loom_status subprocess_start(char *const argv[], const char *output_path, pid_t *pid, LoomError *err) {
  int fd = open(output_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "cannot create \"%s\": %s", output_path, strerror(errno));
  /* fd 1 or 2 could be free (a caller that closed its stdout): keep the
   * file above them so the child's dup2 cannot overwrite it. */
  if (fd < 3) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    if (high < 0) return err_set(err, LOOM_ERR_IO, "cannot create \"%s\": %s", output_path, strerror(errno));
    fd = high;
  }
  loom_status st = start_child(argv, (const int[3]){-1, fd, fd}, pid, err);
  close(fd);
  return st;
}

/* A close-on-exec descriptor numbered 3 or above (fd is closed). */
static int fd_above_stdio(int fd) {
  if (fd < 0 || fd >= 3) return fd;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return high;
}

static void close_fds(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]);
}

loom_status subprocess_start_piped(char *const argv[], SubprocessPipes *io, pid_t *pid, LoomError *err) {
  /* [0, 1]: the socket pair of stdin (parent, child); [2, 3] the stdout
   * pipe (read, write); [4, 5] stderr's. */
  int fd[6] = {-1, -1, -1, -1, -1, -1};
  bool ok = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd) == 0 && pipe2(fd + 2, O_CLOEXEC) == 0 &&
            pipe2(fd + 4, O_CLOEXEC) == 0;
  for (int i = 0; ok && i < 6; i++) ok = (fd[i] = fd_above_stdio(fd[i])) >= 0;
  if (!ok) {
    int saved = errno;
    close_fds(fd, 6);
    return err_set(err, LOOM_ERR_IO, "cannot create the pipes to \"%s\": %s", argv[0], strerror(saved));
  }
  loom_status st = start_child(argv, (const int[3]){fd[1], fd[3], fd[5]}, pid, err);
  close(fd[1]);
  close(fd[3]);
  close(fd[5]);
  if (st) {
    close(fd[0]);
    close(fd[2]);
    close(fd[4]);
    return st;
  }
  io->in = fd[0];
  io->out = fd[2];
  io->err = fd[4];
  return LOOM_OK;
}

loom_status subprocess_write_all(int fd, const void *data, size_t n, LoomError *err) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return err_set(err, LOOM_ERR_IO, "writing to a child process: %s", strerror(errno));
    p += w;
    n -= (size_t)w;
  }
  return LOOM_OK;
}

void subprocess_close_pipes(SubprocessPipes *io) {
  int fds[3] = {io->in, io->out, io->err};
  close_fds(fds, 3);
  io->in = io->out = io->err = -1;
}

loom_status subprocess_wait(pid_t pid, bool block, bool *done, int *exit_code, LoomError *err) {
  /* Seen exited but not reaped (WNOWAIT): while the child is a zombie its
   * pid, and so its process group's id, cannot be reused, so the group
   * kill below reaches only what it left behind. */
  siginfo_t info;
  memset(&info, 0, sizeof info);
  int r;
  while ((r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG))) < 0 && errno == EINTR) {
  }
  if (r < 0) {
    untrack_pid(pid);
    return err_set(err, LOOM_ERR_INTERNAL, "waiting for process %d: %s", (int)pid, strerror(errno));
  }
  *done = info.si_pid == pid;
  if (!*done) return LOOM_OK;
  kill(-pid, SIGKILL); /* anything it started in its group goes with it */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  untrack_pid(pid);
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return LOOM_OK;
}

void subprocess_kill(pid_t pid) {
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  untrack_pid(pid);
}

void subprocess_temp_name(char *buf, size_t cap, const char *path) {
  static atomic_uint counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(buf, cap, "%s.tmp.%ld.%x.%lx", path, (long)getpid(), atomic_fetch_add(&counter, 1) & 0xffffffu,
           (unsigned long)ts.tv_nsec);
}

void subprocess_sweep_stale_temps(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  char path[PATH_MAX];
  while ((e = readdir(d))) {
    const char *t = strstr(e->d_name, ".tmp.");
    if (!t) continue;
    char *end;
    long pid = strtol(t + 5, &end, 10);
    if (end == t + 5 || *end != '.' || pid <= 0 || pid > INT32_MAX) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
    if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < (int)sizeof path) unlink(path);
  }
  closedir(d);
}

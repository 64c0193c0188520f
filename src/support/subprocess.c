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

loom_status subprocess_start(char *const argv[], const char *output_path, pid_t *pid, LoomError *err) {
  int fd = open(output_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "cannot create \"%s\": %s", output_path, strerror(errno));
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
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(127);
    execvp(argv[0], argv);
    _exit(127);
  }
  int fork_errno = errno;
  if (child > 0) {
    setpgid(child, child); /* also here: whichever runs first, the group exists before a kill */
    track_pid(child);
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  close(fd);
  if (child < 0) return err_set(err, LOOM_ERR_IO, "cannot start \"%s\": %s", argv[0], strerror(fork_errno));
  *pid = child;
  return LOOM_OK;
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

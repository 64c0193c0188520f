#include "support/subprocess.h"

#include "support/alloc.h"

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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The tables a signal handler reads: plain arrays of atomics, no locks (a
 * handler may interrupt the thread that holds one). Parallel builds track
 * a few children and two files per job; 64 slots is plenty. The
 * directories temporaries are made in (the build cache, an output's
 * directory) are swept for this process's temporary names, which also
 * catches the files a compiler writes beside its output (clang's
 * "<output>-<random>.tmp"). Once subprocess_install_signal_cleanup has run
 * the tables live in memory shared with the janitor process (below). */
enum { TRACK_SLOTS = 64, DIR_SLOTS = 8 };
enum { SLOT_FREE, SLOT_FILLING, SLOT_READY };

typedef struct Tables {
  atomic_int pid[TRACK_SLOTS];
  atomic_int file_state[TRACK_SLOTS];
  char file_path[TRACK_SLOTS][PATH_MAX];
  atomic_int dir_state[DIR_SLOTS];
  char dir_path[DIR_SLOTS][PATH_MAX];
} Tables;

static Tables local_tables;
static Tables *tables = &local_tables;

static void track_pid(pid_t pid) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = 0;
    if (atomic_compare_exchange_strong(&tables->pid[i], &expect, (int)pid)) return;
  }
}

static void untrack_pid(pid_t pid) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = (int)pid;
    if (atomic_compare_exchange_strong(&tables->pid[i], &expect, 0)) return;
  }
}

/* Puts path in a free slot of (state, paths); false when none is free. */
static bool slot_put(atomic_int *state, char (*paths)[PATH_MAX], int n, const char *path) {
  size_t len = strlen(path);
  if (len >= PATH_MAX) return false;
  for (int i = 0; i < n; i++) {
    int expect = SLOT_FREE;
    if (!atomic_compare_exchange_strong(&state[i], &expect, SLOT_FILLING)) continue;
    memcpy(paths[i], path, len + 1);
    atomic_store(&state[i], SLOT_READY);
    return true;
  }
  return false;
}

void subprocess_track_file(const char *path) {
  slot_put(tables->file_state, tables->file_path, TRACK_SLOTS, path);
}

void subprocess_untrack_file(const char *path) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    int expect = SLOT_READY;
    if (!atomic_compare_exchange_strong(&tables->file_state[i], &expect, SLOT_FILLING)) continue;
    if (strcmp(tables->file_path[i], path) == 0) {
      atomic_store(&tables->file_state[i], SLOT_FREE);
      return;
    }
    atomic_store(&tables->file_state[i], SLOT_READY);
  }
}

void subprocess_track_dir(const char *dir) {
  char real[PATH_MAX];
  if (!realpath(dir, real)) return;
  for (int i = 0; i < DIR_SLOTS; i++) /* directories are never untracked: a READY path stays as it is */
    if (atomic_load(&tables->dir_state[i]) == SLOT_READY && strcmp(tables->dir_path[i], real) == 0) return;
  slot_put(tables->dir_state, tables->dir_path, DIR_SLOTS, real);
}

/* Removes name in directory dfd: a file, or a directory with the files in
 * it (a compiler's TMPDIR). Async-signal-safe. */
static void remove_entry_at(int dfd, const char *name) {
  if (unlinkat(dfd, name, 0) == 0 || (errno != EISDIR && errno != EPERM)) return;
  int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    _Alignas(struct dirent64) char buf[4096]; /* getdents64 writes 8-byte aligned records */
    long n;
    while ((n = (long)getdents64(fd, buf, sizeof buf)) > 0)
      for (long off = 0; off < n;) {
        struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) unlinkat(fd, e->d_name, 0);
        off += e->d_reclen;
      }
    close(fd);
  }
  unlinkat(dfd, name, AT_REMOVEDIR);
}

void subprocess_remove_temp(const char *path) {
  remove_entry_at(AT_FDCWD, path);
}

/* Removes every entry of the tracked directories whose name has
 * ".tmp.<owner>.": the temporaries of process owner and what compilers
 * wrote beside them. Async-signal-safe (no stdio, no allocation). */
static void sweep_dirs_of(pid_t owner) {
  char tag[32] = ".tmp.", digits[16];
  int nd = 0;
  for (unsigned long v = (unsigned long)owner; nd == 0 || v; v /= 10) digits[nd++] = (char)('0' + v % 10);
  int k = 5;
  while (nd) tag[k++] = digits[--nd];
  tag[k++] = '.';
  tag[k] = '\0';
  for (int i = 0; i < DIR_SLOTS; i++) {
    if (atomic_load(&tables->dir_state[i]) != SLOT_READY) continue;
    int dfd = open(tables->dir_path[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) continue;
    _Alignas(struct dirent64) char buf[8192];
    long n;
    while ((n = (long)getdents64(dfd, buf, sizeof buf)) > 0)
      for (long off = 0; off < n;) {
        struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
        if (strstr(e->d_name, tag)) remove_entry_at(dfd, e->d_name);
        off += e->d_reclen;
      }
    close(dfd);
  }
}

static void kill_tracked(void) {
  for (int i = 0; i < TRACK_SLOTS; i++) {
    pid_t pid = (pid_t)atomic_load(&tables->pid[i]);
    if (pid > 0) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
    }
  }
}

static void remove_tracked_files(void) {
  for (int i = 0; i < TRACK_SLOTS; i++)
    if (atomic_load(&tables->file_state[i]) == SLOT_READY) remove_entry_at(AT_FDCWD, tables->file_path[i]);
}

void subprocess_cleanup_now(void) {
  kill_tracked();
  /* Reap the children and give their groups a moment to go, so that no
   * compiler creates a file after the sweep (the janitor sweeps again
   * once this process is gone). */
  for (int round = 0; round < 20; round++) {
    bool any = false;
    for (int i = 0; i < TRACK_SLOTS; i++) {
      pid_t pid = (pid_t)atomic_load(&tables->pid[i]);
      if (pid <= 0) continue;
      waitpid(pid, NULL, WNOHANG);
      any |= kill(-pid, 0) == 0;
    }
    if (!any) break;
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  }
  remove_tracked_files();
  sweep_dirs_of(getpid());
}

static void on_fatal_signal(int sig) {
  int saved = errno;
  subprocess_cleanup_now();
  signal(sig, SIG_DFL);
  raise(sig);
  errno = saved;
}

/* Whether a process of one of the tracked groups is still running (not a
 * zombie): /proc/N/stat's state and process group. */
static bool tracked_groups_running(void) {
  DIR *d = opendir("/proc");
  if (!d) return false;
  bool running = false;
  struct dirent *e;
  while (!running && (e = readdir(d))) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    char path[300], text[512];
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    char *close_paren = strrchr(text, ')'); /* the command name may hold spaces and parentheses */
    char state;
    long ppid, pgrp;
    if (!close_paren || sscanf(close_paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (state == 'Z' || state == 'X') continue;
    for (int i = 0; i < TRACK_SLOTS && !running; i++) running = pgrp > 0 && atomic_load(&tables->pid[i]) == pgrp;
  }
  closedir(d);
  return running;
}

/* The janitor: a process forked at start that waits for its parent (the
 * owner) to die, however it dies, then kills what the owner left running
 * and removes its temporaries. It reads the tables through the shared
 * mapping. Forked while the owner is single-threaded, so it may use libc. */
static _Noreturn void janitor_main(pid_t owner) {
  setpgid(0, 0); /* not in the owner's group: a signal to that group does not reach it */
  int null = open("/dev/null", O_RDWR);
  for (int k = 0; k < 3 && null >= 0; k++) dup2(null, k); /* holds no pipe of the owner's caller open */
  for (int fd = 3; fd < 1024; fd++) close(fd);
  sigset_t wake;
  sigemptyset(&wake);
  sigaddset(&wake, SIGTERM);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  while (getppid() == owner) { /* a SIGTERM from anyone else is ignored */
    siginfo_t info;
    sigwaitinfo(&wake, &info);
  }
  kill_tracked();
  for (int round = 0; round < 400 && tracked_groups_running(); round++) /* up to 2 s */
    nanosleep(&(struct timespec){0, 5000000}, NULL);
  remove_tracked_files();
  sweep_dirs_of(owner);
  _exit(0);
}

void subprocess_install_signal_cleanup(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  /* The tables move to shared memory and the janitor starts, so that even
   * SIGKILL, where no handler runs, leaves nothing behind. */
  Tables *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared != MAP_FAILED) {
    memcpy(shared, tables, sizeof *shared);
    tables = shared;
    pid_t owner = getpid();
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    if (fork() == 0) janitor_main(owner); /* keeps every signal blocked */
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  }
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
static loom_status start_child(char *const argv[], char *const envp[], const int child_fd[3], pid_t *pid,
                               LoomError *err) {
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
    static const int reset[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) signal(reset[i], SIG_DFL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    /* The descriptors are all >= 3 (see subprocess_start_piped) and
     * close-on-exec; dup2 gives the copy the flag cleared. */
    for (int k = 0; k < 3; k++)
      if (child_fd[k] >= 0 && dup2(child_fd[k], k) < 0) _exit(127);
    if (envp) execvpe(argv[0], argv, envp);
    else execvp(argv[0], argv);
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

loom_status subprocess_start(char *const argv[], char *const envp[], const char *output_path, pid_t *pid,
                             LoomError *err) {
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
  loom_status st = start_child(argv, envp, (const int[3]){-1, fd, fd}, pid, err);
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
  loom_status st = start_child(argv, NULL, (const int[3]){fd[1], fd[3], fd[5]}, pid, err);
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

void subprocess_sweep_stale_temps(const char *dir, const char *prefix) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *e;
  size_t plen = prefix ? strlen(prefix) : 0;
  while ((e = readdir(d))) {
    if (prefix && strncmp(e->d_name, prefix, plen) != 0) continue;
    const char *t = strstr(e->d_name + plen, ".tmp.");
    if (!t) continue;
    char *end;
    long pid = strtol(t + 5, &end, 10);
    if (end == t + 5 || *end != '.' || pid <= 0 || pid > INT32_MAX) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive, or not ours to judge */
    remove_entry_at(dirfd(d), e->d_name);
  }
  closedir(d);
}

char **subprocess_environ_with(const char *assignment) {
  extern char **environ;
  size_t name_len = strcspn(assignment, "=") + 1, n = 0;
  while (environ && environ[n]) n++;
  char **envp = loom_calloc(n + 2, sizeof *envp);
  if (!envp) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (strncmp(environ[i], assignment, name_len) != 0) envp[k++] = environ[i];
  envp[k] = (char *)assignment;
  return envp;
}

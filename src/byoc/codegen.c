/* A region -> its back end's C (the kernel around it is the compiler's:
 * src/compile/external_kernel.c), and a region's FLOPs.
 *
 * The plugin's codegen runs in a forked child that sends the result back
 * through a pipe: a plugin that crashes, aborts or exits takes the child
 * with it and the compiler reports it by name (a vendor library in a
 * plugin is code Loom cannot vouch for). The parent keeps nothing of the
 * child but the bytes. */
#include "byoc/byoc.h"
#include "support/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the plugin's codegen in a child process ---- */

/* The child's message: status (0 ok), workspace bytes, text length, then
 * the text (the C source, or the plugin's error message). */
typedef struct Reply {
  int32_t status;
  uint64_t workspace_bytes;
  uint64_t len;
} Reply;

static void write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) _exit(3);
    p += k;
    n -= (size_t)k;
  }
}

static void child(int fd, const LoomByocPlugin *p, const LoomByocRegion *r) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(2, 1); /* whatever the plugin prints must not land in `loom inspect`'s output */
  LoomByocCode code = {0};
  char msg[1024] = "";
  int rc = p->codegen(r, &code, msg, sizeof msg, p->user);
  const char *text = rc ? msg : code.c_source ? code.c_source : "";
  Reply reply = {rc ? 1 : 0, code.workspace_bytes, strlen(text)};
  write_all(fd, &reply, sizeof reply);
  write_all(fd, text, reply.len);
  _exit(0);
}

/* Reads everything until EOF; NULL when out of memory. */
static char *read_all(int fd, size_t *len) {
  size_t cap = 1 << 16, n = 0;
  char *buf = loom_malloc(cap);
  while (buf) {
    if (n == cap) {
      char *b = loom_realloc(buf, cap *= 2);
      if (!b) break;
      buf = b;
    }
    ssize_t k = read(fd, buf + n, cap - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *len = n;
      return buf;
    }
    n += (size_t)k;
  }
  loom_free(buf);
  return NULL;
}

static loom_status run_codegen(const LoomByocPlugin *p, const LoomByocRegion *r, const char *kernel, Arena *a,
                               const char **source, size_t *workspace, LoomError *err) {
  int fds[2];
  if (pipe(fds) != 0) return err_set(err, LOOM_ERR_IO, "BYOC back end \"%s\": cannot make a pipe: %s", p->name, strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    return err_set(err, LOOM_ERR_IO, "BYOC back end \"%s\": cannot fork for codegen: %s", p->name, strerror(errno));
  }
  if (pid == 0) {
    close(fds[0]);
    child(fds[1], p, r);
  }
  close(fds[1]);
  size_t len = 0;
  char *buf = read_all(fds[0], &len);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  loom_status st = LOOM_OK;
  Reply reply;
  const char *what = arena_printf(a, "BYOC back end \"%s\": codegen of region %d (kernel %s)", p->name, (int)r->index, kernel);
  if (WIFSIGNALED(status)) {
    st = err_set(err, LOOM_ERR_RUNTIME, "%s crashed: signal %d (%s)", what, WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !buf || len < sizeof reply) {
    st = err_set(err, LOOM_ERR_RUNTIME, "%s ended without a result (exit status %d)", what,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else {
    memcpy(&reply, buf, sizeof reply);
    const char *text = buf + sizeof reply;
    if (reply.len != len - sizeof reply) {
      st = err_set(err, LOOM_ERR_RUNTIME, "%s sent a truncated result", what);
    } else if (reply.status) {
      st = err_set(err, LOOM_ERR_UNSUPPORTED, "%s failed: %.*s", what, reply.len ? (int)reply.len : 12,
                   reply.len ? text : "(no message)");
    } else if (reply.len == 0 || memchr(text, 0, reply.len)) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "%s returned %s instead of C source defining %s", what,
                   reply.len ? "text with a NUL byte" : "nothing", r->symbol);
    } else if (reply.workspace_bytes > ((uint64_t)1 << 40)) {
      st = err_set(err, LOOM_ERR_INVALID_ARG, "%s asks for a %" PRIu64 "-byte workspace", what, reply.workspace_bytes);
    } else {
      *source = arena_strndup(a, text, reply.len);
      *workspace = (size_t)reply.workspace_bytes;
    }
  }
  loom_free(buf);
  return st;
}

loom_status byoc_codegen(ByocSession *s, int region, const char *name, ByocKernel *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  ByocRegion *r = &s->regions[region];
  const LoomByocPlugin *p = s->backends[r->backend].plugin;
  r->view.symbol = arena_printf(s->arena, "%s_body", name);
  const char *body;
  size_t workspace;
  loom_status st = run_codegen(p, &r->view, name, s->arena, &body, &workspace, err);
  if (st) return st;
  StrBuf o;
  sb_init(&o);
  sb_printf(&o, "\n/* ---- kernel %s: BYOC back end \"%s\", region %d (", name, p->name, region);
  for (int32_t c = 0; c < r->view.ncomposites; c++) sb_printf(&o, "%s%s", c ? ", " : "", r->view.composites[c].pattern);
  sb_puts(&o, ") ---- */\n");
  sb_puts(&o, body);
  sb_puts(&o, "\n");
  out->name = arena_strdup(s->arena, name);
  out->backend = arena_strdup(s->arena, p->name);
  out->source = arena_strdup(s->arena, sb_cstr(&o));
  out->region = region;
  out->workspace_bytes = workspace;
  out->flops = r->flops;
  out->num_nodes = r->view.graph.nnodes;
  out->nodes = ARENA_ARRAY(s->arena, const char *, out->num_nodes);
  for (int i = 0; i < out->num_nodes; i++) out->nodes[i] = r->view.graph.nodes[i].name;
  sb_free(&o);
  return LOOM_OK;
}

/* ---- FLOPs ---- */

static int64_t numel(const LoomByocTensor *t) { return loom_byoc_numel(t); }

uint64_t byoc_region_flops(const LoomByocRegion *r) {
  const LoomByocGraph *g = &r->graph;
  uint64_t total = 0;
  for (int32_t i = 0; i < g->nnodes; i++) {
    const LoomByocNode *n = &g->nodes[i];
    if (n->noutputs < 1 || n->outputs[0] < 0) continue;
    const LoomByocTensor *y = &g->tensors[n->outputs[0]];
    const LoomByocTensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1);
    int64_t out = numel(y);
    if ((!strcmp(n->op, "MatMul") || !strcmp(n->op, "Gemm")) && a && a->ndim >= 1) {
      /* K: A's last extent, or its first for a transposed Gemm A. */
      int64_t k = !strcmp(n->op, "Gemm") && loom_byoc_attr_int(n, "transA", 0) ? a->shape[0] : a->shape[a->ndim - 1];
      total += (uint64_t)(2 * out * k);
      if (loom_byoc_input(g, n, 2)) total += (uint64_t)out; /* Gemm's C */
    } else if (!strcmp(n->op, "Conv") && b && b->ndim >= 3) {
      int64_t per = 1; /* multiply-adds per output point: C/group x kernel extents */
      for (int32_t d = 1; d < b->ndim; d++) per *= b->shape[d];
      total += (uint64_t)(2 * out * per);
      if (loom_byoc_input(g, n, 2)) total += (uint64_t)out;
    } else {
      total += (uint64_t)out;
    }
  }
  return total;
}

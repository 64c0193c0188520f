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

/* The child's message: this header, then the text (the C source, or the
 * plugin's error message), the blob and the runtime entry's name. */
typedef struct Reply {
  int32_t status; /* 0: the plugin's codegen succeeded */
  uint64_t workspace_bytes;
  uint64_t len, blob_size, entry_len;
} Reply;

/* What the parent makes of it. */
typedef struct CodegenResult {
  const char *source; /* NULL for the blob form */
  const void *blob;
  size_t blob_size, workspace;
  const char *entry;
} CodegenResult;

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

static void child(int fd, const loom_byoc_plugin *p, const loom_byoc_region *r) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  dup2(2, 1); /* whatever the plugin prints must not land in `loom inspect`'s output */
  loom_byoc_code code = {0};
  char msg[1024] = "";
  int rc = p->codegen(r, &code, msg, sizeof msg, p->user);
  const char *text = rc ? msg : code.c_source ? code.c_source : "";
  const char *entry = !rc && code.runtime_entry ? code.runtime_entry : "";
  size_t blob_size = !rc && code.blob ? code.blob_size : 0;
  Reply reply;
  memset(&reply, 0, sizeof reply); /* the padding too: every byte sent is defined */
  reply = (Reply){rc ? 1 : 0, code.workspace_bytes, strlen(text), blob_size, strlen(entry)};
  write_all(fd, &reply, sizeof reply);
  write_all(fd, text, reply.len);
  write_all(fd, code.blob, blob_size);
  write_all(fd, entry, reply.entry_len);
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

static bool is_identifier(const char *s, size_t n) {
  if (n == 0 || n > 100 || (s[0] >= '0' && s[0] <= '9')) return false;
  for (size_t i = 0; i < n; i++)
    if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
      return false;
  return true;
}

/* The reply's parts, checked: one form or the other, complete. */
static loom_status take_reply(const loom_byoc_plugin *p, const loom_byoc_region *r, const char *what, const char *buf,
                              size_t len, Arena *a, CodegenResult *out, LoomError *err) {
  Reply reply;
  memcpy(&reply, buf, sizeof reply);
  const char *text = buf + sizeof reply;
  uint64_t body = len - sizeof reply;
  if (reply.len > body || reply.blob_size > body - reply.len || reply.entry_len != body - reply.len - reply.blob_size)
    return err_set(err, LOOM_ERR_RUNTIME, "%s sent a truncated result", what);
  const char *blob = text + reply.len, *entry = blob + reply.blob_size;
  if (reply.status)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "%s failed: %.*s", what, reply.len ? (int)reply.len : 12,
                   reply.len ? text : "(no message)");
  if (reply.workspace_bytes > ((uint64_t)1 << 40))
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s asks for a %" PRIu64 "-byte workspace", what, reply.workspace_bytes);
  out->workspace = (size_t)reply.workspace_bytes;
  if (reply.len) { /* C source */
    if (memchr(text, 0, reply.len))
      return err_set(err, LOOM_ERR_INVALID_ARG, "%s returned text with a NUL byte instead of C source", what);
    out->source = arena_strndup(a, text, reply.len);
    return LOOM_OK;
  }
  if (!reply.blob_size && !reply.entry_len)
    return err_set(err, LOOM_ERR_INVALID_ARG,
                   "%s returned nothing: expected C source defining %s, or a blob and a runtime entry", what, r->symbol);
  if (!is_identifier(entry, reply.entry_len))
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s returned a blob with runtime entry \"%.*s\": expected a C identifier",
                   what, (int)(reply.entry_len < 100 ? reply.entry_len : 100), entry);
  if (!p->runtime_library)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s returned a blob, but the back end names no runtime_library to run it",
                   what);
  if (!reply.blob_size) return err_set(err, LOOM_ERR_INVALID_ARG, "%s returned a runtime entry but an empty blob", what);
  out->blob = arena_memdup(a, blob, (size_t)reply.blob_size);
  out->blob_size = (size_t)reply.blob_size;
  out->entry = arena_strndup(a, entry, (size_t)reply.entry_len);
  return LOOM_OK;
}

static loom_status run_codegen(const loom_byoc_plugin *p, const loom_byoc_region *r, const char *kernel, Arena *a,
                               CodegenResult *res, LoomError *err) {
  int fds[2];
  if (pipe(fds) != 0)
    return err_set(err, LOOM_ERR_IO, "BYOC back end \"%s\": cannot make a pipe: %s", p->name, strerror(errno));
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
  const char *what =
      arena_printf(a, "BYOC back end \"%s\": codegen of region %d (kernel %s)", p->name, (int)r->index, kernel);
  if (WIFSIGNALED(status)) {
    st = err_set(err, LOOM_ERR_RUNTIME, "%s crashed: signal %d (%s)", what, WTERMSIG(status), strsignal(WTERMSIG(status)));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !buf || len < sizeof(Reply)) {
    st = err_set(err, LOOM_ERR_RUNTIME, "%s ended without a result (exit status %d)", what,
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else {
    st = take_reply(p, r, what, buf, len, a, res, err);
  }
  loom_free(buf);
  return st;
}

loom_status byoc_codegen(ByocSession *s, int region, const char *name, ByocKernel *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  ByocRegion *r = &s->regions[region];
  const loom_byoc_plugin *p = s->backends[r->backend].plugin;
  r->view.symbol = arena_printf(s->arena, "%s_body", name);
  CodegenResult res = {0};
  loom_status st = run_codegen(p, &r->view, name, s->arena, &res, err);
  if (st) return st;
  StrBuf o;
  sb_init(&o);
  sb_printf(&o, "\n/* ---- kernel %s: BYOC back end \"%s\", region %d (", name, p->name, region);
  for (int32_t c = 0; c < r->view.ncomposites; c++) sb_printf(&o, "%s%s", c ? ", " : "", r->view.composites[c].pattern);
  sb_puts(&o, ") ---- */\n");
  if (res.source) {
    sb_puts(&o, res.source);
    sb_puts(&o, "\n");
  } else { /* the blob form: a call through the slot the loader fills (loom/loom_kernel.h) */
    sb_printf(&o,
              "loom_external_slot %s_external;\n"
              "static int32_t %s(void *const *data, void *workspace, int32_t num_threads) {\n"
              "  (void)num_threads; /* the runtime's init took the model's */\n"
              "  return %s_external.run ? %s_external.run(%s_external.state, data, workspace) : 1;\n"
              "}\n",
              name, r->view.symbol, name, name, name);
    out->blob = res.blob;
    out->blob_size = res.blob_size;
    out->runtime_entry = res.entry;
  }
  out->name = arena_strdup(s->arena, name);
  out->backend = arena_strdup(s->arena, p->name);
  out->source = arena_strdup(s->arena, sb_cstr(&o));
  out->region = region;
  out->workspace_bytes = res.workspace;
  out->flops = r->flops;
  out->num_nodes = r->view.graph.nnodes;
  out->nodes = ARENA_ARRAY(s->arena, const char *, out->num_nodes);
  for (int i = 0; i < out->num_nodes; i++) out->nodes[i] = r->view.graph.nodes[i].name;
  sb_free(&o);
  return LOOM_OK;
}

/* ---- FLOPs ---- */

static int64_t numel(const loom_byoc_tensor *t) { return loom_byoc_numel(t); }

uint64_t byoc_region_flops(const loom_byoc_region *r) {
  const loom_byoc_graph *g = &r->graph;
  uint64_t total = 0;
  for (int32_t i = 0; i < g->nnodes; i++) {
    const loom_byoc_node *n = &g->nodes[i];
    if (n->noutputs < 1 || n->outputs[0] < 0) continue;
    const loom_byoc_tensor *y = &g->tensors[n->outputs[0]];
    const loom_byoc_tensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1);
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

/* ONNX import driver: decode, check the model as a whole (opset, names,
 * supported ops, acyclicity), then convert nodes in topological order. */
#include "frontend/onnx/import_internal.h"
#include "support/alloc.h"
#include "support/oom.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static loom_status find_opset(Importer *im, const OnnxModel *m) {
  bool found = false;
  for (int k = 0; k < m->nopsets; k++) {
    const char *d = m->opsets[k].domain;
    if (!d[0] || !strcmp(d, "ai.onnx")) {
      im->opset = m->opsets[k].version;
      found = true;
    }
  }
  if (!found && m->nopsets) {
    /* Only other domains (ai.onnx.ml...): the unsupported-op check names
     * their ops; a default-domain node would be an error there. */
    im->opset = ONNX_MAX_OPSET;
    return LOOM_OK;
  }
  if (!found) {
    if (m->ir_version >= 3)
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "model has no opset_import for the default ONNX domain");
    im->opset = 1; /* IR version 1/2 models predate opset_import */
  }
  if (im->opset < ONNX_MIN_OPSET || im->opset > ONNX_MAX_OPSET)
    return err_set(im->err, LOOM_ERR_UNSUPPORTED, "ONNX opset %lld is not supported (supported: %d to %d)",
                   (long long)im->opset, ONNX_MIN_OPSET, ONNX_MAX_OPSET);
  return LOOM_OK;
}

/* Messages name nodes; exporters may leave names empty, so those get
 * "<first output>" as their name, which is just as easy to find. */
static void name_anonymous_nodes(Importer *im, OnnxGraph *og) {
  for (int i = 0; i < og->nnodes; i++) {
    OnnxNode *n = &og->nodes[i];
    if (n->name[0]) continue;
    if (n->noutputs > 0 && n->outputs[0][0]) n->name = arena_printf(im->scratch, "<%s>", n->outputs[0]);
    else n->name = arena_printf(im->scratch, "<%s #%d>", n->op_type, i);
  }
}

/* One message naming every unsupported op and node, not just the first.
 * Before opset 7 only ops with a known old form (import_legacy.c) pass. */
loom_status onnx_check_supported(Importer *im, const OnnxGraph *og) {
  StrBuf sb;
  sb_init(&sb);
  int count = 0;
  for (int i = 0; i < og->nnodes; i++) {
    const OnnxNode *n = &og->nodes[i];
    bool std_domain = !n->domain[0] || !strcmp(n->domain, "ai.onnx");
    bool old_form = std_domain && im->opset < ONNX_ADAPTED_OPSET;
    if (std_domain && onnx_op_supported(n->op_type) && (!old_form || onnx_legacy_known(n->op_type))) continue;
    if (onnx_is_flex_attention(n)) continue;
    if (count < 64) {
      if (count) sb_puts(&sb, ", ");
      if (old_form && onnx_op_supported(n->op_type))
        sb_printf(&sb, "%s at opset %lld (node \"%s\")", n->op_type, (long long)im->opset, n->name);
      else if (std_domain) sb_printf(&sb, "%s (node \"%s\")", n->op_type, n->name);
      else sb_printf(&sb, "%s:%s (node \"%s\")", n->domain, n->op_type, n->name);
    }
    count++;
  }
  loom_status st = LOOM_OK;
  if (count)
    st = err_set(im->err, LOOM_ERR_UNSUPPORTED, "%d node%s use%s unsupported operators: %s%s", count, count == 1 ? "" : "s",
                 count == 1 ? "s" : "", sb_cstr(&sb), count > 64 ? ", ..." : "");
  sb_free(&sb);
  return st;
}

static bool listed_as_input(const OnnxGraph *og, const char *name) {
  for (int k = 0; k < og->ninputs; k++)
    if (og->inputs[k].name && !strcmp(og->inputs[k].name, name)) return true;
  return false;
}

/* An initializer listed among the graph inputs is that input's default
 * value (the ONNX IR's rule; IR version 3 files list every initializer
 * there): a constant, unless the caller feeds the input. */
static bool fed_default(const Importer *im, const OnnxGraph *og, const char *name) {
  for (int k = 0; k < im->nfed; k++)
    if (im->fed[k] && !strcmp(im->fed[k], name)) return listed_as_input(og, name);
  return false;
}

static loom_status add_initializers(Importer *im, const OnnxGraph *og) {
  Graph *g = im->g;
  for (int k = 0; k < og->ninitializers; k++) {
    const OnnxTensor *t = &og->initializers[k];
    if (!t->name || !t->name[0])
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "initializer %d (at byte %zu) has no name", k, t->offset);
    if (namemap_get(&im->names, t->name) >= 0)
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "initializer \"%s\" is defined twice", t->name);
    if (fed_default(im, og, t->name)) continue; /* add_inputs makes it an input */
    GraphTensor *gt = onnx_tensor_to_graph(im, t, arena_printf(im->scratch, "initializer \"%s\"", t->name));
    if (!gt) return im->err->status;
    ValueId v = graph_add_constant(g, t->name, gt);
    namemap_put(&im->names, g->values[v].name, v);
  }
  if (og->nsparse_initializers)
    return err_set(im->err, LOOM_ERR_UNSUPPORTED, "sparse initializers are not supported (%d found)", og->nsparse_initializers);
  return LOOM_OK;
}

static loom_status add_inputs(Importer *im, const OnnxGraph *og) {
  Graph *g = im->g;
  g->inputs = ARENA_ARRAY(g->arena, ValueId, og->ninputs);
  for (int k = 0; k < og->ninputs; k++) {
    const OnnxValueInfo *vi = &og->inputs[k];
    if (!vi->name || !vi->name[0]) return err_set(im->err, LOOM_ERR_INVALID_ARG, "graph input %d has no name", k);
    /* An initializer among the inputs is a default: a weight (fed_default). */
    ValueId existing = namemap_get(&im->names, vi->name);
    if (existing >= 0) {
      if (g->values[existing].constant) continue;
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "graph input \"%s\" is listed twice", vi->name);
    }
    if (!vi->is_tensor) return err_set(im->err, LOOM_ERR_UNSUPPORTED, "graph input \"%s\" is not a tensor", vi->name);
    DType dt;
    if (!onnx_dtype_to_loom(vi->elem_type, &dt))
      return err_set(im->err, LOOM_ERR_UNSUPPORTED, "graph input \"%s\": data type %s (%d) is not supported", vi->name,
                     onnx_dtype_name(vi->elem_type), vi->elem_type);
    if (vi->ndims > 64) return err_set(im->err, LOOM_ERR_UNSUPPORTED, "graph input \"%s\": rank %d is too large", vi->name, vi->ndims);
    ValueId v = graph_add_value(g, vi->name);
    namemap_put(&im->names, g->values[v].name, v);
    if (vi->has_shape) {
      int64_t dims[64];
      for (int d = 0; d < vi->ndims; d++) dims[d] = vi->dims[d].value;
      graph_set_type(g, v, dt, vi->ndims, dims);
      bool any_param = false;
      for (int d = 0; d < vi->ndims; d++) any_param |= vi->dims[d].param != NULL;
      if (any_param) {
        const char **params = ARENA_ARRAY(g->arena, const char *, vi->ndims);
        for (int d = 0; d < vi->ndims; d++) params[d] = vi->dims[d].param ? arena_strdup(g->arena, vi->dims[d].param) : NULL;
        g->values[v].dim_params = params;
      }
    } else {
      graph_set_type(g, v, dt, -1, NULL);
    }
    g->inputs[g->ninputs++] = v;
  }
  return LOOM_OK;
}

/* Orders the nodes so every input is defined before use: a depth-first
 * walk in file order that emits a node after the producers of its inputs.
 * ONNX requires topological order already, and then the order is kept as
 * written; unordered files are accepted, and cycles and dangling names are
 * found on the way. The walk uses an explicit stack: models can be deep. */
static loom_status order_nodes(Importer *im, const OnnxGraph *og, int *order) {
  int nn = og->nnodes;
  NameMap producer; /* output name -> node index */
  namemap_init(&producer, im->scratch);
  loom_status st = LOOM_OK;
  for (int i = 0; i < nn && !st; i++) {
    const OnnxNode *n = &og->nodes[i];
    for (int k = 0; k < n->noutputs; k++) {
      const char *o = n->outputs[k];
      if (!o[0]) continue;
      if (namemap_get(&producer, o) >= 0 || namemap_get(&im->names, o) >= 0)
        st = err_set(im->err, LOOM_ERR_INVALID_ARG, "node \"%s\" (%s): output \"%s\" is already defined elsewhere", n->name,
                     n->op_type, o);
      else namemap_put(&producer, o, i);
    }
  }
  /* state: 0 unvisited, 1 on the stack, 2 emitted; next_input: resume point. */
  char *state = ARENA_ARRAY(im->scratch, char, nn + 1);
  int *next_input = ARENA_ARRAY(im->scratch, int, nn + 1);
  int *stack = ARENA_ARRAY(im->scratch, int, nn + 1);
  int done = 0;
  for (int root = 0; root < nn && !st; root++) {
    if (state[root]) continue;
    int sp = 0;
    stack[sp++] = root;
    state[root] = 1;
    while (sp > 0 && !st) {
      int i = stack[sp - 1];
      const OnnxNode *n = &og->nodes[i];
      if (next_input[i] == n->ninputs) {
        state[i] = 2;
        order[done++] = i;
        sp--;
        continue;
      }
      const char *in = n->inputs[next_input[i]++];
      if (!in[0]) continue;
      int p = namemap_get(&producer, in);
      if (p < 0) {
        if (namemap_get(&im->names, in) < 0)
          st = err_set(im->err, LOOM_ERR_INVALID_ARG,
                       "node \"%s\" (%s): input \"%s\" is not a graph input, an initializer or the output of any node",
                       n->name, n->op_type, in);
      } else if (state[p] == 1) {
        st = err_set(im->err, LOOM_ERR_INVALID_ARG, "the graph has a cycle: node \"%s\" (%s) input \"%s\" depends on the node's own output",
                     n->name, n->op_type, in);
      } else if (state[p] == 0) {
        state[p] = 1;
        stack[sp++] = p;
      }
    }
  }
  return st;
}

static loom_status add_outputs(Importer *im, const OnnxGraph *og) {
  Graph *g = im->g;
  if (og->noutputs < 1) return err_set(im->err, LOOM_ERR_INVALID_ARG, "the graph has no outputs");
  g->outputs = ARENA_ARRAY(g->arena, ValueId, og->noutputs);
  for (int k = 0; k < og->noutputs; k++) {
    const char *name = og->outputs[k].name ? og->outputs[k].name : "";
    ValueId v = namemap_get(&im->names, name);
    if (v < 0) return err_set(im->err, LOOM_ERR_INVALID_ARG, "graph output \"%s\" is not produced by any node", name);
    g->outputs[g->noutputs++] = v;
  }
  return LOOM_OK;
}

static Graph *import_bytes(const uint8_t *data, size_t size, const char *base_dir, const char *const *fed, int nfed,
                           LoomError *err) {
  Importer im;
  memset(&im, 0, sizeof im);
  im.scratch = arena_new();
  im.base_dir = base_dir;
  im.err = err;
  im.fed = fed;
  im.nfed = fed ? nfed : 0;
  namemap_init(&im.names, im.scratch);
  loom_status st = LOOM_OK;
  OnnxModel *m = onnx_model_decode(im.scratch, data, size, err);
  if (!m) st = err && err->status ? err->status : LOOM_ERR_PARSE;
  if (!st) st = find_opset(&im, m);
  /* Control-flow bodies are converted after import (import_control.c):
   * the decoded model must outlive this call, with its own copy of the
   * bytes that raw_data points into. */
  bool keep = false;
  for (int i = 0; !st && i < m->graph->nnodes && !keep; i++) /* (a FlexAttention mod graph may hold control flow) */
    keep = onnx_is_control_flow(m->graph->nodes[i].op_type) || onnx_is_flex_attention(&m->graph->nodes[i]);
  if (keep) {
    const uint8_t *copy = arena_memdup(im.scratch, data, size);
    m = onnx_model_decode(im.scratch, copy, size, err);
    LOOM_ASSERT(m); /* decoded the same bytes once already */
  }
  if (!st) {
    im.g = graph_new(m->graph->name[0] ? m->graph->name : "main");
    name_anonymous_nodes(&im, m->graph);
    st = onnx_check_supported(&im, m->graph);
  }
  if (!st) st = add_initializers(&im, m->graph);
  if (!st) st = add_inputs(&im, m->graph);
  int *order = NULL;
  if (!st) {
    order = ARENA_ARRAY(im.scratch, int, m->graph->nnodes + 1);
    st = order_nodes(&im, m->graph, order);
  }
  for (int i = 0; !st && i < m->graph->nnodes; i++) st = onnx_convert_node(&im, &m->graph->nodes[order[i]]);
  if (!st) st = add_outputs(&im, m->graph);
  if (!st) st = graph_verify(im.g, err);
  if (!st && keep) onnx_keep_model(im.g, im.scratch);
  else arena_free(im.scratch);
  if (st) {
    graph_free(im.g);
    return NULL;
  }
  return im.g;
}

/* The recovery point for running out of memory (support/oom.h): every
 * allocation of an import is in its scratch arena or the graph's. */
Graph *onnx_import_bytes_fed(const uint8_t *data, size_t size, const char *base_dir, const char *const *fed, int nfed,
                             LoomError *err) {
  OomRecovery r;
  if (setjmp(*oom_recovery_push(&r))) {
    oom_recovery_unwind(&r, err);
    err_prefix(err, "importing the ONNX model");
    return NULL;
  }
  Graph *g = import_bytes(data, size, base_dir, fed, nfed, err);
  oom_recovery_pop(&r);
  return g;
}

Graph *onnx_import_bytes(const uint8_t *data, size_t size, const char *base_dir, LoomError *err) {
  return onnx_import_bytes_fed(data, size, base_dir, NULL, 0, err);
}

uint8_t *onnx_read_file(const char *path, size_t *len_out, LoomError *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    err_set(err, LOOM_ERR_IO, "cannot open \"%s\": %s", path, strerror(errno));
    return NULL;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *p = loom_realloc(buf, cap);
      if (!p) {
        loom_free(buf);
        fclose(f);
        err_set(err, LOOM_ERR_OUT_OF_MEMORY, "\"%s\": out of memory allocating %zu bytes to read it", path, cap);
        return NULL;
      }
      buf = p;
    }
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
  }
  bool read_err = ferror(f);
  fclose(f);
  if (read_err) {
    loom_free(buf);
    err_set(err, LOOM_ERR_IO, "error reading \"%s\"", path);
    return NULL;
  }
  *len_out = len;
  return buf;
}

Graph *onnx_import_file_fed(const char *path, const char *const *fed, int nfed, LoomError *err) {
  size_t len;
  uint8_t *buf = onnx_read_file(path, &len, err);
  if (!buf) return NULL;
  /* External data lives next to the model file. */
  char *dir = loom_strdup(path);
  if (!dir) {
    loom_free(buf);
    err_set(err, LOOM_ERR_OUT_OF_MEMORY, "%s: out of memory allocating a copy of the path", path);
    return NULL;
  }
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else strcpy(dir, ".");
  Graph *g = onnx_import_bytes_fed(buf, len, dir, fed, nfed, err);
  loom_free(dir);
  loom_free(buf);
  if (!g) err_prefix(err, "%s", path);
  return g;
}

Graph *onnx_import_file(const char *path, LoomError *err) { return onnx_import_file_fed(path, NULL, 0, err); }

loom_status onnx_prepare_graph(Graph *g, const char *path, LoomError *err) {
  loom_status st = onnx_inline_control_flow(g, err);
  if (!st) st = graph_pass_fold_constants(g, err);
  if (!st) st = graph_pass_remove_identity(g, err);
  if (!st) st = graph_pass_dce(g, err);
  if (!st) st = graph_pass_infer(g, err);
  if (!st) st = graph_verify(g, err);
  if (st) err_prefix(err, "%s", path);
  return st;
}

static Graph *import_file_prepared(const char *path, LoomError *err) {
  Graph *g = onnx_import_file(path, err);
  if (g && onnx_prepare_graph(g, path, err)) {
    graph_free(g);
    return NULL;
  }
  return g;
}

/* A recovery point of its own for the preparing passes (support/oom.h). */
Graph *onnx_import_file_prepared(const char *path, LoomError *err) {
  OomRecovery r;
  if (setjmp(*oom_recovery_push(&r))) {
    oom_recovery_unwind(&r, err);
    err_prefix(err, "%s: preparing the graph", path);
    return NULL;
  }
  Graph *g = import_file_prepared(path, err);
  oom_recovery_pop(&r);
  return g;
}

int onnx_input_names(const char *path, Arena *a, const char ***names, const char ***defaults, LoomError *err) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return err_set(err, LOOM_ERR_IO, "cannot open \"%s\": %s", path, strerror(errno)), -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size <= 0) {
    close(fd);
    return err_set(err, LOOM_ERR_PARSE, "%s: empty or unreadable model file", path), -1;
  }
  /* Mapped, not read: decoding touches the structure, not the weights' bytes. */
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return err_set(err, LOOM_ERR_IO, "cannot map \"%s\": %s", path, strerror(errno)), -1;
  Arena *scratch = arena_new();
  OnnxModel *m = onnx_model_decode(scratch, map, (size_t)st.st_size, err);
  int n = -1;
  if (!m) {
    err_prefix(err, "%s", path);
  } else {
    const OnnxGraph *og = m->graph;
    *names = ARENA_ARRAY(a, const char *, og->ninputs + 1);
    const char **dflt = ARENA_ARRAY(a, const char *, og->ninputs + 1);
    int nd = 0;
    n = 0;
    for (int k = 0; k < og->ninputs; k++) {
      const char *name = og->inputs[k].name ? og->inputs[k].name : "";
      bool has_default = false; /* an initializer of the same name (fed_default in the importer) */
      for (int i = 0; i < og->ninitializers && !has_default; i++)
        has_default = og->initializers[i].name && !strcmp(og->initializers[i].name, name);
      if (has_default) dflt[nd++] = arena_strdup(a, name);
      else (*names)[n++] = arena_strdup(a, name);
    }
    dflt[nd] = NULL;
    if (defaults) *defaults = dflt;
  }
  arena_free(scratch);
  munmap(map, (size_t)st.st_size);
  return n;
}

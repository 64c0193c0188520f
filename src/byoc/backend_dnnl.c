/* The oneDNN back end (`--byoc dnnl`), its build-time half: patterns and
 * codegen in the blob form (loom/loom_byoc.h). Each pattern match becomes
 * one oneDNN primitive: a 2-D NCHW f32 convolution (groups, strides,
 * dilations, pads; constant weights and bias) with what oneDNN runs as
 * post-ops, a residual Add (sum) then Relu or Clip (eltwise); a
 * max/average/global-average pooling; a MatMul with bias; a Gemm with
 * constant B as an inner product with Relu/Clip. Matches that feed one
 * another merge into one region (merge_regions), a chain of primitives
 * whose intermediate tensors stay in oneDNN's blocked layouts. codegen
 * writes the blob (backends/dnnl_blob.h) and asks the run-time half,
 * libloom_byoc_dnnl_rt.so (backends/dnnl_runtime.c), loaded into the
 * codegen child, how much workspace the primitives need; at load that
 * library builds them and reorders the weights once. */
#include "byoc/backends/dnnl_blob.h"
#include "byoc/byoc.h"
#include "runtime/byoc_library.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the artifact records: a bare file name that the runtime finds on
 * the library path or next to Loom (runtime/byoc_library.h), so a moved
 * or installed Loom runs it; $LOOM_BYOC_DNNL_RUNTIME (a path or a name)
 * replaces it. */
#define DNNL_RUNTIME_LIBRARY "libloom_byoc_dnnl_rt.so"

static const char *runtime_library(void) {
  const char *env = getenv("LOOM_BYOC_DNNL_RUNTIME");
  return env && *env ? env : DNNL_RUNTIME_LIBRARY;
}

static const loom_byoc_tensor *out0(const loom_byoc_graph *g, const loom_byoc_node *n) {
  return &g->tensors[n->outputs[0]];
}

/* An INTS attribute of 2 values into v (absent: dflt for both). */
static int ints2(const loom_byoc_node *n, const char *name, int64_t dflt, int64_t *v) {
  const loom_byoc_attr *a = loom_byoc_find_attr(n, name);
  v[0] = v[1] = dflt;
  if (!a) return 1;
  if (a->kind != LOOM_BYOC_ATTR_INTS || a->n != 2) return 0;
  v[0] = a->ints[0], v[1] = a->ints[1];
  return 1;
}

static int pads4(const loom_byoc_node *n, int64_t *l, int64_t *r) {
  const loom_byoc_attr *a = loom_byoc_find_attr(n, "pads");
  l[0] = l[1] = r[0] = r[1] = 0;
  if (!a) return 1;
  if (a->kind != LOOM_BYOC_ATTR_INTS || a->n != 4) return 0;
  l[0] = a->ints[0], l[1] = a->ints[1], r[0] = a->ints[2], r[1] = a->ints[3];
  return 1;
}

/* Explicit pads only (inference resolves auto_pad into pads). */
static int no_auto_pad(const loom_byoc_node *n) {
  const loom_byoc_attr *a = loom_byoc_find_attr(n, "auto_pad");
  return !a || (a->kind == LOOM_BYOC_ATTR_STRING && !strcmp(a->s, "NOTSET"));
}

static int conv_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *x = loom_byoc_input(g, n, 0), *w = loom_byoc_input(g, n, 1), *b = loom_byoc_input(g, n, 2);
  int64_t v[2], l[2], r[2];
  return loom_byoc_is_f32(x) && loom_byoc_is_f32(w) && (!b || loom_byoc_is_f32(b)) && loom_byoc_is_f32(out0(g, n)) &&
         x->ndim == 4 && w->ndim == 4 && no_auto_pad(n) && ints2(n, "strides", 1, v) && ints2(n, "dilations", 1, v) &&
         pads4(n, l, r) && loom_byoc_attr_int(n, "group", 1) >= 1;
}

/* The residual Add: both operands the output's shape (no broadcast). */
static int residual_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *y = out0(g, n);
  for (int32_t k = 0; k < 2; k++) {
    const loom_byoc_tensor *t = loom_byoc_input(g, n, k);
    if (!loom_byoc_is_f32(t) || t->ndim != y->ndim) return 0;
    for (int32_t d = 0; d < y->ndim; d++)
      if (t->shape[d] != y->shape[d]) return 0;
  }
  return 1;
}

/* Relu, or Clip with constant scalar bounds (or none). */
static int activation_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  if (!loom_byoc_is_f32(out0(g, n))) return 0;
  for (int32_t k = 1; k < n->ninputs; k++) {
    const loom_byoc_tensor *t = loom_byoc_input(g, n, k);
    if (t && (!t->data || !loom_byoc_is_f32(t) || loom_byoc_numel(t) != 1)) return 0;
  }
  return 1;
}

static int pool_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *x = loom_byoc_input(g, n, 0);
  int64_t v[2], l[2], r[2];
  if (!loom_byoc_is_f32(x) || x->ndim != 4 || !loom_byoc_is_f32(out0(g, n))) return 0;
  if (!strcmp(n->op, "GlobalAveragePool")) return 1;
  const loom_byoc_attr *k = loom_byoc_find_attr(n, "kernel_shape");
  return k && k->kind == LOOM_BYOC_ATTR_INTS && k->n == 2 && no_auto_pad(n) && ints2(n, "strides", 1, v) &&
         ints2(n, "dilations", 1, v) && pads4(n, l, r) && loom_byoc_attr_int(n, "ceil_mode", 0) == 0 &&
         loom_byoc_attr_int(n, "storage_order", 0) == 0;
}

/* MatMul of f32 tensors: B 2-D (A's batch rows flattened), or ranks up to
 * 4 with broadcast batch dims. */
static int matmul_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1);
  if (!byoc_all_f32(g, n) || !a || !b || a->ndim < 2 || b->ndim < 2) return 0;
  return b->ndim == 2 || (a->ndim <= 4 && b->ndim <= 4);
}

/* Gemm as an inner product: A [M, K] at run time, B a constant (either
 * transB), C absent or a constant bias over N ([N] or [1, N]); alpha and
 * beta are folded into the weights and bias at init. */
static int gemm_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1), *c = loom_byoc_input(g, n, 2);
  const loom_byoc_tensor *y = out0(g, n);
  if (!byoc_all_f32(g, n) || !a || !b || a->data || !b->data || a->ndim != 2 || b->ndim != 2 || y->ndim != 2 ||
      loom_byoc_attr_int(n, "transA", 0))
    return 0;
  if (!c) return 1;
  int64_t nn = y->shape[1];
  return c->data && ((c->ndim == 1 && c->shape[0] == nn) || (c->ndim == 2 && c->shape[0] == 1 && c->shape[1] == nn));
}

static const loom_byoc_step k_gemm[] = {
    {.ops = "Gemm", .where = gemm_ok},
    {.ops = "Relu|Clip", .optional = 1, .where = activation_ok},
    {0},
};

static const loom_byoc_step k_matmul[] = {
    {.ops = "MatMul", .where = matmul_ok},
    {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_CONST}, .where = byoc_bias_add_ok},
    {0},
};

static const loom_byoc_step k_conv[] = {
    {.ops = "Conv", .operands = {LOOM_BYOC_RUNTIME, LOOM_BYOC_CONST, LOOM_BYOC_CONST_OR_ABSENT}, .where = conv_ok},
    {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_RUNTIME}, .where = residual_ok},
    {.ops = "Relu|Clip", .optional = 1, .where = activation_ok},
    {0},
};

static const loom_byoc_step k_pool[] = {
    {.ops = "MaxPool|AveragePool|GlobalAveragePool", .where = pool_ok},
    {0},
};

static const loom_byoc_pattern k_patterns[] = {
    {"dnnl.conv_sum_act", k_conv},
    {"dnnl.pool", k_pool},
    {"dnnl.matmul_bias", k_matmul},
    {"dnnl.gemm_act", k_gemm},
    {NULL, NULL},
};

static float scalar(const loom_byoc_graph *g, const loom_byoc_node *n, int32_t k, float dflt) {
  const loom_byoc_tensor *t = loom_byoc_input(g, n, k);
  return t && t->data ? *(const float *)t->data : dflt;
}

static void copy_dims(int64_t *dst, const loom_byoc_tensor *t) {
  for (int32_t d = 0; d < t->ndim && d < 4; d++) dst[d] = t->shape[d];
}

/* t's extents right-aligned in nd dims, 1s in front. */
static void copy_aligned(int64_t *dst, int nd, const loom_byoc_tensor *t) {
  for (int d = 0; d < nd; d++) dst[d] = d < nd - t->ndim ? 1 : t->shape[d - (nd - t->ndim)];
}

/* The blob being written: the values found so far (region tensor -> value). */
typedef struct Blob {
  const loom_byoc_region *r;
  DnnlValue *values;
  int32_t *value_of; /* per region tensor, -1 none */
  int32_t nvalues;
} Blob;

static int32_t value(Blob *b, int32_t t) {
  if (b->value_of[t] >= 0) return b->value_of[t];
  const loom_byoc_tensor *x = &b->r->graph.tensors[t];
  DnnlValue *v = &b->values[b->nvalues];
  v->param = loom_byoc_param(b->r, t);
  v->ndims = x->ndim;
  copy_dims(v->dims, x);
  return b->value_of[t] = b->nvalues++;
}

static int32_t other_operand(const loom_byoc_node *add, int32_t t) {
  return add->inputs[0] == t ? add->inputs[1] : add->inputs[0];
}

static void activation(DnnlOp *op, const loom_byoc_graph *g, const loom_byoc_node *m) {
  if (!strcmp(m->op, "Relu")) {
    op->eltwise = DNNL_BLOB_ELTWISE_RELU;
  } else { /* Clip: absent bounds are the float range's */
    op->eltwise = DNNL_BLOB_ELTWISE_CLIP;
    op->clip_lo = scalar(g, m, 1, -3.4028235e38f);
    op->clip_hi = scalar(g, m, 2, 3.4028235e38f);
  }
}

/* A MatMul's or Gemm's geometry (what supports() asks oneDNN about too). */
static void matmul_geometry(const loom_byoc_graph *g, const loom_byoc_node *n, const loom_byoc_node *add,
                            DnnlOp *op) {
  const loom_byoc_tensor *a = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
  const loom_byoc_tensor *y = &g->tensors[add ? add->outputs[0] : n->outputs[0]];
  op->kind = DNNL_BLOB_MATMUL;
  if (w->ndim == 2) { /* every row of A against one B */
    int64_t k = w->shape[0], nn = w->shape[1], rows = loom_byoc_numel(a) / k;
    op->ndims = 2;
    op->src_dims[0] = rows, op->src_dims[1] = k;
    op->weights[0] = k, op->weights[1] = nn;
    op->dst_dims[0] = rows, op->dst_dims[1] = nn;
  } else {
    op->ndims = y->ndim;
    copy_aligned(op->src_dims, y->ndim, a);
    copy_aligned(op->weights, y->ndim, w);
    copy_aligned(op->dst_dims, y->ndim, y);
  }
}

static void gemm_geometry(const loom_byoc_graph *g, const loom_byoc_node *n, DnnlOp *op) {
  const loom_byoc_tensor *w = &g->tensors[n->inputs[1]], *y = &g->tensors[n->outputs[0]];
  op->kind = DNNL_BLOB_INNER_PRODUCT;
  op->ndims = 2;
  op->trans_b = (int32_t)loom_byoc_attr_int(n, "transB", 0);
  op->alpha = (float)loom_byoc_attr_float(n, "alpha", 1.0);
  op->beta = (float)loom_byoc_attr_float(n, "beta", 1.0);
  op->weights[0] = y->shape[1];                              /* N */
  op->weights[1] = op->trans_b ? w->shape[1] : w->shape[0]; /* K */
  op->src_dims[0] = y->shape[0], op->src_dims[1] = op->weights[1];
  op->dst_dims[0] = y->shape[0], op->dst_dims[1] = y->shape[1];
}

static void matmul_op(Blob *b, DnnlOp *op, const loom_byoc_node *n, const loom_byoc_node *add) {
  const loom_byoc_graph *g = &b->r->graph;
  matmul_geometry(g, n, add, op);
  if (g->tensors[n->inputs[1]].data) op->p_weights = loom_byoc_param(b->r, n->inputs[1]);
  else op->rt_weights = value(b, n->inputs[1]);
  if (add) op->p_bias = loom_byoc_param(b->r, other_operand(add, n->outputs[0]));
}

static void gemm_op(Blob *b, DnnlOp *op, const loom_byoc_node *n) {
  gemm_geometry(&b->r->graph, n, op);
  op->p_weights = loom_byoc_param(b->r, n->inputs[1]);
  if (loom_byoc_input(&b->r->graph, n, 2)) op->p_bias = loom_byoc_param(b->r, n->inputs[2]);
}

/* A conv's or pool's geometry: n the window op, last the composite's last
 * node (its output is the primitive's). */
static void window_op(const loom_byoc_graph *g, const loom_byoc_node *n, const loom_byoc_node *last, DnnlOp *op) {
  op->ndims = 4;
  copy_dims(op->src_dims, &g->tensors[n->inputs[0]]);
  copy_dims(op->dst_dims, &g->tensors[last->outputs[0]]);
  ints2(n, "strides", 1, op->stride);
  ints2(n, "dilations", 1, op->dilation);
  pads4(n, op->pad_l, op->pad_r);
  op->groups = 1;
  if (!strcmp(n->op, "Conv")) {
    const loom_byoc_tensor *w = &g->tensors[n->inputs[1]];
    op->kind = DNNL_BLOB_CONV;
    copy_dims(op->weights, w);
    op->kernel[0] = w->shape[2], op->kernel[1] = w->shape[3];
    op->groups = loom_byoc_attr_int(n, "group", 1);
  }
}

/* One composite (a pattern match) as one primitive. */
static void composite_op(Blob *b, const loom_byoc_composite *c, DnnlOp *op) {
  const loom_byoc_graph *g = &b->r->graph;
  const loom_byoc_node *n = &g->nodes[c->first_node], *last = &g->nodes[c->first_node + c->num_nodes - 1];
  memset(op, 0, sizeof *op);
  op->sum = op->rt_weights = op->p_weights = op->p_bias = -1;
  op->src = value(b, n->inputs[0]);
  if (!strcmp(n->op, "MatMul")) {
    matmul_op(b, op, n, c->num_nodes > 1 ? &g->nodes[c->first_node + 1] : NULL);
  } else if (!strcmp(n->op, "Gemm")) {
    gemm_op(b, op, n);
    if (c->num_nodes > 1) activation(op, g, last);
  } else {
    window_op(g, n, last, op);
    if (op->kind == DNNL_BLOB_CONV) {
      op->p_weights = loom_byoc_param(b->r, n->inputs[1]);
      if (loom_byoc_input(g, n, 2)) op->p_bias = loom_byoc_param(b->r, n->inputs[2]);
      for (int32_t i = c->first_node + 1; i < c->first_node + c->num_nodes; i++) {
        const loom_byoc_node *m = &g->nodes[i];
        if (!strcmp(m->op, "Add")) op->sum = value(b, other_operand(m, g->nodes[i - 1].outputs[0]));
        else activation(op, g, m);
      }
    } else if (!strcmp(n->op, "GlobalAveragePool")) {
      op->kind = DNNL_BLOB_AVG_POOL;
      op->kernel[0] = op->src_dims[2], op->kernel[1] = op->src_dims[3];
    } else {
      const loom_byoc_attr *k = loom_byoc_find_attr(n, "kernel_shape");
      op->kind = strcmp(n->op, "MaxPool") ? DNNL_BLOB_AVG_POOL : DNNL_BLOB_MAX_POOL;
      op->kernel[0] = k->ints[0], op->kernel[1] = k->ints[1];
      op->count_include_pad = (int32_t)loom_byoc_attr_int(n, "count_include_pad", 0);
    }
  }
  op->dst = value(b, last->outputs[0]);
}

static dnnl_impl_fn g_impl;

/* "gemm:jit", "x64:gemm:jit": a ':'-separated part "gemm" (brgemm is not). */
static bool gemm_based(const char *impl) {
  for (const char *p = impl; (p = strstr(p, "gemm")); p += 4)
    if ((p == impl || p[-1] == ':') && (p[4] == ':' || !p[4])) return true;
  return false;
}

static void find_impl(void) {
  char why[1024];
  void *h = byoc_library_open(runtime_library(), why, sizeof why);
  void *sym = h ? dlsym(h, DNNL_IMPL_ENTRY) : NULL;
  if (sym) memcpy(&g_impl, &sym, sizeof g_impl);
}

/* oneDNN's primitives built on its own gemm ("gemm:jit": what it picks
 * where no direct or brgemm kernel fits at the CPU's ISA, e.g. every
 * matmul and a conv of 4 channels a group on AVX2) malloc packing buffers
 * at every execute, outside the scratchpad Loom plans: such an op stays
 * with Loom's own kernels, so a run of a dnnl region allocates nothing.
 * oneDNN itself is asked, in this process, under the ISA cap the run has
 * too (ONEDNN_MAX_CPU_ISA). A runtime library that cannot be loaded vetoes
 * nothing: codegen reports it. */
static int dnnl_supports(const loom_byoc_graph *g, int32_t node, void *user) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  const loom_byoc_node *n = &g->nodes[node];
  (void)user;
  DnnlOp op;
  memset(&op, 0, sizeof op);
  op.sum = op.rt_weights = op.p_weights = op.p_bias = -1;
  if (!strcmp(n->op, "Conv")) window_op(g, n, n, &op);
  else if (!strcmp(n->op, "MatMul")) matmul_geometry(g, n, NULL, &op);
  else if (!strcmp(n->op, "Gemm")) gemm_geometry(g, n, &op);
  else return 1;
  if (n->ninputs > 2 && loom_byoc_input(g, n, 2)) op.p_bias = 0;
  if (op.kind == DNNL_BLOB_MATMUL && !g->tensors[n->inputs[1]].data) op.rt_weights = 0;
  pthread_once(&once, find_impl);
  char impl[128];
  return !g_impl || g_impl(&op, impl, sizeof impl) != 0 || !gemm_based(impl);
}

/* The workspace the region needs (scratchpads, internal tensors), from
 * oneDNN itself: the runtime library's planner, in this child process,
 * for as many threads as this host has (a model loaded with more gets a
 * buffer of its own at init). */
static int plan(void *blob, size_t size, char *errbuf, size_t errlen) {
  char why[1024];
  const char *lib = runtime_library();
  void *h = byoc_library_open(lib, why, sizeof why);
  if (!h) {
    snprintf(errbuf, errlen, "cannot load the runtime library \"%s\" to plan the workspace: %s", lib, why);
    return 1;
  }
  dnnl_plan_fn fn;
  void *sym = dlsym(h, DNNL_PLAN_ENTRY);
  if (!sym) {
    snprintf(errbuf, errlen, "the runtime library \"%s\" lacks %s", lib, DNNL_PLAN_ENTRY);
    return 1;
  }
  memcpy(&fn, &sym, sizeof fn);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return fn(blob, size, cpus >= 1 && cpus <= 1024 ? (int32_t)cpus : 1, errbuf, errlen);
}

static int dnnl_codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)user;
  int32_t nt = r->graph.ntensors, nops = r->ncomposites;
  /* at most three values per op (src, dst, and a sum or a runtime B) */
  size_t size = dnnl_blob_size(3 * nops, nops);
  char *blob = calloc(1, size);
  Blob b = {r, NULL, malloc(sizeof(int32_t) * (size_t)(nt > 0 ? nt : 1)), 0};
  DnnlOp *ops = malloc(sizeof *ops * (size_t)(nops > 0 ? nops : 1));
  if (!blob || !b.value_of || !ops) {
    free(blob), free(b.value_of), free(ops);
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  for (int32_t t = 0; t < nt; t++) b.value_of[t] = -1;
  b.values = (DnnlValue *)(blob + sizeof(DnnlBlobHeader));
  for (int32_t c = 0; c < nops; c++) composite_op(&b, &r->composites[c], &ops[c]);
  /* the ops right after the values actually used */
  size = dnnl_blob_size(b.nvalues, nops);
  memcpy(blob + dnnl_blob_size(b.nvalues, 0), ops, sizeof *ops * (size_t)nops);
  DnnlBlobHeader *h = (DnnlBlobHeader *)blob;
  h->version = DNNL_BLOB_VERSION;
  h->nvalues = b.nvalues;
  h->nops = nops;
  free(b.value_of), free(ops);
  if (plan(blob, size, errbuf, errlen)) {
    free(blob);
    return 1;
  }
  out->blob = blob;
  out->blob_size = size;
  out->workspace_bytes = (size_t)h->workspace_bytes;
  out->runtime_entry = DNNL_RUNTIME_ENTRY;
  return 0;
}

static loom_byoc_plugin k_dnnl = {
    .abi_version = LOOM_BYOC_ABI_VERSION,
    .name = "dnnl",
    .patterns = k_patterns,
    .supports = dnnl_supports,
    .merge_regions = 1,
    .runtime_library = DNNL_RUNTIME_LIBRARY,
    .codegen = dnnl_codegen,
    .user = NULL,
};

const loom_byoc_plugin *byoc_dnnl_plugin(void) {
  k_dnnl.runtime_library = runtime_library();
  return &k_dnnl;
}

/* The oneDNN back end (`--byoc dnnl`), its build-time half: patterns and
 * codegen in the blob form (loom/loom_byoc.h). A region is one 2-D NCHW f32
 * convolution (groups, strides, dilations, pads; constant weights and
 * bias) with what oneDNN runs as post-ops, a residual Add (sum) then Relu
 * or Clip (eltwise), or one max/average/global-average pooling. codegen
 * writes a DnnlBlob (backends/dnnl_blob.h); the run-time half,
 * libloom_byoc_dnnl_rt.so (backends/dnnl_runtime.c), builds the primitive
 * and reorders the weights once at load. */
#include "byoc/backends/dnnl_blob.h"
#include "byoc/byoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef LOOM_BYOC_DNNL_RUNTIME
#define LOOM_BYOC_DNNL_RUNTIME "libloom_byoc_dnnl_rt.so"
#endif

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
    {NULL, NULL},
};

static float scalar(const loom_byoc_graph *g, const loom_byoc_node *n, int32_t k, float dflt) {
  const loom_byoc_tensor *t = loom_byoc_input(g, n, k);
  return t && t->data ? *(const float *)t->data : dflt;
}

static void copy4(int64_t *dst, const loom_byoc_tensor *t) {
  for (int d = 0; d < 4; d++) dst[d] = t->shape[d];
}

/* t's extents right-aligned in nd dims, 1s in front. */
static void copy_aligned(int64_t *dst, int nd, const loom_byoc_tensor *t) {
  for (int d = 0; d < nd; d++) dst[d] = d < nd - t->ndim ? 1 : t->shape[d - (nd - t->ndim)];
}

static void matmul_blob(DnnlBlob *b, const loom_byoc_region *r) {
  const loom_byoc_graph *g = &r->graph;
  const loom_byoc_node *n = &g->nodes[0];
  const loom_byoc_tensor *a = &g->tensors[n->inputs[0]], *w = &g->tensors[n->inputs[1]];
  const loom_byoc_tensor *y = &g->tensors[r->outputs[0]];
  b->kind = DNNL_BLOB_MATMUL;
  b->p_weights = loom_byoc_param(r, n->inputs[1]);
  b->weights_const = w->data != NULL;
  if (w->ndim == 2) { /* every row of A against one B */
    int64_t k = w->shape[0], nn = w->shape[1], rows = loom_byoc_numel(a) / k;
    b->ndims = 2;
    b->src[0] = rows, b->src[1] = k;
    b->weights[0] = k, b->weights[1] = nn;
    b->dst[0] = rows, b->dst[1] = nn;
  } else {
    b->ndims = y->ndim;
    copy_aligned(b->src, y->ndim, a);
    copy_aligned(b->weights, y->ndim, w);
    copy_aligned(b->dst, y->ndim, y);
  }
  if (g->nnodes > 1) { /* the bias Add */
    const loom_byoc_node *add = &g->nodes[1];
    b->has_bias = 1;
    b->p_bias = loom_byoc_param(r, add->inputs[0] == n->outputs[0] ? add->inputs[1] : add->inputs[0]);
  }
}

static int dnnl_codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)user;
  const loom_byoc_graph *g = &r->graph;
  if (r->ncomposites != 1 || r->noutputs != 1) {
    snprintf(errbuf, errlen, "one pattern match with one output per region expected");
    return 1;
  }
  DnnlBlob *b = calloc(1, sizeof *b);
  if (!b) {
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  const loom_byoc_node *n = &g->nodes[0];
  b->version = DNNL_BLOB_VERSION;
  b->p_weights = b->p_bias = b->p_sum = -1;
  b->p_src = loom_byoc_param(r, n->inputs[0]);
  b->p_dst = loom_byoc_param(r, r->outputs[0]);
  if (!strcmp(n->op, "MatMul")) {
    matmul_blob(b, r);
    goto done;
  }
  b->ndims = 4;
  copy4(b->src, &g->tensors[n->inputs[0]]);
  copy4(b->dst, &g->tensors[r->outputs[0]]);
  ints2(n, "strides", 1, b->stride);
  ints2(n, "dilations", 1, b->dilation);
  pads4(n, b->pad_l, b->pad_r);
  b->groups = 1;
  if (!strcmp(n->op, "Conv")) {
    const loom_byoc_tensor *w = &g->tensors[n->inputs[1]];
    b->kind = DNNL_BLOB_CONV;
    copy4(b->weights, w);
    b->kernel[0] = w->shape[2], b->kernel[1] = w->shape[3];
    b->groups = loom_byoc_attr_int(n, "group", 1);
    b->p_weights = loom_byoc_param(r, n->inputs[1]);
    if (loom_byoc_input(g, n, 2)) b->has_bias = 1, b->p_bias = loom_byoc_param(r, n->inputs[2]);
    for (int32_t i = 1; i < g->nnodes; i++) {
      const loom_byoc_node *m = &g->nodes[i];
      if (!strcmp(m->op, "Add")) {
        int32_t other = m->inputs[0] == n->outputs[0] ? m->inputs[1] : m->inputs[0];
        b->has_sum = 1, b->p_sum = loom_byoc_param(r, other);
      } else if (!strcmp(m->op, "Relu")) {
        b->eltwise = DNNL_BLOB_ELTWISE_RELU;
      } else { /* Clip: absent bounds are the float range's */
        b->eltwise = DNNL_BLOB_ELTWISE_CLIP;
        b->clip_lo = scalar(g, m, 1, -3.4028235e38f);
        b->clip_hi = scalar(g, m, 2, 3.4028235e38f);
      }
    }
  } else if (!strcmp(n->op, "GlobalAveragePool")) {
    b->kind = DNNL_BLOB_AVG_POOL;
    b->kernel[0] = b->src[2], b->kernel[1] = b->src[3];
  } else {
    const loom_byoc_attr *k = loom_byoc_find_attr(n, "kernel_shape");
    b->kind = strcmp(n->op, "MaxPool") ? DNNL_BLOB_AVG_POOL : DNNL_BLOB_MAX_POOL;
    b->kernel[0] = k->ints[0], b->kernel[1] = k->ints[1];
    b->count_include_pad = (int32_t)loom_byoc_attr_int(n, "count_include_pad", 0);
  }
done:
  out->blob = b;
  out->blob_size = sizeof *b;
  out->runtime_entry = DNNL_RUNTIME_ENTRY;
  return 0;
}

static const loom_byoc_plugin k_dnnl = {
    .abi_version = LOOM_BYOC_ABI_VERSION,
    .name = "dnnl",
    .patterns = k_patterns,
    .supports = NULL,
    .merge_regions = 0,
    .runtime_library = LOOM_BYOC_DNNL_RUNTIME,
    .codegen = dnnl_codegen,
    .user = NULL,
};

const loom_byoc_plugin *byoc_dnnl_plugin(void) { return &k_dnnl; }

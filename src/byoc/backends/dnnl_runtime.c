/* The oneDNN back end's run-time half: libloom_byoc_dnnl_rt.so, the
 * runtime library an artifact compiled with `--byoc dnnl` loads
 * (docs/byoc.md). It links only libc, libgomp and libdnnl, never the
 * compiler.
 *
 * A region is a chain of primitives (dnnl_blob.h). Building it (once, the
 * same code for the compiler's plan and the runtime's init) creates each
 * primitive with the layouts oneDNN prefers (format `any`), so a tensor
 * passed between two primitives of the region stays in a blocked layout;
 * reorders are added only where a primitive wants another layout than
 * its input has: at the region's boundary (plain row-major parameters) or
 * between primitives that disagree. Every buffer the region needs besides
 * its parameters, the scratchpads (scratchpad_mode user) and the internal
 * tensors, is a slice of the workspace Loom plans and passes to run:
 * slices of tensors whose lifetimes do not overlap share bytes.
 *
 * init also reorders the weights once into the primitives' layouts. run
 * points the memories at the call's buffers and executes: no reorder of
 * weights and no buffer allocated per run (oneDNN's execute itself
 * allocates a few bytes for its argument map; tests/byoc/run_alloc.c).
 *
 * Threads: oneDNN runs on OpenMP (libgomp in this build). A primitive's
 * thread count is fixed when it is created, so init creates them after
 * omp_set_num_threads(model's thread count), and run sets the same count
 * on the calling thread for the primitives that read it per call. */
#include "byoc/backends/dnnl_blob.h"
#include "loom/loom_byoc.h"

#include <dnnl.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_ARGS = 6 };

/* A memory whose data pointer run sets: a parameter's buffer, or at an
 * offset of the workspace (a slot; slot -1: offset 0, the scratchpad). */
typedef struct Binding {
  dnnl_memory_t mem;
  dnnl_memory_desc_t md;
  int32_t param, slot;
  /* A blocked layout padded beyond the tensor's extents (40 channels in
   * nChw16c): its padding must read as zeros, and other kernels use the
   * workspace between runs, so its pointer is set (and the padding zeroed
   * by oneDNN) every run. */
  bool padded;
  void *last; /* the pointer set last: unchanged pointers are not set again */
} Binding;

/* A workspace slice and the steps that use it (first..last inclusive). */
typedef struct Slot {
  size_t bytes, offset;
  int first, last;
} Slot;

typedef struct Step {
  dnnl_primitive_t prim;
  int nargs;
  int arg_id[MAX_ARGS];
  int binding[MAX_ARGS];       /* -1: fixed[] */
  dnnl_memory_t fixed[MAX_ARGS]; /* weights, bias */
} Step;

typedef struct DnnlState {
  bool plan; /* the compiler's plan: descriptors only, no weights */
  const DnnlBlobHeader *h;
  const DnnlValue *values;
  const DnnlOp *ops;
  const void *const *weights;
  int32_t nthreads;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  Step *steps;
  int nsteps, steps_cap;
  Binding *binds;
  int nbinds, binds_cap;
  Slot *slots;
  int nslots, slots_cap;
  dnnl_memory_t *owned;
  int nowned, owned_cap;
  void **bufs; /* weights/bias copies made at init */
  int nbufs, bufs_cap;
  int *home; /* per value: the binding holding it (-1 until written) */
  size_t scratch_bytes, total_bytes;
  void *own_ws; /* when the workspace planned at compile time is too small here */
} DnnlState;

static bool grow(void **p, int *cap, int n, size_t elem) {
  if (n < *cap) return true;
  int c = *cap ? *cap * 2 : 16;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return false;
  *p = q;
  *cap = c;
  return true;
}

static size_t round64(size_t n) { return (n + 63) / 64 * 64; }

static void release(void *p) {
  DnnlState *s = p;
  if (!s) return;
  for (int i = 0; i < s->nsteps; i++)
    if (s->steps[i].prim) dnnl_primitive_destroy(s->steps[i].prim);
  for (int i = 0; i < s->nbinds; i++)
    if (s->binds[i].mem) dnnl_memory_destroy(s->binds[i].mem);
  for (int i = 0; i < s->nowned; i++) dnnl_memory_destroy(s->owned[i]);
  for (int i = 0; i < s->nbufs; i++) free(s->bufs[i]);
  free(s->steps), free(s->binds), free(s->slots), free(s->owned), free(s->bufs), free(s->home), free(s->own_ws);
  if (s->stream) dnnl_stream_destroy(s->stream);
  if (s->engine) dnnl_engine_destroy(s->engine);
  free(s);
}

#define TRY(call)                          \
  do {                                     \
    if ((call) != dnnl_success) goto fail; \
  } while (0)

static const dnnl_format_tag_t k_plain[5] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd};

static bool plain_md(dnnl_memory_desc_t *md, int nd, const int64_t *dims) {
  dnnl_dims_t d;
  for (int i = 0; i < nd; i++) d[i] = dims[i];
  return nd >= 1 && nd <= 4 && dnnl_memory_desc_init_by_tag(md, nd, d, dnnl_f32, k_plain[nd]) == dnnl_success;
}

static bool is_plain(const dnnl_memory_desc_t *md) {
  dnnl_memory_desc_t p;
  return plain_md(&p, md->ndims, md->dims) && dnnl_memory_desc_equal(&p, md);
}

static dnnl_status_t scratch_attr(dnnl_primitive_attr_t *attr) {
  dnnl_status_t st = dnnl_primitive_attr_create(attr);
  return st == dnnl_success ? dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user) : st;
}

/* ---- building: bindings, slots, steps ---- */

static int bind(DnnlState *s, const dnnl_memory_desc_t *md, int32_t param, int32_t slot) {
  if (!grow((void **)&s->binds, &s->binds_cap, s->nbinds, sizeof *s->binds)) return -1;
  Binding *b = &s->binds[s->nbinds];
  *b = (Binding){.md = *md, .param = param, .slot = slot};
  for (int d = 0; d < md->ndims; d++) b->padded |= md->padded_dims[d] != md->dims[d];
  if (dnnl_memory_create(&b->mem, md, s->engine, DNNL_MEMORY_NONE) != dnnl_success) return -1;
  return s->nbinds++;
}

static int new_slot(DnnlState *s, size_t bytes) {
  if (!grow((void **)&s->slots, &s->slots_cap, s->nslots, sizeof *s->slots)) return -1;
  s->slots[s->nslots] = (Slot){round64(bytes ? bytes : 1), 0, -1, -1};
  return s->nslots++;
}

/* A binding in a fresh workspace slot sized for md. */
static int temp(DnnlState *s, const dnnl_memory_desc_t *md) {
  int slot = new_slot(s, dnnl_memory_desc_get_size(md));
  return slot < 0 ? -1 : bind(s, md, -1, slot);
}

static bool own_memory(DnnlState *s, dnnl_memory_t m) {
  if (!grow((void **)&s->owned, &s->owned_cap, s->nowned, sizeof *s->owned)) {
    dnnl_memory_destroy(m);
    return false;
  }
  s->owned[s->nowned++] = m;
  return true;
}

static void *own_buffer(DnnlState *s, size_t bytes) {
  if (!grow((void **)&s->bufs, &s->bufs_cap, s->nbufs, sizeof *s->bufs)) return NULL;
  void *p = malloc(bytes ? bytes : 1);
  if (p) s->bufs[s->nbufs++] = p;
  return p;
}

/* A step of primitive descriptor pd (taken: destroyed here) with args:
 * pairs of (DNNL_ARG_*, binding), or binding -1 with a fixed memory. The
 * scratchpad is added when pd wants one. */
typedef struct Arg {
  int id, binding;
  dnnl_memory_t fixed;
} Arg;

static bool add_step(DnnlState *s, dnnl_primitive_desc_t pd, const Arg *args, int nargs) {
  bool ok = false;
  if (!grow((void **)&s->steps, &s->steps_cap, s->nsteps, sizeof *s->steps)) goto done;
  Step *st = &s->steps[s->nsteps];
  memset(st, 0, sizeof *st);
  const dnnl_memory_desc_t *sp = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  size_t sp_bytes = sp ? dnnl_memory_desc_get_size(sp) : 0;
  for (int i = 0; i < nargs; i++) {
    st->arg_id[i] = args[i].id, st->binding[i] = args[i].binding, st->fixed[i] = args[i].fixed;
    int slot = args[i].binding >= 0 ? s->binds[args[i].binding].slot : -1;
    if (slot >= 0) {
      Slot *sl = &s->slots[slot];
      if (sl->first < 0) sl->first = s->nsteps;
      sl->last = s->nsteps;
    }
  }
  st->nargs = nargs;
  if (sp_bytes) {
    if (sp_bytes > s->scratch_bytes) s->scratch_bytes = sp_bytes;
    int b = bind(s, sp, -1, -1);
    if (b < 0) goto done;
    st = &s->steps[s->nsteps]; /* bind may not move steps, but stay safe */
    st->arg_id[st->nargs] = DNNL_ARG_SCRATCHPAD, st->binding[st->nargs] = b, st->fixed[st->nargs++] = NULL;
  }
  if (!s->plan && dnnl_primitive_create(&st->prim, pd) != dnnl_success) goto done;
  s->nsteps++;
  ok = true;
done:
  dnnl_primitive_desc_destroy(pd);
  return ok;
}

/* A step copying binding `from` into binding `to` (layouts may differ). */
static bool reorder(DnnlState *s, int from, int to) {
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t pd = NULL;
  bool ok = scratch_attr(&attr) == dnnl_success &&
            dnnl_reorder_primitive_desc_create(&pd, &s->binds[from].md, s->engine, &s->binds[to].md, s->engine, attr) ==
                dnnl_success;
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (!ok) return false;
  Arg args[2] = {{DNNL_ARG_FROM, from, NULL}, {DNNL_ARG_TO, to, NULL}};
  return add_step(s, pd, args, 2);
}

/* Value v as a primitive wants to read it (want): its own binding, a view
 * of the same bytes (both plain, same size: a reshape), or a reorder into
 * a workspace temporary. -1 on failure. */
static int input(DnnlState *s, int32_t v, const dnnl_memory_desc_t *want) {
  int home = s->home[v];
  if (home < 0) return -1;
  const Binding h = s->binds[home];
  if (dnnl_memory_desc_equal(&h.md, want)) return home;
  if (is_plain(want) && dnnl_memory_desc_get_size(want) == dnnl_memory_desc_get_size(&h.md)) {
    if (is_plain(&h.md)) return bind(s, want, h.param, h.slot);
    /* blocked to a plain view of other dims: plain in its own dims first */
    dnnl_memory_desc_t p;
    if (!plain_md(&p, h.md.ndims, h.md.dims)) return -1;
    int t = temp(s, &p);
    if (t < 0 || !reorder(s, home, t)) return -1;
    return bind(s, want, -1, s->binds[t].slot);
  }
  int t = temp(s, want);
  return t >= 0 && reorder(s, home, t) ? t : -1;
}

/* Where a primitive writes value v in layout md: an internal value lives
 * there (its new home); a parameter is written in place when md is its
 * plain layout, else through a temporary that *after (>= 0) reorders into
 * it once the primitive ran. */
static int output(DnnlState *s, int32_t v, const dnnl_memory_desc_t *md, int *after) {
  *after = -1;
  const DnnlValue *val = &s->values[v];
  if (val->param < 0) return s->home[v] = temp(s, md);
  if (is_plain(md) && dnnl_memory_desc_get_size(md) == dnnl_memory_desc_get_size(&s->binds[s->home[v]].md))
    return bind(s, md, val->param, -1);
  int t = temp(s, md);
  *after = s->home[v];
  return t;
}

/* ---- the primitives ---- */

static dnnl_status_t post_ops(const DnnlOp *op, bool sum, dnnl_primitive_attr_t attr) {
  dnnl_post_ops_t ops = NULL;
  dnnl_status_t st = dnnl_post_ops_create(&ops);
  if (st == dnnl_success && sum) st = dnnl_post_ops_append_sum(ops, 1.0f);
  if (st == dnnl_success && op->eltwise == DNNL_BLOB_ELTWISE_RELU)
    st = dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f);
  if (st == dnnl_success && op->eltwise == DNNL_BLOB_ELTWISE_CLIP)
    st = dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip, op->clip_lo, op->clip_hi);
  if (st == dnnl_success) st = dnnl_primitive_attr_set_post_ops(attr, ops);
  if (ops) dnnl_post_ops_destroy(ops);
  return st;
}

/* Constant weights (user: their layout in the artifact, scaled by alpha
 * when not 1) reordered once into the layout the primitive chose. */
static dnnl_memory_t const_weights(DnnlState *s, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want,
                                   const void *data, float alpha) {
  dnnl_memory_t from = NULL, to = NULL;
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t r = NULL;
  float *scaled = NULL;
  bool ok = false;
  if (alpha != 1.0f) {
    size_t n = dnnl_memory_desc_get_size(user) / sizeof(float);
    if (!(scaled = malloc(n * sizeof *scaled))) goto fail;
    for (size_t i = 0; i < n; i++) scaled[i] = alpha * ((const float *)data)[i];
    data = scaled;
  }
  TRY(dnnl_memory_create(&from, user, s->engine, (void *)data));
  TRY(dnnl_memory_create(&to, want, s->engine, DNNL_MEMORY_ALLOCATE));
  TRY(dnnl_reorder_primitive_desc_create(&rpd, user, s->engine, want, s->engine, NULL));
  TRY(dnnl_primitive_create(&r, rpd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  TRY(dnnl_primitive_execute(r, s->stream, 2, args));
  TRY(dnnl_stream_wait(s->stream));
  ok = true;
fail:
  if (r) dnnl_primitive_destroy(r);
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  if (from) dnnl_memory_destroy(from);
  free(scaled);
  if (!ok && to) dnnl_memory_destroy(to), to = NULL;
  return to && own_memory(s, to) ? to : NULL;
}

/* A plain memory over constant data (bias), scaled by beta when not 1. */
static dnnl_memory_t const_plain(DnnlState *s, const dnnl_memory_desc_t *md, const void *data, float beta) {
  if (beta != 1.0f) {
    size_t n = dnnl_memory_desc_get_size(md) / sizeof(float);
    float *c = own_buffer(s, n * sizeof *c);
    if (!c) return NULL;
    for (size_t i = 0; i < n; i++) c[i] = beta * ((const float *)data)[i];
    data = c;
  }
  dnnl_memory_t m = NULL;
  if (dnnl_memory_create(&m, md, s->engine, (void *)data) != dnnl_success) return NULL;
  return own_memory(s, m) ? m : NULL;
}

static dnnl_status_t conv_weights_md(const DnnlOp *op, dnnl_memory_desc_t *md, bool any) {
  if (op->groups > 1) {
    dnnl_dims_t d = {op->groups, op->weights[0] / op->groups, op->weights[1], op->weights[2], op->weights[3]};
    return dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_goihw);
  }
  dnnl_dims_t d = {op->weights[0], op->weights[1], op->weights[2], op->weights[3]};
  return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_oihw);
}

/* The op's descriptor: conv, pooling, matmul or inner product, with the
 * layouts the primitive may choose left `any`. */
static bool op_desc(DnnlState *s, const DnnlOp *op, dnnl_primitive_desc_t *pd) {
  dnnl_memory_desc_t src, dst, w, bias;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_dims_t sd, dd, bd;
  bool ok = false;
  int nd = op->ndims;
  for (int i = 0; i < nd; i++) sd[i] = op->src_dims[i], dd[i] = op->dst_dims[i];
  dnnl_dims_t strides = {op->stride[0], op->stride[1]}, dil = {op->dilation[0] - 1, op->dilation[1] - 1};
  dnnl_dims_t pl = {op->pad_l[0], op->pad_l[1]}, pr = {op->pad_r[0], op->pad_r[1]};
  TRY(scratch_attr(&attr));
  if (op->kind == DNNL_BLOB_CONV) {
    dnnl_convolution_desc_t cd;
    bd[0] = op->weights[0];
    TRY(dnnl_memory_desc_init_by_tag(&src, 4, sd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
    TRY(conv_weights_md(op, &w, true));
    TRY(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, &src, &w,
                                                    op->p_bias >= 0 ? &bias : NULL, &dst, strides, dil, pl, pr));
    TRY(post_ops(op, op->sum >= 0, attr));
    TRY(dnnl_primitive_desc_create(pd, &cd, attr, s->engine, NULL));
  } else if (op->kind == DNNL_BLOB_MAX_POOL || op->kind == DNNL_BLOB_AVG_POOL) {
    dnnl_alg_kind_t alg = op->kind == DNNL_BLOB_MAX_POOL ? dnnl_pooling_max
                          : op->count_include_pad        ? dnnl_pooling_avg_include_padding
                                                         : dnnl_pooling_avg_exclude_padding;
    dnnl_dims_t kernel = {op->kernel[0], op->kernel[1]};
    dnnl_pooling_v2_desc_t desc;
    int home = s->home[op->src];
    /* pooling takes its source's layout as it is (no `any` for src) */
    if (home < 0 || s->binds[home].md.ndims != 4) goto fail;
    TRY(dnnl_memory_desc_init_by_tag(&dst, 4, dd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, &s->binds[home].md, &dst, strides,
                                          kernel, dil, pl, pr));
    TRY(dnnl_primitive_desc_create(pd, &desc, attr, s->engine, NULL));
  } else if (op->kind == DNNL_BLOB_MATMUL) {
    dnnl_dims_t wd;
    for (int i = 0; i < nd; i++) wd[i] = op->weights[i], bd[i] = 1;
    bd[nd - 1] = op->dst_dims[nd - 1];
    TRY(dnnl_memory_desc_init_by_tag(&src, nd, sd, dnnl_f32, k_plain[nd]));
    TRY(dnnl_memory_desc_init_by_tag(&w, nd, wd, dnnl_f32, op->rt_weights < 0 ? dnnl_format_tag_any : k_plain[nd]));
    TRY(dnnl_memory_desc_init_by_tag(&dst, nd, dd, dnnl_f32, k_plain[nd]));
    TRY(dnnl_memory_desc_init_by_tag(&bias, nd, bd, dnnl_f32, k_plain[nd]));
    dnnl_matmul_desc_t md;
    TRY(dnnl_matmul_desc_init(&md, &src, &w, op->p_bias >= 0 ? &bias : NULL, &dst));
    TRY(dnnl_primitive_desc_create(pd, &md, attr, s->engine, NULL));
  } else if (op->kind == DNNL_BLOB_INNER_PRODUCT) {
    dnnl_dims_t wd = {op->weights[0], op->weights[1]};
    bd[0] = op->weights[0];
    TRY(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_f32, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_tag(&w, 2, wd, dnnl_f32, dnnl_format_tag_any));
    TRY(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_ab));
    TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
    dnnl_inner_product_desc_t ip;
    TRY(dnnl_inner_product_forward_desc_init(&ip, dnnl_forward_inference, &src, &w, op->p_bias >= 0 ? &bias : NULL,
                                             &dst));
    TRY(post_ops(op, false, attr));
    TRY(dnnl_primitive_desc_create(pd, &ip, attr, s->engine, NULL));
  } else {
    goto fail;
  }
  ok = true;
fail:
  if (attr) dnnl_primitive_attr_destroy(attr);
  return ok;
}

/* The op's constant weights and bias (init only; NULL in a plan). */
static bool op_constants(DnnlState *s, const DnnlOp *op, dnnl_primitive_desc_t pd, dnnl_memory_t *w, dnnl_memory_t *b) {
  *w = *b = NULL;
  if (s->plan) return true;
  const dnnl_memory_desc_t *want = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
  dnnl_memory_desc_t user, bias;
  dnnl_dims_t bd;
  int nd = op->ndims;
  if (op->kind == DNNL_BLOB_CONV) {
    if (conv_weights_md(op, &user, false) != dnnl_success) return false;
    bd[0] = op->weights[0];
    if (dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a) != dnnl_success) return false;
  } else if (op->kind == DNNL_BLOB_INNER_PRODUCT) {
    dnnl_dims_t wd = {op->weights[0], op->weights[1]}; /* [N, K]: B itself, or B [K, N] read transposed */
    bd[0] = op->weights[0];
    if (dnnl_memory_desc_init_by_tag(&user, 2, wd, dnnl_f32, op->trans_b ? dnnl_ab : dnnl_ba) != dnnl_success ||
        dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a) != dnnl_success)
      return false;
  } else if (op->kind == DNNL_BLOB_MATMUL) {
    if (!plain_md(&user, nd, op->weights)) return false;
    for (int i = 0; i < nd; i++) bd[i] = 1;
    bd[nd - 1] = op->dst_dims[nd - 1];
    if (dnnl_memory_desc_init_by_tag(&bias, nd, bd, dnnl_f32, k_plain[nd]) != dnnl_success) return false;
  } else {
    return true;
  }
  bool ip = op->kind == DNNL_BLOB_INNER_PRODUCT;
  if (op->p_weights >= 0 && op->rt_weights < 0 &&
      !(*w = const_weights(s, &user, want, s->weights[op->p_weights], ip ? op->alpha : 1.0f)))
    return false;
  if (op->p_bias >= 0 && !(*b = const_plain(s, &bias, s->weights[op->p_bias], ip ? op->beta : 1.0f))) return false;
  return true;
}

static bool build_op(DnnlState *s, const DnnlOp *op) {
  dnnl_primitive_desc_t pd = NULL;
  if (!op_desc(s, op, &pd)) return false;
  Arg args[MAX_ARGS];
  int n = 0, after = -1;
  dnnl_memory_t w = NULL, b = NULL;
  int in = input(s, op->src, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0));
  int rw = op->rt_weights >= 0 ? input(s, op->rt_weights, dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0))
                                : 0;
  int out = in >= 0 && rw >= 0 ? output(s, op->dst, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), &after) : -1;
  /* The residual Add as a sum post-op: the primitive adds onto dst. */
  bool ok = out >= 0 && (op->sum < 0 || (s->home[op->sum] >= 0 && reorder(s, s->home[op->sum], out))) &&
            op_constants(s, op, pd, &w, &b);
  if (!ok) {
    dnnl_primitive_desc_destroy(pd);
    return false;
  }
  args[n++] = (Arg){DNNL_ARG_SRC, in, NULL};
  if (op->rt_weights >= 0) args[n++] = (Arg){DNNL_ARG_WEIGHTS, rw, NULL};
  else if (op->p_weights >= 0) args[n++] = (Arg){DNNL_ARG_WEIGHTS, -1, w};
  if (op->p_bias >= 0) args[n++] = (Arg){DNNL_ARG_BIAS, -1, b};
  args[n++] = (Arg){DNNL_ARG_DST, out, NULL};
  if (!add_step(s, pd, args, n)) return false;
  return after < 0 || reorder(s, out, after);
}

/* Workspace offsets: the scratchpad (shared by every step: they run one
 * after another) at 0, then each slot at the lowest offset clear of the
 * slots already placed whose steps overlap its own. */
static void place_slots(DnnlState *s) {
  size_t base = round64(s->scratch_bytes), end = base;
  for (int i = 0; i < s->nslots; i++) {
    Slot *a = &s->slots[i];
    if (a->first < 0) a->first = a->last = 0;
    a->offset = base;
    for (bool moved = true; moved;) {
      moved = false;
      for (int j = 0; j < i; j++) {
        const Slot *b = &s->slots[j];
        bool live = a->first <= b->last && b->first <= a->last;
        if (live && a->offset < b->offset + b->bytes && b->offset < a->offset + a->bytes) {
          a->offset = b->offset + b->bytes;
          moved = true;
        }
      }
    }
    if (a->offset + a->bytes > end) end = a->offset + a->bytes;
  }
  s->total_bytes = end;
}

/* The blob checked against its own sizes and the parameter count. */
static bool blob_ok(const void *blob, size_t size, int32_t nparams) {
  const DnnlBlobHeader *h = blob;
  if (size < sizeof *h || h->version != DNNL_BLOB_VERSION || h->nvalues < 1 || h->nops < 1 ||
      h->nvalues > 1 << 20 || h->nops > 1 << 20 || size != dnnl_blob_size(h->nvalues, h->nops))
    return false;
  const DnnlValue *v = (const DnnlValue *)(h + 1);
  const DnnlOp *ops = (const DnnlOp *)(v + h->nvalues);
  for (int32_t i = 0; i < h->nvalues; i++)
    if (v[i].param >= nparams || v[i].param < -1 || v[i].ndims < 1 || v[i].ndims > 4) return false;
  for (int32_t i = 0; i < h->nops; i++) {
    const DnnlOp *o = &ops[i];
    if (o->src < 0 || o->src >= h->nvalues || o->dst < 0 || o->dst >= h->nvalues || o->sum >= h->nvalues ||
        o->rt_weights >= h->nvalues || o->p_weights >= nparams || o->p_bias >= nparams || o->ndims < 2 ||
        o->ndims > 4)
      return false;
  }
  return true;
}

/* The region's steps, slots and workspace size; weights NULL: a plan. */
static int build(const void *blob, size_t size, const void *const *weights, int32_t nparams, int32_t nthreads,
                 DnnlState **out) {
  *out = NULL;
  if (!blob_ok(blob, size, nparams) || nthreads < 1) return 2;
  DnnlState *s = calloc(1, sizeof *s);
  if (!s) return 3;
  s->h = blob;
  s->values = (const DnnlValue *)(s->h + 1);
  s->ops = (const DnnlOp *)(s->values + s->h->nvalues);
  s->plan = weights == NULL;
  s->weights = weights;
  s->nthreads = nthreads;
  omp_set_num_threads(nthreads); /* before any primitive: each fixes its thread count */
  if (!(s->home = malloc(sizeof *s->home * (size_t)s->h->nvalues))) goto fail;
  TRY(dnnl_engine_create(&s->engine, dnnl_cpu, 0));
  TRY(dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags));
  for (int32_t v = 0; v < s->h->nvalues; v++) {
    dnnl_memory_desc_t md;
    const DnnlValue *val = &s->values[v];
    s->home[v] = -1;
    if (val->param >= 0 && (!plain_md(&md, val->ndims, val->dims) || (s->home[v] = bind(s, &md, val->param, -1)) < 0))
      goto fail;
  }
  for (int32_t i = 0; i < s->h->nops; i++) {
    const DnnlOp *op = &s->ops[i];
    if (!s->plan && ((op->p_weights >= 0 && op->rt_weights < 0 && !weights[op->p_weights]) ||
                     (op->p_bias >= 0 && !weights[op->p_bias])))
      goto fail;
    if (!build_op(s, op)) goto fail;
  }
  place_slots(s);
  s->weights = NULL; /* the caller's array: read during the build only */
  *out = s;
  return 0;
fail:
  release(s);
  return 1;
}

int loom_byoc_dnnl_plan(void *blob, size_t size, int32_t num_threads, char *errbuf, size_t errlen);
int loom_byoc_dnnl_plan(void *blob, size_t size, int32_t num_threads, char *errbuf, size_t errlen) {
  DnnlState *s = NULL;
  int rc = build(blob, size, NULL, size >= sizeof(DnnlBlobHeader) ? 1 << 30 : 0, num_threads, &s);
  if (rc) {
    snprintf(errbuf, errlen, "oneDNN cannot build the region's primitives (code %d)", rc);
    return rc;
  }
  DnnlBlobHeader *h = blob;
  h->workspace_bytes = s->total_bytes;
  h->plan_threads = num_threads;
  release(s);
  return 0;
}

int loom_byoc_dnnl_impl(const DnnlOp *op, char *impl, size_t len);
int loom_byoc_dnnl_impl(const DnnlOp *op, char *impl, size_t len) {
  DnnlState s = {0};
  dnnl_primitive_desc_t pd = NULL;
  const char *name = NULL;
  int rc = 1;
  if (op->kind == DNNL_BLOB_MAX_POOL || op->kind == DNNL_BLOB_AVG_POOL || op->ndims < 2 || op->ndims > 4) return 1;
  TRY(dnnl_engine_create(&s.engine, dnnl_cpu, 0));
  if (!op_desc(&s, op, &pd)) goto fail;
  TRY(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name));
  snprintf(impl, len, "%s", name ? name : "");
  rc = 0;
fail:
  if (pd) dnnl_primitive_desc_destroy(pd);
  if (s.engine) dnnl_engine_destroy(s.engine);
  return rc;
}

static int init(const void *blob, size_t size, const void *const *weights, int32_t nparams, int32_t num_threads,
                void **state) {
  DnnlState *s = NULL;
  int rc = build(blob, size, weights, nparams, num_threads, &s);
  if (rc) return rc;
  /* More threads (or another CPU) than the compiler planned for can need
   * larger scratchpads: then this region keeps its own, allocated once. */
  if (s->total_bytes > s->h->workspace_bytes && !(s->own_ws = aligned_alloc(64, round64(s->total_bytes)))) {
    release(s);
    return 3;
  }
  /* The blob lives in the artifact's weights, mapped for the artifact's
   * life, so the state may keep pointing into it. */
  *state = s;
  return 0;
}

static int run(void *state, void *const *data, void *workspace) {
  DnnlState *s = state;
  char *base = s->own_ws ? s->own_ws : workspace;
  if (!base && s->total_bytes) return 1;
  omp_set_num_threads(s->nthreads);
  for (int i = 0; i < s->nbinds; i++) {
    Binding *b = &s->binds[i];
    void *p = b->param >= 0 ? data[b->param] : base + (b->slot >= 0 ? s->slots[b->slot].offset : 0);
    if (p != b->last || b->padded) {
      if (dnnl_memory_set_data_handle(b->mem, p) != dnnl_success) return 1;
      b->last = p;
    }
  }
  for (int i = 0; i < s->nsteps; i++) {
    const Step *st = &s->steps[i];
    dnnl_exec_arg_t args[MAX_ARGS];
    for (int a = 0; a < st->nargs; a++)
      args[a] = (dnnl_exec_arg_t){st->arg_id[a], st->binding[a] >= 0 ? s->binds[st->binding[a]].mem : st->fixed[a]};
    if (dnnl_primitive_execute(st->prim, s->stream, st->nargs, args) != dnnl_success) return 1;
  }
  return dnnl_stream_wait(s->stream) != dnnl_success;
}

static const loom_byoc_runtime k_runtime = {LOOM_BYOC_ABI_VERSION, init, run, release};

const loom_byoc_runtime *loom_byoc_dnnl_runtime(void);
const loom_byoc_runtime *loom_byoc_dnnl_runtime(void) { return &k_runtime; }

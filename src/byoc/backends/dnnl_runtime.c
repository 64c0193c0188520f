/* The oneDNN back end's run-time half: libloom_byoc_dnnl_rt.so, the
 * runtime library an artifact compiled with `--byoc dnnl` loads
 * (docs/byoc.md). It links only libc and libdnnl, never the compiler.
 *
 * init builds the region's primitive once per loaded artifact: the
 * convolution with its bias and post-ops (sum for a residual Add, relu or
 * clip), or the pooling, chooses the weights layout oneDNN prefers and
 * reorders the artifact's weights into it. run only points the source and
 * destination at the call's buffers and executes: no allocation, no
 * reorder per run. */
#include "byoc/backends/dnnl_blob.h"
#include "loom/loom_byoc.h"

#include <dnnl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct DnnlState {
  DnnlBlob b;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_memory_t src, dst, weights, bias;
  dnnl_memory_desc_t src_md, dst_md;
  size_t dst_bytes;
} DnnlState;

static void release(void *p) {
  DnnlState *s = p;
  if (!s) return;
  if (s->prim) dnnl_primitive_destroy(s->prim);
  if (s->src) dnnl_memory_destroy(s->src);
  if (s->dst) dnnl_memory_destroy(s->dst);
  if (s->weights) dnnl_memory_destroy(s->weights);
  if (s->bias) dnnl_memory_destroy(s->bias);
  if (s->stream) dnnl_stream_destroy(s->stream);
  if (s->engine) dnnl_engine_destroy(s->engine);
  free(s);
}

#define TRY(call)                     \
  do {                                \
    if ((call) != dnnl_success) goto fail; \
  } while (0)

/* The artifact's weights (described by user) reordered into s->weights, in
 * the layout the primitive chose (want): once, at init. */
static int reorder_to(DnnlState *s, const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *want, const void *data) {
  int ok = 0;
  dnnl_memory_t from = NULL;
  dnnl_primitive_desc_t rpd = NULL;
  dnnl_primitive_t r = NULL;
  TRY(dnnl_memory_create(&from, user, s->engine, (void *)data));
  TRY(dnnl_memory_create(&s->weights, want, s->engine, DNNL_MEMORY_ALLOCATE));
  TRY(dnnl_reorder_primitive_desc_create(&rpd, user, s->engine, want, s->engine, NULL));
  TRY(dnnl_primitive_create(&r, rpd));
  dnnl_exec_arg_t args[2] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, s->weights}};
  TRY(dnnl_primitive_execute(r, s->stream, 2, args));
  TRY(dnnl_stream_wait(s->stream));
  ok = 1;
fail:
  if (r) dnnl_primitive_destroy(r);
  if (rpd) dnnl_primitive_desc_destroy(rpd);
  if (from) dnnl_memory_destroy(from);
  return ok;
}

/* The convolution's weights: the artifact's OIHW (GOIHW with groups), or
 * with `any` the layout for oneDNN to choose. */
static dnnl_status_t conv_weights_md(const DnnlBlob *b, dnnl_memory_desc_t *md, bool any) {
  if (b->groups > 1) {
    dnnl_dims_t d = {b->groups, b->weights[0] / b->groups, b->weights[1], b->weights[2], b->weights[3]};
    return dnnl_memory_desc_init_by_tag(md, 5, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_goihw);
  }
  dnnl_dims_t d = {b->weights[0], b->weights[1], b->weights[2], b->weights[3]};
  return dnnl_memory_desc_init_by_tag(md, 4, d, dnnl_f32, any ? dnnl_format_tag_any : dnnl_oihw);
}

static int make_conv(DnnlState *s, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                     const void *const *weights, dnnl_primitive_desc_t *pd) {
  const DnnlBlob *b = &s->b;
  dnnl_memory_desc_t any, bias;
  dnnl_post_ops_t ops = NULL;
  dnnl_primitive_attr_t attr = NULL;
  int ok = 0;
  TRY(conv_weights_md(b, &any, true));
  dnnl_dims_t bd = {b->weights[0]};
  TRY(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_a));
  dnnl_dims_t strides = {b->stride[0], b->stride[1]}, dil = {b->dilation[0] - 1, b->dilation[1] - 1};
  dnnl_dims_t pl = {b->pad_l[0], b->pad_l[1]}, pr = {b->pad_r[0], b->pad_r[1]};
  dnnl_convolution_desc_t cd;
  TRY(dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, dnnl_convolution_direct, src, &any,
                                                  b->has_bias ? &bias : NULL, dst, strides, dil, pl, pr));
  TRY(dnnl_post_ops_create(&ops));
  if (b->has_sum) TRY(dnnl_post_ops_append_sum(ops, 1.0f));
  if (b->eltwise == DNNL_BLOB_ELTWISE_RELU) TRY(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
  if (b->eltwise == DNNL_BLOB_ELTWISE_CLIP)
    TRY(dnnl_post_ops_append_eltwise(ops, 1.0f, dnnl_eltwise_clip, b->clip_lo, b->clip_hi));
  TRY(dnnl_primitive_attr_create(&attr));
  TRY(dnnl_primitive_attr_set_post_ops(attr, ops));
  TRY(dnnl_primitive_desc_create(pd, &cd, attr, s->engine, NULL));
  dnnl_memory_desc_t user;
  TRY(conv_weights_md(b, &user, false));
  if (!reorder_to(s, &user, dnnl_primitive_desc_query_md(*pd, dnnl_query_weights_md, 0), weights[b->p_weights]))
    goto fail;
  if (b->has_bias) TRY(dnnl_memory_create(&s->bias, &bias, s->engine, (void *)weights[b->p_bias]));
  ok = 1;
fail:
  if (attr) dnnl_primitive_attr_destroy(attr);
  if (ops) dnnl_post_ops_destroy(ops);
  return ok;
}

static int make_pool(DnnlState *s, const dnnl_memory_desc_t *src, const dnnl_memory_desc_t *dst,
                     dnnl_primitive_desc_t *pd) {
  const DnnlBlob *b = &s->b;
  dnnl_alg_kind_t alg = b->kind == DNNL_BLOB_MAX_POOL  ? dnnl_pooling_max
                        : b->count_include_pad         ? dnnl_pooling_avg_include_padding
                                                       : dnnl_pooling_avg_exclude_padding;
  dnnl_dims_t strides = {b->stride[0], b->stride[1]}, kernel = {b->kernel[0], b->kernel[1]};
  dnnl_dims_t dil = {b->dilation[0] - 1, b->dilation[1] - 1};
  dnnl_dims_t pl = {b->pad_l[0], b->pad_l[1]}, pr = {b->pad_r[0], b->pad_r[1]};
  dnnl_pooling_v2_desc_t desc;
  if (dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, alg, src, dst, strides, kernel, dil, pl, pr) !=
      dnnl_success)
    return 0;
  return dnnl_primitive_desc_create(pd, &desc, NULL, s->engine, NULL) == dnnl_success;
}

static const dnnl_format_tag_t k_plain[5] = {dnnl_format_tag_undef, dnnl_a, dnnl_ab, dnnl_abc, dnnl_abcd};

/* Matmul over plain row-major tensors; a constant B goes into the layout
 * oneDNN prefers once, here; the bias is [1, ..., N]. */
static int make_matmul(DnnlState *s, const void *const *weights, dnnl_primitive_desc_t *pd) {
  const DnnlBlob *b = &s->b;
  int nd = b->ndims;
  dnnl_memory_desc_t a, w, y, bias;
  dnnl_dims_t ad, wd, yd, bd;
  for (int d = 0; d < nd; d++) ad[d] = b->src[d], wd[d] = b->weights[d], yd[d] = b->dst[d], bd[d] = 1;
  bd[nd - 1] = b->dst[nd - 1];
  if (dnnl_memory_desc_init_by_tag(&a, nd, ad, dnnl_f32, k_plain[nd]) != dnnl_success ||
      dnnl_memory_desc_init_by_tag(&w, nd, wd, dnnl_f32, b->weights_const ? dnnl_format_tag_any : k_plain[nd]) !=
          dnnl_success ||
      dnnl_memory_desc_init_by_tag(&y, nd, yd, dnnl_f32, k_plain[nd]) != dnnl_success ||
      dnnl_memory_desc_init_by_tag(&bias, nd, bd, dnnl_f32, k_plain[nd]) != dnnl_success)
    return 0;
  dnnl_matmul_desc_t md;
  if (dnnl_matmul_desc_init(&md, &a, &w, b->has_bias ? &bias : NULL, &y) != dnnl_success ||
      dnnl_primitive_desc_create(pd, &md, NULL, s->engine, NULL) != dnnl_success)
    return 0;
  if (b->weights_const) {
    dnnl_memory_desc_t user;
    if (dnnl_memory_desc_init_by_tag(&user, nd, wd, dnnl_f32, k_plain[nd]) != dnnl_success ||
        !reorder_to(s, &user, dnnl_primitive_desc_query_md(*pd, dnnl_query_weights_md, 0), weights[b->p_weights]))
      return 0;
  } else if (dnnl_memory_create(&s->weights, &w, s->engine, DNNL_MEMORY_NONE) != dnnl_success) {
    return 0;
  }
  if (b->has_bias && dnnl_memory_create(&s->bias, &bias, s->engine, (void *)weights[b->p_bias]) != dnnl_success)
    return 0;
  s->src_md = a;
  s->dst_md = y;
  return 1;
}

static int init(const void *blob, size_t size, const void *const *weights, int32_t nparams, void **state) {
  if (size != sizeof(DnnlBlob)) return 2;
  DnnlState *s = calloc(1, sizeof *s);
  if (!s) return 3;
  memcpy(&s->b, blob, sizeof s->b);
  const DnnlBlob *b = &s->b;
  dnnl_primitive_desc_t pd = NULL;
  if (b->version != DNNL_BLOB_VERSION || b->p_src < 0 || b->p_src >= nparams || b->p_dst < 0 || b->p_dst >= nparams)
    goto fail;
  TRY(dnnl_engine_create(&s->engine, dnnl_cpu, 0));
  TRY(dnnl_stream_create(&s->stream, s->engine, dnnl_stream_default_flags));
  dnnl_dims_t sd = {b->src[0], b->src[1], b->src[2], b->src[3]}, dd = {b->dst[0], b->dst[1], b->dst[2], b->dst[3]};
  const dnnl_memory_desc_t *src = &s->src_md, *dst = &s->dst_md;
  if (b->kind != DNNL_BLOB_MATMUL) { /* NCHW activations */
    TRY(dnnl_memory_desc_init_by_tag(&s->src_md, 4, sd, dnnl_f32, dnnl_nchw));
    TRY(dnnl_memory_desc_init_by_tag(&s->dst_md, 4, dd, dnnl_f32, dnnl_nchw));
  }
  if (b->kind == DNNL_BLOB_MATMUL) {
    if (b->ndims < 2 || b->ndims > 4 || b->p_weights < 0 || b->p_weights >= nparams) goto fail;
    if ((b->weights_const && !weights[b->p_weights]) || (b->has_bias && !weights[b->p_bias])) goto fail;
    if (!make_matmul(s, weights, &pd)) goto fail; /* replaces src_md and dst_md */
  } else if (b->kind == DNNL_BLOB_CONV) {
    if (b->p_weights < 0 || b->p_weights >= nparams || !weights[b->p_weights]) goto fail;
    if (b->has_bias && (b->p_bias < 0 || b->p_bias >= nparams || !weights[b->p_bias])) goto fail;
    if (!make_conv(s, src, dst, weights, &pd)) goto fail;
  } else if (!make_pool(s, src, dst, &pd)) {
    goto fail;
  }
  TRY(dnnl_primitive_create(&s->prim, pd));
  TRY(dnnl_memory_create(&s->src, &s->src_md, s->engine, DNNL_MEMORY_NONE));
  TRY(dnnl_memory_create(&s->dst, &s->dst_md, s->engine, DNNL_MEMORY_NONE));
  s->dst_bytes = dnnl_memory_desc_get_size(&s->dst_md);
  dnnl_primitive_desc_destroy(pd);
  *state = s;
  return 0;
fail:
  if (pd) dnnl_primitive_desc_destroy(pd);
  release(s);
  return 1;
}

static int run(void *state, void *const *data, void *workspace) {
  (void)workspace;
  DnnlState *s = state;
  const DnnlBlob *b = &s->b;
  if (dnnl_memory_set_data_handle(s->src, data[b->p_src]) != dnnl_success ||
      dnnl_memory_set_data_handle(s->dst, data[b->p_dst]) != dnnl_success)
    return 1;
  if (b->kind == DNNL_BLOB_MATMUL && !b->weights_const &&
      dnnl_memory_set_data_handle(s->weights, data[b->p_weights]) != dnnl_success)
    return 1;
  /* The residual Add as a sum post-op: the convolution adds onto dst. */
  if (b->has_sum && data[b->p_sum] != data[b->p_dst]) memcpy(data[b->p_dst], data[b->p_sum], s->dst_bytes);
  dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, s->src}, {DNNL_ARG_DST, s->dst}};
  int n = 2;
  if (s->weights) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, s->weights};
  if (s->bias) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, s->bias};
  if (dnnl_primitive_execute(s->prim, s->stream, n, args) != dnnl_success) return 1;
  return dnnl_stream_wait(s->stream) != dnnl_success;
}

static const loom_byoc_runtime k_runtime = {LOOM_BYOC_ABI_VERSION, init, run, release};

const loom_byoc_runtime *loom_byoc_dnnl_runtime(void);
const loom_byoc_runtime *loom_byoc_dnnl_runtime(void) { return &k_runtime; }

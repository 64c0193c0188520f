/* The oneDNN back end's blob: what its build-time half (src/byoc/backend_dnnl.c,
 * in the compiler) tells its run-time half (dnnl_runtime.c, the library
 * libloom_byoc_dnnl_rt.so that an artifact loads) about one region. Plain
 * data of the same build on both sides; `version` guards the layout. */
#ifndef LOOM_BYOC_DNNL_BLOB_H
#define LOOM_BYOC_DNNL_BLOB_H

#include <stdint.h>

enum {
  DNNL_BLOB_VERSION = 1,
  DNNL_BLOB_CONV = 1,     /* 2-D convolution, NCHW, groups; bias, sum and eltwise post-ops */
  DNNL_BLOB_MAX_POOL = 2,
  DNNL_BLOB_AVG_POOL = 3, /* count_include_pad decides the algorithm */
  DNNL_BLOB_MATMUL = 4,   /* rank 2..4 (batch dims broadcast), optional bias over the last axis */
  DNNL_BLOB_ELTWISE_NONE = 0,
  DNNL_BLOB_ELTWISE_RELU = 1,
  DNNL_BLOB_ELTWISE_CLIP = 2,
};

typedef struct DnnlBlob {
  int32_t version, kind;
  int32_t ndims;             /* of src, weights (matmul) and dst: 4 for conv and pools */
  int64_t src[4], dst[4];    /* NCHW extents; matmul: [..., M, K] and [..., M, N] */
  int64_t weights[4];        /* conv: [K, C/groups, kh, kw] (ONNX's OIHW); matmul: [..., K, N] */
  int64_t kernel[2], stride[2], dilation[2], pad_l[2], pad_r[2]; /* dilation as ONNX's (1: none) */
  int64_t groups;
  int32_t has_bias, has_sum, eltwise, count_include_pad;
  int32_t weights_const; /* matmul: B is a constant (reordered at init), else read per call */
  float clip_lo, clip_hi;
  /* The region's parameters (inputs, then outputs): which is which; -1 none. */
  int32_t p_src, p_weights, p_bias, p_sum, p_dst;
} DnnlBlob;

/* The runtime entry's name (loom/loom_byoc.h: loom_byoc_runtime_fn). */
#define DNNL_RUNTIME_ENTRY "loom_byoc_dnnl_runtime"

#endif

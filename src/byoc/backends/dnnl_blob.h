/* The oneDNN back end's blob: what its build-time half (src/byoc/backend_dnnl.c,
 * in the compiler) tells its run-time half (dnnl_runtime.c, the library
 * libloom_byoc_dnnl_rt.so that an artifact loads) about one region: a
 * header, the values (tensors) the region's primitives read and write,
 * then the primitives in execution order. Plain data of the same build on
 * both sides; `version` guards the layout.
 *
 * A value is a region parameter (data[param], dense row-major: the layout
 * at the region's boundary) or internal (in the workspace, in whatever
 * layout the primitive that writes it chose: oneDNN's blocked formats
 * stay blocked between two primitives of a region). */
#ifndef LOOM_BYOC_DNNL_BLOB_H
#define LOOM_BYOC_DNNL_BLOB_H

#include <stddef.h>
#include <stdint.h>

enum {
  DNNL_BLOB_VERSION = 2,
  DNNL_BLOB_CONV = 1,     /* 2-D convolution, NCHW, groups; bias, sum and eltwise post-ops */
  DNNL_BLOB_MAX_POOL = 2,
  DNNL_BLOB_AVG_POOL = 3, /* count_include_pad decides the algorithm */
  DNNL_BLOB_MATMUL = 4,   /* rank 2..4 (batch dims broadcast), optional bias over the last axis */
  DNNL_BLOB_INNER_PRODUCT = 5, /* Gemm with constant B: [M, K] x B -> [M, N], bias, eltwise post-op */
  DNNL_BLOB_ELTWISE_NONE = 0,
  DNNL_BLOB_ELTWISE_RELU = 1,
  DNNL_BLOB_ELTWISE_CLIP = 2,
};

typedef struct DnnlBlobHeader {
  int32_t version;
  int32_t nvalues, nops;
  int32_t plan_threads; /* the thread count the workspace was planned for */
  /* Scratchpads plus internal tensors, as the compiler's plan sized them
   * (what the artifact's workspace holds for this kernel). */
  uint64_t workspace_bytes;
} DnnlBlobHeader;

typedef struct DnnlValue {
  int32_t param; /* the region parameter; -1: internal */
  int32_t ndims;
  int64_t dims[4];
} DnnlValue;

typedef struct DnnlOp {
  int32_t kind;
  /* Values: the primary input, the output, the residual added by a sum
   * post-op (-1 none), a matmul's runtime B (-1 when B is a constant). */
  int32_t src, dst, sum, rt_weights;
  /* Parameters holding constants: weights and bias (-1 none). */
  int32_t p_weights, p_bias;
  int32_t ndims;          /* of the primitive's src, weights (matmul) and dst */
  int64_t src_dims[4], dst_dims[4]; /* as the primitive sees them (a matmul flattens A's rows) */
  int64_t weights[4];     /* conv: [K, C/groups, kh, kw] (OIHW); matmul: [..., K, N]; inner product: [N, K] */
  int32_t trans_b;        /* inner product: B is [N, K] (Gemm transB=1), else [K, N] */
  float alpha, beta;      /* inner product: Gemm's, folded into weights and bias at init */
  int64_t kernel[2], stride[2], dilation[2], pad_l[2], pad_r[2]; /* dilation as ONNX's (1: none) */
  int64_t groups;
  int32_t count_include_pad, eltwise;
  float clip_lo, clip_hi;
} DnnlOp;

/* The blob: the header, values[nvalues], ops[nops]. */
static inline size_t dnnl_blob_size(int32_t nvalues, int32_t nops) {
  return sizeof(DnnlBlobHeader) + (size_t)nvalues * sizeof(DnnlValue) + (size_t)nops * sizeof(DnnlOp);
}

/* The runtime entry's name (loom/loom_byoc.h: loom_byoc_runtime_fn). */
#define DNNL_RUNTIME_ENTRY "loom_byoc_dnnl_runtime"

/* The planner the compiler calls (in codegen's child process) from the
 * runtime library: builds the region's primitive descriptors for
 * num_threads threads and writes the workspace they need (scratchpads and
 * internal tensors) into the header. 0 on success; else a message in
 * errbuf. */
#define DNNL_PLAN_ENTRY "loom_byoc_dnnl_plan"
typedef int (*dnnl_plan_fn)(void *blob, size_t blob_size, int32_t num_threads, char *errbuf, size_t errlen);

/* The implementation oneDNN picks for a conv, matmul or inner product
 * (only op's kind, geometry, bias and whether B is a constant are read) on
 * this CPU under the ISA cap it runs with (ONEDNN_MAX_CPU_ISA), written into
 * impl ("jit:avx2", "gemm:jit"): the compiler asks before it claims one.
 * 0 on success. */
#define DNNL_IMPL_ENTRY "loom_byoc_dnnl_impl"
typedef int (*dnnl_impl_fn)(const DnnlOp *op, char *impl, size_t len);

#endif

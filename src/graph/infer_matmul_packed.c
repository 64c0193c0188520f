/* Inference for MatMulPacked, Loom's product with a constant B stored in
 * column panels (produced by pass_pack_matmul.c):
 *
 *   MatMulPacked(A, Bp) {n}: A [..., M, K] (rank >= 2); Bp [P, K, b] with
 *     P >= ceil(n / b) (pass_pack_matmul gives a GEMV an even P); output [..., M, n] with
 *       Y[..., i, j] = sum_k A[..., i, k] * Bp[j / b, k, j % b]
 *     Bp[p, k, c] holds B[k, p * b + c]; the columns from n up to P * b
 *     are zero padding that the product never reads. */
#include "graph/infer_internal.h"

loom_status infer_matmul_packed(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2 || n->inputs[0] < 0 || n->inputs[1] < 0)
    return infer_fail(g, n, err, "expected inputs A and Bp, got %d inputs", n->ninputs);
  int64_t cols = graph_attr_int(n, "n", -1);
  if (cols < 1) return infer_fail(g, n, err, "attribute n (the number of columns) must be at least 1, got %lld", (long long)cols);
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *a = infer_input(g, n, 0), *bp = infer_input(g, n, 1);
  if (a->rank < 2 || a->rank > INFER_MAX_RANK)
    return infer_fail(g, n, err, "A \"%s\" has rank %d, expected 2 to %d", a->name, a->rank, INFER_MAX_RANK);
  if (bp->rank != 3) return infer_fail(g, n, err, "Bp \"%s\" has rank %d, expected 3 (panels, K, panel width)", bp->name, bp->rank);
  if (!dtype_eq(a->dtype, bp->dtype)) return infer_fail(g, n, err, "A \"%s\" and Bp \"%s\" differ in dtype", a->name, bp->name);
  int64_t ka = a->dims[a->rank - 1], kb = bp->dims[1], panels = bp->dims[0], width = bp->dims[2];
  if (ka >= 0 && kb >= 0 && ka != kb)
    return infer_fail(g, n, err, "inner extents differ: A \"%s\" gives %lld, Bp \"%s\" gives %lld", a->name, (long long)ka,
                      bp->name, (long long)kb);
  if (panels >= 0 && width >= 0 && (width < 1 || panels < (cols + width - 1) / width))
    return infer_fail(g, n, err, "Bp \"%s\" has %lld panels of %lld columns, expected ceil(%lld / %lld) or more", bp->name,
                      (long long)panels, (long long)width, (long long)cols, (long long)width);
  int64_t dims[INFER_MAX_RANK];
  for (int d = 0; d < a->rank - 1; d++) dims[d] = a->dims[d];
  dims[a->rank - 1] = cols;
  infer_set(g, n, 0, a->dtype, a->rank, dims);
  return LOOM_OK;
}

/* Inference for the signal-processing ops (window functions, DFT, STFT,
 * MelWeightMatrix) and Det. Sizes that ONNX passes as tensors (a window's
 * length, DFT's axis and dft_length, STFT's frame_step and frame_length,
 * MelWeightMatrix's bin counts) decide the output shape, so they must be
 * compile-time constants; when they are not, the outputs stay unknown. */
#include "graph/infer_internal.h"

#include <string.h>

/* Scalar (or 1-element) constant integer operand k; false when absent or
 * not constant. */
static bool const_scalar(const Graph *g, const GraphNode *n, int k, int64_t *out) {
  const GraphValue *v = infer_input(g, n, k);
  int64_t *vals;
  int cnt;
  if (!v || !infer_const_ints(g, n->inputs[k], &vals, &cnt) || cnt != 1) return false;
  *out = vals[0];
  return true;
}

/* The output dtype attribute (a Loom dtype name the importer wrote). */
static loom_status out_dtype(const Graph *g, const GraphNode *n, LoomError *err, DType *dt) {
  const char *s = graph_attr_string(n, "output_datatype", "f32");
  if (!dtype_parse(s, dt)) return infer_fail(g, n, err, "output_datatype \"%s\" is not a dtype", s);
  return LOOM_OK;
}

/* BlackmanWindow / HammingWindow / HannWindow(size) -> [size]. */
loom_status infer_window(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1) return infer_fail(g, n, err, "expected one input (size)");
  DType dt;
  loom_status st = out_dtype(g, n, err, &dt);
  if (st) return st;
  int64_t size;
  if (!const_scalar(g, n, 0, &size)) {
    infer_set(g, n, 0, dt, 1, (int64_t[]){-1});
    return LOOM_OK;
  }
  if (size < 1) return infer_fail(g, n, err, "window size %lld must be positive", (long long)size);
  infer_set(g, n, 0, dt, 1, &size);
  return LOOM_OK;
}

/* DFT(input, dft_length?, axis?) (opset 20 form; the importer moves the
 * older axis attribute to input 2). */
loom_status infer_dft(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 1) return infer_fail(g, n, err, "expected an input");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (!dtype_is_float(x->dtype)) return infer_fail(g, n, err, "input must be a float tensor");
  if (x->rank < 2 || x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "input has rank %d, expected at least 2", x->rank);
  int64_t last = x->dims[x->rank - 1];
  if (last >= 0 && last != 1 && last != 2)
    return infer_fail(g, n, err, "the last extent must be 1 (real) or 2 (complex), got %lld", (long long)last);
  int64_t axis = -2, len = -1, dims[INFER_MAX_RANK];
  if (infer_input(g, n, 2) && !const_scalar(g, n, 2, &axis)) goto unknown;
  if (infer_input(g, n, 1) && !const_scalar(g, n, 1, &len)) goto unknown;
  int ax;
  loom_status st = infer_axis(g, n, err, axis, x->rank, &ax);
  if (st) return st;
  if (ax == x->rank - 1) return infer_fail(g, n, err, "axis must not be the last (real/imaginary) axis");
  bool inverse = graph_node_int(n, "inverse") != 0, onesided = graph_node_int(n, "onesided") != 0;
  int64_t e = x->dims[ax];
  if (e < 0) goto unknown;
  if (len < 0 && infer_input(g, n, 1) == NULL) len = inverse && onesided ? 2 * (e - 1) : e;
  if (len < 1) return infer_fail(g, n, err, "dft_length %lld must be positive", (long long)len);
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  dims[ax] = onesided && !inverse ? len / 2 + 1 : len;
  dims[x->rank - 1] = inverse && onesided ? 1 : 2;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
unknown:
  for (int d = 0; d < x->rank; d++) dims[d] = -1;
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

/* STFT(signal [B, L, 1|2], frame_step, window? [W], frame_length?) ->
 * [B, frames, bins, 2]. */
loom_status infer_stft(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs < 2) return infer_fail(g, n, err, "expected signal and frame_step");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *w = infer_input(g, n, 2);
  if (!dtype_is_float(x->dtype)) return infer_fail(g, n, err, "signal must be a float tensor");
  if (x->rank != 3) return infer_fail(g, n, err, "signal has rank %d, expected 3 [batch, length, 1 or 2]", x->rank);
  if (x->dims[2] >= 0 && x->dims[2] != 1 && x->dims[2] != 2)
    return infer_fail(g, n, err, "signal's last extent must be 1 or 2, got %lld", (long long)x->dims[2]);
  int64_t unknown[4] = {x->dims[0], -1, -1, 2}, step, fl = -1;
  if (!const_scalar(g, n, 1, &step) || (infer_input(g, n, 3) && !const_scalar(g, n, 3, &fl)) || x->dims[1] < 0) {
    infer_set(g, n, 0, x->dtype, 4, unknown);
    return LOOM_OK;
  }
  if (w && w->rank >= 0 && w->rank != 1) return infer_fail(g, n, err, "window must be 1-D");
  if (fl < 0 && w) {
    if (w->rank < 0 || w->dims[0] < 0) {
      infer_set(g, n, 0, x->dtype, 4, unknown);
      return LOOM_OK;
    }
    fl = w->dims[0];
  }
  if (fl < 0) fl = x->dims[1];
  if (w && w->rank == 1 && w->dims[0] >= 0 && w->dims[0] != fl)
    return infer_fail(g, n, err, "window length %lld differs from frame_length %lld", (long long)w->dims[0], (long long)fl);
  if (step < 1) return infer_fail(g, n, err, "frame_step %lld must be positive", (long long)step);
  if (fl < 1 || fl > x->dims[1])
    return infer_fail(g, n, err, "frame_length %lld must be in 1..%lld (the signal length)", (long long)fl, (long long)x->dims[1]);
  bool onesided = graph_node_int(n, "onesided") != 0;
  int64_t dims[4] = {x->dims[0], 1 + (x->dims[1] - fl) / step, onesided ? fl / 2 + 1 : fl, 2};
  infer_set(g, n, 0, x->dtype, 4, dims);
  return LOOM_OK;
}

/* MelWeightMatrix(num_mel_bins, dft_length, sample_rate, lower_edge_hertz,
 * upper_edge_hertz) -> [dft_length / 2 + 1, num_mel_bins]. */
loom_status infer_mel_weight_matrix(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 5) return infer_fail(g, n, err, "expected 5 inputs");
  DType dt;
  loom_status st = out_dtype(g, n, err, &dt);
  if (st) return st;
  int64_t bins, len;
  if (!const_scalar(g, n, 0, &bins) || !const_scalar(g, n, 1, &len)) {
    infer_set(g, n, 0, dt, 2, (int64_t[]){-1, -1});
    return LOOM_OK;
  }
  if (bins < 1 || len < 1) return infer_fail(g, n, err, "num_mel_bins and dft_length must be positive");
  infer_set(g, n, 0, dt, 2, (int64_t[]){len / 2 + 1, bins});
  return LOOM_OK;
}

/* Det(X [..., M, M]) -> [...]. */
loom_status infer_det(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 1) return infer_fail(g, n, err, "expected one input");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (!dtype_is_float(x->dtype)) return infer_fail(g, n, err, "input must be a float tensor");
  if (x->rank < 2) return infer_fail(g, n, err, "input has rank %d, expected at least 2", x->rank);
  int64_t m = x->dims[x->rank - 1], m2 = x->dims[x->rank - 2];
  if (m >= 0 && m2 >= 0 && m != m2)
    return infer_fail(g, n, err, "the last two extents (%lld, %lld) must be equal", (long long)m2, (long long)m);
  infer_set(g, n, 0, x->dtype, x->rank - 2, x->dims);
  return LOOM_OK;
}

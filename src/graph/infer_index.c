/* Inference for the indexing and rearrangement ops: GatherElements,
 * GatherND, ScatterElements/ScatterND, OneHot, Trilu, EyeLike,
 * DepthToSpace/SpaceToDepth, ReverseSequence, CenterCropPad and Einsum
 * (whose equation inference rewrites into the explicit, letters-only form
 * the compute definition reads). Formulas follow the ONNX specification. */
#include "graph/infer_internal.h"
#include "graph/pass_internal.h" /* graph_attr_make_string */

#include <ctype.h>
#include <string.h>

static loom_status need_int_indices(Graph *g, GraphNode *n, LoomError *err, const GraphValue *idx) {
  if (!dtype_is_int(idx->dtype)) return infer_fail(g, n, err, "indices \"%s\" must be integers", idx->name);
  return LOOM_OK;
}

loom_status infer_gather_elements(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs data and indices");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *idx = infer_input(g, n, 1);
  loom_status st = need_int_indices(g, n, err, idx);
  if (st) return st;
  if (idx->rank != x->rank || x->rank < 1)
    return infer_fail(g, n, err, "indices have rank %d, data %d (expected equal, >= 1)", idx->rank, x->rank);
  int axis;
  if ((st = infer_axis(g, n, err, graph_node_int(n, "axis"), x->rank, &axis))) return st;
  infer_set(g, n, 0, x->dtype, idx->rank, idx->dims);
  return LOOM_OK;
}

loom_status infer_gather_nd(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs data and indices");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 1)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *idx = infer_input(g, n, 1);
  loom_status st = need_int_indices(g, n, err, idx);
  if (st) return st;
  int64_t b = graph_node_int(n, "batch_dims");
  if (idx->rank < 1 || b < 0 || b >= x->rank || b >= idx->rank)
    return infer_fail(g, n, err, "batch_dims %lld does not fit data rank %d and indices rank %d", (long long)b, x->rank,
                      idx->rank);
  int64_t q = idx->dims[idx->rank - 1];
  if (q < 0) return LOOM_OK;
  if (q < 1 || q > x->rank - b)
    return infer_fail(g, n, err, "indices' last extent %lld must be in 1..%lld", (long long)q, (long long)(x->rank - b));
  int64_t dims[INFER_MAX_RANK];
  int r = 0;
  for (int k = 0; k < idx->rank - 1; k++) dims[r++] = idx->dims[k];
  for (int k = (int)(b + q); k < x->rank; k++) {
    if (r == INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
    dims[r++] = x->dims[k];
  }
  infer_set(g, n, 0, x->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_scatter(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3) return infer_fail(g, n, err, "expected inputs data, indices and updates");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0), *u = infer_input(g, n, 2);
  if (infer_known(g, n, 1)) {
    loom_status st = need_int_indices(g, n, err, infer_input(g, n, 1));
    if (st) return st;
  }
  if (u->dtype.bits && !dtype_eq(u->dtype, x->dtype))
    return infer_fail(g, n, err, "updates \"%s\" and data differ in dtype", u->name);
  const char *red = graph_node_string(n, "reduction");
  if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
    return infer_fail(g, n, err, "reduction \"%s\" is not none, add, mul, max or min", red);
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_one_hot(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 3) return infer_fail(g, n, err, "expected inputs indices, depth and values");
  if (!infer_known(g, n, 0) || !infer_known(g, n, 2)) return LOOM_OK;
  const GraphValue *idx = infer_input(g, n, 0), *vals = infer_input(g, n, 2);
  int r = idx->rank + 1, axis;
  if (r > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  loom_status st = infer_axis(g, n, err, graph_node_int(n, "axis"), r, &axis);
  if (st) return st;
  const GraphTensor *dt = graph_value_constant(g, n->inputs[1]);
  int64_t depth = -1;
  if (dt) {
    if (graph_tensor_numel(dt) != 1) return infer_fail(g, n, err, "depth must be a single value");
    depth = (int64_t)graph_tensor_get_f64(dt, 0);
    if (depth < 1) return infer_fail(g, n, err, "depth %lld must be positive", (long long)depth);
  }
  int64_t dims[INFER_MAX_RANK];
  for (int k = 0, o = 0; k < r; k++) dims[k] = k == axis ? depth : idx->dims[o++];
  infer_set(g, n, 0, vals->dtype, r, dims);
  return LOOM_OK;
}

loom_status infer_trilu(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank < 2) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected >= 2", x->name, x->rank);
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_eye_like(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank != 2) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected 2", x->name, x->rank);
  DType t = x->dtype;
  const char *name = graph_attr_string(n, "dtype", NULL);
  if (name && !dtype_parse(name, &t)) return infer_fail(g, n, err, "dtype \"%s\" is not a dtype", name);
  infer_set(g, n, 0, t, 2, x->dims);
  return LOOM_OK;
}

/* DepthToSpace and SpaceToDepth. */
loom_status infer_depth_to_space(Graph *g, GraphNode *n, LoomError *err) {
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int64_t b = graph_attr_int(n, "blocksize", 0);
  if (x->rank != 4) return infer_fail(g, n, err, "input \"%s\" has rank %d, expected 4", x->name, x->rank);
  if (b < 1 || b > (1 << 16)) return infer_fail(g, n, err, "blocksize %lld is out of range", (long long)b);
  if (n->op == GRAPH_OP_DEPTH_TO_SPACE) {
    const char *mode = graph_node_string(n, "mode");
    if (strcmp(mode, "DCR") && strcmp(mode, "CRD")) return infer_fail(g, n, err, "mode \"%s\" is not DCR or CRD", mode);
  }
  bool d2s = n->op == GRAPH_OP_DEPTH_TO_SPACE;
  int64_t dims[4] = {x->dims[0], x->dims[1], x->dims[2], x->dims[3]};
  for (int k = 1; k < 4; k++) {
    if (dims[k] < 0) continue;
    int64_t f = k == 1 ? b * b : b;
    bool grow = (k == 1) != d2s; /* d2s: C shrinks, H and W grow */
    if (!grow && dims[k] % f) return infer_fail(g, n, err, "extent %lld of axis %d does not divide by %lld", (long long)dims[k], k, (long long)f);
    if (grow && !infer_mul(dims[k], f, &dims[k])) return infer_fail(g, n, err, "extent overflow");
    if (!grow) dims[k] /= f;
  }
  infer_set(g, n, 0, x->dtype, 4, dims);
  return LOOM_OK;
}

loom_status infer_reverse_sequence(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs input and sequence_lens");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  int b, t;
  loom_status st;
  if (x->rank < 2) return infer_fail(g, n, err, "input must have rank >= 2");
  if ((st = infer_axis(g, n, err, graph_node_int(n, "batch_axis"), x->rank, &b)) ||
      (st = infer_axis(g, n, err, graph_node_int(n, "time_axis"), x->rank, &t)))
    return st;
  if (b == t) return infer_fail(g, n, err, "batch_axis and time_axis are the same axis");
  infer_set(g, n, 0, x->dtype, x->rank, x->dims);
  return LOOM_OK;
}

loom_status infer_center_crop_pad(Graph *g, GraphNode *n, LoomError *err) {
  if (n->ninputs != 2) return infer_fail(g, n, err, "expected inputs input_data and shape");
  if (!infer_known(g, n, 0)) return LOOM_OK;
  const GraphValue *x = infer_input(g, n, 0);
  if (x->rank > INFER_MAX_RANK) return infer_fail(g, n, err, "rank too large");
  int64_t dims[INFER_MAX_RANK], *shape;
  int ns, na;
  const int64_t *axes = infer_attr_ints(n, "axes", &na);
  if (!infer_const_ints(g, n->inputs[1], &shape, &ns)) {
    for (int k = 0; k < x->rank; k++) dims[k] = axes ? x->dims[k] : -1;
    for (int k = 0; axes && k < na; k++) {
      int ax;
      loom_status st = infer_axis(g, n, err, axes[k], x->rank, &ax);
      if (st) return st;
      dims[ax] = -1;
    }
    infer_set(g, n, 0, x->dtype, x->rank, dims);
    return LOOM_OK;
  }
  if (ns != (axes ? na : x->rank)) return infer_fail(g, n, err, "shape has %d entries, expected %d", ns, axes ? na : x->rank);
  memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
  for (int k = 0; k < ns; k++) {
    int ax = k;
    if (axes) {
      loom_status st = infer_axis(g, n, err, axes[k], x->rank, &ax);
      if (st) return st;
    }
    if (shape[k] < 0) return infer_fail(g, n, err, "shape[%d] = %lld is negative", k, (long long)shape[k]);
    dims[ax] = shape[k];
  }
  infer_set(g, n, 0, x->dtype, x->rank, dims);
  return LOOM_OK;
}

/* ---- Einsum ---- */

enum { EIN_MAX_TERMS = 16 };

typedef struct EinTermText {
  const char *s;
  int len;
} EinTermText;

/* Letters of term t with its "..." expanded into `ell` (right-aligned: a
 * term with e ellipsis axes takes the last e of them). */
static int expand_term(EinTermText t, int e, const char *ell, int ne, char *out) {
  int o = 0;
  for (int k = 0; k < t.len; k++) {
    if (t.s[k] == '.') {
      for (int j = 0; j < e; j++) out[o++] = ell[ne - e + j];
      k += 2;
    } else {
      out[o++] = t.s[k];
    }
  }
  out[o] = 0;
  return o;
}

/* Letters in term and whether it holds a well-formed "..."; -1 when bad. */
static int term_letters(EinTermText t, bool *ell) {
  int letters = 0;
  *ell = false;
  for (int k = 0; k < t.len; k++) {
    if (t.s[k] == '.') {
      if (*ell || k + 2 >= t.len || t.s[k + 1] != '.' || t.s[k + 2] != '.') return -1;
      *ell = true;
      k += 2;
    } else if (isalpha((unsigned char)t.s[k])) {
      letters++;
    } else {
      return -1;
    }
  }
  return letters;
}

loom_status infer_einsum(Graph *g, GraphNode *n, LoomError *err) {
  const char *eq0 = graph_attr_string(n, "equation", NULL);
  if (!eq0) return infer_fail(g, n, err, "attribute \"equation\" is missing");
  if (n->ninputs < 1 || n->ninputs > EIN_MAX_TERMS) return infer_fail(g, n, err, "expected 1..%d inputs", EIN_MAX_TERMS);
  for (int i = 0; i < n->ninputs; i++)
    if (!infer_known(g, n, i)) return LOOM_OK;
  size_t len = strlen(eq0);
  char *eq = ARENA_ARRAY(g->arena, char, len + 1);
  int m = 0;
  for (size_t k = 0; k < len; k++)
    if (!isspace((unsigned char)eq0[k])) eq[m++] = eq0[k];
  eq[m] = 0;
  const char *arrow = strstr(eq, "->");
  int lhs = arrow ? (int)(arrow - eq) : m;
  EinTermText terms[EIN_MAX_TERMS + 1];
  int nt = 0;
  for (int st = 0, k = 0; k <= lhs; k++) {
    if (k < lhs && eq[k] != ',') continue;
    if (nt == EIN_MAX_TERMS) return infer_fail(g, n, err, "too many terms in \"%s\"", eq0);
    terms[nt].s = eq + st, terms[nt].len = k - st, nt++;
    st = k + 1;
  }
  if (nt != n->ninputs) return infer_fail(g, n, err, "equation \"%s\" has %d terms for %d inputs", eq0, nt, n->ninputs);
  /* Ellipsis width, and letters no term uses (for the ellipsis axes). */
  bool used[128] = {false};
  for (int k = 0; k < m; k++) used[(unsigned char)eq[k]] = true;
  int ne = 0, e[EIN_MAX_TERMS];
  for (int i = 0; i < nt; i++) {
    bool ell;
    int letters = term_letters(terms[i], &ell);
    const GraphValue *x = infer_input(g, n, i);
    if (letters < 0 || (!ell && letters != x->rank) || letters > x->rank)
      return infer_fail(g, n, err, "term %d of \"%s\" does not fit input \"%s\" of rank %d", i, eq0, x->name, x->rank);
    e[i] = ell ? x->rank - letters : 0;
    if (e[i] > ne) ne = e[i];
  }
  char ell[INFER_MAX_RANK];
  for (int j = 0, c = 0; j < ne; j++) {
    while (c < 52 && used[c < 26 ? 'A' + c : 'a' + c - 26]) c++;
    if (c == 52) return infer_fail(g, n, err, "no letters left for the \"...\" axes of \"%s\"", eq0);
    ell[j] = (char)(c < 26 ? 'A' + c : 'a' + c - 26);
    c++;
  }
  /* The explicit equation and each letter's extent. */
  char *canon = ARENA_ARRAY(g->arena, char, (size_t)(nt + 2) * (INFER_MAX_RANK + 1) + 4);
  int cl = 0, count[128] = {0};
  int64_t extent[128];
  for (int k = 0; k < 128; k++) extent[k] = 1;
  for (int i = 0; i < nt; i++) {
    char buf[INFER_MAX_RANK + 1];
    int r = expand_term(terms[i], e[i], ell, ne, buf);
    const GraphValue *x = infer_input(g, n, i);
    for (int d = 0; d < r; d++) {
      unsigned char l = (unsigned char)buf[d];
      int64_t ext = x->dims[d];
      if (ext >= 0 && extent[l] != 1 && ext != 1 && ext != extent[l])
        return infer_fail(g, n, err, "axis '%c' of \"%s\" has extents %lld and %lld", l, eq0, (long long)extent[l],
                          (long long)ext);
      if (ext < 0 || ext > extent[l] || extent[l] < 0) extent[l] = ext < 0 || extent[l] < 0 ? -1 : ext;
      count[l]++;
    }
    memcpy(canon + cl, buf, (size_t)r);
    cl += r;
    canon[cl++] = i == nt - 1 ? '-' : ',';
  }
  canon[cl++] = '>';
  char out[INFER_MAX_RANK + 1];
  int ro = 0;
  if (arrow) {
    EinTermText t = {arrow + 2, (int)strlen(arrow + 2)};
    bool has_ell;
    int letters = term_letters(t, &has_ell);
    if (letters < 0 || letters + (has_ell ? ne : 0) > INFER_MAX_RANK)
      return infer_fail(g, n, err, "cannot parse the output of \"%s\"", eq0);
    ro = expand_term(t, has_ell ? ne : 0, ell, ne, out);
  } else {
    for (int j = 0; j < ne; j++) out[ro++] = ell[j];
    for (int c = 0; c < 128; c++)
      if (isalpha(c) && count[c] == 1 && !memchr(ell, c, (size_t)ne) && ro < INFER_MAX_RANK) out[ro++] = (char)c;
  }
  int64_t dims[INFER_MAX_RANK];
  for (int d = 0; d < ro; d++) {
    unsigned char l = (unsigned char)out[d];
    if (!count[l] || memchr(out, l, (size_t)d))
      return infer_fail(g, n, err, "output axis '%c' of \"%s\" is repeated or in no input", l, eq0);
    dims[d] = extent[l];
    canon[cl++] = (char)l;
  }
  canon[cl] = 0;
  graph_node_set_attr(g, n, graph_attr_make_string(g, "equation", canon));
  infer_set(g, n, 0, infer_input(g, n, 0)->dtype, ro, dims);
  return LOOM_OK;
}

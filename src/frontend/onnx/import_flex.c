/* FlexAttention (domain ai.onnx.preview, opset 1) by import-time expansion.
 *
 * The node becomes the ops of its ONNX function body, each converted like
 * any other node:
 *
 *   K, V   -> repeated per query head when kv heads < q heads (GQA:
 *             Unsqueeze + Expand + Reshape; skipped when the head counts
 *             are known to be equal)
 *   s      =  sqrt(scale), scale defaulting to 1/sqrt(head_size), as T
 *   Score  =  MatMul(Q * s, Transpose(K * s)), cast to the softmax
 *             precision (softmax_precision; by default float32 for
 *             float16/bfloat16 inputs, else T)
 *   Score  =  score_mod(Score)   (the graph inlined, if given)
 *   Prob   =  Softmax(Score, axis=-1)
 *   Prob   =  prob_mod(Prob)     (likewise)
 *   Y      =  MatMul(Prob, V), computed in the softmax precision and cast
 *             back to T
 *
 * Values get the prefix "<node>/flex/"; the mod graphs' values
 * "<node>/score_mod/" and "<node>/prob_mod/" (onnx_inline_graph). */
#include "frontend/onnx/import_internal.h"

#include <string.h>

typedef struct Flex {
  Importer *im;
  const OnnxNode *n;
  const char *prefix;
  int64_t opset; /* the model's, for the mod graphs */
  loom_status st;
} Flex;

bool onnx_is_flex_attention(const OnnxNode *n) {
  return !strcmp(n->domain, "ai.onnx.preview") && !strcmp(n->op_type, "FlexAttention");
}

static OnnxAttr attr_int(const char *name, int64_t v) {
  OnnxAttr a = {.name = name, .type = ONNX_ATTR_INT, .i = v, .has_i = true};
  return a;
}

static OnnxAttr attr_ints(Flex *f, const char *name, const int64_t *v, int n) {
  OnnxAttr a = {.name = name, .type = ONNX_ATTR_INTS};
  a.ints.items = ARENA_ARRAY(f->im->scratch, int64_t, n);
  memcpy(a.ints.items, v, sizeof(int64_t) * (size_t)n);
  a.ints.n = a.ints.cap = n;
  return a;
}

/* Converts one node of the expansion; `out` is a local name (prefixed) or,
 * when `final`, the FlexAttention node's own output. Returns the output's
 * name ("" once an error is set). */
static const char *emit(Flex *f, const char *op, const char *out, bool final, const char **ins, int nins,
                        const OnnxAttr *attrs, int nattrs) {
  if (f->st) return "";
  Arena *a = f->im->scratch;
  const char *name = final ? out : arena_printf(a, "%s%s", f->prefix, out);
  const OnnxNode *n =
      onnx_node_new(a, arena_printf(a, "%s%s", f->prefix, out), op, ins, nins, name, attrs, nattrs);
  f->st = onnx_convert_node(f->im, n);
  return f->st ? "" : name;
}

#define IN ONNX_NAMES
#define OP1(f, op, out, ...) emit(f, op, out, false, IN(__VA_ARGS__), NULL, 0)

static const char *shape_slice(Flex *f, const char *x, const char *out, int64_t start, int64_t end) {
  OnnxAttr at[2] = {attr_int("start", start), attr_int("end", end)};
  return emit(f, "Shape", out, false, IN(x), at, 2);
}

static const char *constant(Flex *f, const char *what, DType dt, int rank, int64_t dims0, double v) {
  Graph *g = f->im->g;
  GraphTensor *t = graph_tensor_new(g->arena, dt, rank, &dims0);
  graph_tensor_set_f64(t, 0, v);
  ValueId id = graph_add_constant(g, arena_printf(g->arena, "%s%s", f->prefix, what), t);
  namemap_put(&f->im->names, g->values[id].name, id);
  return g->values[id].name;
}

/* K or V with each kv head repeated q_heads / kv_heads times, as in the
 * ONNX function: [B, Hkv, S, D] -> [B, Hkv, 1, S, D] -> [B, Hkv, R, S, D]
 * -> [B, Hq, S, D]. */
static const char *repeat_heads(Flex *f, const char *x, const char *tag, const char *axis2, const char *const *dims) {
  const char *head = shape_slice(f, x, arena_printf(f->im->scratch, "%sHeadSize", tag), 3, 4);
  OnnxAttr cat = attr_int("axis", 0);
  const char *un = OP1(f, "Unsqueeze", arena_printf(f->im->scratch, "%sUnsqueezed", tag), x, axis2);
  const char *eshape = emit(f, "Concat", arena_printf(f->im->scratch, "%sExpandShape", tag), false,
                            IN(dims[0], dims[2], dims[3], dims[4], head), &cat, 1);
  const char *ex = OP1(f, "Expand", arena_printf(f->im->scratch, "%sExpanded", tag), un, eshape);
  const char *ashape = emit(f, "Concat", arena_printf(f->im->scratch, "%sAlignedShape", tag), false,
                            IN(dims[0], dims[1], dims[4], head), &cat, 1);
  return OP1(f, "Reshape", arena_printf(f->im->scratch, "%sAligned", tag), ex, ashape);
}

static const OnnxAttr *find_attr(const OnnxNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (n->attrs[k].name && !strcmp(n->attrs[k].name, name)) return &n->attrs[k];
  return NULL;
}

/* Inlines the score_mod / prob_mod graph (if any) on x. */
static const char *apply_mod(Flex *f, const char *x, const char *attr) {
  const OnnxAttr *a = find_attr(f->n, attr);
  if (f->st || !a) return x;
  if (!a->g || a->g->ninputs != 1 || a->g->noutputs != 1) {
    f->st = err_set(f->im->err, LOOM_ERR_INVALID_ARG, "FlexAttention (node \"%s\"): %s must be a graph with one input and one output",
                    f->n->name, attr);
    return "";
  }
  ValueId in = namemap_get(&f->im->names, x), out;
  f->im->opset = f->opset;
  f->st = onnx_inline_graph(f->im, f->n, a->g, arena_printf(f->im->scratch, "%s/%s/", f->n->name, attr), &in, 1, &out);
  f->im->opset = ONNX_MAX_OPSET;
  return f->st ? "" : f->im->g->values[out].name;
}

static bool known_heads(const Graph *g, ValueId v, int64_t *heads) {
  *heads = g->values[v].rank == 4 ? g->values[v].dims[1] : -1;
  return *heads > 0;
}

loom_status onnx_convert_flex(Importer *im, const OnnxNode *n) {
  Graph *g = im->g;
  if (n->ninputs != 3 || n->noutputs != 1 || !n->inputs[0][0] || !n->inputs[1][0] || !n->inputs[2][0] || !n->outputs[0][0])
    return err_set(im->err, LOOM_ERR_INVALID_ARG, "FlexAttention (node \"%s\"): takes inputs Q, K, V and has one output Y", n->name);
  ValueId qv = namemap_get(&im->names, n->inputs[0]), kv = namemap_get(&im->names, n->inputs[1]);
  for (int k = 0; k < 3; k++) {
    int rank = g->values[namemap_get(&im->names, n->inputs[k])].rank;
    if (rank >= 0 && rank != 4)
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "FlexAttention (node \"%s\"): input %d has rank %d; Q, K and V must have rank 4",
                     n->name, k, rank);
  }
  /* The expansion is written in today's ops. */
  Flex f = {.im = im, .n = n, .prefix = arena_printf(im->scratch, "%s/flex/", n->name), .opset = im->opset};
  im->opset = ONNX_MAX_OPSET;
  const char *q = n->inputs[0], *k = n->inputs[1], *v = n->inputs[2];

  int64_t qh, kh;
  if (!known_heads(g, qv, &qh) || !known_heads(g, kv, &kh) || qh != kh) {
    const char *axis2 = constant(&f, "Axis2", DT_I64, 1, 1, 2);
    const char *dims[5] = {shape_slice(&f, q, "BatchSize", 0, 1), shape_slice(&f, q, "QNumHeads", 1, 2),
                           shape_slice(&f, k, "KVNumHeads", 1, 2), NULL, shape_slice(&f, k, "KVSeqLen", 2, 3)};
    dims[3] = OP1(&f, "Div", "KVRepeat", dims[1], dims[2]);
    k = repeat_heads(&f, k, "K", axis2, dims);
    v = repeat_heads(&f, v, "V", axis2, dims);
  }

  const OnnxAttr *scale_attr = find_attr(n, "scale");
  const char *scale;
  if (scale_attr) {
    scale = constant(&f, "Scale", DT_F32, 0, 1, scale_attr->f);
  } else {
    OnnxAttr to_f32 = attr_int("to", 1);
    const char *hs = emit(&f, "Cast", "HeadSizeF", false, IN(shape_slice(&f, q, "HeadSize", 3, 4)), &to_f32, 1);
    scale = OP1(&f, "Div", "Scale", constant(&f, "One", DT_F32, 0, 1, 1.0), OP1(&f, "Sqrt", "SqrtHeadSize", hs));
  }
  const char *s = OP1(&f, "CastLike", "ScaleSqrt", OP1(&f, "Sqrt", "ScaleSqrtF32", scale), q);
  int64_t perm[4] = {0, 1, 3, 2};
  OnnxAttr pa = attr_ints(&f, "perm", perm, 4);
  const char *kt = emit(&f, "Transpose", "KTranspose", false, IN(OP1(&f, "Mul", "KScaled", k, s)), &pa, 1);
  const char *score = OP1(&f, "MatMul", "Score", OP1(&f, "Mul", "QScaled", q, s), kt);

  const OnnxAttr *sp_attr = find_attr(n, "softmax_precision");
  DType qt = g->values[qv].dtype;
  int64_t sp = sp_attr ? sp_attr->i : dtype_eq(qt, DT_F16) || dtype_eq(qt, DT_BF16) ? 1 : 0; /* 0: T itself */
  OnnxAttr to_sp = attr_int("to", sp);
  if (sp) score = emit(&f, "Cast", "SoftmaxCast", false, IN(score), &to_sp, 1);
  score = apply_mod(&f, score, "score_mod");
  OnnxAttr axis = attr_int("axis", -1);
  const char *prob = emit(&f, "Softmax", "Prob", false, IN(score), &axis, 1);
  prob = apply_mod(&f, prob, "prob_mod");
  if (sp) {
    const char *vsp = emit(&f, "Cast", "VSp", false, IN(v), &to_sp, 1);
    emit(&f, "CastLike", n->outputs[0], true, IN(OP1(&f, "MatMul", "YSp", prob, vsp), q), NULL, 0);
  } else {
    emit(&f, "MatMul", n->outputs[0], true, IN(prob, v), NULL, 0);
  }
  im->opset = f.opset;
  return f.st;
}

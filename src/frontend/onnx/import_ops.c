/* Per-op conversion from ONNX nodes to graph nodes: attribute type checks,
 * the defaults of absent attributes (from the graph op table, graph/ops.c,
 * written once there), input and output counts, and the opset-dependent
 * rewrites that bring every node to the newest form. */
#include "frontend/onnx/import_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef enum { A_INT, A_FLOAT, A_STRING, A_INTS, A_FLOATS, A_TENSOR } AttrType;

/* The importer's own attribute rows. Every attribute a graph op reads is
 * declared, with its kind and ONNX default, in the graph op table
 * (graph/ops.c); rows here are only the ONNX forms the graph does not have:
 * ops with no graph op of their own, defaults of older opsets (a row with
 * min_opset/max_opset replaces the table's default there), attributes whose
 * ONNX type the importer converts, and attributes of older opsets that the
 * rewrites turn into inputs or drop. has_default rows are filled in when
 * the model leaves them out; required rows must be present. */
typedef struct AttrSpec {
  const char *op, *name;
  AttrType type;
  bool required, has_default;
  int64_t i;
  double f;
  const char *s;
  int min_opset, max_opset;
} AttrSpec;

#define REQ(op, name, t) {op, name, t, true, false, 0, 0, NULL, 0, 99}
#define OPT(op, name, t) {op, name, t, false, false, 0, 0, NULL, 0, 99}
#define DEF_I(op, name, v) {op, name, A_INT, false, true, v, 0, NULL, 0, 99}
#define DEF_F(op, name, v) {op, name, A_FLOAT, false, true, 0, v, NULL, 0, 99}
#define DEF_S(op, name, v) {op, name, A_STRING, false, true, 0, 0, v, 0, 99}

static const AttrSpec attr_specs[] = {
    /* Ops with no graph op of their own. */
    DEF_I("Scatter", "axis", 0), OPT("Upsample", "scales", A_FLOATS), DEF_S("Upsample", "mode", "nearest"),
    /* Defaults of older opsets, in place of the graph table's newest one. */
    {"Softmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12},
    {"LogSoftmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12},
    {"Hardmax", "axis", A_INT, false, true, 1, 0, NULL, 0, 12},
    {"GridSample", "mode", A_STRING, false, true, 0, 0, "bilinear", 0, 19},
    {"RoiAlign", "coordinate_transformation_mode", A_STRING, false, true, 0, 0, "output_half_pixel", 0, 15},
    /* ONNX forms the importer converts: a dtype number becomes a dtype name. */
    REQ("Cast", "to", A_INT), OPT("BlackmanWindow", "output_datatype", A_INT),
    OPT("HammingWindow", "output_datatype", A_INT), OPT("HannWindow", "output_datatype", A_INT),
    OPT("MelWeightMatrix", "output_datatype", A_INT), REQ("BitCast", "to", A_INT), OPT("EyeLike", "dtype", A_INT),
    OPT("QuantizeLinear", "output_dtype", A_INT), OPT("QuantizeLinear", "precision", A_INT),
    OPT("DequantizeLinear", "output_dtype", A_INT),
    /* Attributes of older opsets that the rewrites below turn into inputs or drop. */
    DEF_F("BatchNormalization", "momentum", 0.9), DEF_I("BatchNormalization", "training_mode", 0),
    OPT("ReduceMin", "axes", A_INTS), OPT("ReduceProd", "axes", A_INTS), OPT("ReduceL1", "axes", A_INTS),
    OPT("ReduceL2", "axes", A_INTS), OPT("ReduceLogSum", "axes", A_INTS), OPT("ReduceLogSumExp", "axes", A_INTS),
    OPT("ReduceSumSquare", "axes", A_INTS), OPT("DFT", "axis", A_INT), OPT("TopK", "k", A_INT),
    OPT("Slice", "starts", A_INTS), OPT("Slice", "ends", A_INTS), OPT("Slice", "axes", A_INTS),
    OPT("Squeeze", "axes", A_INTS), OPT("Unsqueeze", "axes", A_INTS), OPT("ReduceMean", "axes", A_INTS),
    OPT("ReduceSum", "axes", A_INTS), OPT("ReduceMax", "axes", A_INTS), OPT("Split", "split", A_INTS),
    OPT("Pad", "pads", A_INTS), OPT("Pad", "value", A_FLOAT), OPT("Clip", "min", A_FLOAT),
    OPT("Clip", "max", A_FLOAT), OPT("Dropout", "ratio", A_FLOAT),
};

static const char *const supported_ops[] = {
    "Constant", "Upsample", /* converted, no graph op of their own */
    "Scatter",              /* ScatterElements */
};

bool onnx_op_supported(const char *op_type) {
  GraphOp op;
  if (graph_op_lookup(op_type, &op)) return true;
  for (size_t k = 0; k < sizeof supported_ops / sizeof supported_ops[0]; k++)
    if (!strcmp(op_type, supported_ops[k])) return true;
  return false;
}

const char *onnx_attr_type_name(int t) {
  switch (t) {
  case ONNX_ATTR_FLOAT: return "FLOAT";
  case ONNX_ATTR_INT: return "INT";
  case ONNX_ATTR_STRING: return "STRING";
  case ONNX_ATTR_TENSOR: return "TENSOR";
  case ONNX_ATTR_GRAPH: return "GRAPH";
  case ONNX_ATTR_FLOATS: return "FLOATS";
  case ONNX_ATTR_INTS: return "INTS";
  case ONNX_ATTR_STRINGS: return "STRINGS";
  case ONNX_ATTR_TENSORS: return "TENSORS";
  case ONNX_ATTR_GRAPHS: return "GRAPHS";
  case ONNX_ATTR_SPARSE_TENSOR: return "SPARSE_TENSOR";
  default: return "UNDEFINED";
  }
}

static int onnx_attr_type(AttrType t) {
  static const int map[] = {ONNX_ATTR_INT, ONNX_ATTR_FLOAT, ONNX_ATTR_STRING, ONNX_ATTR_INTS, ONNX_ATTR_FLOATS, ONNX_ATTR_TENSOR};
  return map[t];
}

int onnx_attr_effective_type(const OnnxAttr *a) {
  if (a->type) return a->type;
  if (a->has_f) return ONNX_ATTR_FLOAT;
  if (a->has_i) return ONNX_ATTR_INT;
  if (a->has_s) return ONNX_ATTR_STRING;
  if (a->t) return ONNX_ATTR_TENSOR;
  if (a->g) return ONNX_ATTR_GRAPH;
  if (a->floats.n) return ONNX_ATTR_FLOATS;
  if (a->ints.n) return ONNX_ATTR_INTS;
  if (a->nstrings) return ONNX_ATTR_STRINGS;
  return ONNX_ATTR_UNDEFINED;
}

static const OnnxAttr *find_attr(const OnnxNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (n->attrs[k].name && !strcmp(n->attrs[k].name, name)) return &n->attrs[k];
  return NULL;
}

typedef struct NodeCtx {
  Importer *im;
  const OnnxNode *n;
  ValueId ins[16];
  int nins;
  GraphAttr attrs[32];
  int nattrs;
} NodeCtx;

static loom_status node_fail(NodeCtx *c, loom_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static loom_status node_fail(NodeCtx *c, loom_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return err_set(c->im->err, st, "node \"%s\" (%s): %s", c->n->name, c->n->op_type, msg);
}

/* Converts the ONNX attribute to graph form after checking its type
 * (want: an ONNX_ATTR_* type, 0 for any). */
static loom_status convert_attr(NodeCtx *c, const OnnxAttr *a, int want, GraphAttr *out) {
  Arena *ar = c->im->g->arena;
  int t = onnx_attr_effective_type(a);
  if (want && t != want)
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" has type %s, expected %s", a->name, onnx_attr_type_name(t),
                     onnx_attr_type_name(want));
  memset(out, 0, sizeof *out);
  out->name = arena_strdup(ar, a->name);
  switch (t) {
  case ONNX_ATTR_INT: out->kind = GRAPH_ATTR_INT; out->i = a->i; break;
  case ONNX_ATTR_FLOAT: out->kind = GRAPH_ATTR_FLOAT; out->f = a->f; break;
  case ONNX_ATTR_STRING:
    out->kind = GRAPH_ATTR_STRING;
    out->s = a->s.data ? arena_strndup(ar, (const char *)a->s.data, a->s.len) : "";
    break;
  case ONNX_ATTR_INTS:
    out->kind = GRAPH_ATTR_INTS;
    out->n = a->ints.n;
    out->ints = arena_memdup(ar, a->ints.items ? (const void *)a->ints.items : (const void *)"", sizeof(int64_t) * (size_t)a->ints.n);
    break;
  case ONNX_ATTR_FLOATS:
    out->kind = GRAPH_ATTR_FLOATS;
    out->n = a->floats.n;
    out->floats = arena_memdup(ar, a->floats.items ? (const void *)a->floats.items : (const void *)"", sizeof(double) * (size_t)a->floats.n);
    break;
  case ONNX_ATTR_TENSOR: {
    if (!a->t) return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" has no tensor", a->name);
    char *what = arena_printf(c->im->scratch, "node \"%s\" (%s) attribute \"%s\"", c->n->name, c->n->op_type, a->name);
    out->kind = GRAPH_ATTR_TENSOR;
    out->t = onnx_tensor_to_graph(c->im, a->t, what);
    if (!out->t) return c->im->err->status;
    break;
  }
  default:
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "attribute \"%s\" of type %s is not supported", a->name, onnx_attr_type_name(t));
  }
  return LOOM_OK;
}

static const AttrSpec *find_spec(const char *op, const char *name, int64_t opset) {
  for (size_t k = 0; k < sizeof attr_specs / sizeof attr_specs[0]; k++) {
    const AttrSpec *s = &attr_specs[k];
    if (!strcmp(s->op, op) && !strcmp(s->name, name) && opset >= s->min_opset && opset <= s->max_opset) return s;
  }
  return NULL;
}

/* The graph op table's declaration of the ONNX node's attribute, NULL when
 * the node is no graph op or the op does not declare it. */
static const GraphAttrDef *find_def(const char *op_type, const char *name) {
  GraphOp op;
  return graph_op_lookup(op_type, &op) ? graph_op_attr(op, name) : NULL;
}

static int onnx_kind_type(GraphAttrKind k) {
  switch (k) {
  case GRAPH_ATTR_INT: return ONNX_ATTR_INT;
  case GRAPH_ATTR_FLOAT: return ONNX_ATTR_FLOAT;
  case GRAPH_ATTR_STRING: return ONNX_ATTR_STRING;
  case GRAPH_ATTR_INTS: return ONNX_ATTR_INTS;
  case GRAPH_ATTR_FLOATS: return ONNX_ATTR_FLOATS;
  case GRAPH_ATTR_TENSOR: return ONNX_ATTR_TENSOR;
  case GRAPH_ATTR_FRONTEND: break;
  }
  return 0;
}

/* Appends the default of an absent attribute. */
static void add_default(NodeCtx *c, const char *name, GraphAttrKind kind, int64_t i, double f, const char *s) {
  if (c->nattrs >= 32) return;
  GraphAttr *a = &c->attrs[c->nattrs++];
  memset(a, 0, sizeof *a);
  a->name = name;
  a->kind = kind;
  if (kind == GRAPH_ATTR_INT) a->i = i;
  else if (kind == GRAPH_ATTR_FLOAT) a->f = f;
  else a->s = s;
}

static void add_spec_default(NodeCtx *c, const AttrSpec *s) {
  GraphAttrKind kind = s->type == A_INT ? GRAPH_ATTR_INT : s->type == A_FLOAT ? GRAPH_ATTR_FLOAT : GRAPH_ATTR_STRING;
  add_default(c, s->name, kind, s->i, s->f, s->s);
}

/* Checks and converts all attributes, then adds defaults for absent ones:
 * first the graph op's (an older opset's row here replacing the value),
 * then the importer's own rows. */
static loom_status convert_attrs(NodeCtx *c) {
  const OnnxNode *n = c->n;
  int64_t opset = c->im->opset;
  for (int k = 0; k < n->nattrs; k++) {
    const OnnxAttr *a = &n->attrs[k];
    if (!a->name || !a->name[0]) return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute %d has no name", k);
    for (int j = 0; j < k; j++)
      if (n->attrs[j].name && !strcmp(n->attrs[j].name, a->name))
        return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" appears twice", a->name);
    const AttrSpec *spec = find_spec(n->op_type, a->name, opset);
    const GraphAttrDef *def = spec ? NULL : find_def(n->op_type, a->name);
    /* Attributes Loom does not read (doc hints, training-only knobs) are
     * dropped unless they would change the result. */
    if (!spec && !def) {
      int t = onnx_attr_effective_type(a);
      if (t == ONNX_ATTR_GRAPH || t == ONNX_ATTR_GRAPHS || t == ONNX_ATTR_TENSORS || t == ONNX_ATTR_SPARSE_TENSOR ||
          t == ONNX_ATTR_STRINGS || t == ONNX_ATTR_UNDEFINED)
        continue;
    }
    if (c->nattrs >= 32) return node_fail(c, LOOM_ERR_UNSUPPORTED, "more than 32 attributes");
    int want = spec ? onnx_attr_type(spec->type) : def ? onnx_kind_type(def->kind) : 0;
    loom_status st = convert_attr(c, a, want, &c->attrs[c->nattrs]);
    if (st) return st;
    c->nattrs++;
  }
  GraphOp op;
  if (graph_op_lookup(n->op_type, &op)) {
    for (const GraphAttrDef *d = graph_op_info(op)->attrs; d->name; d++) {
      if (find_attr(n, d->name)) continue;
      const AttrSpec *older = find_spec(n->op_type, d->name, opset);
      if (older && older->has_default) add_spec_default(c, older);
      else if (d->presence == GRAPH_ATTR_REQUIRED)
        return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing", d->name);
      else if (d->presence == GRAPH_ATTR_DEFAULT) add_default(c, d->name, d->kind, d->i, d->f, d->s);
    }
  }
  for (size_t k = 0; k < sizeof attr_specs / sizeof attr_specs[0]; k++) {
    const AttrSpec *s = &attr_specs[k];
    if (strcmp(s->op, n->op_type) || opset < s->min_opset || opset > s->max_opset) continue;
    if (find_attr(n, s->name) || find_def(n->op_type, s->name)) continue;
    if (s->required) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing", s->name);
    if (s->has_default) add_spec_default(c, s);
  }
  return LOOM_OK;
}

static GraphAttr *take_attr(NodeCtx *c, const char *name) {
  for (int k = 0; k < c->nattrs; k++) {
    if (!strcmp(c->attrs[k].name, name)) {
      GraphAttr *a = &c->attrs[k];
      return a;
    }
  }
  return NULL;
}

static void drop_attr(NodeCtx *c, const char *name) {
  for (int k = 0; k < c->nattrs; k++) {
    if (!strcmp(c->attrs[k].name, name)) {
      c->attrs[k] = c->attrs[--c->nattrs];
      return;
    }
  }
}

static ValueId const_ints(NodeCtx *c, const char *what, const int64_t *v, int count) {
  Graph *g = c->im->g;
  int64_t dims[1] = {count};
  GraphTensor *t = graph_tensor_new(g->arena, DT_I64, 1, dims);
  for (int k = 0; k < count; k++) graph_tensor_set_i64(t, k, v[k]);
  return graph_add_constant(g, arena_printf(g->arena, "%s.%s", c->n->name[0] ? c->n->name : c->n->outputs[0], what), t);
}

static ValueId const_floats(NodeCtx *c, const char *what, const double *v, int count, bool scalar) {
  Graph *g = c->im->g;
  int64_t dims[1] = {count};
  GraphTensor *t = graph_tensor_new(g->arena, DT_F32, scalar ? 0 : 1, dims);
  for (int k = 0; k < count; k++) graph_tensor_set_f64(t, k, v[k]);
  return graph_add_constant(g, arena_printf(g->arena, "%s.%s", c->n->name[0] ? c->n->name : c->n->outputs[0], what), t);
}

/* Moves an INTS attribute into input slot `slot` (old opset -> new form). */
static loom_status attr_to_input(NodeCtx *c, const char *name, int slot, bool required) {
  GraphAttr *a = take_attr(c, name);
  if (!a) {
    if (required) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"%s\" is missing", name);
    return LOOM_OK;
  }
  ValueId v = const_ints(c, name, a->ints, a->n);
  drop_attr(c, name);
  while (c->nins < slot) c->ins[c->nins++] = GRAPH_NO_VALUE;
  if (slot < c->nins) c->ins[slot] = v;
  else c->ins[c->nins++] = v;
  return LOOM_OK;
}

static loom_status convert_constant(NodeCtx *c) {
  const OnnxNode *n = c->n;
  Graph *g = c->im->g;
  if (n->noutputs != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected 1 output, got %d", n->noutputs);
  if (n->nattrs != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected exactly one value attribute, got %d", n->nattrs);
  const OnnxAttr *a = &n->attrs[0];
  const char *name = a->name ? a->name : "";
  int t = onnx_attr_effective_type(a);
  GraphTensor *tensor = NULL;
  int64_t one = 1;
  if (!strcmp(name, "value") && t == ONNX_ATTR_TENSOR && a->t) {
    tensor = onnx_tensor_to_graph(c->im, a->t, arena_printf(c->im->scratch, "node \"%s\" (Constant) value", n->name));
    if (!tensor) return c->im->err->status;
  } else if (!strcmp(name, "value_float") && t == ONNX_ATTR_FLOAT) {
    tensor = graph_tensor_new(g->arena, DT_F32, 0, NULL);
    graph_tensor_set_f64(tensor, 0, a->f);
  } else if (!strcmp(name, "value_int") && t == ONNX_ATTR_INT) {
    tensor = graph_tensor_new(g->arena, DT_I64, 0, NULL);
    graph_tensor_set_i64(tensor, 0, a->i);
  } else if (!strcmp(name, "value_floats") && t == ONNX_ATTR_FLOATS) {
    one = a->floats.n;
    tensor = graph_tensor_new(g->arena, DT_F32, 1, &one);
    for (int k = 0; k < a->floats.n; k++) graph_tensor_set_f64(tensor, k, a->floats.items[k]);
  } else if (!strcmp(name, "value_ints") && t == ONNX_ATTR_INTS) {
    one = a->ints.n;
    tensor = graph_tensor_new(g->arena, DT_I64, 1, &one);
    for (int k = 0; k < a->ints.n; k++) graph_tensor_set_i64(tensor, k, a->ints.items[k]);
  } else if (!strcmp(name, "sparse_value") || !strcmp(name, "value_string") || !strcmp(name, "value_strings")) {
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "attribute \"%s\" is not supported", name);
  } else {
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"%s\" of type %s is not a Constant value", name, onnx_attr_type_name(t));
  }
  ValueId v = graph_add_constant(g, n->outputs[0], tensor);
  namemap_put(&c->im->names, g->values[v].name, v);
  return LOOM_OK;
}

/* Rewrites old-opset forms into the newest one. Opset numbers are those
 * where the ONNX operator changed signature. */
static loom_status rewrite_opset_forms(NodeCtx *c, const char **op_type) {
  const char *op = *op_type;
  int64_t opset = c->im->opset;
  loom_status st = LOOM_OK;
  if (!strcmp(op, "Slice") && opset < 10) {
    if (c->nins != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld Slice takes 1 input", (long long)opset);
    if ((st = attr_to_input(c, "starts", 1, true)) || (st = attr_to_input(c, "ends", 2, true)) ||
        (st = attr_to_input(c, "axes", 3, false)))
      return st;
  } else if ((!strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) && opset < 13) {
    if ((st = attr_to_input(c, "axes", 1, !strcmp(op, "Unsqueeze")))) return st;
  } else if (!strcmp(op, "ReduceSum") && opset < 13) {
    if ((st = attr_to_input(c, "axes", 1, false))) return st;
  } else if (!strncmp(op, "Reduce", 6) && strcmp(op, "ReduceSum") && opset < 18) {
    /* Every Reduce* but ReduceSum (above) took axes as an attribute before 18. */
    if ((st = attr_to_input(c, "axes", 1, false))) return st;
  } else if (!strcmp(op, "Split") && opset < 13) {
    if ((st = attr_to_input(c, "split", 1, false))) return st;
  } else if (!strcmp(op, "Pad") && opset < 11) {
    if ((st = attr_to_input(c, "pads", 1, true))) return st;
    GraphAttr *v = take_attr(c, "value");
    if (v) {
      c->ins[c->nins++] = const_floats(c, "value", &v->f, 1, true);
      drop_attr(c, "value");
    }
  } else if (!strcmp(op, "Clip") && opset < 11) {
    GraphAttr *mn = take_attr(c, "min");
    double lo = mn ? mn->f : -3.4028234663852886e38;
    GraphAttr *mx = take_attr(c, "max");
    double hi = mx ? mx->f : 3.4028234663852886e38;
    c->ins[c->nins++] = const_floats(c, "min", &lo, 1, true);
    c->ins[c->nins++] = const_floats(c, "max", &hi, 1, true);
    drop_attr(c, "min");
    drop_attr(c, "max");
  } else if (!strcmp(op, "Upsample") || (!strcmp(op, "Resize") && opset < 11)) {
    /* Upsample(X, scales) and Resize-10(X, scales) are Resize(X, roi, scales). */
    if (!strcmp(op, "Upsample") && opset >= 10)
      return node_fail(c, LOOM_ERR_INVALID_ARG, "Upsample was removed in opset 10 (model uses opset %lld)", (long long)opset);
    GraphAttr *sc = take_attr(c, "scales");
    if (sc) {
      c->ins[c->nins++] = const_floats(c, "scales", sc->floats, sc->n, false);
      drop_attr(c, "scales");
    }
    if (c->nins != 2) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected X and scales");
    c->ins[2] = c->ins[1];
    c->ins[1] = GRAPH_NO_VALUE;
    c->nins = 3;
    GraphAttr *mode = take_attr(c, "mode");
    if (mode && !strcmp(mode->s, "linear")) mode->s = "linear";
    /* Before opset 11 the sampling grid was "asymmetric". */
    GraphAttr ctm = {0};
    ctm.name = "coordinate_transformation_mode";
    ctm.kind = GRAPH_ATTR_STRING;
    ctm.s = "asymmetric";
    drop_attr(c, "coordinate_transformation_mode");
    c->attrs[c->nattrs++] = ctm;
    GraphAttr nm = {0};
    nm.name = "nearest_mode";
    nm.kind = GRAPH_ATTR_STRING;
    nm.s = "floor";
    drop_attr(c, "nearest_mode");
    c->attrs[c->nattrs++] = nm;
    *op_type = "Resize";
  } else if (!strcmp(op, "Scatter")) {
    /* Scatter (opsets 9-10) is ScatterElements without a reduction. */
    *op_type = "ScatterElements";
  } else if (!strcmp(op, "TopK") && opset < 10) {
    /* TopK-1 took K as an attribute. */
    GraphAttr *k = take_attr(c, "k");
    if (!k) return node_fail(c, LOOM_ERR_INVALID_ARG, "required attribute \"k\" is missing");
    int64_t kv = k->i;
    drop_attr(c, "k");
    if (c->nins != 1) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld TopK takes 1 input", (long long)opset);
    c->ins[c->nins++] = const_ints(c, "k", &kv, 1);
  } else if ((!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax") || !strcmp(op, "Hardmax")) && opset < 13) {
    /* Before opset 13, Softmax, LogSoftmax and Hardmax flattened to 2-D at `axis`. */
    GraphAttr a = {0};
    a.name = "coerce_2d";
    a.kind = GRAPH_ATTR_INT;
    a.i = 1;
    c->attrs[c->nattrs++] = a;
  } else if (!strcmp(op, "Dropout")) {
    drop_attr(c, "ratio");
    drop_attr(c, "seed");
    if (c->nins > 1) c->nins = 1; /* ratio and training_mode inputs: inference only */
  } else if (!strcmp(op, "BatchNormalization")) {
    /* spatial=0 (opsets 7-8) gives per-activation parameters, [C, D1, ...]:
     * read per channel they would silently mean something else. */
    GraphAttr *sp = take_attr(c, "spatial");
    for (int k = 1; sp && sp->kind == GRAPH_ATTR_INT && !sp->i && k < c->nins; k++) {
      const GraphTensor *t = c->ins[k] >= 0 ? c->im->g->values[c->ins[k]].constant : NULL;
      if (!t || t->rank != 1)
        return node_fail(c, LOOM_ERR_UNSUPPORTED,
                         "attribute \"spatial\" is 0 and input %d is not a 1-D constant: per-activation statistics "
                         "are not supported",
                         k);
    }
    drop_attr(c, "spatial");
    drop_attr(c, "momentum");
    drop_attr(c, "consumed_inputs");
    drop_attr(c, "is_test");
    GraphAttr *tm = take_attr(c, "training_mode");
    if (tm && tm->i) return node_fail(c, LOOM_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
    drop_attr(c, "training_mode");
  }
  return LOOM_OK;
}

/* An ONNX dtype-number attribute (Cast's "to") becomes a Loom dtype name;
 * an absent one becomes `dflt` (NULL: left absent). `what` starts the
 * message for an unsupported dtype. */
static loom_status convert_dtype_attr(NodeCtx *c, const char *name, const char *dflt, const char *what) {
  GraphAttr *to = take_attr(c, name);
  if (!to) {
    if (!dflt || c->nattrs >= 32) return LOOM_OK;
    GraphAttr a = {0};
    a.name = name;
    a.kind = GRAPH_ATTR_STRING;
    a.s = dflt;
    c->attrs[c->nattrs++] = a;
    return LOOM_OK;
  }
  DType dt;
  if (!onnx_dtype_to_loom((int)to->i, &dt))
    return node_fail(c, LOOM_ERR_UNSUPPORTED, "%s %s (%lld) is not supported", what, onnx_dtype_name((int)to->i),
                     (long long)to->i);
  char buf[16];
  to->kind = GRAPH_ATTR_STRING;
  to->s = arena_strdup(c->im->g->arena, dtype_str(dt, buf));
  return LOOM_OK;
}

static loom_status convert_cast(NodeCtx *c) { return convert_dtype_attr(c, "to", NULL, "cast to"); }

/* QuantizeLinear / DequantizeLinear: output_dtype and precision become dtype
 * names; 0 (UNDEFINED) means not given. */
static loom_status convert_quant(NodeCtx *c) {
  static const char *const names[] = {"output_dtype", "precision"};
  for (int k = 0; k < 2; k++) {
    GraphAttr *a = take_attr(c, names[k]);
    if (a && a->kind == GRAPH_ATTR_INT && a->i == 0) drop_attr(c, names[k]);
    else if (a) {
      loom_status st = convert_dtype_attr(c, names[k], NULL, names[k]);
      if (st) return st;
    }
  }
  return LOOM_OK;
}

/* Sequence-model and signal ops: output_datatype becomes a Loom dtype name,
 * DFT's axis attribute (before opset 20) becomes input 2, and the RNN
 * family's activations (STRINGS) one comma-separated string. */
static loom_status rewrite_seq_forms(NodeCtx *c, const char *op) {
  if (!strcmp(op, "BlackmanWindow") || !strcmp(op, "HammingWindow") || !strcmp(op, "HannWindow") ||
      !strcmp(op, "MelWeightMatrix"))
    return convert_dtype_attr(c, "output_datatype", "f32", "output_datatype");
  if (!strcmp(op, "DFT") && c->im->opset < 20) {
    GraphAttr *ax = take_attr(c, "axis");
    int64_t axis = ax ? ax->i : 1;
    drop_attr(c, "axis");
    if (c->nins > 2) return node_fail(c, LOOM_ERR_INVALID_ARG, "opset %lld DFT takes at most 2 inputs", (long long)c->im->opset);
    while (c->nins < 2) c->ins[c->nins++] = GRAPH_NO_VALUE;
    c->ins[c->nins++] = const_ints(c, "axis", &axis, 1);
    return LOOM_OK;
  }
  if (strcmp(op, "RNN") && strcmp(op, "GRU") && strcmp(op, "LSTM")) return LOOM_OK;
  const OnnxAttr *a = find_attr(c->n, "activations");
  if (!a) return LOOM_OK;
  if (onnx_attr_effective_type(a) != ONNX_ATTR_STRINGS)
    return node_fail(c, LOOM_ERR_INVALID_ARG, "attribute \"activations\" has type %s, expected STRINGS",
                     onnx_attr_type_name(onnx_attr_effective_type(a)));
  size_t len = 1;
  for (int k = 0; k < a->nstrings; k++) len += a->strings[k].len + 1;
  char *s = ARENA_ARRAY(c->im->g->arena, char, len), *p = s;
  for (int k = 0; k < a->nstrings; k++) {
    if (k) *p++ = ',';
    if (a->strings[k].len) memcpy(p, a->strings[k].data, a->strings[k].len);
    p += a->strings[k].len;
  }
  *p = 0;
  if (c->nattrs >= 32) return node_fail(c, LOOM_ERR_UNSUPPORTED, "more than 32 attributes");
  GraphAttr g = {0};
  g.name = "activations";
  g.kind = GRAPH_ATTR_STRING;
  g.s = s;
  c->attrs[c->nattrs++] = g;
  return LOOM_OK;
}

/* The node's input (omitted trailing ones left out) or output count
 * against the op's range over all ONNX opsets. */
static loom_status check_counts(NodeCtx *c, const GraphOpInfo *info, int count, const char *what) {
  bool in = !strcmp(what, "input");
  int lo = in ? info->min_inputs : info->min_outputs, hi = in ? info->max_inputs : info->max_outputs;
  if (count >= lo && count <= hi) return LOOM_OK;
  if (hi == GRAPH_VARIADIC) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected at least %d %ss, got %d", lo, what, count);
  if (lo == hi) return node_fail(c, LOOM_ERR_INVALID_ARG, "expected %d %s%s, got %d", lo, what, lo == 1 ? "" : "s", count);
  return node_fail(c, LOOM_ERR_INVALID_ARG, "expected %d to %d %ss, got %d", lo, hi, what, count);
}

OnnxNode *onnx_node_new(Arena *a, const char *name, const char *op, const char *const *ins, int nins, const char *out,
                        const OnnxAttr *attrs, int nattrs) {
  OnnxNode *n = ARENA_NEW(a, OnnxNode);
  memset(n, 0, sizeof *n);
  n->name = name;
  n->op_type = op;
  n->domain = "";
  n->inputs = ARENA_ARRAY(a, const char *, nins > 0 ? nins : 1);
  if (nins) memcpy(n->inputs, ins, sizeof(const char *) * (size_t)nins);
  n->ninputs = nins;
  n->outputs = ARENA_ARRAY(a, const char *, 1);
  n->outputs[0] = out;
  n->noutputs = 1;
  n->attrs = ARENA_ARRAY(a, OnnxAttr, nattrs > 0 ? nattrs : 1);
  if (nattrs) memcpy(n->attrs, attrs, sizeof(OnnxAttr) * (size_t)nattrs);
  n->nattrs = nattrs;
  return n;
}

loom_status onnx_convert_node(Importer *im, const OnnxNode *n) {
  NodeCtx c;
  memset(&c, 0, sizeof c);
  c.im = im;
  c.n = n;
  if (onnx_is_flex_attention(n)) return onnx_convert_flex(im, n);
  /* Control-flow nodes keep the model's opset: their bodies are converted
   * later, node by node (import_control.c). */
  if (im->opset < ONNX_ADAPTED_OPSET && !onnx_is_control_flow(n->op_type)) return onnx_convert_legacy(im, n);
  if (!strcmp(n->op_type, "Constant")) return convert_constant(&c);
  if (n->ninputs > 12) {
    /* Variadic ops (Concat, Sum) can have many inputs; keep them. */
  }
  Graph *g = im->g;
  ValueId *ins = n->ninputs > 12 ? ARENA_ARRAY(im->scratch, ValueId, n->ninputs) : c.ins;
  for (int k = 0; k < n->ninputs; k++) {
    if (!n->inputs[k][0]) {
      ins[k] = GRAPH_NO_VALUE;
      continue;
    }
    ins[k] = namemap_get(&im->names, n->inputs[k]);
    LOOM_ASSERT(ins[k] >= 0); /* import.c checked every name */
  }
  c.nins = n->ninputs;
  if (onnx_is_control_flow(n->op_type)) return onnx_convert_control(im, n, ins, n->ninputs);
  /* Trailing omitted inputs carry no information. */
  while (c.nins > 0 && ins[c.nins - 1] == GRAPH_NO_VALUE) c.nins--;
  loom_status st = convert_attrs(&c);
  if (st) return st;
  const char *op_type = n->op_type;
  if (n->ninputs <= 12) {
    st = rewrite_opset_forms(&c, &op_type);
    if (st) return st;
  }
  if ((!strcmp(op_type, "Cast") || !strcmp(op_type, "BitCast")) && (st = convert_cast(&c))) return st;
  if (!strcmp(op_type, "EyeLike") && (st = convert_dtype_attr(&c, "dtype", NULL, "dtype"))) return st;
  if ((!strcmp(op_type, "QuantizeLinear") || !strcmp(op_type, "DequantizeLinear")) && (st = convert_quant(&c))) return st;
  if (n->ninputs <= 12 && (st = rewrite_seq_forms(&c, op_type))) return st;
  GraphOp op;
  LOOM_ASSERT(graph_op_lookup(op_type, &op));
  if ((st = check_counts(&c, graph_op_info(op), c.nins, "input")) ||
      (st = check_counts(&c, graph_op_info(op), n->noutputs, "output")))
    return st;
  ValueId outs[16];
  if (n->noutputs > 16 && strcmp(op_type, "Split"))
    return node_fail(&c, LOOM_ERR_INVALID_ARG, "too many outputs (%d)", n->noutputs);
  ValueId *outp = n->noutputs > 16 ? ARENA_ARRAY(im->scratch, ValueId, n->noutputs) : outs;
  if (n->noutputs < 1) return node_fail(&c, LOOM_ERR_INVALID_ARG, "node has no outputs");
  for (int k = 0; k < n->noutputs; k++) {
    if (!n->outputs[k][0]) {
      outp[k] = GRAPH_NO_VALUE;
      continue;
    }
    outp[k] = graph_add_value(g, n->outputs[k]);
    namemap_put(&im->names, g->values[outp[k]].name, outp[k]);
  }
  int idx = graph_add_node(g, op, n->name, ins == c.ins ? c.ins : ins, c.nins, outp, n->noutputs);
  GraphNode *gn = &g->nodes[idx];
  for (int k = 0; k < c.nattrs; k++) graph_node_set_attr(g, gn, c.attrs[k]);
  return LOOM_OK;
}

/* Control flow (If, Loop, Scan) by inlining and unrolling.
 *
 * Loom compiles static programs, so a control-flow node is resolved at
 * compile time once the values that decide it are known: If's condition,
 * Loop's trip count and condition, Scan's sequence length (a static
 * extent). The importer first records each such node as a graph node
 * holding its ONNX node (the bodies); after constant folding (and after
 * specialization to the inputs, which compiles condition inputs in, see
 * src/compile/specialize.c) onnx_inline_control_flow replaces it:
 *
 *   If    -> the taken branch's nodes
 *   Loop  -> the body once per iteration (iteration number and condition
 *            are constants; the body's condition output must fold to a
 *            constant), scan outputs stacked with Unsqueeze + Concat
 *   Scan  -> the body once per position along the scan axis (opset 8: per
 *            batch element too), scan inputs sliced with Gather, scan
 *            outputs stacked
 *
 * A body's values get the prefix "<node>/<iteration>/"; names it does not
 * define come from the enclosing body (a control-flow node inside a body
 * remembers that body's prefix in its "scope" attribute; two levels deep at
 * most) or the graph. Control flow whose deciding value stays unknown is
 * LOOM_ERR_UNSUPPORTED naming the node. */
#include "frontend/onnx/import_internal.h"

#include <stdio.h>
#include <string.h>

enum { MAX_UNROLL = 4096 };

typedef struct KeptModel {
  Arena *arena; /* the decoded model and a copy of its bytes */
} KeptModel;

static void kept_free(void *p) {
  KeptModel *k = p;
  if (k) arena_free(k->arena);
}

bool onnx_is_control_flow(const char *op_type) {
  return !strcmp(op_type, "If") || !strcmp(op_type, "Loop") || !strcmp(op_type, "Scan");
}

void onnx_keep_model(Graph *g, Arena *scratch) {
  KeptModel *k = ARENA_NEW(scratch, KeptModel);
  k->arena = scratch;
  g->frontend = k;
  g->frontend_free = kept_free;
}

/* Names a body reads from enclosing scopes (recursively through nested
 * bodies), resolved in the importer's name map: the node's implicit
 * inputs. They make those values visible as inputs to DCE and to
 * specialization (a body may read an input that decides a shape). */
static void implicit_inputs(Importer *im, const OnnxGraph *b, NameMap *local, ValueId *out, int *n, int cap) {
  for (int k = 0; k < b->ninputs; k++) namemap_put(local, b->inputs[k].name, 0);
  for (int k = 0; k < b->ninitializers; k++)
    if (b->initializers[k].name) namemap_put(local, b->initializers[k].name, 0);
  for (int i = 0; i < b->nnodes; i++)
    for (int k = 0; k < b->nodes[i].noutputs; k++) namemap_put(local, b->nodes[i].outputs[k], 0);
  for (int i = 0; i < b->nnodes; i++) {
    const OnnxNode *bn = &b->nodes[i];
    for (int k = 0; k < bn->ninputs; k++) {
      const char *name = bn->inputs[k];
      if (!name[0] || namemap_get(local, name) >= 0) continue;
      ValueId v = namemap_get(&im->names, name);
      bool seen = v < 0;
      for (int j = 0; j < *n && !seen; j++) seen = out[j] == v;
      if (!seen && *n < cap) out[(*n)++] = v;
    }
    for (int k = 0; k < bn->nattrs; k++)
      if (bn->attrs[k].g) implicit_inputs(im, bn->attrs[k].g, local, out, n, cap);
  }
}

/* What the inliner relies on: every body input and output has a name, at
 * any depth. */
static loom_status check_body(Importer *im, const OnnxNode *n, const OnnxGraph *b, int depth) {
  if (depth > 8) return err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): bodies nested too deep", n->op_type, n->name);
  for (int k = 0; k < b->ninputs; k++)
    if (!b->inputs[k].name || !b->inputs[k].name[0])
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): body input %d has no name", n->op_type, n->name, k);
  for (int k = 0; k < b->noutputs; k++)
    if (!b->outputs[k].name || !b->outputs[k].name[0])
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): body output %d has no name", n->op_type, n->name, k);
  for (int k = 0; k < b->ninitializers; k++)
    if (!b->initializers[k].name || !b->initializers[k].name[0])
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): body initializer %d has no name", n->op_type, n->name, k);
  for (int i = 0; i < b->nnodes; i++)
    for (int k = 0; k < b->nodes[i].nattrs; k++) {
      if (!b->nodes[i].attrs[k].g) continue;
      loom_status st = check_body(im, n, b->nodes[i].attrs[k].g, depth + 1);
      if (st) return st;
    }
  return LOOM_OK;
}

loom_status onnx_convert_control(Importer *im, const OnnxNode *n, const ValueId *real_ins, int nins) {
  Graph *g = im->g;
  for (int k = 0; k < n->nattrs; k++) {
    loom_status st = n->attrs[k].g ? check_body(im, n, n->attrs[k].g, 0) : LOOM_OK;
    if (st) return st;
  }
  enum { MAX_IMPLICIT = 256 };
  ValueId *ins = ARENA_ARRAY(im->scratch, ValueId, nins + MAX_IMPLICIT + 1);
  memcpy(ins, real_ins, sizeof(ValueId) * (size_t)nins);
  int nimplicit = 0;
  for (int k = 0; k < n->nattrs; k++) {
    if (!n->attrs[k].g) continue;
    NameMap local; /* each body's own names; a name map used as a set */
    namemap_init(&local, im->scratch);
    implicit_inputs(im, n->attrs[k].g, &local, ins + nins, &nimplicit, MAX_IMPLICIT + 1);
  }
  if (nimplicit > MAX_IMPLICIT)
    return err_set(im->err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): its bodies read more than %d outer values",
                   n->op_type, n->name, MAX_IMPLICIT);
  GraphOp op = !strcmp(n->op_type, "If") ? GRAPH_OP_IF : !strcmp(n->op_type, "Loop") ? GRAPH_OP_LOOP : GRAPH_OP_SCAN;
  ValueId *outs = ARENA_ARRAY(im->scratch, ValueId, n->noutputs);
  for (int k = 0; k < n->noutputs; k++) {
    outs[k] = GRAPH_NO_VALUE;
    if (!n->outputs[k][0]) continue;
    outs[k] = graph_add_value(g, n->outputs[k]);
    namemap_put(&im->names, g->values[outs[k]].name, outs[k]);
  }
  int idx = graph_add_node(g, op, n->name, ins, nins + nimplicit, outs, n->noutputs);
  GraphAttr a = {.name = "onnx_node", .kind = GRAPH_ATTR_FRONTEND, .p = n};
  graph_node_set_attr(g, &g->nodes[idx], a);
  GraphAttr ni = {.name = "num_inputs", .kind = GRAPH_ATTR_INT, .i = nins}; /* the rest are implicit */
  graph_node_set_attr(g, &g->nodes[idx], ni);
  GraphAttr o = {.name = "opset", .kind = GRAPH_ATTR_INT, .i = im->opset};
  graph_node_set_attr(g, &g->nodes[idx], o);
  return LOOM_OK;
}

/* ---- inlining ---- */

typedef struct Inliner {
  Importer im; /* g, names (every value by name), scratch = the kept arena */
  GraphNode *node; /* the control-flow node being replaced (copied: the node array moves) */
  const OnnxNode *on;
  const char *outer_scope; /* a node inside a body: that body's prefix, for the names it reads */
} Inliner;

static const OnnxGraph *body_attr(const OnnxNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (n->attrs[k].name && !strcmp(n->attrs[k].name, name)) return n->attrs[k].g;
  return NULL;
}

static const OnnxAttr *find_onnx_attr(const OnnxNode *n, const char *name) {
  for (int k = 0; k < n->nattrs; k++)
    if (n->attrs[k].name && !strcmp(n->attrs[k].name, name)) return &n->attrs[k];
  return NULL;
}

static loom_status cf_fail(Inliner *in, const char *fmt, const char *detail) {
  char msg[600];
  snprintf(msg, sizeof msg, fmt, detail);
  return err_set(in->im.err, LOOM_ERR_UNSUPPORTED, "%s (node \"%s\"): not supported: %s", in->on->op_type, in->on->name, msg);
}

static bool is_local(const OnnxGraph *b, const char *name) {
  for (int k = 0; k < b->ninputs; k++)
    if (!strcmp(b->inputs[k].name, name)) return true;
  for (int k = 0; k < b->ninitializers; k++)
    if (b->initializers[k].name && !strcmp(b->initializers[k].name, name)) return true;
  for (int i = 0; i < b->nnodes; i++)
    for (int k = 0; k < b->nodes[i].noutputs; k++)
      if (!strcmp(b->nodes[i].outputs[k], name)) return true;
  return false;
}

/* A name as the graph knows it: the body's own values carry the body's
 * prefix; others belong to the enclosing body (its prefix) or the graph. */
static const char *scoped(Inliner *in, const char *scope, const OnnxGraph *b, const char *name) {
  if (!name[0]) return name;
  if (is_local(b, name)) return arena_printf(in->im.scratch, "%s%s", scope, name);
  if (in->outer_scope) {
    const char *outer = arena_printf(in->im.scratch, "%s%s", in->outer_scope, name);
    if (namemap_get(&in->im.names, outer) >= 0) return outer;
  }
  return name;
}

/* Converts body b once: its inputs bound to `bind` (nbind of them; ONNX
 * lets a body declare fewer), its outputs returned in outs. */
static loom_status inline_body(Inliner *in, const OnnxGraph *b, const char *scope, const ValueId *bind, int nbind,
                               ValueId *outs) {
  Importer *im = &in->im;
  Graph *g = im->g;
  for (int k = 0; k < b->ninputs && k < nbind; k++)
    namemap_put(&im->names, arena_printf(im->scratch, "%s%s", scope, b->inputs[k].name), bind[k]);
  for (int k = 0; k < b->ninitializers; k++) {
    const OnnxTensor *t = &b->initializers[k];
    GraphTensor *gt = onnx_tensor_to_graph(im, t, arena_printf(im->scratch, "body initializer \"%s\"", t->name));
    if (!gt) return im->err->status;
    ValueId v = graph_add_constant(g, arena_printf(g->arena, "%s%s", scope, t->name), gt);
    namemap_put(&im->names, g->values[v].name, v);
  }
  for (int i = 0; i < b->nnodes; i++) {
    OnnxNode n = b->nodes[i];
    if (!n.name[0]) n.name = arena_printf(im->scratch, "<%s>", n.noutputs ? n.outputs[0] : n.op_type);
    n.name = arena_printf(im->scratch, "%s%s", scope, n.name);
    const char **ins = ARENA_ARRAY(im->scratch, const char *, n.ninputs);
    const char **os = ARENA_ARRAY(im->scratch, const char *, n.noutputs);
    for (int k = 0; k < n.ninputs; k++) {
      ins[k] = scoped(in, scope, b, n.inputs[k]);
      if (ins[k][0] && namemap_get(&im->names, ins[k]) < 0)
        return err_set(im->err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): body node \"%s\" reads \"%s\", which is not defined",
                       in->on->op_type, in->on->name, n.name, n.inputs[k]);
    }
    for (int k = 0; k < n.noutputs; k++) os[k] = n.outputs[k][0] ? arena_printf(im->scratch, "%s%s", scope, n.outputs[k]) : "";
    n.inputs = ins;
    n.outputs = os;
    if (onnx_is_control_flow(n.op_type) && in->outer_scope)
      return cf_fail(in, "control flow nested more than two levels deep (%s)", n.op_type);
    /* In the kept arena: a control-flow node keeps a pointer to it. */
    OnnxNode *kept = ARENA_NEW(im->scratch, OnnxNode);
    *kept = n;
    loom_status st = onnx_convert_node(im, kept);
    if (st) return st;
    if (onnx_is_control_flow(n.op_type)) {
      /* Inlined later; its bodies read this body's values by their
       * unprefixed names. */
      GraphAttr sa = {.name = "scope", .kind = GRAPH_ATTR_STRING, .s = arena_strdup(g->arena, scope)};
      graph_node_set_attr(g, &g->nodes[g->nnodes - 1], sa);
    }
  }
  for (int k = 0; k < b->noutputs; k++) {
    ValueId v = namemap_get(&im->names, scoped(in, scope, b, b->outputs[k].name));
    if (v < 0)
      return err_set(im->err, LOOM_ERR_INVALID_ARG, "%s (node \"%s\"): body output \"%s\" is not defined", in->on->op_type,
                     in->on->name, b->outputs[k].name);
    outs[k] = v;
  }
  return LOOM_OK;
}

loom_status onnx_inline_graph(Importer *im, const OnnxNode *n, const OnnxGraph *b, const char *scope, const ValueId *bind,
                              int nbind, ValueId *outs) {
  loom_status st = check_body(im, n, b, 0);
  if (!st) st = onnx_check_supported(im, b);
  if (st) return st;
  Inliner in;
  memset(&in, 0, sizeof in);
  in.im = *im;
  in.on = n;
  st = inline_body(&in, b, scope, bind, nbind, outs);
  im->names = in.im.names; /* the map may have grown */
  return st;
}

static ValueId scalar_const(Graph *g, const char *name, DType dt, int64_t v) {
  GraphTensor *t = graph_tensor_new(g->arena, dt, 0, NULL);
  graph_tensor_set_i64(t, 0, v);
  return graph_add_constant(g, name, t);
}

static ValueId add_node1(Graph *g, GraphOp op, const char *name, const ValueId *ins, int nins) {
  ValueId out = graph_add_value(g, name);
  graph_add_node(g, op, name, ins, nins, &out, 1);
  return out;
}

/* Stacks per-step values along a new axis `axis` (Unsqueeze + Concat). */
static ValueId stack_steps(Graph *g, const char *name, const ValueId *steps, int n, int64_t axis) {
  int64_t one = 1;
  GraphTensor *ax = graph_tensor_new(g->arena, DT_I64, 1, &one);
  graph_tensor_set_i64(ax, 0, axis);
  ValueId axv = graph_add_constant(g, arena_printf(g->arena, "%s/axis", name), ax);
  ValueId *un = ARENA_ARRAY(g->arena, ValueId, n);
  for (int t = 0; t < n; t++) {
    ValueId ins[2] = {steps[t], axv};
    un[t] = add_node1(g, GRAPH_OP_UNSQUEEZE, arena_printf(g->arena, "%s/step%d", name, t), ins, 2);
  }
  ValueId out = graph_add_value(g, name);
  int idx = graph_add_node(g, GRAPH_OP_CONCAT, name, un, n, &out, 1);
  GraphAttr a = {.name = "axis", .kind = GRAPH_ATTR_INT, .i = axis};
  graph_node_set_attr(g, &g->nodes[idx], a);
  return out;
}

/* The value computed for output k of the replaced node lands in its
 * original value through an Identity (graph outputs keep their names;
 * the importer's cleanup removes the copy). */
static void bind_output(Graph *g, const GraphNode *n, int k, ValueId v) {
  if (k >= n->noutputs || n->outputs[k] < 0) return;
  graph_add_node(g, GRAPH_OP_IDENTITY, g->values[n->outputs[k]].name, &v, 1, &n->outputs[k], 1);
}

static bool const_scalar_i64(const Graph *g, ValueId v, int64_t *out) {
  const GraphTensor *t = v >= 0 ? graph_value_constant(g, v) : NULL;
  if (!t || graph_tensor_numel(t) != 1) return false;
  *out = graph_tensor_get_i64(t, 0);
  return true;
}

static loom_status inline_if(Inliner *in) {
  Graph *g = in->im.g;
  int64_t cond;
  if (!const_scalar_i64(g, in->node->inputs[0], &cond))
    return cf_fail(in, "%s", "the condition is not known at compile time (run the .onnx with `loom run` to specialize on it)");
  const OnnxGraph *b = body_attr(in->on, cond ? "then_branch" : "else_branch");
  if (!b) return cf_fail(in, "missing %s", cond ? "then_branch" : "else_branch");
  if (b->noutputs != in->node->noutputs)
    return cf_fail(in, "%s", "the branch has a different number of outputs than the node");
  ValueId *outs = ARENA_ARRAY(in->im.scratch, ValueId, b->noutputs);
  const char *scope = arena_printf(in->im.scratch, "%s/%s/", in->on->name, cond ? "then" : "else");
  loom_status st = inline_body(in, b, scope, NULL, 0, outs);
  for (int k = 0; !st && k < b->noutputs; k++) bind_output(g, in->node, k, outs[k]);
  return st;
}

static loom_status inline_loop(Inliner *in) {
  Graph *g = in->im.g;
  const GraphNode *n = in->node;
  const OnnxGraph *b = body_attr(in->on, "body");
  if (!b) return cf_fail(in, "%s", "missing body");
  int ncarried = (int)graph_attr_int(n, "num_inputs", n->ninputs) - 2;
  int nscan = b->noutputs - 1 - ncarried;
  if (ncarried < 0 || nscan < 0 || b->ninputs != 2 + ncarried)
    return cf_fail(in, "%s", "the body's inputs and outputs do not match the node's");
  int64_t trip = -1, cond = 1;
  if (n->ninputs > 0 && n->inputs[0] >= 0 && !const_scalar_i64(g, n->inputs[0], &trip))
    return cf_fail(in, "%s", "the trip count is not known at compile time (run the .onnx with `loom run` to specialize on it)");
  if (n->ninputs > 1 && n->inputs[1] >= 0 && !const_scalar_i64(g, n->inputs[1], &cond))
    return cf_fail(in, "%s", "the condition is not known at compile time (run the .onnx with `loom run` to specialize on it)");
  ValueId *carried = ARENA_ARRAY(in->im.scratch, ValueId, ncarried + 2);
  for (int k = 0; k < ncarried; k++) carried[k] = n->inputs[2 + k];
  ValueId *outs = ARENA_ARRAY(in->im.scratch, ValueId, b->noutputs);
  ValueId **scans = ARENA_ARRAY(in->im.scratch, ValueId *, nscan + 1);
  for (int s = 0; s < nscan; s++) scans[s] = ARENA_ARRAY(in->im.scratch, ValueId, MAX_UNROLL);
  int64_t it = 0;
  for (; (trip < 0 || it < trip) && cond; it++) {
    if (it >= MAX_UNROLL) return cf_fail(in, "%s", "more than 4096 iterations cannot be unrolled");
    const char *scope = arena_printf(in->im.scratch, "%s/%lld/", in->on->name, (long long)it);
    ValueId *bind = ARENA_ARRAY(in->im.scratch, ValueId, ncarried + 2);
    bind[0] = scalar_const(g, arena_printf(g->arena, "%siter", scope), DT_I64, it);
    bind[1] = scalar_const(g, arena_printf(g->arena, "%scond", scope), DT_BOOL1, cond);
    for (int k = 0; k < ncarried; k++) bind[2 + k] = carried[k];
    loom_status st = inline_body(in, b, scope, bind, ncarried + 2, outs);
    if (st) return st;
    /* The next iteration needs the body's condition: fold what was just added. */
    if ((st = graph_pass_fold_constants(g, in->im.err))) return st;
    if (!const_scalar_i64(g, outs[0], &cond))
      return cf_fail(in, "%s", "the body's condition output is not known at compile time");
    for (int k = 0; k < ncarried; k++) carried[k] = outs[1 + k];
    for (int s = 0; s < nscan; s++) scans[s][it] = outs[1 + ncarried + s];
  }
  if (nscan && it == 0) return cf_fail(in, "%s", "a loop with no iterations has empty scan outputs (not supported)");
  for (int k = 0; k < ncarried; k++) bind_output(g, n, k, carried[k]);
  for (int s = 0; s < nscan; s++) {
    if (ncarried + s >= n->noutputs || n->outputs[ncarried + s] < 0) continue;
    const char *name = arena_printf(g->arena, "%s/scan%d", in->on->name, s);
    bind_output(g, n, ncarried + s, stack_steps(g, name, scans[s], (int)it, 0));
  }
  return LOOM_OK;
}

/* Gather(x, index) along axis: one slice of x without that axis. */
static ValueId take(Graph *g, const char *name, ValueId x, int64_t index, int64_t axis) {
  ValueId ins[2] = {x, scalar_const(g, arena_printf(g->arena, "%s/index", name), DT_I64, index)};
  ValueId out = graph_add_value(g, name);
  int gi = graph_add_node(g, GRAPH_OP_GATHER, name, ins, 2, &out, 1);
  GraphAttr a = {.name = "axis", .kind = GRAPH_ATTR_INT, .i = axis};
  graph_node_set_attr(g, &g->nodes[gi], a);
  return out;
}

typedef struct ScanShape {
  int nstate, nscan_in, nscan_out;
  int64_t len, *axis;
  const OnnxAttr *in_dirs, *out_dirs, *out_axes;
} ScanShape;

/* One unrolled scan over `len` steps: states and scan inputs in, final
 * states and stacked scan outputs out. */
static loom_status scan_unroll(Inliner *in, const OnnxGraph *b, const ScanShape *sh, const char *prefix,
                               const ValueId *states_in, const ValueId *scans_in, ValueId *states_out,
                               ValueId *scans_out) {
  Graph *g = in->im.g;
  int64_t len = sh->len;
  for (int k = 0; k < sh->nstate; k++) states_out[k] = states_in[k];
  ValueId *outs = ARENA_ARRAY(in->im.scratch, ValueId, b->noutputs);
  ValueId **steps = ARENA_ARRAY(in->im.scratch, ValueId *, sh->nscan_out + 1);
  for (int s = 0; s < sh->nscan_out; s++) steps[s] = ARENA_ARRAY(in->im.scratch, ValueId, len);
  for (int64_t t = 0; t < len; t++) {
    const char *scope = arena_printf(in->im.scratch, "%s/%lld/", prefix, (long long)t);
    ValueId *bind = ARENA_ARRAY(in->im.scratch, ValueId, sh->nstate + sh->nscan_in);
    for (int k = 0; k < sh->nstate; k++) bind[k] = states_out[k];
    for (int s = 0; s < sh->nscan_in; s++) {
      bool rev = sh->in_dirs && s < sh->in_dirs->ints.n && sh->in_dirs->ints.items[s];
      bind[sh->nstate + s] = take(g, arena_printf(g->arena, "%sslice%d", scope, s), scans_in[s], rev ? len - 1 - t : t,
                                  sh->axis[s]);
    }
    loom_status st = inline_body(in, b, scope, bind, sh->nstate + sh->nscan_in, outs);
    if (st) return st;
    for (int k = 0; k < sh->nstate; k++) states_out[k] = outs[k];
    for (int s = 0; s < sh->nscan_out; s++) steps[s][t] = outs[sh->nstate + s];
  }
  for (int s = 0; s < sh->nscan_out; s++) {
    if (sh->out_dirs && s < sh->out_dirs->ints.n && sh->out_dirs->ints.items[s]) /* reverse: last step first */
      for (int64_t t = 0; t < len / 2; t++) {
        ValueId tmp = steps[s][t];
        steps[s][t] = steps[s][len - 1 - t];
        steps[s][len - 1 - t] = tmp;
      }
    int64_t ax = sh->out_axes && s < sh->out_axes->ints.n ? sh->out_axes->ints.items[s] : 0;
    if (ax < 0) return cf_fail(in, "%s", "negative scan_output_axes are not supported");
    scans_out[s] = stack_steps(g, arena_printf(g->arena, "%s/scan%d", prefix, s), steps[s], (int)len, ax);
  }
  return LOOM_OK;
}

/* Opset >= 9: one scan. Opset 8: input 0 is sequence_lens (absent or all
 * the full length), every input has a leading batch axis and the scan axis
 * is 1; each batch element is its own scan, and the results are stacked
 * along the batch axis. */
static loom_status inline_scan(Inliner *in, int64_t opset) {
  Graph *g = in->im.g;
  const GraphNode *n = in->node;
  const OnnxGraph *b = body_attr(in->on, "body");
  const OnnxAttr *ns = find_onnx_attr(in->on, "num_scan_inputs");
  if (!b || !ns) return cf_fail(in, "%s", "missing body or num_scan_inputs");
  bool batched = opset < 9;
  int first = batched ? 1 : 0, nreal = (int)graph_attr_int(n, "num_inputs", n->ninputs);
  ScanShape sh = {.nscan_in = (int)ns->i, .len = -1};
  sh.nstate = nreal - first - sh.nscan_in;
  sh.nscan_out = b->noutputs - sh.nstate;
  if (sh.nscan_in < 1 || sh.nstate < 0 || sh.nscan_out < 0 || b->ninputs != sh.nstate + sh.nscan_in)
    return cf_fail(in, "%s", "the body's inputs and outputs do not match the node's");
  const OnnxAttr *in_axes = find_onnx_attr(in->on, "scan_input_axes");
  sh.in_dirs = find_onnx_attr(in->on, batched ? "directions" : "scan_input_directions");
  sh.out_dirs = find_onnx_attr(in->on, "scan_output_directions");
  sh.out_axes = find_onnx_attr(in->on, "scan_output_axes");
  sh.axis = ARENA_ARRAY(in->im.scratch, int64_t, sh.nscan_in);
  int64_t nbatch = 1;
  for (int s = 0; s < sh.nscan_in; s++) {
    const GraphValue *x = &g->values[n->inputs[first + sh.nstate + s]];
    if (!graph_value_is_static(x)) return cf_fail(in, "%s", "a scan input has no static shape");
    sh.axis[s] = batched ? 1 : in_axes && s < in_axes->ints.n ? in_axes->ints.items[s] : 0;
    if (sh.axis[s] < 0) sh.axis[s] += x->rank;
    if (sh.axis[s] < 0 || sh.axis[s] >= x->rank) return cf_fail(in, "%s", "the scan axis is out of range");
    if (sh.len >= 0 && x->dims[sh.axis[s]] != sh.len) return cf_fail(in, "%s", "the scan inputs have different lengths");
    sh.len = x->dims[sh.axis[s]];
    if (batched) nbatch = x->dims[0];
    if (batched) sh.axis[s] = 0; /* within one batch element */
  }
  if (sh.len < 1 || sh.len > MAX_UNROLL || nbatch < 1 || nbatch * sh.len > MAX_UNROLL)
    return cf_fail(in, "%s", "the sequence (times the batch) must be 1 to 4096 steps");
  if (batched && n->ninputs > 0 && n->inputs[0] >= 0) {
    const GraphTensor *lens = graph_value_constant(g, n->inputs[0]);
    for (int64_t k = 0; lens && k < graph_tensor_numel(lens); k++)
      if (graph_tensor_get_i64(lens, k) != sh.len) lens = NULL;
    if (!lens) return cf_fail(in, "%s", "sequence_lens other than the full length for every batch element");
  }
  int nout = sh.nstate + sh.nscan_out;
  ValueId *states = ARENA_ARRAY(in->im.scratch, ValueId, sh.nstate + 1);
  ValueId *scans = ARENA_ARRAY(in->im.scratch, ValueId, sh.nscan_in + 1);
  ValueId **per_batch = ARENA_ARRAY(in->im.scratch, ValueId *, nout + 1);
  for (int k = 0; k < nout; k++) per_batch[k] = ARENA_ARRAY(in->im.scratch, ValueId, nbatch);
  ValueId *res = ARENA_ARRAY(in->im.scratch, ValueId, nout + 1);
  for (int64_t bi = 0; bi < nbatch; bi++) {
    const char *prefix = batched ? arena_printf(in->im.scratch, "%s/b%lld", in->on->name, (long long)bi) : in->on->name;
    for (int k = 0; k < sh.nstate; k++)
      states[k] = batched ? take(g, arena_printf(g->arena, "%s/state%d", prefix, k), n->inputs[first + k], bi, 0)
                          : n->inputs[k];
    for (int s = 0; s < sh.nscan_in; s++) {
      ValueId x = n->inputs[first + sh.nstate + s];
      scans[s] = batched ? take(g, arena_printf(g->arena, "%s/input%d", prefix, s), x, bi, 0) : x;
    }
    loom_status st = scan_unroll(in, b, &sh, prefix, states, scans, res, res + sh.nstate);
    if (st) return st;
    for (int k = 0; k < nout; k++) per_batch[k][bi] = res[k];
  }
  for (int k = 0; k < nout; k++) {
    ValueId v = batched ? stack_steps(g, arena_printf(g->arena, "%s/batch%d", in->on->name, k), per_batch[k], (int)nbatch, 0)
                        : per_batch[k][0];
    bind_output(g, n, k, v);
  }
  return LOOM_OK;
}

loom_status onnx_inline_control_flow(Graph *g, LoomError *err) {
  if (!g->frontend) return LOOM_OK;
  KeptModel *kept = g->frontend;
  for (;;) {
    loom_status st = graph_pass_fold_constants(g, err);
    if (st) return st;
    int at = -1;
    for (int i = 0; i < g->nnodes && at < 0; i++)
      if (g->nodes[i].op == GRAPH_OP_IF || g->nodes[i].op == GRAPH_OP_LOOP || g->nodes[i].op == GRAPH_OP_SCAN) at = i;
    if (at < 0) return LOOM_OK;
    Inliner in;
    memset(&in, 0, sizeof in);
    in.im.g = g;
    in.im.scratch = kept->arena;
    in.im.err = err;
    /* Cut the control-flow node and everything after it: the body's
     * nodes are appended where it was, folding (Loop conditions) works on
     * a valid prefix, and the rest comes back after them. */
    GraphNode node = g->nodes[at];
    int ntail = g->nnodes - at - 1;
    GraphNode *tail = ARENA_ARRAY(kept->arena, GraphNode, ntail);
    memcpy(tail, &g->nodes[at + 1], sizeof *tail * (size_t)(ntail > 0 ? ntail : 0));
    g->nnodes = at;
    for (int k = 0; k < node.noutputs; k++)
      if (node.outputs[k] >= 0) g->values[node.outputs[k]].producer = -1;
    in.node = &node;
    const GraphAttr *a = graph_node_attr(&node, "onnx_node");
    LOOM_ASSERT(a && a->kind == GRAPH_ATTR_FRONTEND);
    in.on = a->p;
    in.im.opset = graph_attr_int(&node, "opset", ONNX_MAX_OPSET);
    in.outer_scope = graph_node_attr(&node, "scope") ? graph_attr_string(&node, "scope", NULL) : NULL;
    namemap_init(&in.im.names, in.im.scratch);
    for (ValueId v = 0; v < g->nvalues; v++) namemap_put(&in.im.names, g->values[v].name, v);
    /* The body's ops must be known before any of it is converted. */
    const char *bodies[] = {"then_branch", "else_branch", "body"};
    for (int k = 0; k < 3 && !st; k++) {
      const OnnxGraph *b = body_attr(in.on, bodies[k]);
      if (b) st = onnx_check_supported(&in.im, b);
    }
    if (!st) {
      if (node.op == GRAPH_OP_IF) st = inline_if(&in);
      else if (node.op == GRAPH_OP_LOOP) st = inline_loop(&in);
      else st = inline_scan(&in, in.im.opset);
    }
    graph_append_nodes(g, tail, ntail);
    if (st) return st;
  }
}

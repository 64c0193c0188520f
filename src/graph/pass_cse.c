/* Common subexpression elimination. Graph ops are pure, so two nodes with
 * the same op, attributes and inputs compute the same values: the later
 * one's uses move to the earlier one. Visiting nodes in topological order
 * makes chains collapse in one sweep (after x2 := x1, f(x2) meets f(x1)).
 * When only the later node names a graph output, the earlier node takes
 * over that value id.
 * Constants with the same dtype, shape and bytes merge first, so weights
 * duplicated by an exporter do not hide equal nodes. Graph outputs keep
 * their ids: two equal nodes that both name one stay. */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

/* Constant bytes: all of a small tensor, a spread sample of a large one
 * (weights run to hundreds of MB; equality is confirmed with memcmp, so the
 * hash only has to separate most unequal tensors). */
static uint64_t hash_bytes(const void *p, size_t n) {
  const uint8_t *b = p;
  uint64_t h = 1469598103934665603ull ^ n;
  size_t step = n <= 4096 ? 1 : n / 4096;
  for (size_t k = 0; k < n; k += step) h = (h ^ b[k]) * 1099511628211ull;
  if (n) h = (h ^ b[n - 1]) * 1099511628211ull;
  return h;
}

static bool tensor_equal(const GraphTensor *a, const GraphTensor *b) {
  if (!dtype_eq(a->dtype, b->dtype) || a->rank != b->rank || a->nbytes != b->nbytes) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] != b->dims[k]) return false;
  return !memcmp(a->data, b->data, a->nbytes);
}

static bool attr_equal(const GraphAttr *a, const GraphAttr *b) {
  if (a->kind != b->kind || strcmp(a->name, b->name)) return false;
  switch (a->kind) {
  case GRAPH_ATTR_INT: return a->i == b->i;
  case GRAPH_ATTR_FLOAT: return !memcmp(&a->f, &b->f, sizeof a->f); /* bitwise: NaN attrs stay comparable */
  case GRAPH_ATTR_STRING: return !strcmp(a->s, b->s);
  case GRAPH_ATTR_INTS: return a->n == b->n && (!a->n || !memcmp(a->ints, b->ints, sizeof(int64_t) * (size_t)a->n));
  case GRAPH_ATTR_FLOATS: return a->n == b->n && (!a->n || !memcmp(a->floats, b->floats, sizeof(double) * (size_t)a->n));
  case GRAPH_ATTR_TENSOR: return tensor_equal(a->t, b->t);
  case GRAPH_ATTR_FRONTEND: return a->p == b->p;
  }
  return false;
}

static bool attrs_equal(const GraphNode *a, const GraphNode *b) {
  if (a->nattrs != b->nattrs) return false;
  for (int k = 0; k < a->nattrs; k++) {
    const GraphAttr *o = graph_node_attr(b, a->attrs[k].name);
    if (!o || !attr_equal(&a->attrs[k], o)) return false;
  }
  return true;
}

static bool nodes_equal(const GraphNode *a, const GraphNode *b) {
  if (a->op != b->op || a->ninputs != b->ninputs || a->noutputs != b->noutputs) return false;
  for (int k = 0; k < a->ninputs; k++)
    if (a->inputs[k] != b->inputs[k]) return false;
  for (int k = 0; k < a->noutputs; k++)
    if ((a->outputs[k] < 0) != (b->outputs[k] < 0)) return false;
  return attrs_equal(a, b);
}

static uint64_t node_hash(const GraphNode *n) {
  uint64_t h = hash_mix(0, (uint64_t)n->op);
  for (int k = 0; k < n->ninputs; k++) h = hash_mix(h, (uint64_t)(int64_t)n->inputs[k]);
  return hash_mix(h, (uint64_t)n->nattrs);
}

/* Open-addressing table of indices (nodes or values) keyed by a hash. */
typedef struct CseTable {
  int *slot;
  uint64_t *key;
  size_t mask;
} CseTable;

static bool table_init(CseTable *t, int n) {
  size_t cap = 16;
  while (cap < (size_t)n * 2 + 1) cap *= 2;
  t->slot = loom_malloc(cap * sizeof(int));
  t->key = loom_malloc(cap * sizeof(uint64_t));
  t->mask = cap - 1;
  if (!t->slot || !t->key) return false;
  for (size_t k = 0; k < cap; k++) t->slot[k] = -1;
  return true;
}

static void table_free(CseTable *t) {
  loom_free(t->slot);
  loom_free(t->key);
}

static bool output_is_graph_output(const Graph *g, const GraphNode *n) {
  for (int k = 0; k < n->noutputs; k++)
    if (n->outputs[k] >= 0 && graph_is_output(g, n->outputs[k])) return true;
  return false;
}

static void dedup_constants(Graph *g, CseTable *t) {
  for (int v = 0; v < g->nvalues; v++) {
    const GraphTensor *c = g->values[v].constant;
    if (!c || graph_is_output(g, v)) continue;
    uint64_t h = hash_mix(hash_bytes(c->data, c->nbytes), (uint64_t)c->rank);
    size_t s = h & t->mask;
    for (; t->slot[s] >= 0; s = (s + 1) & t->mask) {
      if (t->key[s] != h) continue;
      int o = t->slot[s];
      if (tensor_equal(g->values[o].constant, c)) break;
    }
    if (t->slot[s] >= 0) {
      graph_replace_uses(g, v, t->slot[s]);
    } else {
      t->slot[s] = v;
      t->key[s] = h;
    }
  }
}

loom_status graph_pass_cse(Graph *g, LoomError *err) {
  CseTable ct = {0}, nt = {0};
  bool *remove = loom_calloc((size_t)g->nnodes + 1, 1);
  bool ok = remove && table_init(&ct, g->nvalues) && table_init(&nt, g->nnodes);
  if (!ok) {
    loom_free(remove);
    table_free(&ct);
    table_free(&nt);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  dedup_constants(g, &ct);
  for (int i = 0; i < g->nnodes; i++) {
    GraphNode *n = &g->nodes[i];
    if (n->noutputs == 0) continue;
    uint64_t h = node_hash(n);
    size_t s = h & nt.mask;
    for (; nt.slot[s] >= 0; s = (s + 1) & nt.mask)
      if (nt.key[s] == h && nodes_equal(&g->nodes[nt.slot[s]], n)) break;
    if (nt.slot[s] < 0) {
      nt.slot[s] = i;
      nt.key[s] = h;
      continue;
    }
    GraphNode *keep = &g->nodes[nt.slot[s]];
    if (output_is_graph_output(g, n)) {
      if (output_is_graph_output(g, keep)) continue;
      /* The later node names a graph output: the earlier one takes over
       * that id (it is defined before every use of either). */
      for (int k = 0; k < n->noutputs; k++) {
        ValueId old = keep->outputs[k], out = n->outputs[k];
        if (out < 0) continue;
        ValueId *outs = ARENA_ARRAY(g->arena, ValueId, keep->noutputs);
        memcpy(outs, keep->outputs, sizeof(ValueId) * (size_t)keep->noutputs);
        outs[k] = out;
        keep->outputs = outs;
        g->values[out].producer = nt.slot[s];
        g->values[old].producer = -1;
        graph_replace_uses(g, old, out);
      }
      remove[i] = true;
      continue;
    }
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] >= 0) graph_replace_uses(g, n->outputs[k], keep->outputs[k]);
    remove[i] = true;
  }
  graph_remove_nodes(g, remove);
  loom_free(remove);
  table_free(&ct);
  table_free(&nt);
  return graph_verify(g, err);
}

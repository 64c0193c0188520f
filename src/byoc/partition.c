/* Partitioning for external back ends (BYOC, "Bring Your Own Codegen",
 * section 3: annotate, merge, partition), before Loom's own fusion:
 *
 *   1. match: at every unclaimed node in topological order, the longest
 *      match of any of the back end's patterns (pattern.c) becomes a
 *      composite; its nodes are claimed. Visiting heads in topological
 *      order gives a chain to its first node (conv -> add -> relu is
 *      claimed at the conv before the add could start a shorter chain).
 *   2. merge: when the back end allows it, a composite joins the region of
 *      a composite whose output it reads, unless that would make a cycle
 *      (a path between the two through a node outside both: the region
 *      could then run neither before nor after that node).
 *   3. partition: each region becomes one External node whose inputs are
 *      the values the region reads (first use order, constants included)
 *      and whose outputs are the values others read; the node list is
 *      re-sorted topologically (stable).
 * The region's own nodes leave the graph; the plugin API view of them
 * (tensors, nodes, composites) goes to the session for codegen. */
#include "byoc/byoc.h"
#include "graph/pass_internal.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct Composite {
  int pattern;
  int *nodes; /* chain order */
  int nnodes;
  int last; /* the last node (largest index: the chain is topological) */
} Composite;

typedef struct Partition {
  Arena *tmp;
  Graph *g;
  int *uses;
  Composite *comps;
  int ncomps;
  int *comp_of; /* per node: its composite, -1 */
  int *parent;  /* union-find over composites: their region */
  int32_t *tensor_of; /* per value: its tensor in the region being viewed, -1 (reset after each) */
} Partition;

static int find(int *parent, int c) {
  while (parent[c] != c) c = parent[c] = parent[parent[c]];
  return c;
}

/* ---- 1. match ---- */

static void match_composites(Partition *p, ByocBackend *be, const loom_byoc_graph *view) {
  Graph *g = p->g;
  bool *taken = ARENA_ARRAY(p->tmp, bool, g->nnodes);
  signed char *sup = ARENA_ARRAY(p->tmp, signed char, g->nnodes);
  memset(sup, -1, (size_t)(g->nnodes > 0 ? g->nnodes : 1));
  ByocMatchEnv env = {g, view, p->uses, taken, sup, be->plugin, &be->vetoed};
  int maxlen = 1;
  for (int k = 0; k < be->npatterns; k++) {
    int len = byoc_pattern_length(&be->plugin->patterns[k]);
    if (len > maxlen) maxlen = len;
  }
  int *buf = ARENA_ARRAY(p->tmp, int, maxlen), *best = ARENA_ARRAY(p->tmp, int, maxlen);
  for (int node = 0; node < g->nnodes; node++) {
    if (taken[node] || g->nodes[node].op == GRAPH_OP_EXTERNAL) continue;
    int bestn = 0, bestp = -1;
    for (int o = 0; o < be->npatterns; o++) {
      int k = be->pattern_order[o];
      int n = byoc_match_at(&env, &be->plugin->patterns[k], node, buf);
      if (n > bestn) {
        bestn = n, bestp = k;
        memcpy(best, buf, sizeof(int) * (size_t)n);
      }
    }
    if (!bestn) continue;
    Composite *c = &p->comps[p->ncomps];
    c->pattern = bestp;
    c->nodes = arena_memdup(p->tmp, best, sizeof(int) * (size_t)bestn);
    c->nnodes = bestn;
    c->last = best[bestn - 1];
    for (int i = 0; i < bestn; i++) {
      taken[best[i]] = true;
      p->comp_of[best[i]] = p->ncomps;
    }
    p->ncomps++;
    be->claimed += bestn;
  }
}

/* ---- 2. merge ---- */

/* Whether the graph with every region contracted to one vertex (the other
 * nodes stay themselves) has a cycle: Kahn's algorithm over the
 * contraction. */
static bool contraction_has_cycle(Partition *p) {
  Graph *g = p->g;
  int nv = p->ncomps + g->nnodes;
  int *vid = ARENA_ARRAY(p->tmp, int, g->nnodes), *indeg = loom_calloc((size_t)nv, sizeof(int));
  int *start = loom_calloc((size_t)nv + 1, sizeof(int)), *queue = loom_calloc((size_t)nv, sizeof(int));
  int nedges = 0;
  for (int i = 0; i < g->nnodes; i++) {
    vid[i] = p->comp_of[i] >= 0 ? find(p->parent, p->comp_of[i]) : p->ncomps + i;
    nedges += g->nodes[i].ninputs;
  }
  int *adj = loom_calloc((size_t)nedges + 1, sizeof(int)), *fill = loom_calloc((size_t)nv + 1, sizeof(int));
  bool cycle = false;
  if (!indeg || !start || !queue || !adj || !fill) {
    cycle = true; /* out of memory: refuse the merge, which is always safe */
    goto done;
  }
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < g->nnodes; i++)
      for (int k = 0; k < g->nodes[i].ninputs; k++) {
        ValueId v = g->nodes[i].inputs[k];
        int prod = v >= 0 ? g->values[v].producer : -1;
        if (prod < 0 || vid[prod] == vid[i]) continue;
        if (pass == 0) {
          start[vid[prod] + 1]++;
        } else {
          adj[start[vid[prod]] + fill[vid[prod]]++] = vid[i];
          indeg[vid[i]]++;
        }
      }
    if (pass == 0)
      for (int u = 0; u < nv; u++) start[u + 1] += start[u];
  }
  int head = 0, tail = 0, seen = 0;
  for (int u = 0; u < nv; u++)
    if (!indeg[u]) queue[tail++] = u;
  while (head < tail) {
    int u = queue[head++];
    seen++;
    for (int e = start[u]; e < start[u + 1]; e++)
      if (--indeg[adj[e]] == 0) queue[tail++] = adj[e];
  }
  cycle = seen < nv;
done:
  loom_free(indeg), loom_free(start), loom_free(queue), loom_free(adj), loom_free(fill);
  return cycle;
}

static int by_last(const void *a, const void *b) {
  const Composite *x = a, *y = b;
  return (x->last > y->last) - (x->last < y->last);
}

static void merge_regions(Partition *p) {
  Graph *g = p->g;
  for (int c = 0; c < p->ncomps; c++) {
    const Composite *cc = &p->comps[c];
    for (int i = 0; i < cc->nnodes; i++) {
      const GraphNode *n = &g->nodes[cc->nodes[i]];
      for (int k = 0; k < n->ninputs; k++) {
        ValueId v = n->inputs[k];
        int prod = v >= 0 ? g->values[v].producer : -1;
        if (prod < 0 || p->comp_of[prod] < 0) continue;
        int a = find(p->parent, p->comp_of[prod]), b = find(p->parent, c);
        if (a == b) continue;
        int *saved = arena_memdup(p->tmp, p->parent, sizeof(int) * (size_t)p->ncomps);
        p->parent[b] = a;
        if (contraction_has_cycle(p)) memcpy(p->parent, saved, sizeof(int) * (size_t)p->ncomps);
      }
    }
  }
}

/* ---- 3. partition ---- */

typedef struct RegionBuild {
  int *nodes; /* graph node indices, composite by composite */
  int nnodes;
  ValueId *inputs, *outputs;
  int ninputs, noutputs;
  int last; /* largest node index: where the External node goes */
} RegionBuild;

static void push_unique(ValueId *list, int *n, ValueId v) {
  for (int i = 0; i < *n; i++)
    if (list[i] == v) return;
  list[(*n)++] = v;
}

/* Inputs and outputs of a region whose nodes are marked in_region. */
static void region_interface(Partition *p, RegionBuild *r, const bool *in_region) {
  Graph *g = p->g;
  int nin = 0, nout = 0, cap_in = 0, cap_out = 0;
  for (int i = 0; i < r->nnodes; i++) {
    cap_in += g->nodes[r->nodes[i]].ninputs;
    cap_out += g->nodes[r->nodes[i]].noutputs;
  }
  r->inputs = ARENA_ARRAY(p->tmp, ValueId, cap_in);
  r->outputs = ARENA_ARRAY(p->tmp, ValueId, cap_out);
  int *inside_uses = loom_calloc((size_t)g->nvalues + 1, sizeof(int));
  if (!inside_uses) return; /* r->noutputs stays 0: the region is left alone */
  for (int i = 0; i < r->nnodes; i++) {
    const GraphNode *n = &g->nodes[r->nodes[i]];
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v == GRAPH_NO_VALUE) continue;
      int prod = g->values[v].producer;
      if (prod >= 0 && in_region[prod]) inside_uses[v]++;
      else push_unique(r->inputs, &nin, v);
    }
  }
  for (int i = 0; i < r->nnodes; i++) {
    const GraphNode *n = &g->nodes[r->nodes[i]];
    for (int k = 0; k < n->noutputs; k++) {
      ValueId v = n->outputs[k];
      if (v != GRAPH_NO_VALUE && p->uses[v] > inside_uses[v]) push_unique(r->outputs, &nout, v);
    }
  }
  loom_free(inside_uses);
  r->ninputs = nin;
  r->noutputs = nout;
}

static loom_byoc_tensor tensor_copy(Arena *a, const GraphValue *v) {
  loom_byoc_tensor t = {arena_strdup(a, v->name), byoc_dl_dtype(v->dtype), v->rank > 0 ? v->rank : 0,
                      v->rank > 0 ? arena_memdup(a, v->dims, sizeof(int64_t) * (size_t)v->rank) : NULL,
                      v->constant ? v->constant->data : NULL};
  return t;
}

/* The plugin API view of a region, in the session's arena. */
static loom_byoc_region region_view(ByocSession *s, Partition *p, const RegionBuild *r, const ByocBackend *be,
                                  const int *comp_ids, int ncomp, int index) {
  Graph *g = p->g;
  Arena *a = s->arena;
  int32_t *tensor_of = p->tensor_of;
  int cap = r->ninputs;
  for (int i = 0; i < r->nnodes; i++) cap += g->nodes[r->nodes[i]].noutputs;
  loom_byoc_tensor *ts = ARENA_ARRAY(a, loom_byoc_tensor, cap);
  int nt = 0;
  int32_t *ins = ARENA_ARRAY(a, int32_t, r->ninputs), *outs = ARENA_ARRAY(a, int32_t, r->noutputs);
  for (int i = 0; i < r->ninputs; i++) {
    tensor_of[r->inputs[i]] = nt;
    ins[i] = nt;
    ts[nt++] = tensor_copy(a, &g->values[r->inputs[i]]);
  }
  for (int i = 0; i < r->nnodes; i++) {
    const GraphNode *n = &g->nodes[r->nodes[i]];
    for (int k = 0; k < n->noutputs; k++)
      if (n->outputs[k] != GRAPH_NO_VALUE && tensor_of[n->outputs[k]] < 0) {
        tensor_of[n->outputs[k]] = nt;
        ts[nt++] = tensor_copy(a, &g->values[n->outputs[k]]);
      }
  }
  for (int i = 0; i < r->noutputs; i++) outs[i] = tensor_of[r->outputs[i]];
  loom_byoc_node *nodes = ARENA_ARRAY(a, loom_byoc_node, r->nnodes);
  loom_byoc_composite *comps = ARENA_ARRAY(a, loom_byoc_composite, ncomp);
  int at = 0;
  for (int c = 0; c < ncomp; c++) {
    const Composite *cc = &p->comps[comp_ids[c]];
    comps[c] = (loom_byoc_composite){be->plugin->patterns[cc->pattern].name, at, cc->nnodes};
    for (int i = 0; i < cc->nnodes; i++, at++) {
      nodes[at] = byoc_node_view(a, &g->nodes[cc->nodes[i]], tensor_of);
      nodes[at].composite = c;
    }
  }
  for (int i = 0; i < r->ninputs; i++) tensor_of[r->inputs[i]] = -1;
  for (int i = 0; i < r->nnodes; i++)
    for (int k = 0; k < g->nodes[r->nodes[i]].noutputs; k++)
      if (g->nodes[r->nodes[i]].outputs[k] != GRAPH_NO_VALUE) tensor_of[g->nodes[r->nodes[i]].outputs[k]] = -1;
  loom_byoc_region v = {NULL, index, {nt, ts, r->nnodes, nodes}, r->ninputs, ins, r->noutputs, outs, ncomp, comps};
  return v;
}

static void session_add_region(ByocSession *s, int backend, loom_byoc_region view) {
  if (s->nregions == s->regions_cap) {
    int cap = s->regions_cap ? 2 * s->regions_cap : 16;
    ByocRegion *r = ARENA_ARRAY(s->arena, ByocRegion, cap);
    if (s->nregions) memcpy(r, s->regions, sizeof *r * (size_t)s->nregions);
    s->regions = r;
    s->regions_cap = cap;
  }
  s->regions[s->nregions++] = (ByocRegion){backend, view, byoc_region_flops(&view)};
}

/* Stable topological order of b's nodes (graph nodes in their old order,
 * External nodes at their region's last node). */
static void topo_visit(const GraphNodeBuf *b, const int *prod, char *state, int i, int *order, int *n) {
  if (state[i]) return;
  state[i] = 1;
  const GraphNode *nd = &b->nodes[i];
  for (int k = 0; k < nd->ninputs; k++)
    if (nd->inputs[k] >= 0 && prod[nd->inputs[k]] >= 0) topo_visit(b, prod, state, prod[nd->inputs[k]], order, n);
  order[(*n)++] = i;
}

static void rewrite(ByocSession *s, Partition *p, int backend, RegionBuild *regions, int nregions, int first_index) {
  Graph *g = p->g;
  int *region_at = ARENA_ARRAY(p->tmp, int, g->nnodes); /* node -> region whose External node goes here, -1 */
  bool *removed = ARENA_ARRAY(p->tmp, bool, g->nnodes);
  for (int i = 0; i < g->nnodes; i++) region_at[i] = -1;
  for (int r = 0; r < nregions; r++) {
    if (!regions[r].noutputs) continue;
    for (int i = 0; i < regions[r].nnodes; i++) removed[regions[r].nodes[i]] = true;
    region_at[regions[r].last] = r;
  }
  GraphNodeBuf b = {0};
  const char *bname = s->backends[backend].plugin->name;
  for (int i = 0; i < g->nnodes; i++) {
    if (!removed[i]) graph_nodebuf_push(g, &b, &g->nodes[i]);
    int r = region_at[i];
    if (r < 0) continue;
    GraphNode *n = graph_nodebuf_add(g, &b, GRAPH_OP_EXTERNAL, arena_printf(g->arena, "%s_region%d", bname, first_index + r),
                                     regions[r].inputs, regions[r].ninputs, regions[r].outputs, regions[r].noutputs);
    graph_node_set_attr(g, n, graph_attr_make_string(g, "backend", bname));
    graph_node_set_attr(g, n, graph_attr_make_int(g, "region", first_index + r));
  }
  int *prod = ARENA_ARRAY(p->tmp, int, g->nvalues);
  for (int v = 0; v < g->nvalues; v++) prod[v] = -1;
  for (int i = 0; i < b.n; i++)
    for (int k = 0; k < b.nodes[i].noutputs; k++)
      if (b.nodes[i].outputs[k] >= 0) prod[b.nodes[i].outputs[k]] = i;
  char *state = ARENA_ARRAY(p->tmp, char, b.n);
  int *order = ARENA_ARRAY(p->tmp, int, b.n), n = 0;
  for (int i = 0; i < b.n; i++) topo_visit(&b, prod, state, i, order, &n);
  GraphNodeBuf sorted = {0};
  for (int i = 0; i < n; i++) graph_nodebuf_push(g, &sorted, &b.nodes[order[i]]);
  graph_nodebuf_commit(g, &sorted);
}

static loom_status partition_backend(ByocSession *s, int backend, Graph *g, LoomError *err) {
  ByocBackend *be = &s->backends[backend];
  be->vetoed = be->claimed = 0;
  Partition p = {.tmp = arena_new(), .g = g};
  p.uses = graph_use_counts(g);
  if (!p.uses) {
    arena_free(p.tmp);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "BYOC partitioning: out of memory for use counts");
  }
  loom_byoc_graph view = byoc_graph_view(p.tmp, g);
  p.comps = ARENA_ARRAY(p.tmp, Composite, g->nnodes);
  p.comp_of = ARENA_ARRAY(p.tmp, int, g->nnodes);
  for (int i = 0; i < g->nnodes; i++) p.comp_of[i] = -1;
  p.tensor_of = ARENA_ARRAY(p.tmp, int32_t, g->nvalues);
  for (int v = 0; v < g->nvalues; v++) p.tensor_of[v] = -1;
  match_composites(&p, be, &view);
  qsort(p.comps, (size_t)p.ncomps, sizeof *p.comps, by_last);
  for (int c = 0; c < p.ncomps; c++)
    for (int i = 0; i < p.comps[c].nnodes; i++) p.comp_of[p.comps[c].nodes[i]] = c;
  p.parent = ARENA_ARRAY(p.tmp, int, p.ncomps);
  for (int c = 0; c < p.ncomps; c++) p.parent[c] = c;
  if (be->plugin->merge_regions) merge_regions(&p);

  /* Regions in the order of their first composite (by last node), each
   * listing its composites in topological order. */
  RegionBuild *regions = ARENA_ARRAY(p.tmp, RegionBuild, p.ncomps);
  int *region_of_root = ARENA_ARRAY(p.tmp, int, p.ncomps), nregions = 0;
  int **comp_ids = ARENA_ARRAY(p.tmp, int *, p.ncomps), *ncomp = ARENA_ARRAY(p.tmp, int, p.ncomps);
  int *region_nodes = ARENA_ARRAY(p.tmp, int, p.ncomps); /* per region: its nodes, for sizing */
  for (int c = 0; c < p.ncomps; c++) region_of_root[c] = -1;
  for (int c = 0; c < p.ncomps; c++) {
    int root = find(p.parent, c);
    if (region_of_root[root] < 0) region_of_root[root] = nregions++;
    ncomp[region_of_root[root]]++;
    region_nodes[region_of_root[root]] += p.comps[c].nnodes;
  }
  for (int r = 0; r < nregions; r++) {
    comp_ids[r] = ARENA_ARRAY(p.tmp, int, ncomp[r]);
    regions[r].nodes = ARENA_ARRAY(p.tmp, int, region_nodes[r]);
    ncomp[r] = 0;
  }
  for (int c = 0; c < p.ncomps; c++) {
    int r = region_of_root[find(p.parent, c)];
    RegionBuild *rb = &regions[r];
    comp_ids[r][ncomp[r]++] = c;
    for (int i = 0; i < p.comps[c].nnodes; i++) rb->nodes[rb->nnodes++] = p.comps[c].nodes[i];
    if (p.comps[c].last > rb->last) rb->last = p.comps[c].last;
  }
  bool *in_region = ARENA_ARRAY(p.tmp, bool, g->nnodes);
  int first_index = s->nregions, kept = 0;
  for (int r = 0; r < nregions; r++) {
    RegionBuild *rb = &regions[r];
    for (int i = 0; i < rb->nnodes; i++) in_region[rb->nodes[i]] = true;
    region_interface(&p, rb, in_region);
    for (int i = 0; i < rb->nnodes; i++) in_region[rb->nodes[i]] = false;
    if (!rb->noutputs) { /* computes nothing anyone reads: left to DCE */
      be->claimed -= rb->nnodes;
      continue;
    }
    session_add_region(s, backend, region_view(s, &p, rb, be, comp_ids[r], ncomp[r], first_index + kept));
    /* The External node's region attribute is its index in s->regions. */
    regions[kept] = *rb;
    kept++;
  }
  rewrite(s, &p, backend, regions, kept, first_index);
  loom_free(p.uses);
  arena_free(p.tmp);
  loom_status st = graph_verify(g, err);
  if (st) err_prefix(err, "BYOC partitioning for back end \"%s\"", be->plugin->name);
  return st;
}

loom_status byoc_partition(ByocSession *s, Graph *g, LoomError *err) {
  for (int b = 0; b < s->nbackends; b++) {
    loom_status st = partition_backend(s, b, g, err);
    if (st) return st;
  }
  return LOOM_OK;
}

static void print_tensor(StrBuf *sb, const loom_byoc_tensor *t) {
  sb_printf(sb, "%%%s: %s%d[", t->name, t->dtype.code == 2 ? "f" : t->dtype.code == 0 ? "i" : t->dtype.code == 1 ? "u" : "t",
            (int)t->dtype.bits);
  for (int32_t d = 0; d < t->ndim; d++) sb_printf(sb, "%s%lld", d ? ", " : "", (long long)t->shape[d]);
  sb_puts(sb, t->data ? "] const" : "]");
}

void byoc_print_regions(const ByocSession *s, StrBuf *sb) {
  for (int i = 0; i < s->nregions; i++) {
    const ByocRegion *r = &s->regions[i];
    const loom_byoc_region *v = &r->view;
    sb_printf(sb, "region %d backend %s (", i, s->backends[r->backend].plugin->name);
    for (int32_t c = 0; c < v->ncomposites; c++) sb_printf(sb, "%s%s", c ? ", " : "", v->composites[c].pattern);
    sb_printf(sb, ") %d node%s, %llu flops\n  ", (int)v->graph.nnodes, v->graph.nnodes == 1 ? "" : "s",
              (unsigned long long)r->flops);
    for (int32_t k = 0; k < v->graph.nnodes; k++)
      sb_printf(sb, "%s%s \"%s\"", k ? ", " : "", v->graph.nodes[k].op, v->graph.nodes[k].name);
    sb_puts(sb, "\n  (");
    for (int32_t k = 0; k < v->ninputs; k++) {
      if (k) sb_puts(sb, ", ");
      print_tensor(sb, &v->graph.tensors[v->inputs[k]]);
    }
    sb_puts(sb, ") -> (");
    for (int32_t k = 0; k < v->noutputs; k++) {
      if (k) sb_puts(sb, ", ");
      print_tensor(sb, &v->graph.tensors[v->outputs[k]]);
    }
    sb_puts(sb, ")\n");
  }
  for (int b = 0; b < s->nbackends; b++) {
    const ByocBackend *be = &s->backends[b];
    sb_printf(sb, "backend %s: %d node%s claimed, %d vetoed by supports()\n", be->plugin->name, be->claimed,
              be->claimed == 1 ? "" : "s", be->vetoed);
  }
}

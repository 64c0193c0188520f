/* Operator fusion, after TVM's FuseOps (relay/transforms/fuse_ops.cc).
 *
 * Each node starts in its own group. The post-dominator tree of the
 * dataflow graph says where a node's value ends up: a node may fuse into
 * its immediate post-dominator when every path between them passes only
 * ops the rule allows, so the fused kernel never needs the node's value
 * outside itself. Edge patterns are the consumer's op pattern, except that
 * a broadcast op reading an input of its own output shape is an
 * elementwise edge (conv -> bias add of the same shape). The rules, in two
 * phases so convolutions finish fusing before injective ops are considered:
 *   phase 0  OUT_ELEMWISE_FUSABLE (conv, matmul) absorbs its post-dominator
 *            when the path is elementwise and every op on it is at most
 *            broadcast (bias add, relu, clip, residual add).
 *            ELEMWISE/BROADCAST fuse into a post-dominator reached through
 *            injective or reduction edges (prologues, chains), where every
 *            op on the way is at most injective and the sink is anything but
 *            opaque.
 *            With reduce_epilogue, a reduction absorbs an elementwise
 *            post-dominator like a conv does.
 *   phase 1  INJECTIVE fuses into its post-dominator when the whole path is
 *            at most injective; unlike TVM, the sink may also be a
 *            reduction's group (a transpose or reshape feeding a reduction
 *            is inlined into its input, the prologue TVM leaves apart).
 * A value that is a graph output has no post-dominator (it must be
 * materialized), and OPAQUE ops stay alone. Groups never exceed
 * max_group_size nodes. */
#include "graph/pass_internal.h"
#include "graph/passes.h"
#include "support/alloc.h"

#include <stdlib.h>
#include <string.h>

typedef struct FuseEdge {
  int node;
  GraphOpPattern pattern;
} FuseEdge;

typedef struct FuseCtx {
  const Graph *g;
  int n;
  /* consumers of node i: edges[edge_start[i] .. edge_start[i + 1]) */
  int *edge_start;
  FuseEdge *edges;
  bool *extern_ref;
  /* post-dominator tree */
  int *pd_parent, *pd_depth;
  GraphOpPattern *pd_pattern;
  /* union-find groups, one entry per node */
  int *uf_parent;
  GraphOpPattern *gpattern;
  int *ganchor; /* -1: none */
  int *gsize;
  int max_size;
  bool reduce_epilogue;
  /* scratch for path walks */
  int *visit_mark;
  int visit_epoch;
  int *root_mark;
  /* Owns every table above: freed whole, and by the recovery point when
   * memory runs out mid-pass (support/oom.h). */
  Arena *scratch;
} FuseCtx;

static GraphOpPattern pmax(GraphOpPattern a, GraphOpPattern b) { return a > b ? a : b; }

static bool same_shape(const GraphValue *a, const GraphValue *b) {
  if (a->rank < 0 || a->rank != b->rank) return false;
  for (int k = 0; k < a->rank; k++)
    if (a->dims[k] < 0 || a->dims[k] != b->dims[k]) return false;
  return true;
}

static GraphOpPattern edge_pattern(const Graph *g, const GraphNode *consumer, ValueId in) {
  GraphOpPattern p = graph_op_info(consumer->op)->pattern;
  if (p == GRAPH_PATTERN_BROADCAST && consumer->noutputs > 0 && consumer->outputs[0] >= 0 &&
      same_shape(&g->values[in], &g->values[consumer->outputs[0]]))
    p = GRAPH_PATTERN_ELEMWISE;
  return p;
}

static void build_edges(FuseCtx *c) {
  const Graph *g = c->g;
  int total = 0;
  c->edge_start = arena_alloc(c->scratch, ((size_t)c->n + 2) * sizeof(int));
  c->extern_ref = arena_alloc(c->scratch, (size_t)c->n + 1);
  for (int j = 0; j < c->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) {
      ValueId v = g->nodes[j].inputs[k];
      if (v >= 0 && g->values[v].producer >= 0) {
        c->edge_start[g->values[v].producer + 1]++;
        total++;
      }
    }
  for (int i = 0; i < c->n; i++) c->edge_start[i + 1] += c->edge_start[i];
  c->edges = arena_alloc(c->scratch, sizeof(FuseEdge) * (size_t)(total + 1));
  int *fill = arena_alloc(c->scratch, ((size_t)c->n + 1) * sizeof(int));
  for (int j = 0; j < c->n; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) {
      ValueId v = g->nodes[j].inputs[k];
      if (v < 0 || g->values[v].producer < 0) continue;
      int p = g->values[v].producer;
      c->edges[c->edge_start[p] + fill[p]++] = (FuseEdge){j, edge_pattern(g, &g->nodes[j], v)};
    }
  for (int k = 0; k < g->noutputs; k++) {
    int p = g->values[g->outputs[k]].producer;
    if (p >= 0) c->extern_ref[p] = true;
  }
}

static int lca2(FuseCtx *c, int a, int b, GraphOpPattern *pat) {
  while (a != b) {
    if (a < 0 || b < 0) return -1;
    if (c->pd_depth[a] < c->pd_depth[b]) {
      *pat = pmax(*pat, c->pd_pattern[b]);
      b = c->pd_parent[b];
    } else if (c->pd_depth[b] < c->pd_depth[a]) {
      *pat = pmax(*pat, c->pd_pattern[a]);
      a = c->pd_parent[a];
    } else {
      *pat = pmax(*pat, pmax(c->pd_pattern[a], c->pd_pattern[b]));
      a = c->pd_parent[a];
      b = c->pd_parent[b];
    }
  }
  return a;
}

static void build_post_dominators(FuseCtx *c) {
  for (int i = c->n - 1; i >= 0; i--) {
    GraphOpPattern pat = GRAPH_PATTERN_ELEMWISE;
    int parent = -1;
    if (c->extern_ref[i]) {
      pat = GRAPH_PATTERN_OPAQUE;
    } else if (c->edge_start[i] < c->edge_start[i + 1]) {
      const FuseEdge *e = &c->edges[c->edge_start[i]];
      parent = e->node;
      pat = pmax(pat, e->pattern);
      for (int k = c->edge_start[i] + 1; k < c->edge_start[i + 1]; k++) {
        parent = lca2(c, parent, c->edges[k].node, &pat);
        pat = pmax(pat, c->edges[k].pattern);
      }
    }
    c->pd_parent[i] = parent;
    c->pd_pattern[i] = pat;
    c->pd_depth[i] = parent >= 0 ? c->pd_depth[parent] + 1 : 1;
  }
}

static int find_root(FuseCtx *c, int i) {
  while (c->uf_parent[i] != i) {
    c->uf_parent[i] = c->uf_parent[c->uf_parent[i]];
    i = c->uf_parent[i];
  }
  return i;
}

typedef enum PathRule { RULE_OUT_EWISE, RULE_BROADCAST, RULE_INJECTIVE } PathRule;

static bool rule_allows(PathRule r, GraphOpPattern kind, bool is_sink) {
  switch (r) {
  case RULE_OUT_EWISE: return kind <= GRAPH_PATTERN_BROADCAST;
  case RULE_BROADCAST:
    if (!is_sink) return kind <= GRAPH_PATTERN_INJECTIVE;
    return kind <= GRAPH_PATTERN_INJECTIVE || kind == GRAPH_PATTERN_REDUCTION || kind == GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE;
  case RULE_INJECTIVE: return kind <= GRAPH_PATTERN_INJECTIVE || (is_sink && kind == GRAPH_PATTERN_REDUCTION);
  }
  return false;
}

/* Walks every path from src's consumers to sink; checks the rule on each
 * node's group and sums the sizes of the distinct groups met (sink's
 * excluded). */
static bool check_path_from(FuseCtx *c, int node, int sink, PathRule r, int *count) {
  if (c->visit_mark[node] == c->visit_epoch) return true;
  c->visit_mark[node] = c->visit_epoch;
  int root = find_root(c, node);
  if (!rule_allows(r, c->gpattern[root], node == sink)) return false;
  if (node == sink) return true;
  if (c->root_mark[root] != c->visit_epoch) {
    c->root_mark[root] = c->visit_epoch;
    *count += c->gsize[root];
  }
  for (int k = c->edge_start[node]; k < c->edge_start[node + 1]; k++)
    if (!check_path_from(c, c->edges[k].node, sink, r, count)) return false;
  return true;
}

static bool check_path(FuseCtx *c, int src, int sink, PathRule r) {
  c->visit_epoch++;
  int count = 0;
  int src_root = find_root(c, src), sink_root = find_root(c, sink);
  c->root_mark[src_root] = c->visit_epoch;
  count += c->gsize[src_root];
  for (int k = c->edge_start[src]; k < c->edge_start[src + 1]; k++)
    if (!check_path_from(c, c->edges[k].node, sink, r, &count)) return false;
  if (c->root_mark[sink_root] != c->visit_epoch) count += c->gsize[sink_root];
  /* One kernel, one anchor: two convolutions never share a group. */
  if (c->ganchor[src_root] >= 0 && c->ganchor[sink_root] >= 0 && src_root != sink_root) return false;
  return count <= c->max_size;
}

static void merge_into(FuseCtx *c, int child, int parent) {
  child = find_root(c, child);
  parent = find_root(c, parent);
  if (child == parent) return;
  c->uf_parent[child] = parent;
  c->gsize[parent] += c->gsize[child];
  if (c->ganchor[child] >= 0) {
    c->ganchor[parent] = c->ganchor[child];
    c->gpattern[parent] = pmax(c->gpattern[parent], c->gpattern[child]);
  }
}

static void commit_from(FuseCtx *c, int node, int sink, int target) {
  if (node == sink || c->visit_mark[node] == c->visit_epoch) return;
  c->visit_mark[node] = c->visit_epoch;
  merge_into(c, node, target);
  for (int k = c->edge_start[node]; k < c->edge_start[node + 1]; k++) commit_from(c, c->edges[k].node, sink, target);
}

static void commit(FuseCtx *c, int src, int sink) {
  c->visit_epoch++;
  int target = find_root(c, sink);
  commit_from(c, src, sink, target);
  /* merge_into may have moved the root; keep the sink's group as target. */
}

static void run_phase(FuseCtx *c, int phase) {
  for (int i = 0; i < c->n; i++) {
    GraphOpPattern gp = c->gpattern[i]; /* this node's own entry, as TVM reads it */
    if (gp == GRAPH_PATTERN_OPAQUE) continue;
    int parent = c->pd_parent[i];
    if (parent < 0) continue;
    if (find_root(c, i) == find_root(c, parent)) continue;
    GraphOpPattern dp = c->pd_pattern[i];
    if (gp == GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE || (gp == GRAPH_PATTERN_REDUCTION && c->reduce_epilogue)) {
      if (phase != 0) continue;
      if (dp == GRAPH_PATTERN_ELEMWISE && check_path(c, i, parent, RULE_OUT_EWISE)) commit(c, i, parent);
    } else if (gp <= GRAPH_PATTERN_BROADCAST) {
      if (phase != 0) continue;
      if ((dp <= GRAPH_PATTERN_INJECTIVE || dp == GRAPH_PATTERN_REDUCTION) && check_path(c, i, parent, RULE_BROADCAST))
        commit(c, i, parent);
    } else if (gp == GRAPH_PATTERN_INJECTIVE) {
      if (phase != 1) continue;
      if (check_path(c, i, parent, RULE_INJECTIVE)) commit(c, i, parent);
    }
    /* REDUCTION without epilogue fusion: its producers come to it. */
  }
}

/* Every table in c->scratch: arena_alloc does not return NULL. */
static void ctx_alloc(FuseCtx *c) {
  size_t n = (size_t)c->n + 1;
  c->pd_parent = arena_alloc(c->scratch, n * sizeof(int));
  c->pd_depth = arena_alloc(c->scratch, n * sizeof(int));
  c->pd_pattern = arena_alloc(c->scratch, n * sizeof(GraphOpPattern));
  c->uf_parent = arena_alloc(c->scratch, n * sizeof(int));
  c->gpattern = arena_alloc(c->scratch, n * sizeof(GraphOpPattern));
  c->ganchor = arena_alloc(c->scratch, n * sizeof(int));
  c->gsize = arena_alloc(c->scratch, n * sizeof(int));
  c->visit_mark = arena_alloc(c->scratch, n * sizeof(int));
  c->root_mark = arena_alloc(c->scratch, n * sizeof(int));
  build_edges(c);
}

/* Fills one group's node list, anchor, inputs and outputs. */
static void describe_group(const Graph *g, const GraphFusionPlan *p, int gid, Arena *a, GraphFusedGroup *grp,
                           const int *members, int nmembers, int anchor) {
  grp->nodes = ARENA_ARRAY(a, int, nmembers);
  memcpy(grp->nodes, members, sizeof(int) * (size_t)nmembers);
  grp->nnodes = nmembers;
  grp->anchor = anchor >= 0 ? anchor : members[nmembers - 1];
  grp->pattern = graph_op_info(g->nodes[grp->anchor].op)->pattern;
  int cap_in = 0, cap_out = 0;
  for (int m = 0; m < nmembers; m++) {
    cap_in += g->nodes[members[m]].ninputs;
    cap_out += g->nodes[members[m]].noutputs;
  }
  grp->inputs = ARENA_ARRAY(a, ValueId, cap_in);
  grp->outputs = ARENA_ARRAY(a, ValueId, cap_out);
  for (int m = 0; m < nmembers; m++) {
    const GraphNode *n = &g->nodes[members[m]];
    for (int k = 0; k < n->ninputs; k++) {
      ValueId v = n->inputs[k];
      if (v < 0) continue;
      int pr = g->values[v].producer;
      if (pr >= 0 && p->group_of[pr] == gid) continue;
      bool seen = false;
      for (int q = 0; q < grp->ninputs && !seen; q++) seen = grp->inputs[q] == v;
      if (!seen) grp->inputs[grp->ninputs++] = v;
    }
  }
  for (int m = 0; m < nmembers; m++) {
    const GraphNode *n = &g->nodes[members[m]];
    for (int k = 0; k < n->noutputs; k++) {
      ValueId v = n->outputs[k];
      if (v < 0) continue;
      bool escapes = graph_is_output(g, v);
      for (int j = 0; j < g->nnodes && !escapes; j++) {
        if (p->group_of[j] == gid) continue;
        for (int q = 0; q < g->nodes[j].ninputs; q++)
          if (g->nodes[j].inputs[q] == v) escapes = true;
      }
      if (escapes) grp->outputs[grp->noutputs++] = v;
    }
  }
}

/* Orders groups so each one reads only outputs of earlier ones (Kahn's
 * algorithm, smallest first node first, which keeps the source order). */
static loom_status order_groups(const Graph *g, GraphFusionPlan *p, int *order, LoomError *err) {
  int ng = p->ngroups;
  int *indeg = loom_calloc((size_t)ng + 1, sizeof(int));
  bool *done = loom_calloc((size_t)ng + 1, 1);
  if (!indeg || !done) {
    loom_free(indeg);
    loom_free(done);
    return err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  }
  for (int j = 0; j < g->nnodes; j++)
    for (int k = 0; k < g->nodes[j].ninputs; k++) {
      ValueId v = g->nodes[j].inputs[k];
      if (v >= 0 && g->values[v].producer >= 0 && p->group_of[g->values[v].producer] != p->group_of[j])
        indeg[p->group_of[j]]++;
    }
  loom_status st = LOOM_OK;
  for (int out = 0; out < ng; out++) {
    int pick = -1;
    for (int gi = 0; gi < ng && pick < 0; gi++)
      if (!done[gi] && indeg[gi] == 0) pick = gi; /* groups are numbered by first node */
    if (pick < 0) {
      st = err_set(err, LOOM_ERR_INTERNAL, "fusion produced a cycle between groups (group of node \"%s\")",
                   g->nodes[p->groups[0].nodes[0]].name);
      break;
    }
    done[pick] = true;
    order[out] = pick;
    const GraphFusedGroup *grp = &p->groups[pick];
    for (int m = 0; m < grp->nnodes; m++) {
      const GraphNode *n = &g->nodes[grp->nodes[m]];
      for (int k = 0; k < n->noutputs; k++) {
        ValueId v = n->outputs[k];
        if (v < 0) continue;
        for (int j = 0; j < g->nnodes; j++) {
          if (p->group_of[j] == pick) continue;
          for (int q = 0; q < g->nodes[j].ninputs; q++)
            if (g->nodes[j].inputs[q] == v) indeg[p->group_of[j]]--;
        }
      }
    }
  }
  loom_free(indeg);
  loom_free(done);
  return st;
}

loom_status graph_pass_fuse(const Graph *g, const GraphFuseOptions *opts, Arena *a, GraphFusionPlan *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  FuseCtx c = {0};
  c.g = g;
  c.n = g->nnodes;
  c.max_size = opts && opts->max_group_size > 0 ? opts->max_group_size : GRAPH_FUSE_DEFAULT_MAX_GROUP;
  c.reduce_epilogue = opts && opts->reduce_epilogue;
  c.scratch = arena_new();
  ctx_alloc(&c);
  for (int i = 0; i < c.n; i++) {
    GraphOpPattern p = graph_op_info(g->nodes[i].op)->pattern;
    c.uf_parent[i] = i;
    c.gpattern[i] = p;
    c.ganchor[i] = p == GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE || p == GRAPH_PATTERN_REDUCTION ? i : -1;
    c.gsize[i] = 1;
  }
  build_post_dominators(&c);
  run_phase(&c, 0);
  run_phase(&c, 1);

  /* Number groups by their first node, list members ascending. */
  out->nnodes = c.n;
  out->group_of = ARENA_ARRAY(a, int, c.n);
  int *gid_of_root = arena_alloc(c.scratch, sizeof(int) * ((size_t)c.n + 1));
  int *members = arena_alloc(c.scratch, sizeof(int) * ((size_t)c.n + 1));
  int *order = arena_alloc(c.scratch, sizeof(int) * ((size_t)c.n + 1));
  GraphFusedGroup *unordered = arena_alloc(c.scratch, sizeof(GraphFusedGroup) * ((size_t)c.n + 1));
  loom_status st = LOOM_OK;
  if (!gid_of_root || !members || !order || !unordered) {
    st = err_set(err, LOOM_ERR_OUT_OF_MEMORY, "out of memory");
  } else {
    for (int i = 0; i < c.n; i++) gid_of_root[i] = -1;
    int ng = 0;
    for (int i = 0; i < c.n; i++) {
      int r = find_root(&c, i);
      if (gid_of_root[r] < 0) gid_of_root[r] = ng++;
      out->group_of[i] = gid_of_root[r];
    }
    out->ngroups = ng;
    out->groups = unordered;
    for (int gi = 0; gi < ng; gi++) {
      int nm = 0, root = -1;
      for (int i = 0; i < c.n; i++)
        if (out->group_of[i] == gi) {
          members[nm++] = i;
          root = find_root(&c, i);
        }
      memset(&unordered[gi], 0, sizeof unordered[gi]);
      describe_group(g, out, gi, a, &unordered[gi], members, nm, c.ganchor[root]);
    }
    st = order_groups(g, out, order, err);
    if (!st) {
      GraphFusedGroup *groups = ARENA_ARRAY(a, GraphFusedGroup, ng);
      int *renum = gid_of_root; /* reuse: old group id -> new */
      for (int k = 0; k < ng; k++) {
        groups[k] = unordered[order[k]];
        renum[order[k]] = k;
      }
      for (int i = 0; i < c.n; i++) out->group_of[i] = renum[out->group_of[i]];
      out->groups = groups;
    } else {
      memset(out, 0, sizeof *out);
    }
  }
  arena_free(c.scratch);
  return st;
}

static void print_values(const Graph *g, const ValueId *vs, int n, StrBuf *sb) {
  sb_putc(sb, '(');
  for (int k = 0; k < n; k++) {
    if (k) sb_puts(sb, ", ");
    sb_printf(sb, "%%%s: ", g->values[vs[k]].name);
    graph_print_value_type(g, vs[k], sb);
  }
  sb_putc(sb, ')');
}

void graph_fusion_plan_print(const Graph *g, const GraphFusionPlan *plan, StrBuf *sb) {
  for (int gi = 0; gi < plan->ngroups; gi++) {
    const GraphFusedGroup *grp = &plan->groups[gi];
    const GraphNode *an = &g->nodes[grp->anchor];
    sb_printf(sb, "group %d anchor %s \"%s\" (%s) [", gi, graph_op_info(an->op)->name, an->name,
              graph_pattern_name(grp->pattern));
    for (int m = 0; m < grp->nnodes; m++) {
      const GraphNode *n = &g->nodes[grp->nodes[m]];
      sb_printf(sb, "%s%s \"%s\"", m ? ", " : "", graph_op_info(n->op)->name, n->name);
    }
    sb_puts(sb, "]\n    ");
    print_values(g, grp->inputs, grp->ninputs, sb);
    sb_puts(sb, " -> ");
    print_values(g, grp->outputs, grp->noutputs, sb);
    sb_putc(sb, '\n');
  }
}

/* The pattern language of the plugin API (loom/loom_byoc.h): a chain of
 * steps, each an op (alternatives, or any op), optionally skipped, with
 * per-operand constraints (the previous step's output, a constant, a
 * runtime tensor, omitted) and a predicate for anything else. The chain's
 * links are single-use values: every node but the last feeds exactly the
 * next one and nothing else (no graph output), so a match can become one
 * function whose internal tensors nobody else sees.
 *
 * Matching is a depth-first search over the steps that takes an optional
 * step before trying to skip it: the first match found is the longest
 * (TVM's composite patterns are likewise tried greedily). */
#include "byoc/byoc.h"

#include <string.h>

int byoc_pattern_length(const loom_byoc_pattern *p) {
  int n = 0;
  while (p->steps && p->steps[n].ops) n++;
  return n;
}

/* Whether `alts` ("Add|Sub") holds `op` as one whole alternative. */
static bool alternatives_have(const char *alts, const char *op) {
  size_t len = strlen(op);
  for (const char *p = alts; *p;) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    if (n == len && !strncmp(p, op, n)) return true;
    if (!bar) break;
    p = bar + 1;
  }
  return false;
}

bool byoc_step_has_op(const loom_byoc_step *s, const char *op) {
  return !strcmp(s->ops, "*") ? strcmp(op, "External") != 0 : alternatives_have(s->ops, op);
}

loom_status byoc_pattern_check(const loom_byoc_pattern *p, const char *who, LoomError *err) {
  int n = byoc_pattern_length(p);
  if (n == 0) return err_set(err, LOOM_ERR_INVALID_ARG, "%s: pattern \"%s\" has no steps", who, p->name);
  bool required = false;
  for (int i = 0; i < n; i++) {
    const loom_byoc_step *s = &p->steps[i];
    required |= !s->optional;
    if (!strcmp(s->ops, "*")) continue;
    for (const char *q = s->ops;;) {
      const char *bar = strchr(q, '|');
      size_t len = bar ? (size_t)(bar - q) : strlen(q);
      char op[64];
      GraphOp unused;
      if (len == 0 || len >= sizeof op)
        return err_set(err, LOOM_ERR_INVALID_ARG, "%s: pattern \"%s\" step %d: bad op list \"%s\"", who, p->name, i,
                       s->ops);
      memcpy(op, q, len);
      op[len] = 0;
      if (!graph_op_lookup(op, &unused) || !strcmp(op, "External"))
        return err_set(err, LOOM_ERR_INVALID_ARG, "%s: pattern \"%s\" step %d: \"%s\" is not an ONNX op Loom knows", who,
                       p->name, i, op);
      if (!bar) break;
      q = bar + 1;
    }
  }
  if (!required)
    return err_set(err, LOOM_ERR_INVALID_ARG, "%s: pattern \"%s\": every step is optional (it would match nothing)",
                   who, p->name);
  return LOOM_OK;
}

/* Whether input k of n meets constraint c; prev is the previous step's
 * output (GRAPH_NO_VALUE on the first step). */
static bool operand_ok(const Graph *g, const GraphNode *n, int k, loom_byoc_operand c, ValueId prev) {
  ValueId v = k < n->ninputs ? n->inputs[k] : GRAPH_NO_VALUE;
  bool present = v != GRAPH_NO_VALUE, constant = present && graph_value_constant(g, v);
  switch (c) {
  case LOOM_BYOC_OPERAND_ANY: return true;
  case LOOM_BYOC_PREV: return prev == GRAPH_NO_VALUE ? present : v == prev;
  case LOOM_BYOC_CONST: return constant;
  case LOOM_BYOC_CONST_OR_ABSENT: return !present || constant;
  case LOOM_BYOC_RUNTIME: return present && !constant;
  case LOOM_BYOC_ABSENT: return !present;
  }
  return false;
}

/* Inputs past LOOM_BYOC_MAX_OPERANDS are unconstrained; the chain link
 * itself holds by construction (the node is prev's only reader). */
static bool operands_ok(const Graph *g, const GraphNode *n, const loom_byoc_step *s, ValueId prev, bool swap) {
  for (int k = 0; k < LOOM_BYOC_MAX_OPERANDS; k++)
    if (!operand_ok(g, n, k, s->operands[swap && k < 2 ? 1 - k : k], prev)) return false;
  return true;
}

static bool supported(const ByocMatchEnv *env, int node) {
  if (env->supported[node] < 0) {
    bool ok = !env->plugin->supports || env->plugin->supports(env->view, node, env->plugin->user);
    env->supported[node] = ok ? 1 : 0;
    if (!ok && env->vetoed) ++*env->vetoed;
  }
  return env->supported[node] == 1;
}

/* Whether node (reached from prev) can be step s. */
static bool step_matches(const ByocMatchEnv *env, const loom_byoc_step *s, int node, ValueId prev) {
  const Graph *g = env->g;
  const GraphNode *n = &g->nodes[node];
  if ((env->taken && env->taken[node]) || n->noutputs != 1 || n->outputs[0] == GRAPH_NO_VALUE) return false;
  if (!byoc_step_has_op(s, graph_op_info(n->op)->name)) return false;
  if (!operands_ok(g, n, s, prev, false) && !(s->commutative && n->ninputs == 2 && operands_ok(g, n, s, prev, true)))
    return false;
  if (s->where && !s->where(env->view, node, env->plugin->user)) return false;
  return supported(env, node);
}

/* The only reader of node's output when that output is a chain link (one
 * use, not a graph output), else -1. Nodes are in topological order, so
 * the reader comes later. */
static int single_reader(const ByocMatchEnv *env, int node) {
  const Graph *g = env->g;
  ValueId v = g->nodes[node].outputs[0];
  if (env->uses[v] != 1) return -1;
  for (int i = 0; i < g->noutputs; i++)
    if (g->outputs[i] == v) return -1;
  for (int m = node + 1; m < g->nnodes; m++)
    for (int k = 0; k < g->nodes[m].ninputs; k++)
      if (g->nodes[m].inputs[k] == v) return m;
  return -1;
}

/* Steps [step, len) from `node` (-1: the chain cannot go on), `depth`
 * nodes matched so far into nodes[]; returns the total matched, 0 when the
 * rest cannot match. */
static int match_from(const ByocMatchEnv *env, const loom_byoc_pattern *p, int len, int step, int node, int depth,
                      int *nodes) {
  if (step == len) return depth;
  const loom_byoc_step *s = &p->steps[step];
  ValueId prev = depth ? env->g->nodes[nodes[depth - 1]].outputs[0] : GRAPH_NO_VALUE;
  if (node >= 0 && step_matches(env, s, node, prev)) {
    nodes[depth] = node;
    int next = step + 1 < len ? single_reader(env, node) : -1;
    int got = match_from(env, p, len, step + 1, next, depth + 1, nodes);
    if (got) return got;
  }
  if (s->optional) return match_from(env, p, len, step + 1, node, depth, nodes);
  return 0;
}

int byoc_match_at(const ByocMatchEnv *env, const loom_byoc_pattern *p, int head, int *nodes) {
  return match_from(env, p, byoc_pattern_length(p), 0, head, 0, nodes);
}

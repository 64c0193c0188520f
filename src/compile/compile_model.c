/* loom_compile_onnx / loom_inspect_onnx: the graph compiler's pipeline, in
 * order, in one place.
 *
 *   import (+ fold constants, drop identities, DCE)   frontend/onnx
 *   the graph steps (k_graph_pipeline below):          graph/passes
 *     fold empty ops, fold BatchNorm, canonicalize,
 *     partition for external back ends (--byoc)        byoc/partition
 *     split GEMVs, pack constant matmul weights,
 *     CSE, DCE, NCHWc layout, Winograd, DCE, infer,
 *     extents of data-dependent outputs                compile/dynamic
 *     materialize outputs, fuse into groups,
 *     plan the arena
 *   group -> PrimFunc -> default schedule              compile/lower_group, schedule_group
 *     (an External group: its back end's C instead)    byoc/codegen
 *   artifact plan + generated run entry                compile/run_entry
 *   lower (tir_lower's steps) + C (kernels, then       driver, tir/transform/lower.c
 *     the entry) + one .so
 *   artifact (weights, plan, kernels)                  runtime/artifact
 *
 * Both step lists are tables, so the list of passes is also the list that
 * --dump-before / --dump-after name (loom_compile_pass_info, pass_dump.c). */
#include "compile/compile.h"
#include "compile/pass_dump.h"

#include "artifact_write/artifact_write.h"
#include "byoc/byoc.h"
#include "driver/driver.h"
#include "frontend/onnx/onnx.h"
#include "autotune/records.h"
#include "autotune/workload.h"
#include "loom/loom_compile.h"
#include "support/alloc.h"
#include "support/oom.h"
#include "target/codegen_c.h"
#include "tir/flops.h"
#include "tir/schedule/schedule.h"
#include "tir/text.h"
#include "topi/topi_schedule.h"

#include <stdlib.h>
#include <string.h>

typedef struct Compiled {
  Arena *arena;
  Graph *graph;
  GraphFusionPlan plan;
  GraphMemoryPlan mem;
  GroupFunc *groups;
  const PrimFunc **funcs; /* scheduled, one per group */
  Schedule **scheds;
  int ngroups;
  DriverModule *module;
  ArtifactSpec spec; /* plan_artifact: everything but the shared object */
  Target target;     /* what the kernels are scheduled and built for */
  int threads;       /* the thread count the schedules are made for */
  int opt_level;
  bool fused, planned; /* plan and mem are made */
  PassDump dump;
  ByocSession *byoc; /* --byoc: the external back ends and their regions */
  ByocKernel *ext;   /* per group: its external kernel (name NULL for Loom's own) */
} Compiled;

static void compiled_free(Compiled *c) {
  driver_module_free(c->module);
  for (int i = 0; c->scheds && i < c->ngroups; i++) sch_free(c->scheds[i]);
  if (c->graph) graph_free(c->graph);
  byoc_session_free(c->byoc); /* after the module: its kernels may call a back end's runtime library */
  arena_free(c->arena);
  memset(c, 0, sizeof *c);
}

/* A graph output that no node computes (a folded constant such as Shape's
 * result, or a graph input passed through) still needs a kernel to land in
 * the caller's output buffer: an Identity copies it there. */
static void materialize_outputs(Graph *g) {
  for (int i = 0; i < g->noutputs; i++) {
    ValueId out = g->outputs[i];
    const GraphValue *ov = &g->values[out];
    if (ov->producer >= 0 || graph_shape_numel(ov->rank, ov->dims) == 0) continue;
    ValueId src = graph_add_value(g, arena_printf(g->arena, "%s_source", g->values[out].name));
    GraphValue *o = &g->values[out], *s = &g->values[src];
    GraphValue keep = *s;
    *s = *o;
    s->name = keep.name;
    o->constant = NULL;
    for (int k = 0; k < g->ninputs; k++)
      if (g->inputs[k] == out) g->inputs[k] = src;
    for (int n = 0; n < g->nnodes; n++) /* readers keep reading the source, before the copy */
      for (int k = 0; k < g->nodes[n].ninputs; k++)
        if (g->nodes[n].inputs[k] == out) g->nodes[n].inputs[k] = src;
    graph_add_node(g, GRAPH_OP_IDENTITY, g->values[out].name, &src, 1, &out, 1);
  }
}

/* ---- the graph pipeline: every step behind one signature ---- */

static loom_status step_fold_empty(Compiled *c, LoomError *err) { return graph_pass_fold_empty(c->graph, err); }
static loom_status step_fold_batchnorm(Compiled *c, LoomError *err) { return graph_pass_fold_batchnorm(c->graph, err); }
static loom_status step_canonicalize(Compiled *c, LoomError *err) { return graph_pass_canonicalize(c->graph, err); }

/* Packed weights (opt level 2, below) stream a matrix-vector product's
 * panels in one contiguous range per thread: no split there. */
static bool packs_matmul(const Compiled *c) { return c->opt_level >= 2 && c->target.local_mem_bytes == 0; }

/* One part per core the kernels are scheduled for. */
static loom_status step_split_gemv(Compiled *c, LoomError *err) {
  if (packs_matmul(c)) return LOOM_OK;
  return graph_pass_split_gemv(c->graph, c->target.num_cores, err);
}

/* Panels one vector wide, the matmul schedule's column unit; a GEMV's
 * topi_gemv_panel_vectors wide (its column tile streams several). Not
 * on a target with a local memory: its schedule stages B's tiles by DMA,
 * which needs B's indices affine (a panel's are floordiv/floormod). */
static loom_status step_pack_matmul(Compiled *c, LoomError *err) {
  if (!packs_matmul(c)) return LOOM_OK;
  int lanes = target_lanes(&c->target, DT_F32);
  return graph_pass_pack_matmul(c->graph, lanes, lanes * topi_gemv_panel_vectors(&c->target), err);
}

/* The recurrent ops' constant weights, transposed once (pass_pack_rnn.c). */
static loom_status step_pack_rnn(Compiled *c, LoomError *err) { return graph_pass_pack_rnn(c->graph, err); }

/* BYOC (src/byoc): each --byoc back end claims the regions its patterns
 * match, before the layout passes rewrite the ops they name. A back end
 * none of whose patterns matches was asked for in vain: an error naming
 * it, unless a back end listed before it claimed nodes (which it may have
 * wanted too: `--byoc dnnl,cblas` leaves cblas nothing on a model dnnl
 * covers). One that declined every match (supports()) made a choice, which
 * may depend on the CPU (dnnl declines what oneDNN would run on its
 * allocating gemm, every matmul below AVX-512): Loom's kernels run them. */
static loom_status step_partition(Compiled *c, LoomError *err) {
  if (!c->byoc) return LOOM_OK;
  loom_status st = byoc_partition(c->byoc, c->graph, err);
  bool earlier_claimed = false;
  for (int b = 0; !st && b < c->byoc->nbackends; b++) {
    const ByocBackend *be = &c->byoc->backends[b];
    if (be->claimed || be->vetoed || earlier_claimed) {
      earlier_claimed |= be->claimed > 0;
      continue;
    }
    StrBuf names;
    sb_init(&names);
    for (const loom_byoc_pattern *q = be->plugin->patterns; q->name; q++)
      sb_printf(&names, "%s%s", q == be->plugin->patterns ? "" : ", ", q->name);
    st = err_set(err, LOOM_ERR_UNSUPPORTED, "BYOC back end \"%s\" claimed nothing: none of its patterns (%s) matches",
                 be->plugin->name, sb_cstr(&names));
    sb_free(&names);
  }
  return st;
}

static loom_status step_cse(Compiled *c, LoomError *err) { return graph_pass_cse(c->graph, err); }
static loom_status step_dce(Compiled *c, LoomError *err) { return graph_pass_dce(c->graph, err); }

/* A channel block is one vector register: wider blocks split into
 * several registers and crowd the conv's register tile. */
static loom_status step_layout_nchwc(Compiled *c, LoomError *err) {
  GraphLayoutOptions layout = {.max_block = target_lanes(&c->target, DT_F32)};
  return graph_pass_layout_nchwc(c->graph, &layout, err);
}

/* Not on a target with a local memory: only direct convs are staged in it. */
static loom_status step_winograd(Compiled *c, LoomError *err) {
  return c->target.local_mem_bytes > 0 ? LOOM_OK : graph_pass_winograd(c->graph, err);
}

/* Inference, then the checks every later step relies on: a verified graph
 * whose every value has a static shape. */
static loom_status step_infer(Compiled *c, LoomError *err) {
  Graph *g = c->graph;
  loom_status st;
  if ((st = graph_pass_infer(g, err)) || (st = graph_verify(g, err))) return st;
  for (int i = 0; i < g->nvalues; i++) {
    const GraphValue *v = &g->values[i];
    bool used = v->producer >= 0 || v->constant;
    if (used && !graph_value_is_static(v))
      return err_set(err, LOOM_ERR_UNSUPPORTED, "value \"%s\" has no static shape (dynamic shapes are not supported yet)",
                     v->name);
  }
  return LOOM_OK;
}

static loom_status step_attach_extents(Compiled *c, LoomError *err) { return compile_attach_extents(c->graph, err); }

static loom_status step_materialize_outputs(Compiled *c, LoomError *err) {
  (void)err;
  materialize_outputs(c->graph);
  return LOOM_OK;
}

/* Opt level 0: every node its own kernel. */
static loom_status step_fuse(Compiled *c, LoomError *err) {
  GraphFuseOptions fo = {.max_group_size = c->opt_level >= 1 ? 0 : 1, .reduce_epilogue = false};
  loom_status st = graph_pass_fuse(c->graph, &fo, c->arena, &c->plan, err);
  c->fused = st == LOOM_OK;
  return st;
}

static loom_status step_plan_memory(Compiled *c, LoomError *err) {
  loom_status st = graph_plan_memory(c->graph, &c->plan, c->arena, &c->mem, err);
  c->planned = st == LOOM_OK;
  return st;
}

typedef struct GraphStep {
  const char *name; /* for --dump-before / --dump-after */
  int min_opt_level;
  loom_status (*run)(Compiled *c, LoomError *err);
} GraphStep;

/* In order. Packed weights are a layout choice, like NCHWc: opt level 2,
 * before CSE and DCE, which merge equal panels and drop the unpacked
 * weights. Partitioning comes before both (BYOC back ends match ONNX's
 * MatMul and Conv, not Loom's packed and blocked forms) and after
 * BatchNorm folding (a conv pattern then sees its folded bias). */
static const GraphStep k_graph_pipeline[] = {
    {"fold_empty", 0, step_fold_empty},
    {"fold_batchnorm", 1, step_fold_batchnorm},
    {"canonicalize", 1, step_canonicalize},
    {"partition", 0, step_partition},
    {"split_gemv", 1, step_split_gemv},
    {"pack_matmul", 2, step_pack_matmul},
    {"pack_rnn", 1, step_pack_rnn},
    {"cse", 1, step_cse},
    {"dce", 1, step_dce},
    {"layout_nchwc", 2, step_layout_nchwc},
    {"winograd", 2, step_winograd},
    {"dce", 2, step_dce},
    {"infer", 0, step_infer},
    {"attach_extents", 0, step_attach_extents},
    {"materialize_outputs", 0, step_materialize_outputs},
    {"fuse", 0, step_fuse},
    {"plan_memory", 0, step_plan_memory},
};

enum { GRAPH_STEP_COUNT = (int)(sizeof k_graph_pipeline / sizeof k_graph_pipeline[0]) };

int loom_compile_pass_info(int index, loom_pass_info *out) {
  static const char *const opt_levels[] = {NULL, "opt level >= 1", "opt level >= 2", "opt level >= 3"};
  if (index < 0) return 0;
  if (index < GRAPH_STEP_COUNT) {
    const GraphStep *s = &k_graph_pipeline[index];
    *out = (loom_pass_info){s->name, "graph", opt_levels[s->min_opt_level]};
    return 1;
  }
  const char *option;
  const TirPass *p = tir_lower_step(index - GRAPH_STEP_COUNT, &option);
  if (!p) return 0;
  *out = (loom_pass_info){p->name, "lowering", option};
  return 1;
}

/* The graph steps in order; `stop_after` (NULL: none) ends the run after
 * the step of that name. */
static loom_status run_graph_pipeline(Compiled *c, const char *stop_after, LoomError *err) {
  for (int i = 0; i < GRAPH_STEP_COUNT; i++) {
    const GraphStep *s = &k_graph_pipeline[i];
    if (c->opt_level < s->min_opt_level) continue;
    pass_dump_graph(&c->dump, s->name, i + 1, false, c->graph, c->fused ? &c->plan : NULL,
                    c->planned ? &c->mem : NULL);
    loom_status st = s->run(c, err);
    if (st) return st;
    pass_dump_graph(&c->dump, s->name, i + 1, true, c->graph, c->fused ? &c->plan : NULL,
                    c->planned ? &c->mem : NULL);
    if (stop_after && !strcmp(stop_after, s->name)) break;
  }
  return LOOM_OK;
}

static loom_status check_pass_list(const char *option, const char *list, LoomError *err) {
  char msg[sizeof err->msg - 64];
  if (loom_compile_check_pass_list(list, msg, sizeof msg) == LOOM_OK) return LOOM_OK;
  return err_set(err, LOOM_ERR_INVALID_ARG, "%s: %s", option, msg);
}

const PrimFunc *compile_schedule_from_records(RecordStore *rec, const GroupFunc *gf, const Target *target,
                                             int threads, Schedule **keep) {
  LoomError err = {0};
  char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
  autotune_workload_key(gf->func, key);
  Arena *a = arena_new();
  TuneRecord r;
  bool found = false;
  const PrimFunc *out = NULL;
  if (records_best(rec, key, target->name, threads, a, &r, &found, &err) != LOOM_OK) {
    fprintf(stderr, "loom: note: kernel %s: the tuning records cannot be read (%s); using the default schedule\n",
            gf->func->name, err.msg);
  } else if (found) {
    LoomError e2 = {0};
    Trace *t = trace_parse(a, r.trace, &e2);
    Schedule *s = sch_create(gf->func, DECIDE_DEFAULT, 0);
    if (t && trace_apply(t, s) == LOOM_OK) {
      *keep = s;
      out = sch_func(s);
    } else {
      fprintf(stderr, "loom: note: kernel %s: its tuning record %lld does not replay (%s); using the default schedule\n",
              gf->func->name, (long long)r.id, t ? sch_error(s) : e2.msg);
      sch_free(s);
    }
  }
  arena_free(a);
  return out;
}

/* An External group (one node: fusion leaves opaque nodes alone): the C of
 * its back end (byoc_codegen) instead of a PrimFunc, unless `lowered` only
 * asks for the groups' interfaces. */
static loom_status external_group(Compiled *c, int i, const char *upto, LoomError *err) {
  const GraphFusedGroup *grp = &c->plan.groups[i];
  const GraphNode *n = &c->graph->nodes[grp->anchor];
  int region = (int)graph_attr_int(n, "region", -1);
  if (!c->byoc || region < 0 || region >= c->byoc->nregions)
    return err_set(err, LOOM_ERR_INVALID_ARG, "node \"%s\": an External node that no --byoc back end made", n->name);
  if (grp->nnodes != 1)
    return err_set(err, LOOM_ERR_INTERNAL, "External node \"%s\" was fused with %d other nodes", n->name, grp->nnodes - 1);
  c->groups[i] = (GroupFunc){NULL, n->inputs, n->ninputs, n->outputs, n->noutputs};
  if (upto && !strcmp(upto, "lowered")) return LOOM_OK;
  const char *name = arena_printf(c->arena, "k%d_%s", i, graph_attr_string(n, "backend", "external"));
  return byoc_codegen(c->byoc, region, name, &c->ext[i], err);
}

/* Front half: everything up to scheduled PrimFuncs. `upto` stops early for
 * inspect: "graph" (after the graph step infer), "partitioned" (after the
 * step partition), "fused" (after the graph steps), "lowered" (PrimFuncs,
 * not scheduled); NULL runs it all. The dumps opt asks for go to dump_out.
 * External groups get no PrimFunc (funcs[i] NULL) but their kernel in ext. */
static loom_status compile_front(const char *path, const loom_compile_options *opt, FILE *dump_out, const char *upto,
                                 Compiled *c, LoomError *err) {
  memset(c, 0, sizeof *c);
  c->arena = arena_new();
  int opt_level = c->opt_level = opt ? opt->opt_level : 2;
  if (opt_level < 0 || opt_level > 3)
    return err_set(err, LOOM_ERR_INVALID_ARG, "--opt-level %d: expected 0, 1, 2 or 3", opt_level);
  loom_status st = LOOM_OK;
  if (opt && ((st = check_pass_list("dump_before", opt->dump_before, err)) ||
              (st = check_pass_list("dump_after", opt->dump_after, err))))
    return st;
  c->dump = (PassDump){opt ? opt->dump_before : NULL, opt ? opt->dump_after : NULL, dump_out};
  if (opt && opt->num_inputs > 0) {
    st = compile_import_specialized(path, opt->inputs, opt->num_inputs, &c->graph, err);
  } else {
    c->graph = onnx_import_file(path, err);
    if (!c->graph) return err->status ? err->status : LOOM_ERR_INTERNAL;
    st = onnx_prepare_graph(c->graph, path, err);
  }
  if (!st) st = target_parse(opt ? opt->target : NULL, &c->target, err);
  if (!st && opt) st = target_apply_options(&c->target, opt->target_options, err);
  if (!st && opt && opt->byoc) st = byoc_session_open(opt->byoc, &c->byoc, err);
  const Target *target = &c->target;
  bool graph_only = upto && !strcmp(upto, "graph"), partitioned_only = upto && !strcmp(upto, "partitioned");
  if (!st) st = run_graph_pipeline(c, graph_only ? "infer" : partitioned_only ? "partition" : NULL, err);
  if (st || graph_only || partitioned_only || (upto && !strcmp(upto, "fused"))) return st;

  int threads = target->num_cores > 1 ? target->num_cores : 1;
  c->threads = threads;
  RecordStore *rec = NULL;
  if (opt && opt->records && (!upto || strcmp(upto, "lowered")) && (st = records_open(opt->records, &rec, err)))
    return st;
  c->ngroups = c->plan.ngroups;
  c->groups = ARENA_ARRAY(c->arena, GroupFunc, c->ngroups);
  c->funcs = ARENA_ARRAY(c->arena, const PrimFunc *, c->ngroups);
  c->scheds = ARENA_ARRAY(c->arena, Schedule *, c->ngroups);
  c->ext = ARENA_ARRAY(c->arena, ByocKernel, c->ngroups);
  for (int i = 0; i < c->ngroups; i++) {
    const GraphFusedGroup *grp = &c->plan.groups[i];
    if (c->graph->nodes[grp->anchor].op == GRAPH_OP_EXTERNAL) {
      if ((st = external_group(c, i, upto, err))) break;
      continue;
    }
    const char *op = graph_op_info(c->graph->nodes[grp->anchor].op)->name;
    char lower_op[32];
    size_t k = 0;
    for (; op[k] && k + 1 < sizeof lower_op; k++) lower_op[k] = (char)(op[k] >= 'A' && op[k] <= 'Z' ? op[k] + 32 : op[k]);
    lower_op[k] = 0;
    const char *name = arena_printf(c->arena, "k%d_%s", i, lower_op);
    if ((st = compile_lower_group(c->arena, c->graph, grp, name, &c->groups[i], err))) break;
    if (upto && !strcmp(upto, "lowered")) continue;
    /* A record's trace replays no scratchpad staging: a target with a local memory takes its own schedules. */
    c->funcs[i] = rec && target->local_mem_bytes == 0
                      ? compile_schedule_from_records(rec, &c->groups[i], target, threads, &c->scheds[i])
                      : NULL;
    if (!c->funcs[i]) c->funcs[i] = compile_schedule_group(&c->groups[i], target, threads, &c->scheds[i]);
  }
  records_close(rec);
  return st;
}

static DLDataType to_dl(DType t) {
  DLDataType d = {(uint8_t)t.code, (uint8_t)(t.code == DT_BOOL ? 8 : t.bits), 1};
  return d;
}

static ArtifactTensor tensor_of(const GraphValue *v) {
  ArtifactTensor t = {v->name, to_dl(v->dtype), v->rank, v->dims, 0, false};
  return t;
}

static int index_of(const ValueId *list, int n, ValueId v) {
  for (int i = 0; i < n; i++)
    if (list[i] == v) return i;
  return -1;
}

/* The artifact: graph inputs/outputs, every constant a kernel reads as a
 * weight, the kernels in call order, and one call per group with its
 * arguments (graph input, graph output, weight or arena slice). Planned
 * before the build because the run entry, generated into the kernels'
 * source, hard-codes it (weights at artifact_weight_layout's offsets, which
 * artifact_write uses). */
static loom_status plan_artifact(Compiled *c, LoomError *err) {
  Arena *a = c->arena;
  const Graph *g = c->graph;
  ArtifactSpec spec;
  memset(&spec, 0, sizeof spec);
  ArtifactTensor *ins = ARENA_ARRAY(a, ArtifactTensor, g->ninputs);
  ArtifactTensor *outs = ARENA_ARRAY(a, ArtifactTensor, g->noutputs);
  for (int i = 0; i < g->ninputs; i++) ins[i] = tensor_of(&g->values[g->inputs[i]]);
  int nvis = g->noutputs; /* the hidden extent outputs come last (compile/dynamic.c) */
  while (nvis > 0 && compile_extent_of_output(g, g->outputs[nvis - 1]) >= 0) nvis--;
  for (int i = 0; i < nvis; i++) {
    const GraphValue *v = &g->values[g->outputs[i]];
    if (v->producer < 0 && graph_shape_numel(v->rank, v->dims) != 0)
      return err_set(err, LOOM_ERR_UNSUPPORTED, "graph output \"%s\" is not computed by any node (a constant or an input)",
                     v->name);
    outs[i] = tensor_of(v);
    outs[i].dynamic = compile_extent_of(g, g->outputs[i]) != GRAPH_NO_VALUE;
  }
  int *weight_of = ARENA_ARRAY(a, int, g->nvalues);
  for (int i = 0; i < g->nvalues; i++) weight_of[i] = -1;
  ArtifactWeight *weights = ARENA_ARRAY(a, ArtifactWeight, g->nvalues + c->ngroups); /* + external kernels' blobs */
  int nweights = 0;
  ArtifactKernel *kernels = ARENA_ARRAY(a, ArtifactKernel, c->ngroups);
  ArtifactCall *calls = ARENA_ARRAY(a, ArtifactCall, c->ngroups);
  for (int gi = 0; gi < c->ngroups; gi++) {
    const GroupFunc *gf = &c->groups[gi];
    const GraphFusedGroup *grp = &c->plan.groups[gi];
    const ByocKernel *ext = c->ext[gi].name ? &c->ext[gi] : NULL;
    const char *kname = ext ? ext->name : gf->func->name;
    if (ext) {
      kernels[gi] = (ArtifactKernel){.name = ext->name, .num_nodes = ext->num_nodes, .nodes = ext->nodes,
                                     .flops = ext->flops, .backend = ext->backend};
      if (ext->runtime_entry) { /* the blob form: its blob is a weight of its own, for the back end's init */
        int64_t *extent = ARENA_NEW(a, int64_t);
        *extent = (int64_t)ext->blob_size;
        DLDataType u8 = {kDLUInt, 8, 1};
        weights[nweights] = (ArtifactWeight){{arena_printf(a, "%s.blob", ext->name), u8, 1, extent, 0, false}, ext->blob, 0};
        kernels[gi].runtime_entry = ext->runtime_entry;
        kernels[gi].blob = nweights++;
      }
    } else {
      const char **nodes = ARENA_ARRAY(a, const char *, grp->nnodes);
      for (int k = 0; k < grp->nnodes; k++) nodes[k] = g->nodes[grp->nodes[k]].name;
      int64_t flops = tir_func_flops(gf->func); /* the compute definition: useful work, schedule-independent */
      kernels[gi] = (ArtifactKernel){.name = gf->func->name, .num_nodes = grp->nnodes, .nodes = nodes,
                                     .flops = flops > 0 ? (uint64_t)flops : 0};
    }
    int nargs = gf->ninputs + gf->noutputs;
    ArtifactArg *args = ARENA_ARRAY(a, ArtifactArg, nargs);
    for (int k = 0; k < nargs; k++) {
      ValueId v = k < gf->ninputs ? gf->inputs[k] : gf->outputs[k - gf->ninputs];
      const GraphValue *gv = &g->values[v];
      ArtifactArg *arg = &args[k];
      arg->dtype = to_dl(gv->dtype);
      arg->ndim = gv->rank;
      arg->shape = gv->dims;
      int io;
      if (gv->constant) {
        if (weight_of[v] < 0) {
          weight_of[v] = nweights;
          weights[nweights].t = tensor_of(gv);
          weights[nweights].data = gv->constant->data;
          nweights++;
        }
        arg->kind = ARTIFACT_ARG_WEIGHT;
        arg->index = weight_of[v];
      } else if ((io = compile_extent_of_output(g, v)) >= 0) {
        arg->kind = ARTIFACT_ARG_OUTPUT_SHAPE; /* the output's shape array (runtime/artifact.h) */
        arg->index = io;
        arg->view = true;
      } else if ((io = index_of(g->outputs, g->noutputs, v)) >= 0) {
        arg->kind = ARTIFACT_ARG_OUTPUT;
        arg->index = io;
      } else if ((io = index_of(g->inputs, g->ninputs, v)) >= 0) {
        arg->kind = ARTIFACT_ARG_INPUT;
        arg->index = io;
      } else if (c->mem.offset[v] >= 0) {
        arg->kind = ARTIFACT_ARG_ARENA;
        arg->offset = (uint64_t)c->mem.offset[v];
        arg->view = true;
      } else {
        return err_set(err, LOOM_ERR_INTERNAL, "value \"%s\" of kernel %s has no storage", gv->name, kname);
      }
    }
    calls[gi] = (ArtifactCall){gi, nargs, args};
  }
  spec.num_inputs = g->ninputs;
  spec.inputs = ins;
  spec.num_outputs = nvis;
  spec.outputs = outs;
  spec.num_weights = nweights;
  spec.weights = weights;
  spec.num_kernels = c->ngroups;
  spec.kernels = kernels;
  spec.num_calls = c->ngroups;
  spec.calls = calls;
  if (c->byoc) { /* the runtime libraries of the back ends that claimed something */
    ArtifactByocRuntime *rts = ARENA_ARRAY(a, ArtifactByocRuntime, c->byoc->nbackends);
    for (int b = 0; b < c->byoc->nbackends; b++) {
      const ByocBackend *be = &c->byoc->backends[b];
      if (be->claimed && be->plugin->runtime_library)
        rts[spec.num_byoc_runtimes++] = (ArtifactByocRuntime){be->plugin->name, be->plugin->runtime_library};
    }
    spec.byoc_runtimes = rts;
  }
  spec.arena_bytes = (uint64_t)c->mem.arena_size;
  spec.intermediate_bytes = (uint64_t)c->mem.intermediate_bytes;
  uint64_t *offsets = ARENA_ARRAY(a, uint64_t, nweights + 1), blob;
  if (!artifact_weight_layout(weights, nweights, offsets, &blob))
    return err_set(err, LOOM_ERR_INTERNAL, "a weight has a dtype or shape the artifact cannot hold");
  spec.run_entry = LOOM_RUN_ENTRY_DEFAULT;
  spec.run_entry_weight_offsets = offsets;
  c->spec = spec;
  return LOOM_OK;
}

/* The shared object did not build: when an external kernel's C is at
 * fault, say which back end wrote it (each is built alone, with the
 * prelude the generated kernels have). */
static loom_status blame_external(Compiled *c, const BuildOptions *build, LoomError *err) {
  for (int i = 0; i < c->ngroups; i++) {
    const ByocKernel *ext = &c->ext[i];
    if (!ext->name) continue;
    StrBuf src;
    sb_init(&src);
    codegen_c_prelude(&src);
    compile_external_kernel_source(ext, &c->byoc->regions[ext->region].view, &src);
    BuildResult r;
    LoomError e = {0};
    loom_status st = build_shared_object(sb_cstr(&src), build, &r, &e);
    sb_free(&src);
    if (st == LOOM_ERR_BUILD)
      return err_set(err, LOOM_ERR_BUILD, "BYOC back end \"%s\" returned C for kernel %s that does not compile: %s",
                     ext->backend, ext->name, e.msg);
  }
  return err->status;
}

LowerOptions compile_lower_options(const Target *t) {
  LowerOptions o = lower_options_default();
  o.vector_types = t->vector_bits > 0;
  return o;
}

/* Kernels and the generated run entry, in one source and shared object.
 * External kernels' C goes before the entry (it calls them by name); the
 * libraries that C calls are loaded first, as the runtime will. */
static loom_status compile_build(Compiled *c, LoomError *err) {
  if (c->target.cross_cc)
    return err_set(err, LOOM_ERR_UNSUPPORTED, "--target %s: another ISA, for `loom export-c --target %s` only",
                   c->target.name, c->target.name);
  loom_status st = plan_artifact(c, err);
  if (!st && c->byoc) st = byoc_session_load_runtimes(c->byoc, err);
  if (st) return st;
  StrBuf entry;
  sb_init(&entry);
  const PrimFunc **funcs = ARENA_ARRAY(c->arena, const PrimFunc *, c->ngroups);
  int nfuncs = 0;
  for (int i = 0; i < c->ngroups; i++) {
    const ByocKernel *ext = &c->ext[i];
    if (ext->name) compile_external_kernel_source(ext, &c->byoc->regions[ext->region].view, &entry);
    else funcs[nfuncs++] = c->funcs[i];
  }
  st = compile_run_entry_source(&c->spec, &entry, err);
  c->spec.target = c->target.artifact_target; /* NULL: the host's features */
  BuildOptions build = {.cflags = c->target.cflags};
  LowerOptions lower = compile_lower_options(&c->target);
  pass_dump_set_hook(&c->dump, &lower);
  DriverOptions opt = {.epilogue = sb_cstr(&entry), .build = &build, .lower = &lower};
  if (!st) st = driver_build(c->arena, funcs, nfuncs, &opt, &c->module, err);
  if (st == LOOM_ERR_BUILD && c->byoc) st = blame_external(c, &build, err);
  sb_free(&entry);
  return st;
}

static loom_status write_artifact(Compiled *c, const char *out_path, LoomError *err) {
  c->spec.so_path = driver_so_path(c->module);
  return artifact_write(out_path, &c->spec, err);
}

static void copy_error(const LoomError *err, char *errbuf, size_t errlen) {
  if (errbuf && errlen) snprintf(errbuf, errlen, "%s", err->msg[0] ? err->msg : loom_status_name(err->status));
}

static loom_status compile_onnx(const char *onnx_path, const char *out_path, const loom_compile_options *opt,
                                char *errbuf, size_t errlen) {
  LoomError err = {0};
  Compiled c;
  loom_status st;
  if (!onnx_path || !out_path) {
    st = err_set(&err, LOOM_ERR_INVALID_ARG, "compile: a model path and an output path are required");
  } else {
    st = compile_front(onnx_path, opt, stderr, NULL, &c, &err);
    if (!st) st = compile_build(&c, &err);
    if (!st) st = write_artifact(&c, out_path, &err);
    compiled_free(&c);
  }
  if (st) copy_error(&err, errbuf, errlen);
  return st;
}

loom_status compile_model_tasks(const char *onnx_path, const loom_compile_options *opt, CompileTasks *out,
                                LoomError *err) {
  memset(out, 0, sizeof *out);
  Compiled c;
  loom_status st = compile_front(onnx_path, opt, stderr, "lowered", &c, err);
  if (st) {
    compiled_free(&c);
    return st;
  }
  /* --byoc: the back ends have taken their regions (External groups, no
   * PrimFunc); nothing of theirs is tuned, so their session can go */
  byoc_session_free(c.byoc);
  out->arena = c.arena;
  out->graph = c.graph;
  out->target = c.target;
  out->threads = c.threads;
  out->groups = c.groups;
  out->ngroups = c.ngroups;
  return LOOM_OK;
}

void compile_tasks_free(CompileTasks *t) {
  if (t->graph) graph_free(t->graph);
  arena_free(t->arena);
  memset(t, 0, sizeof *t);
}

loom_status compile_model_parts(const char *onnx_path, const loom_compile_options *opt, const char *run_entry,
                                CompileModelParts *out, LoomError *err) {
  memset(out, 0, sizeof *out);
  if (opt && opt->byoc) return err_set(err, LOOM_ERR_UNSUPPORTED, "export-c: --byoc is not supported (external kernels)");
  Compiled *c = calloc(1, sizeof *c);
  if (!c) return err_set(err, LOOM_ERR_INTERNAL, "export: out of memory");
  out->compiled = c;
  loom_status st = compile_front(onnx_path, opt, stderr, NULL, c, err);
  if (!st) st = plan_artifact(c, err);
  if (st) return st;
  c->spec.run_entry = run_entry;
  out->funcs = c->funcs;
  out->nfuncs = c->ngroups;
  out->spec = &c->spec;
  out->target = c->target;
  return LOOM_OK;
}

void compile_model_parts_free(CompileModelParts *p) {
  if (p->compiled) compiled_free(p->compiled);
  free(p->compiled);
  memset(p, 0, sizeof *p);
}

typedef struct RecordSummary {
  const char *default_trace;
  double default_us, best_us;
  int64_t n, failed;
} RecordSummary;

static bool summarize_record(const TuneRecord *r, void *user) {
  RecordSummary *s = user;
  s->n++;
  if (strcmp(r->status, "ok")) {
    s->failed++;
    return true;
  }
  if (!strcmp(r->provenance, "default")) s->default_us = r->median_us;
  if (s->best_us < 0 || r->median_us < s->best_us) s->best_us = r->median_us;
  return true;
}

/* `loom inspect MODEL --records FILE`: per kernel workload, what the
 * records hold for this target and thread count. */
static loom_status print_records(const Compiled *c, const char *path, StrBuf *sb, LoomError *err) {
  RecordStore *rec;
  loom_status st = records_open(path, &rec, err);
  if (st) return st;
  sb_printf(sb, "tuning records %s (target %s, %d threads):\n", path, c->target.name, c->threads);
  /* samples: the sampling points of the kernel's search space (0: one point, nothing to tune). */
  sb_printf(sb, "%-28s %6s %7s %8s %7s %12s %12s %8s\n", "kernel", "calls", "samples", "records", "failed",
            "default us", "tuned us", "speedup");
  double total_default = 0, total_tuned = 0;
  char (*keys)[AUTOTUNE_WORKLOAD_KEY_LEN + 1] = loom_calloc((size_t)c->ngroups + 1, sizeof *keys);
  for (int i = 0; !st && i < c->ngroups; i++) {
    if (!c->groups[i].func) continue; /* an external kernel: nothing to tune */
    autotune_workload_key(c->groups[i].func, keys[i]);
    int first = i, calls = 0;
    for (int k = 0; k < i && first == i; k++)
      if (c->groups[k].func && !strcmp(keys[k], keys[i])) first = k;
    if (first != i) continue;
    for (int k = i; k < c->ngroups; k++) {
      if (!c->groups[k].func) continue;
      char key[AUTOTUNE_WORKLOAD_KEY_LEN + 1];
      autotune_workload_key(c->groups[k].func, key);
      calls += !strcmp(key, keys[i]);
    }
    RecordSummary s = {NULL, -1, -1, 0, 0};
    st = records_foreach(rec, keys[i], c->target.name, summarize_record, &s, err);
    char d[32] = "-", t[32] = "-", x[32] = "-";
    if (s.default_us >= 0) snprintf(d, sizeof d, "%.2f", s.default_us), total_default += calls * s.default_us;
    if (s.best_us >= 0) snprintf(t, sizeof t, "%.2f", s.best_us), total_tuned += calls * s.best_us;
    if (s.default_us > 0 && s.best_us > 0) snprintf(x, sizeof x, "%.2fx", s.default_us / s.best_us);
    Schedule *space = sch_create(c->groups[i].func, DECIDE_DEFAULT, 0);
    compile_schedule_group_on(space, &c->target, c->threads);
    sb_printf(sb, "%-28s %6d %7d %8lld %7lld %12s %12s %8s\n", c->groups[i].func->name, calls,
              trace_num_samples(sch_trace(space)), (long long)s.n, (long long)s.failed, d, t, x);
    sch_free(space);
  }
  loom_free(keys);
  if (!st)
    sb_printf(sb, "kernels with records, calls x time: default %.3f ms, tuned %.3f ms\n", total_default * 1e-3,
              total_tuned * 1e-3);
  records_close(rec);
  return st;
}

static loom_status inspect_onnx(const char *onnx_path, const char *dump, const loom_compile_options *opt, FILE *out,
                                char *errbuf, size_t errlen) {
  LoomError err = {0};
  if (dump && strcmp(dump, "graph") && strcmp(dump, "partitioned") && strcmp(dump, "fused") && strcmp(dump, "tir") &&
      strcmp(dump, "c")) {
    err_set(&err, LOOM_ERR_INVALID_ARG, "--dump %s: expected graph, partitioned, fused, tir or c", dump);
    copy_error(&err, errbuf, errlen);
    return err.status;
  }
  Compiled c;
  bool with_records = !dump && opt && opt->records;
  const char *upto = dump && (!strcmp(dump, "graph") || !strcmp(dump, "partitioned") || !strcmp(dump, "fused")) ? dump
                     : dump                                                       ? NULL
                     : with_records                                               ? "lowered"
                                                                                  : "fused";
  loom_compile_options front = opt ? *opt : (loom_compile_options){.opt_level = 2};
  front.records = NULL; /* inspect reads the records itself */
  /* Dumps of lowering passes need scheduled kernels (not --dump graph's
   * stage: that one stops after infer whatever the dumps name). */
  PassDump wanted = {front.dump_before, front.dump_after, out};
  bool lower_for_dumps = pass_dump_wants_lowering(&wanted) && !(dump && !strcmp(dump, "graph"));
  if (lower_for_dumps) upto = NULL;
  loom_status st = compile_front(onnx_path, &front, out, upto, &c, &err);
  if (!st && dump && !strcmp(dump, "c")) {
    st = compile_build(&c, &err);
  } else if (!st && lower_for_dumps) {
    LowerOptions lower = compile_lower_options(&c.target);
    pass_dump_set_hook(&c.dump, &lower);
    for (int i = 0; !st && i < c.ngroups; i++)
      if (c.funcs[i] && !tir_lower(c.arena, c.funcs[i], &lower, &err)) st = err.status ? err.status : LOOM_ERR_INTERNAL;
  }
  if (!st) {
    StrBuf sb;
    sb_init(&sb);
    if (dump && !strcmp(dump, "graph")) {
      graph_print(c.graph, &sb);
    } else if (dump && !strcmp(dump, "partitioned")) {
      graph_print(c.graph, &sb);
      if (c.byoc) byoc_print_regions(c.byoc, &sb);
      else sb_puts(&sb, "(no --byoc back end: nothing is partitioned)\n");
    } else if (dump && !strcmp(dump, "fused")) {
      graph_fusion_plan_print(c.graph, &c.plan, &sb);
    } else if (dump && !strcmp(dump, "tir")) {
      /* Straight out: nothing between printing and freeing t can raise
       * out of memory (support/oom.h) and leak it. */
      for (int i = 0; i < c.ngroups; i++) {
        if (!c.funcs[i]) { /* an external kernel: its C is in --dump c */
          fprintf(out, "# kernel %s: BYOC back end %s (no loop IR)\n\n", c.ext[i].name, c.ext[i].backend);
          continue;
        }
        char *t = tir_print_func(c.funcs[i]);
        fputs(t, out);
        fputs("\n", out);
        loom_free(t);
      }
    } else if (dump) {
      sb_puts(&sb, driver_source(c.module));
    } else {
      int64_t params = 0;
      for (int i = 0; i < c.graph->nvalues; i++)
        if (c.graph->values[i].constant) params += (int64_t)c.graph->values[i].constant->nbytes;
      sb_printf(&sb, "model: %s\nnodes: %d\nkernels (fused groups): %d\nweights: %lld bytes\n", onnx_path,
                c.graph->nnodes, c.plan.ngroups, (long long)params);
      sb_printf(&sb, "arena: %lld bytes (sum of all intermediate tensors: %lld bytes)\n", (long long)c.mem.arena_size,
                (long long)c.mem.intermediate_bytes);
      if (c.byoc) byoc_print_regions(c.byoc, &sb);
      if (with_records) st = print_records(&c, opt->records, &sb, &err);
    }
    fputs(sb_cstr(&sb), out);
    sb_free(&sb);
  }
  compiled_free(&c);
  if (st) copy_error(&err, errbuf, errlen);
  return st;
}

/* The public entries' recovery points for running out of memory
 * (support/oom.h): the arenas of the compilation are freed and the error
 * names what was being allocated. */
static loom_status out_of_memory(OomRecovery *r, const char *onnx_path, char *errbuf, size_t errlen) {
  LoomError err = {0};
  oom_recovery_unwind(r, &err);
  err_prefix(&err, "%s", onnx_path ? onnx_path : "(no model)");
  copy_error(&err, errbuf, errlen);
  return err.status;
}

loom_status loom_compile_onnx(const char *onnx_path, const char *out_path, const loom_compile_options *opt,
                              char *errbuf, size_t errlen) {
  OomRecovery r;
  if (setjmp(*oom_recovery_push(&r))) return out_of_memory(&r, onnx_path, errbuf, errlen);
  loom_status st = compile_onnx(onnx_path, out_path, opt, errbuf, errlen);
  oom_recovery_pop(&r);
  return st;
}

loom_status loom_inspect_onnx(const char *onnx_path, const char *dump, const loom_compile_options *opt, FILE *out,
                              char *errbuf, size_t errlen) {
  OomRecovery r;
  if (setjmp(*oom_recovery_push(&r))) return out_of_memory(&r, onnx_path, errbuf, errlen);
  loom_status st = inspect_onnx(onnx_path, dump, opt, out, errbuf, errlen);
  oom_recovery_pop(&r);
  return st;
}

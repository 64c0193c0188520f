/* BYOC, the compiler's side (docs/byoc.md): external back ends described
 * by the plugin API (include/loom/loom_byoc.h) claim regions of the graph
 * before Loom's own fusion.
 *
 *   plugin.c      a session: `--byoc NAME|PATH.so,...` loaded (built-in
 *                 back ends or dlopen'ed plugins), checked, runtime
 *                 libraries preloaded
 *   graph_view.c  the graph IR as the plugin API's read-only view
 *   pattern.c     the chain patterns: checked once, matched at a node
 *   partition.c   match (longest first), merge adjacent regions, rewrite
 *                 each region into one External node
 *   codegen.c     a region -> C (the plugin's codegen in a child process);
 *                 the FLOPs of a region
 *   backend_cblas.c  the CBLAS back end (OpenBLAS cblas_sgemm), C form
 *   backend_dnnl.c   the oneDNN back end, blob form; backends/ holds its
 *                    run-time half (libloom_byoc_dnnl_rt.so) and the blob
 *
 * An External node (graph op "External", attributes backend and region)
 * stands for its region in the graph: inputs are the region's inputs
 * (runtime tensors and constant weights, in first-use order), outputs the
 * values it computes for the rest of the graph. It is opaque to fusion, so
 * it becomes one kernel of the artifact whose code the back end wrote. */
#ifndef LOOM_BYOC_BYOC_H
#define LOOM_BYOC_BYOC_H

#include "graph/graph.h"
#include "loom/loom_byoc.h"
#include "support/arena.h"
#include "support/error.h"
#include "support/strbuf.h"

#include <stdbool.h>

/* One loaded back end. */
typedef struct ByocBackend {
  const loom_byoc_plugin *plugin;
  const char *spec; /* what --byoc named: "cblas" or a path */
  void *handle;     /* dlopen handle of a plugin, NULL for a built-in back end */
  int *pattern_order; /* pattern indices, longest chain first */
  int npatterns;
  /* The last partition: nodes supports() vetoed, nodes claimed. */
  int vetoed, claimed;
} ByocBackend;

/* One region, after partitioning: the view codegen receives (symbol set
 * then) and what the dumps and the artifact say about it. */
typedef struct ByocRegion {
  int backend;
  loom_byoc_region view;
  uint64_t flops; /* of one call (byoc_region_flops) */
} ByocRegion;

typedef struct ByocSession {
  Arena *arena;
  ByocBackend *backends;
  int nbackends, max_backends;
  ByocRegion *regions;
  int nregions, regions_cap;
  void **runtime_handles; /* byoc_session_load_runtimes */
  int nruntime_handles;
} ByocSession;

/* ---- plugin.c ---- */
/* Loads the comma-separated back ends of `list` (a built-in name such as
 * "cblas", or a path to a plugin .so; the first listed claims first).
 * Errors name the back end and what was expected: an unknown name, a file
 * that does not load, a missing loom_byoc_register, another ABI version,
 * a malformed description or pattern. */
loom_status byoc_session_open(const char *list, ByocSession **out, LoomError *err);
/* An empty session with room for max_backends back ends (NULL: out of
 * memory), and adding one: p is checked (byoc_plugin_check, `spec` naming
 * it); handle (NULL for a built-in back end) is dlclose'd with the session,
 * also when the check fails. */
ByocSession *byoc_session_new(int max_backends);
loom_status byoc_session_add(ByocSession *s, const loom_byoc_plugin *p, const char *spec, void *handle, LoomError *err);
/* NULL is allowed. Closes plugins and runtime libraries. */
void byoc_session_free(ByocSession *s);
/* The built-in back ends, by name; NULL when none has it. */
const loom_byoc_plugin *byoc_builtin(const char *name);
/* Checks a plugin's description (ABI version first); `who` names it in
 * messages. */
loom_status byoc_plugin_check(const loom_byoc_plugin *p, const char *who, LoomError *err);
/* Loads (RTLD_GLOBAL) the runtime library of every back end that claimed a
 * region, so generated code that calls it links and loads in this process. */
loom_status byoc_session_load_runtimes(ByocSession *s, LoomError *err);

/* ---- graph_view.c ---- */
/* The whole graph as the plugin API's view: tensor i is value i, node i
 * is node i (composite -1). Lives in `a`. */
loom_byoc_graph byoc_graph_view(Arena *a, const Graph *g);
/* The DLPack form of a graph dtype. */
DLDataType byoc_dl_dtype(DType t);
/* A view node of graph node n, its tensor indices mapped through
 * tensor_of (value -> view tensor; NULL: the identity). */
loom_byoc_node byoc_node_view(Arena *a, const GraphNode *n, const int32_t *tensor_of);

/* ---- pattern.c ---- */
/* Checks one pattern of a plugin: a name, at least one step, every op a
 * known graph op (or "*"). */
loom_status byoc_pattern_check(const loom_byoc_pattern *p, const char *who, LoomError *err);
/* Number of steps of a pattern. */
int byoc_pattern_length(const loom_byoc_pattern *p);
/* Whether `op` is one of the step's alternatives ("Add|Sub", "*"). */
bool byoc_step_has_op(const loom_byoc_step *s, const char *op);

/* Callbacks and state the matcher consults. */
typedef struct ByocMatchEnv {
  const Graph *g;
  const loom_byoc_graph *view;
  const int *uses;     /* per value: graph_use_counts */
  const bool *taken;   /* per node: already claimed (or NULL) */
  /* Per node: 1 supported, 0 vetoed, -1 not asked yet (filled lazily). */
  signed char *supported;
  const loom_byoc_plugin *plugin;
  int *vetoed; /* counts the nodes supports() refused */
} ByocMatchEnv;

/* The longest match of pattern p whose chain starts at node `head`: the
 * matched nodes in chain order into nodes (room for the pattern's length),
 * their count returned (0: no match). Optional steps are taken when they
 * can be, skipped otherwise. */
int byoc_match_at(const ByocMatchEnv *env, const loom_byoc_pattern *p, int head, int *nodes);

/* ---- partition.c ---- */
/* For each back end in order, matches its patterns on g (at every node in
 * topological order, the longest match of any pattern), merges the matches
 * into regions (adjacent ones when the back end allows, never making a
 * cycle), and replaces each region by one External node. Appends the
 * regions to s->regions; fills each back end's matched/vetoed/claimed.
 * g must be inferred; it stays inferred and topologically ordered. */
loom_status byoc_partition(ByocSession *s, Graph *g, LoomError *err);
/* The regions as text (`loom inspect --dump partitioned`):
 *   region 0 backend cblas (cblas.matmul_bias) kernel of 2 nodes
 *     MatMul "mm0", Add "add0"
 *     (%x: f32[4, 8], %w: f32[8, 16], %b: f32[16]) -> (%y: f32[4, 16]) */
void byoc_print_regions(const ByocSession *s, StrBuf *sb);

/* ---- codegen.c ---- */
typedef struct ByocKernel {
  const char *name;    /* the kernel symbol */
  const char *backend; /* the back end's name */
  const char *source;  /* the plugin's C, defining regions[region].view.symbol */
  int region;
  /* The blob form (loom/loom_byoc.h): the source is then Loom's call through
   * NAME_external, and the artifact keeps the blob and the entry's name. */
  const void *blob;
  size_t blob_size;
  const char *runtime_entry; /* NULL for the C form */
  const char **nodes;  /* the region's ONNX node names */
  int num_nodes;
  size_t workspace_bytes;
  uint64_t flops;
} ByocKernel;

/* The C of the kernel `name` of region r: the plugin's codegen in a child
 * process (a crash, a refusal or an empty result is an error naming the
 * back end and the region), defining the function r's view names as its
 * symbol ("NAME_body"). The compiler writes the kernel with the standard
 * ABI around it (compile/external_kernel.c). Lives in s->arena. */
loom_status byoc_codegen(ByocSession *s, int region, const char *name, ByocKernel *out, LoomError *err);
/* FLOPs of one call of a region: 2 per multiply-add of MatMul, Gemm and
 * Conv, 1 per output element of anything else. */
uint64_t byoc_region_flops(const loom_byoc_region *r);

/* ---- predicates.c: shared by the built-in back ends ---- */
/* Every present input and the one output f32. */
bool byoc_all_f32(const loom_byoc_graph *g, const loom_byoc_node *n);
/* `where` of a bias Add after a product: Add(x, c) (either order) with a
 * constant c over the last axis only ([N] or [1, ..., N]) that does not
 * broadcast x. */
int byoc_bias_add_ok(const loom_byoc_graph *g, int32_t node, void *user);

/* ---- the built-in back ends ---- */
const loom_byoc_plugin *byoc_cblas_plugin(void); /* backend_cblas.c */
/* backend_dnnl.c; its run-time half is backends/dnnl_runtime.c
 * (libloom_byoc_dnnl_rt.so, LOOM_BYOC_DNNL_RUNTIME) */
const loom_byoc_plugin *byoc_dnnl_plugin(void);

#endif

/* Bring your own codegen (BYOC): the plugin API of Loom's external code
 * generators (docs/byoc.md walks through a complete plugin).
 *
 * A back end reuses all of Loom (ONNX import, graph passes, memory
 * planning, the artifact and its runtime) and supplies only a code
 * generator for the parts of a model it wants. It declares
 *
 *   - a table of named patterns over the graph (chains such as
 *     `Conv -> Add(const)? -> Relu?`, below), which Loom matches on the
 *     model before its own fusion, longest match first;
 *   - supports(node): a veto over every node a pattern would claim;
 *   - codegen(region): for each region of matched nodes, C source that
 *     Loom compiles into the artifact's shared object next to its own
 *     kernels, or an opaque blob that the back end's runtime library
 *     turns into state once at load (loom_byoc_runtime: init, run, release).
 *
 * A plugin is a shared library exporting one function,
 *
 *   const loom_byoc_plugin *loom_byoc_register(void);
 *
 * returning a static description whose first field is the ABI version it
 * was built against (LOOM_BYOC_ABI_VERSION): Loom refuses any other.
 * `loom compile MODEL.onnx --byoc PATH.so` loads it; Loom's own back ends
 * (`--byoc cblas`) use the same structures.
 *
 * Build time and run time are separate: the plugin runs inside the
 * compiler only (codegen runs in a child process, so a crashing plugin is
 * an error naming it, not a dead compiler). The artifact needs at run time
 * only Loom's runtime plus the library the generated code calls, or the
 * back end's runtime that runs the blob codegen returned (loom_byoc_runtime),
 * which the plugin names in runtime_library and the runtime loads before
 * the artifact's kernels.
 *
 * This header needs only libc and DLPack. */
#ifndef LOOM_BYOC_H
#define LOOM_BYOC_H

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1: the first version. 2: the model's thread count reaches the back end
 * (the C form's third parameter, init's num_threads), so a vendor library
 * runs on as many threads as the model was loaded with. Changes to any
 * structure or callback below bump it. */
#define LOOM_BYOC_ABI_VERSION 2
#define LOOM_BYOC_REGISTER_SYMBOL "loom_byoc_register"

/* ---- the graph as a plugin sees it (read only, valid during the call) ---- */

typedef struct loom_byoc_tensor {
  const char *name;
  DLDataType dtype;
  int32_t ndim;
  const int64_t *shape; /* static extents */
  const void *data;     /* a constant's bytes (row-major, dense); NULL for a tensor computed at run time */
} loom_byoc_tensor;

typedef enum loom_byoc_attr_kind {
  LOOM_BYOC_ATTR_INT,
  LOOM_BYOC_ATTR_FLOAT,
  LOOM_BYOC_ATTR_STRING,
  LOOM_BYOC_ATTR_INTS,
  LOOM_BYOC_ATTR_FLOATS,
  LOOM_BYOC_ATTR_OTHER, /* a tensor or subgraph attribute: not shown */
} loom_byoc_attr_kind;

typedef struct loom_byoc_attr {
  const char *name;
  loom_byoc_attr_kind kind;
  int64_t i;
  double f;
  const char *s;
  const int64_t *ints;
  const double *floats;
  int32_t n; /* elements of ints / floats */
} loom_byoc_attr;

typedef struct loom_byoc_node {
  const char *op;   /* the ONNX op type: "Conv", "MatMul", "Relu" */
  const char *name; /* the ONNX node name (messages) */
  int32_t ninputs;
  const int32_t *inputs; /* tensor indices; -1 for an omitted optional input */
  int32_t noutputs;
  const int32_t *outputs;
  int32_t nattrs; /* every attribute, ONNX defaults filled in */
  const loom_byoc_attr *attrs;
  int32_t composite; /* in a region: the pattern match it belongs to; -1 elsewhere */
} loom_byoc_node;

/* A whole model (for supports and pattern predicates) or one region. */
typedef struct loom_byoc_graph {
  int32_t ntensors;
  const loom_byoc_tensor *tensors;
  int32_t nnodes;
  const loom_byoc_node *nodes; /* topological order */
} loom_byoc_graph;

/* ---- patterns ----
 *
 * A pattern is a chain of steps, each matching one node whose output feeds
 * the next step's node and nothing else. `Conv -> Add(const)? -> Relu?`:
 *
 *   static const loom_byoc_step conv_bias_relu[] = {
 *       {.ops = "Conv", .operands = {LOOM_BYOC_RUNTIME, LOOM_BYOC_CONST, LOOM_BYOC_CONST_OR_ABSENT}},
 *       {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_CONST}},
 *       {.ops = "Relu|Clip", .optional = 1},
 *       {0},
 *   };
 *
 * ops: one op type, alternatives separated by '|', or "*" for any op.
 * optional: the step may match nothing (then the chain goes on from the
 * same node). Each operand position may constrain the node's input there
 * (LOOM_BYOC_OPERAND_ANY, the zero value, does not); `where` adds any
 * attribute, dtype or shape predicate. Nodes with one output only. */
typedef enum loom_byoc_operand {
  LOOM_BYOC_OPERAND_ANY = 0, /* anything, present or omitted */
  LOOM_BYOC_PREV,            /* the previous step's output (on the first step: any tensor) */
  LOOM_BYOC_CONST,           /* a constant (weights) */
  LOOM_BYOC_CONST_OR_ABSENT, /* a constant or an omitted optional input */
  LOOM_BYOC_RUNTIME,         /* a tensor computed at run time */
  LOOM_BYOC_ABSENT,          /* omitted */
} loom_byoc_operand;

#define LOOM_BYOC_MAX_OPERANDS 8

typedef struct loom_byoc_step {
  const char *ops; /* NULL ends the chain */
  int32_t optional;
  /* A two-input op whose operand constraints may also match swapped
   * (Add(prev, const) then matches Add(const, prev)). */
  int32_t commutative;
  loom_byoc_operand operands[LOOM_BYOC_MAX_OPERANDS];
  /* NULL, or a predicate on the node (g->nodes[node]): non-zero accepts. */
  int (*where)(const loom_byoc_graph *g, int32_t node, void *user);
} loom_byoc_step;

typedef struct loom_byoc_pattern {
  const char *name; /* "cblas.gemm": shown in dumps and passed to codegen */
  const loom_byoc_step *steps;
} loom_byoc_pattern;

/* ---- regions and code ---- */

/* One pattern match inside a region: region nodes [first_node,
 * first_node + num_nodes), in chain order. */
typedef struct loom_byoc_composite {
  const char *pattern;
  int32_t first_node, num_nodes;
} loom_byoc_composite;

/* What codegen turns into one external function. Its parameters are the
 * region's inputs (runtime tensors and constant weights, in the order its
 * nodes first read them), then its outputs. Tensors of `graph` that are neither are internal: the
 * generated code keeps them where it likes (the workspace). */
typedef struct loom_byoc_region {
  const char *symbol; /* the function the C source must define */
  int32_t index;      /* the region's number in the model (messages) */
  loom_byoc_graph graph;
  int32_t ninputs;
  const int32_t *inputs; /* tensor indices of graph */
  int32_t noutputs;
  const int32_t *outputs;
  int32_t ncomposites;
  const loom_byoc_composite *composites; /* in topological order; their nodes are contiguous */
} loom_byoc_region;

/* codegen's result, in one of two forms.
 *
 * C source: c_source (allocated with malloc, freed by Loom) must define
 *
 *   int32_t SYMBOL(void *const *data, void *workspace, int32_t num_threads);
 *
 * (it may be static), where data[i] is parameter i's first element (dense,
 * row-major, the region's dtypes and shapes; outputs after inputs),
 * workspace is workspace_bytes of 64-byte aligned scratch that Loom
 * allocates once per model (NULL when 0) and num_threads (>= 1) the
 * model's thread count (loom run --threads, loom_model_load), which a
 * vendor library with its own threads should follow. It returns 0, or non-zero for a
 * failure (reported as the kernel's error). It must not keep state between
 * calls; it may call runtime_library. Loom adds the kernel around it that
 * checks every argument.
 *
 * A blob for the back end's runtime: c_source NULL, blob (malloc'ed, freed
 * by Loom; the artifact keeps it in its weights section) and runtime_entry,
 * a function of runtime_library returning its loom_byoc_runtime. At load the
 * runtime calls init(blob, weights, num_threads) once, per call
 * run(data, workspace) with the same data and workspace as above, at
 * unload release. */
typedef struct loom_byoc_code {
  char *c_source;
  size_t workspace_bytes;
  void *blob;
  size_t blob_size;
  const char *runtime_entry; /* a C identifier; static storage in the plugin */
} loom_byoc_code;

/* The run-time half of a back end that returns blobs: what
 * `const loom_byoc_runtime *ENTRY(void)` in its runtime_library returns. */
typedef struct loom_byoc_runtime {
  int32_t abi_version; /* LOOM_BYOC_ABI_VERSION */
  /* Once per loaded artifact, before any run: the state run() needs, from
   * the blob and the region's constant parameters (weights[i] is parameter
   * i's bytes in the artifact, NULL for a runtime tensor; nparams counts
   * inputs and outputs; num_threads >= 1, the model's thread count, for
   * run to use). It may allocate and reorder weights here, never in run.
   * 0 on success. */
  int (*init)(const void *blob, size_t blob_size, const void *const *weights, int32_t nparams, int32_t num_threads,
              void **state);
  /* One call: as the C form's function, with init's state. Called from
   * one thread at a time per loaded artifact. 0 on success. */
  int (*run)(void *state, void *const *data, void *workspace);
  void (*release)(void *state); /* at unload; NULL: nothing to release */
} loom_byoc_runtime;

typedef const loom_byoc_runtime *(*loom_byoc_runtime_fn)(void);

typedef struct loom_byoc_plugin {
  int32_t abi_version; /* LOOM_BYOC_ABI_VERSION */
  const char *name;    /* lower-case letters, digits and '_': names its kernels and profile rows */
  const loom_byoc_pattern *patterns; /* ended by a pattern with name NULL */
  /* NULL (everything its patterns match), or a veto: non-zero when the
   * back end can run g->nodes[node]. */
  int (*supports)(const loom_byoc_graph *g, int32_t node, void *user);
  /* Non-zero: regions whose composites feed one another merge into one
   * external function (codegen then sees several composites). */
  int32_t merge_regions;
  /* NULL, or the shared library the generated code calls
   * ("libopenblas.so.0"): the compiler and the runtime load it (global
   * symbols) before the kernels; an artifact that needs it does not load
   * without it. */
  const char *runtime_library;
  /* 0 on success; else a message in errbuf. Runs in a child process. */
  int (*codegen)(const loom_byoc_region *region, loom_byoc_code *out, char *errbuf, size_t errlen, void *user);
  void *user; /* passed back to every callback */
} loom_byoc_plugin;

typedef const loom_byoc_plugin *(*loom_byoc_register_fn)(void);

/* ---- helpers for predicates and code generators ---- */

static inline const loom_byoc_attr *loom_byoc_find_attr(const loom_byoc_node *n, const char *name) {
  for (int32_t i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) return &n->attrs[i];
  return NULL;
}

static inline int64_t loom_byoc_attr_int(const loom_byoc_node *n, const char *name, int64_t dflt) {
  const loom_byoc_attr *a = loom_byoc_find_attr(n, name);
  return a && a->kind == LOOM_BYOC_ATTR_INT ? a->i : dflt;
}

static inline double loom_byoc_attr_float(const loom_byoc_node *n, const char *name, double dflt) {
  const loom_byoc_attr *a = loom_byoc_find_attr(n, name);
  return a && a->kind == LOOM_BYOC_ATTR_FLOAT ? a->f : dflt;
}

/* Input k of node n, NULL when omitted. */
static inline const loom_byoc_tensor *loom_byoc_input(const loom_byoc_graph *g, const loom_byoc_node *n, int32_t k) {
  return k < n->ninputs && n->inputs[k] >= 0 ? &g->tensors[n->inputs[k]] : NULL;
}

static inline int loom_byoc_is_f32(const loom_byoc_tensor *t) {
  return t && t->dtype.code == kDLFloat && t->dtype.bits == 32 && t->dtype.lanes == 1;
}

static inline int64_t loom_byoc_numel(const loom_byoc_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->ndim; d++) n *= t->shape[d];
  return n;
}

/* Index of tensor t among the region's parameters (inputs, then outputs),
 * -1 for an internal tensor. */
static inline int32_t loom_byoc_param(const loom_byoc_region *r, int32_t t) {
  for (int32_t i = 0; i < r->ninputs; i++)
    if (r->inputs[i] == t) return i;
  for (int32_t i = 0; i < r->noutputs; i++)
    if (r->outputs[i] == t) return r->ninputs + i;
  return -1;
}

#ifdef __cplusplus
}
#endif

#endif

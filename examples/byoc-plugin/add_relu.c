/* An out-of-tree Loom BYOC plugin (docs/byoc.md walks through it).
 *
 * It claims `Add -> Relu` over f32 tensors whose operands have the
 * output's element count (no broadcasting to generate) and writes plain C
 * loops for them. Chains that feed one another merge into one region
 * (merge_regions): the results a region keeps to itself live in the
 * workspace that Loom allocates once per model.
 *
 * Build (against the installed headers, or a Loom source tree's include/):
 *   cmake -S . -B build [-DLOOM_INCLUDE_DIR=/path/to/include] && cmake --build build
 * Use:
 *   loom compile model.onnx -o model.loom --byoc build/libloom_byoc_add_relu.so
 *   loom run model.loom --profile        # its kernels show as "[example]" */
#include <loom/loom_byoc.h>

#include <stdio.h>
#include <stdlib.h>

/* where: f32 everywhere and no broadcasting (the generated loop indexes
 * every operand like the output). */
static int same_size_f32(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *y = &g->tensors[n->outputs[0]];
  if (!loom_byoc_is_f32(y)) return 0;
  for (int32_t k = 0; k < n->ninputs; k++) {
    const loom_byoc_tensor *x = loom_byoc_input(g, n, k);
    if (!loom_byoc_is_f32(x) || loom_byoc_numel(x) != loom_byoc_numel(y)) return 0;
  }
  return 1;
}

/* The pattern: Add, then the Relu that is its only reader. */
static const loom_byoc_step k_add_relu[] = {
    {.ops = "Add", .where = same_size_f32},
    {.ops = "Relu"},
    {0},
};

static const loom_byoc_pattern k_patterns[] = {
    {"example.add_relu", k_add_relu},
    {NULL, NULL},
};

/* Where the generated code finds tensor t: a parameter (data[i]), or for
 * a tensor internal to the region a slice of the workspace. offsets[t] is
 * -1 until it is given one. */
static void tensor_ref(FILE *f, const loom_byoc_region *r, int32_t t, const long *offsets) {
  int32_t p = loom_byoc_param(r, t);
  if (p >= 0) fprintf(f, "((float *)data[%d])", (int)p);
  else fprintf(f, "((float *)(ws + %ld))", offsets[t]);
}

static int codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)user;
  const loom_byoc_graph *g = &r->graph;
  long *offsets = calloc((size_t)g->ntensors + 1, sizeof *offsets);
  char *text = NULL;
  size_t len = 0;
  FILE *f = offsets ? open_memstream(&text, &len) : NULL;
  if (!f) {
    free(offsets);
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  /* Workspace: the result of every composite that only later composites
   * of this region read (64-byte aligned slices). */
  long workspace = 0;
  for (int32_t c = 0; c < r->ncomposites; c++) {
    const loom_byoc_node *relu = &g->nodes[r->composites[c].first_node + 1];
    int32_t y = relu->outputs[0];
    if (loom_byoc_param(r, y) >= 0) continue;
    offsets[y] = workspace;
    workspace += ((long)loom_byoc_numel(&g->tensors[y]) * 4 + 63) / 64 * 64;
  }
  fprintf(f, "static int32_t %s(void *const *data, void *workspace, int32_t num_threads) {\n", r->symbol);
  fprintf(f, "  char *ws = (char *)workspace;\n  (void)ws, (void)num_threads; /* one thread: no library to tell */\n");
  for (int32_t c = 0; c < r->ncomposites; c++) {
    const loom_byoc_node *add = &g->nodes[r->composites[c].first_node];
    const loom_byoc_node *relu = &g->nodes[r->composites[c].first_node + 1];
    long count = (long)loom_byoc_numel(&g->tensors[relu->outputs[0]]);
    fprintf(f, "  { /* %s \"%s\" -> %s \"%s\" */\n    const float *a = ", add->op, add->name, relu->op, relu->name);
    tensor_ref(f, r, add->inputs[0], offsets);
    fprintf(f, ";\n    const float *b = ");
    tensor_ref(f, r, add->inputs[1], offsets);
    fprintf(f, ";\n    float *y = ");
    tensor_ref(f, r, relu->outputs[0], offsets);
    fprintf(f,
            ";\n    for (long i = 0; i < %ldL; i++) {\n"
            "      float v = a[i] + b[i];\n"
            "      y[i] = v > 0.0f ? v : 0.0f;\n"
            "    }\n  }\n",
            count);
  }
  fprintf(f, "  return 0;\n}\n");
  free(offsets);
  if (fclose(f) != 0) {
    free(text);
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  out->c_source = text;
  out->workspace_bytes = (size_t)workspace;
  return 0;
}

static const loom_byoc_plugin k_plugin = {
    .abi_version = LOOM_BYOC_ABI_VERSION,
    .name = "example",
    .patterns = k_patterns,
    .supports = NULL,      /* its patterns say it all */
    .merge_regions = 1,    /* add-relu chains that feed one another: one function */
    .runtime_library = NULL, /* plain C: nothing to load at run time */
    .codegen = codegen,
    .user = NULL,
};

/* The one symbol Loom looks for. */
const loom_byoc_plugin *loom_byoc_register(void);
const loom_byoc_plugin *loom_byoc_register(void) { return &k_plugin; }

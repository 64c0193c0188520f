/* The CBLAS back end (`--byoc cblas`): MatMul (with a following bias Add)
 * and Gemm in f32 become calls of cblas_sgemm, from OpenBLAS at run time
 * (runtime_library). B may be a constant (weights, read in place from the
 * artifact's weights blob) or a runtime tensor; batched MatMul with
 * broadcast batch dims loops over precomputed per-batch offsets. The back
 * end allocates nothing per run: the bias is written into the output first
 * and sgemm accumulates onto it (beta 1), so no scratch is needed (OpenBLAS
 * itself mallocs a job table in each call it threads, docs/byoc.md).
 * OpenBLAS runs on as many threads as the model: each call sets OpenBLAS's
 * (process-wide) thread count to the kernel env's when it differs.
 *
 * Written against the plugin API alone (loom/loom_byoc.h), as an
 * out-of-tree plugin would be; only its registration is built in. The
 * generated C declares cblas_sgemm itself (CBLAS enums are ints in its
 * ABI) and OpenBLAS's openblas_get/set_num_threads, so building the
 * artifact needs no BLAS header. */
#include "byoc/byoc.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112, MAX_BATCH = 1 << 16 };

static bool fits_int(int64_t v) { return v > 0 && v <= INT_MAX; }

static int matmul_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1), *y = &g->tensors[n->outputs[0]];
  if (!byoc_all_f32(g, n) || !a || !b || a->ndim < 2 || b->ndim < 2) return 0;
  int64_t m = a->shape[a->ndim - 2], k = a->shape[a->ndim - 1], nn = b->shape[b->ndim - 1];
  int64_t batch = loom_byoc_numel(y) / (m * nn > 0 ? m * nn : 1);
  if (b->ndim == 2) m *= loom_byoc_numel(a) / (m * k > 0 ? m * k : 1), batch = 1; /* A's rows flattened */
  return fits_int(m) && fits_int(k) && fits_int(nn) && batch >= 1 && batch <= MAX_BATCH;
}

static int gemm_ok(const loom_byoc_graph *g, int32_t node, void *user) {
  (void)user;
  const loom_byoc_node *n = &g->nodes[node];
  const loom_byoc_tensor *a = loom_byoc_input(g, n, 0), *b = loom_byoc_input(g, n, 1), *c = loom_byoc_input(g, n, 2);
  const loom_byoc_tensor *y = &g->tensors[n->outputs[0]];
  if (!byoc_all_f32(g, n) || !a || !b || a->ndim != 2 || b->ndim != 2 || y->ndim != 2 || (c && c->ndim > 2)) return 0;
  int64_t k = loom_byoc_attr_int(n, "transA", 0) ? a->shape[0] : a->shape[1];
  return fits_int(y->shape[0]) && fits_int(y->shape[1]) && fits_int(k);
}

static const loom_byoc_step k_matmul_bias[] = {
    {.ops = "MatMul", .where = matmul_ok},
    {.ops = "Add", .optional = 1, .commutative = 1, .operands = {LOOM_BYOC_PREV, LOOM_BYOC_CONST}, .where = byoc_bias_add_ok},
    {0},
};

static const loom_byoc_step k_gemm[] = {
    {.ops = "Gemm", .where = gemm_ok},
    {0},
};

static const loom_byoc_pattern k_patterns[] = {
    {"cblas.matmul_bias", k_matmul_bias},
    {"cblas.gemm", k_gemm},
    {NULL, NULL},
};

/* ---- codegen ---- */

typedef struct Out {
  char *text;
  size_t len;
  FILE *f;
} Out;

/* y[rows, n] = c broadcast over rows (c is [n] after its leading 1s) or a
 * Gemm C of shape [cm, cn] (cm, cn each 1 or the full extent). */
static void emit_fill(FILE *f, int yp, int cp, int64_t rows, int64_t n, int64_t cm, int64_t cn) {
  fprintf(f,
          "  {\n    float *y = (float *)data[%d];\n    const float *c = (const float *)data[%d];\n"
          "    for (long i = 0; i < %" PRId64 "L; i++)\n      for (long j = 0; j < %" PRId64 "L; j++)\n"
          "        y[i * %" PRId64 "L + j] = c[%s * %" PRId64 "L + %s];\n  }\n",
          yp, cp, rows, n, n, cm == 1 ? "0" : "i", cn, cn == 1 ? "0" : "j");
}

static void emit_matmul(FILE *f, const loom_byoc_region *r) {
  const loom_byoc_graph *g = &r->graph;
  const loom_byoc_node *mm = &g->nodes[0], *add = g->nnodes > 1 ? &g->nodes[1] : NULL;
  const loom_byoc_tensor *a = &g->tensors[mm->inputs[0]], *b = &g->tensors[mm->inputs[1]];
  int32_t yt = add ? add->outputs[0] : mm->outputs[0];
  const loom_byoc_tensor *y = &g->tensors[yt];
  int ap = loom_byoc_param(r, mm->inputs[0]), bp = loom_byoc_param(r, mm->inputs[1]), yp = loom_byoc_param(r, yt);
  int64_t k = a->shape[a->ndim - 1], n = b->shape[b->ndim - 1], m = a->shape[a->ndim - 2];
  int64_t rows = loom_byoc_numel(y) / n;
  if (add) {
    int32_t bias = add->inputs[0] == mm->outputs[0] ? add->inputs[1] : add->inputs[0];
    emit_fill(f, yp, loom_byoc_param(r, bias), rows, n, 1, n);
  }
  const char *beta = add ? "1.0f" : "0.0f";
  if (b->ndim == 2) { /* every row of A against one B: one call */
    fprintf(f,
            "  cblas_sgemm(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, (const float *)data[%d], %" PRId64
            ", (const float *)data[%d], %" PRId64 ", %s, (float *)data[%d], %" PRId64 ");\n",
            CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, rows, n, k, ap, k, bp, n, beta, yp, n);
    return;
  }
  /* Batched: A's and B's batch dims broadcast against Y's (right-aligned). */
  int32_t yb = y->ndim - 2;
  int64_t nb = rows / m;
  fprintf(f, "  static const long aoff[%" PRId64 "] = {", nb);
  for (int pass = 0; pass < 2; pass++) {
    const loom_byoc_tensor *t = pass ? b : a;
    int64_t mat = t->shape[t->ndim - 2] * t->shape[t->ndim - 1];
    if (pass) fprintf(f, "  static const long boff[%" PRId64 "] = {", nb);
    for (int64_t i = 0; i < nb; i++) {
      int64_t rem = i, off = 0, stride = 1;
      for (int32_t d = yb - 1; d >= 0; d--) {
        int64_t idx = rem % y->shape[d];
        rem /= y->shape[d];
        int32_t td = d - (yb - (t->ndim - 2));
        if (td >= 0) {
          if (t->shape[td] != 1) off += idx * stride;
          stride *= t->shape[td];
        }
      }
      fprintf(f, "%s%" PRId64 "L", i ? ", " : "", off * mat);
    }
    fprintf(f, "};\n");
  }
  fprintf(f,
          "  for (long i = 0; i < %" PRId64 "L; i++)\n"
          "    cblas_sgemm(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", 1.0f, (const float *)data[%d] + aoff[i], %" PRId64
          ", (const float *)data[%d] + boff[i], %" PRId64 ", %s, (float *)data[%d] + i * %" PRId64 "L, %" PRId64 ");\n",
          nb, CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, m, n, k, ap, k, bp, n, beta, yp, m * n, n);
}

static void emit_gemm(FILE *f, const loom_byoc_region *r) {
  const loom_byoc_graph *g = &r->graph;
  const loom_byoc_node *n = &g->nodes[0];
  const loom_byoc_tensor *a = &g->tensors[n->inputs[0]], *c = loom_byoc_input(g, n, 2), *y = &g->tensors[n->outputs[0]];
  int ta = (int)loom_byoc_attr_int(n, "transA", 0), tb = (int)loom_byoc_attr_int(n, "transB", 0);
  double alpha = loom_byoc_attr_float(n, "alpha", 1.0), beta = loom_byoc_attr_float(n, "beta", 1.0);
  int64_t m = y->shape[0], nn = y->shape[1], k = ta ? a->shape[0] : a->shape[1];
  int ap = loom_byoc_param(r, n->inputs[0]), bp = loom_byoc_param(r, n->inputs[1]), yp = loom_byoc_param(r, n->outputs[0]);
  if (c) {
    int64_t cm = c->ndim == 2 ? c->shape[0] : 1, cn = c->ndim >= 1 ? c->shape[c->ndim - 1] : 1;
    emit_fill(f, yp, loom_byoc_param(r, n->inputs[2]), m, nn, cm, cn);
  }
  fprintf(f,
          "  cblas_sgemm(%d, %d, %d, %" PRId64 ", %" PRId64 ", %" PRId64 ", (float)%.17g, (const float *)data[%d], %" PRId64
          ", (const float *)data[%d], %" PRId64 ", (float)%.17g, (float *)data[%d], %" PRId64 ");\n",
          CBLAS_ROW_MAJOR, ta ? CBLAS_TRANS : CBLAS_NO_TRANS, tb ? CBLAS_TRANS : CBLAS_NO_TRANS, m, nn, k, alpha, ap,
          ta ? m : k, bp, tb ? k : nn, c ? beta : 0.0, yp, nn);
}

static int cblas_codegen(const loom_byoc_region *r, loom_byoc_code *out, char *errbuf, size_t errlen, void *user) {
  (void)user;
  if (r->ncomposites != 1) {
    snprintf(errbuf, errlen, "one pattern match per region expected, got %d", (int)r->ncomposites);
    return 1;
  }
  Out o = {0};
  o.f = open_memstream(&o.text, &o.len);
  if (!o.f) {
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  fprintf(o.f,
          "void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *, "
          "int);\n"
          "int openblas_get_num_threads(void);\nvoid openblas_set_num_threads(int);\n"
          "static int32_t %s(void *const *data, void *workspace, int32_t num_threads) {\n  (void)workspace;\n"
          "  if (openblas_get_num_threads() != num_threads) openblas_set_num_threads(num_threads);\n",
          r->symbol);
  if (!strcmp(r->graph.nodes[0].op, "Gemm")) emit_gemm(o.f, r);
  else emit_matmul(o.f, r);
  fprintf(o.f, "  return 0;\n}\n");
  if (fclose(o.f) != 0) {
    free(o.text);
    snprintf(errbuf, errlen, "out of memory");
    return 1;
  }
  out->c_source = o.text;
  out->workspace_bytes = 0;
  return 0;
}

static const loom_byoc_plugin k_cblas = {
    .abi_version = LOOM_BYOC_ABI_VERSION,
    .name = "cblas",
    .patterns = k_patterns,
    .supports = NULL,
    .merge_regions = 0,
    .runtime_library = "libopenblas.so.0",
    .codegen = cblas_codegen,
    .user = NULL,
};

const loom_byoc_plugin *byoc_cblas_plugin(void) { return &k_cblas; }

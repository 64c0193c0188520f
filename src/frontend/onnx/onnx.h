/* ONNX importer: ModelProto bytes -> graph IR (graph/graph.h).
 *
 * Supports the default ONNX domain at opsets 1 through 28. Old opset forms
 * are converted to the newest form (operands passed as attributes become
 * constant inputs; see graph.h); opsets 1-6 first to their opset-7 form
 * (import_legacy.c). Initializers become constants owned by the
 * graph (raw_data, typed fields, or external data files next to the model).
 * Every failure is an error value, never a crash: a truncated file names the
 * byte offset, an invalid model names the node and the tensor at fault, and
 * unsupported ops are listed all at once ("Foo (node "a"), Bar (node "b")").
 *
 * The result is the graph as written: run graph_pass_fold_constants (which
 * infers shapes as it goes), graph_pass_remove_identity and graph_pass_dce
 * to get static shapes. */
#ifndef LOOM_FRONTEND_ONNX_ONNX_H
#define LOOM_FRONTEND_ONNX_ONNX_H

#include "graph/graph.h"

#include <stddef.h>
#include <stdint.h>

#define ONNX_MIN_OPSET 1
#define ONNX_MAX_OPSET 28

/* Reads and imports a .onnx file; external data is resolved relative to
 * the file's directory. NULL with err set on failure. */
Graph *onnx_import_file(const char *path, LoomError *err);
/* Imports from memory. base_dir locates external data files; NULL refuses
 * models with external data. */
Graph *onnx_import_bytes(const uint8_t *data, size_t size, const char *base_dir, LoomError *err);
/* An initializer that is also listed among the graph inputs (every one in
 * IR version 3 files) is the input's default value: onnx_import_file makes
 * it a constant, so it folds. This import keeps the `nfed` inputs named in
 * `fed` that have such a default as graph inputs instead, for a caller that
 * feeds them (`loom run MODEL.onnx --input NAME=FILE`). Names that are not
 * such inputs are ignored here. */
Graph *onnx_import_file_fed(const char *path, const char *const *fed, int nfed, LoomError *err);
Graph *onnx_import_bytes_fed(const uint8_t *data, size_t size, const char *base_dir, const char *const *fed, int nfed,
                             LoomError *err);
/* The import followed by the standard cleanup: constant folding with shape
 * inference, Identity/Dropout removal and dead code elimination. */
Graph *onnx_import_file_prepared(const char *path, LoomError *err);

/* The names of the model's graph inputs, in order, without importing it:
 * the file is mapped and only its structure decoded. Inputs with a default
 * (an initializer of the same name) are left out of `names`; when
 * `defaults` is not NULL it gets those, NULL-terminated. Names live in `a`.
 * Returns the count of `names`, or -1 with err set. */
int onnx_input_names(const char *path, Arena *a, const char ***names, const char ***defaults, LoomError *err);
/* Replaces If/Loop/Scan nodes by their inlined or unrolled bodies, folding
 * constants until each one's deciding values are known
 * (import_control.c). LOOM_ERR_UNSUPPORTED naming the node otherwise. */
loom_status onnx_inline_control_flow(Graph *g, LoomError *err);
/* That cleanup alone, for a graph from onnx_import_file that the caller
 * changed first (specialization); errors are prefixed with path. */
loom_status onnx_prepare_graph(Graph *g, const char *path, LoomError *err);

#endif

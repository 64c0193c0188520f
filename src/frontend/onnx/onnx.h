/* ONNX importer: ModelProto bytes -> graph IR (graph/graph.h).
 *
 * Supports the default ONNX domain at opsets 7 through 28. Old opset forms
 * are converted to the newest form (operands passed as attributes become
 * constant inputs; see graph.h). Initializers become constants owned by the
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

#define ONNX_MIN_OPSET 7
#define ONNX_MAX_OPSET 28

/* Reads and imports a .onnx file; external data is resolved relative to
 * the file's directory. NULL with err set on failure. */
Graph *onnx_import_file(const char *path, LoomError *err);
/* Imports from memory. base_dir locates external data files; NULL refuses
 * models with external data. */
Graph *onnx_import_bytes(const uint8_t *data, size_t size, const char *base_dir, LoomError *err);
/* The import followed by the standard cleanup: constant folding with shape
 * inference, Identity/Dropout removal and dead code elimination. */
Graph *onnx_import_file_prepared(const char *path, LoomError *err);

/* The names of the model's graph inputs (initializers excluded, as the
 * importer drops them), in order, without importing it: the file is
 * mapped and only its structure decoded. Names live in `a`. Returns their
 * count, or -1 with err set. */
int onnx_input_names(const char *path, Arena *a, const char ***names, LoomError *err);
/* Replaces If/Loop/Scan nodes by their inlined or unrolled bodies, folding
 * constants until each one's deciding values are known
 * (import_control.c). LOOM_ERR_UNSUPPORTED naming the node otherwise. */
loom_status onnx_inline_control_flow(Graph *g, LoomError *err);
/* That cleanup alone, for a graph from onnx_import_file that the caller
 * changed first (specialization); errors are prefixed with path. */
loom_status onnx_prepare_graph(Graph *g, const char *path, LoomError *err);

#endif

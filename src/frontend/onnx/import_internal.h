/* Pieces of the importer shared between its files. */
#ifndef LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H
#define LOOM_FRONTEND_ONNX_IMPORT_INTERNAL_H

#include "frontend/onnx/onnx.h"
#include "frontend/onnx/onnx_proto.h"

/* String -> ValueId map (open addressing; names are owned elsewhere). Its
 * tables live in an arena (outgrown ones stay there, at most doubling what
 * the map uses) so that running out of memory mid-import leaks nothing
 * (support/oom.h). */
typedef struct NameMap {
  const char **keys;
  ValueId *vals;
  int cap, count;
  Arena *arena;
} NameMap;

typedef struct Importer {
  Graph *g;
  Arena *scratch; /* decoded protobuf structs; freed after import */
  const char *base_dir;
  int64_t opset;
  NameMap names;
  LoomError *err;
  /* Graph inputs the caller feeds although an initializer gives them a
   * default (onnx_import_file_fed); every other such input is a constant. */
  const char *const *fed;
  int nfed;
} Importer;

void namemap_init(NameMap *m, Arena *arena);
void namemap_put(NameMap *m, const char *key, ValueId v);
/* -1 when absent. */
ValueId namemap_get(const NameMap *m, const char *key);

/* A whole file in a malloc'd buffer (the caller frees it); NULL with
 * LOOM_ERR_IO naming the path. */
uint8_t *onnx_read_file(const char *path, size_t *len, LoomError *err);

/* ONNX data type -> DType; false for types Loom does not support. */
bool onnx_dtype_to_loom(int onnx_type, DType *out);
const char *onnx_dtype_name(int onnx_type);
/* Decodes a TensorProto's data into a graph tensor in the graph arena.
 * `what` names the tensor in messages ("initializer \"w\""). */
GraphTensor *onnx_tensor_to_graph(Importer *im, const OnnxTensor *t, const char *what);
/* 4- and 2-bit types (int4, uint4, float4e2m1, int2, uint2): packed in files
 * (first element in the low bits), one byte per element in memory (signed
 * ones sign-extended). `packed` holds ceil(numel * bits / 8) bytes. */
void onnx_unpack_bits(DType dt, const uint8_t *packed, int64_t numel, void *out);
void onnx_pack_bits(DType dt, const void *in, int64_t numel, uint8_t *packed);

/* Converts one node (already checked to be supported) and adds it to the
 * graph; inputs and outputs are resolved by name through im->names. */
loom_status onnx_convert_node(Importer *im, const OnnxNode *n);
/* A default-domain node with one output, for the import-time expansions
 * (FlexAttention, old-opset adapters); the arrays are copied into `a`. */
OnnxNode *onnx_node_new(Arena *a, const char *name, const char *op, const char *const *ins, int nins, const char *out,
                        const OnnxAttr *attrs, int nattrs);
/* A name list and its length, for onnx_node_new's callers: NAMES("x", "w"). */
#define ONNX_NAMES(...) \
  ((const char *[]){__VA_ARGS__}), (int)(sizeof((const char *[]){__VA_ARGS__}) / sizeof(const char *))
/* Every op of og (not its bodies) has a converter; else one message naming
 * all unsupported ops and their nodes. */
loom_status onnx_check_supported(Importer *im, const OnnxGraph *og);

/* ---- control flow (import_control.c) ---- */
bool onnx_is_control_flow(const char *op_type);
/* Records If/Loop/Scan node n (inputs already resolved) as a graph node
 * that keeps n for onnx_inline_control_flow. */
loom_status onnx_convert_control(Importer *im, const OnnxNode *n, const ValueId *ins, int nins);
/* Converts graph b (an attribute of node n) in place at import time: its
 * inputs bound to `bind`, its outputs returned in outs, its values named
 * with the prefix `scope`; names it does not define resolve through
 * im->names. */
loom_status onnx_inline_graph(Importer *im, const OnnxNode *n, const OnnxGraph *b, const char *scope, const ValueId *bind,
                              int nbind, ValueId *outs);
/* Hands the importer's arena (the decoded model and its bytes) to g. */
void onnx_keep_model(Graph *g, Arena *scratch);

/* ---- FlexAttention (import_flex.c): expanded into default-domain ops ---- */
bool onnx_is_flex_attention(const OnnxNode *n);
loom_status onnx_convert_flex(Importer *im, const OnnxNode *n);

/* True when the op type (default domain) has a converter. */
bool onnx_op_supported(const char *op_type);
/* An attribute's type (ONNX_ATTR_*): the declared one, or for producers
 * that leave `type` out, the field that is set; and its name for messages. */
int onnx_attr_effective_type(const OnnxAttr *a);
const char *onnx_attr_type_name(int type);

/* ---- opsets before ONNX_ADAPTED_OPSET (import_legacy.c) ---- */
/* Nodes of older opsets are rewritten into their form at this opset. */
#define ONNX_ADAPTED_OPSET 7
/* True when op_type has a known form at every opset before 7. */
bool onnx_legacy_known(const char *op_type);
/* Rewrites node n of opset im->opset (< ONNX_ADAPTED_OPSET) into its
 * opset-7 form and converts that; helper nodes it needs are converted too. */
loom_status onnx_convert_legacy(Importer *im, const OnnxNode *n);

#endif

/* The operator registry: one static table, built from GRAPH_OPS, pairing
 * each op with its shape/type inference function (infer_*.c), its arity,
 * its compile-time inputs and its attributes with ONNX's defaults. */
#include "graph/graph.h"
#include "graph/infer_internal.h"

#include <string.h>

/* The attribute lists GRAPH_OPS names, in the ONNX operator specification's
 * words (the importer fills in every DEFAULT one a model leaves out, in
 * this order; opset-dependent defaults of older opsets stay in
 * frontend/onnx/import_ops.c). */
#define REQUIRED(nm, k) {nm, GRAPH_ATTR_##k, GRAPH_ATTR_REQUIRED, 0, 0, NULL}
#define OPTIONAL(nm, k) {nm, GRAPH_ATTR_##k, GRAPH_ATTR_OPTIONAL, 0, 0, NULL}
#define INT(nm, v) {nm, GRAPH_ATTR_INT, GRAPH_ATTR_DEFAULT, v, 0, NULL}
#define FLOAT(nm, v) {nm, GRAPH_ATTR_FLOAT, GRAPH_ATTR_DEFAULT, 0, v, NULL}
#define STRING(nm, v) {nm, GRAPH_ATTR_STRING, GRAPH_ATTR_DEFAULT, 0, 0, v}
#define END {NULL, GRAPH_ATTR_INT, GRAPH_ATTR_OPTIONAL, 0, 0, NULL}

static const GraphAttrDef graph_attrs_none[] = {END};
static const GraphAttrDef graph_attrs_leaky_relu[] = {FLOAT("alpha", 0.01), END};
static const GraphAttrDef graph_attrs_hard_sigmoid[] = {FLOAT("alpha", 0.2), FLOAT("beta", 0.5), END};
static const GraphAttrDef graph_attrs_gelu[] = {STRING("approximate", "none"), END};
static const GraphAttrDef graph_attrs_elu[] = {FLOAT("alpha", 1.0), END};
static const GraphAttrDef graph_attrs_selu[] = {
    FLOAT("alpha", 1.67326319217681884765625), FLOAT("gamma", 1.05070102214813232421875), END
};
static const GraphAttrDef graph_attrs_celu[] = {FLOAT("alpha", 1.0), END};
static const GraphAttrDef graph_attrs_swish[] = {FLOAT("alpha", 1.0), END};
static const GraphAttrDef graph_attrs_shrink[] = {FLOAT("bias", 0.0), FLOAT("lambd", 0.5), END};
static const GraphAttrDef graph_attrs_thresholded_relu[] = {FLOAT("alpha", 1.0), END};
static const GraphAttrDef graph_attrs_is_inf[] = {INT("detect_negative", 1), INT("detect_positive", 1), END};
static const GraphAttrDef graph_attrs_mod[] = {INT("fmod", 0), END};
static const GraphAttrDef graph_attrs_bit_shift[] = {REQUIRED("direction", STRING), END};
static const GraphAttrDef graph_attrs_cast[] = {INT("saturate", 1), STRING("round_mode", "up"), END};
static const GraphAttrDef graph_attrs_batch_norm[] = {FLOAT("epsilon", 1e-5), END};
static const GraphAttrDef graph_attrs_conv[] = {
    STRING("auto_pad", "NOTSET"), INT("group", 1), OPTIONAL("kernel_shape", INTS), OPTIONAL("strides", INTS),
    OPTIONAL("pads", INTS), OPTIONAL("dilations", INTS), END
};
static const GraphAttrDef graph_attrs_gemm[] = {
    FLOAT("alpha", 1.0), FLOAT("beta", 1.0), INT("transA", 0), INT("transB", 0), END
};
static const GraphAttrDef graph_attrs_max_pool[] = {
    STRING("auto_pad", "NOTSET"), REQUIRED("kernel_shape", INTS), OPTIONAL("strides", INTS), OPTIONAL("pads", INTS),
    OPTIONAL("dilations", INTS), INT("ceil_mode", 0), INT("storage_order", 0), END
};
static const GraphAttrDef graph_attrs_average_pool[] = {
    STRING("auto_pad", "NOTSET"), REQUIRED("kernel_shape", INTS), OPTIONAL("strides", INTS), OPTIONAL("pads", INTS),
    OPTIONAL("dilations", INTS), INT("ceil_mode", 0), INT("count_include_pad", 0), END
};
static const GraphAttrDef graph_attrs_reduce[] = {INT("keepdims", 1), INT("noop_with_empty_axes", 0), END};
static const GraphAttrDef graph_attrs_softmax[] = {INT("axis", -1), END};
static const GraphAttrDef graph_attrs_layer_norm[] = {
    INT("axis", -1), FLOAT("epsilon", 1e-5), INT("stash_type", 1), END
};
static const GraphAttrDef graph_attrs_arg_reduce[] = {
    INT("axis", 0), INT("keepdims", 1), INT("select_last_index", 0), END
};
static const GraphAttrDef graph_attrs_cumulative[] = {INT("exclusive", 0), INT("reverse", 0), END};
static const GraphAttrDef graph_attrs_rms_norm[] = {
    INT("axis", -1), FLOAT("epsilon", 1e-5), INT("stash_type", 1), END
};
static const GraphAttrDef graph_attrs_group_norm[] = {
    REQUIRED("num_groups", INT), FLOAT("epsilon", 1e-5), INT("stash_type", 1), END
};
static const GraphAttrDef graph_attrs_instance_norm[] = {FLOAT("epsilon", 1e-5), END};
static const GraphAttrDef graph_attrs_lp_norm[] = {INT("axis", -1), INT("p", 2), END};
static const GraphAttrDef graph_attrs_mvn[] = {OPTIONAL("axes", INTS), END};
static const GraphAttrDef graph_attrs_lrn[] = {
    REQUIRED("size", INT), FLOAT("alpha", 1e-4), FLOAT("beta", 0.75), FLOAT("bias", 1.0), END
};
static const GraphAttrDef graph_attrs_nll_loss[] = {
    STRING("reduction", "mean"), OPTIONAL("ignore_index", INT), END
};
static const GraphAttrDef graph_attrs_sce_loss[] = {
    STRING("reduction", "mean"), OPTIONAL("ignore_index", INT), END
};
static const GraphAttrDef graph_attrs_flatten[] = {INT("axis", 1), END};
static const GraphAttrDef graph_attrs_reshape[] = {INT("allowzero", 0), END};
static const GraphAttrDef graph_attrs_transpose[] = {OPTIONAL("perm", INTS), END};
static const GraphAttrDef graph_attrs_concat[] = {REQUIRED("axis", INT), END};
static const GraphAttrDef graph_attrs_split[] = {INT("axis", 0), OPTIONAL("num_outputs", INT), END};
static const GraphAttrDef graph_attrs_gather[] = {INT("axis", 0), END};
static const GraphAttrDef graph_attrs_pad[] = {STRING("mode", "constant"), END};
static const GraphAttrDef graph_attrs_resize[] = {
    STRING("mode", "nearest"), STRING("coordinate_transformation_mode", "half_pixel"),
    STRING("nearest_mode", "round_prefer_floor"), FLOAT("cubic_coeff_a", -0.75), INT("exclude_outside", 0),
    FLOAT("extrapolation_value", 0.0), OPTIONAL("axes", INTS), INT("antialias", 0),
    STRING("keep_aspect_ratio_policy", "stretch"), END
};
static const GraphAttrDef graph_attrs_shape[] = {OPTIONAL("start", INT), OPTIONAL("end", INT), END};
static const GraphAttrDef graph_attrs_constant_of_shape[] = {OPTIONAL("value", TENSOR), END};
static const GraphAttrDef graph_attrs_attention[] = {
    INT("is_causal", 0), OPTIONAL("q_num_heads", INT), OPTIONAL("kv_num_heads", INT),
    INT("qk_matmul_output_mode", 0), OPTIONAL("scale", FLOAT), FLOAT("softcap", 0.0),
    OPTIONAL("softmax_precision", INT), END
};
static const GraphAttrDef graph_attrs_rotary_embedding[] = {
    INT("interleaved", 0), INT("rotary_embedding_dim", 0), INT("num_heads", 0), END
};
static const GraphAttrDef graph_attrs_swiglu[] = {FLOAT("alpha", 1.0), END};
static const GraphAttrDef graph_attrs_linear_attention[] = {
    REQUIRED("q_num_heads", INT), REQUIRED("kv_num_heads", INT), STRING("update_rule", "gated_delta"),
    OPTIONAL("scale", FLOAT), OPTIONAL("chunk_size", INT), END
};
static const GraphAttrDef graph_attrs_causal_conv_with_state[] = {STRING("activation", "none"), END};
static const GraphAttrDef graph_attrs_tensor_scatter[] = {STRING("mode", "linear"), INT("axis", -2), END};
/* weights_transposed: Loom's own (pass_pack_rnn.c), W and R given transposed. */
static const GraphAttrDef graph_attrs_rnn[] = {
    OPTIONAL("hidden_size", INT), INT("layout", 0), STRING("direction", "forward"), OPTIONAL("clip", FLOAT),
    OPTIONAL("activation_alpha", FLOATS), OPTIONAL("activation_beta", FLOATS), INT("weights_transposed", 0), END
};
static const GraphAttrDef graph_attrs_gru[] = {
    OPTIONAL("hidden_size", INT), INT("layout", 0), STRING("direction", "forward"), OPTIONAL("clip", FLOAT),
    OPTIONAL("activation_alpha", FLOATS), OPTIONAL("activation_beta", FLOATS), INT("linear_before_reset", 0),
    INT("weights_transposed", 0), END
};
static const GraphAttrDef graph_attrs_lstm[] = {
    OPTIONAL("hidden_size", INT), INT("layout", 0), STRING("direction", "forward"), OPTIONAL("clip", FLOAT),
    OPTIONAL("activation_alpha", FLOATS), OPTIONAL("activation_beta", FLOATS), INT("input_forget", 0),
    INT("weights_transposed", 0), END
};
static const GraphAttrDef graph_attrs_window[] = {INT("periodic", 1), END};
static const GraphAttrDef graph_attrs_dft[] = {INT("inverse", 0), INT("onesided", 0), END};
static const GraphAttrDef graph_attrs_stft[] = {INT("onesided", 1), END};
static const GraphAttrDef graph_attrs_grid_sample[] = {
    INT("align_corners", 0), STRING("padding_mode", "zeros"), STRING("mode", "linear"), END
};
static const GraphAttrDef graph_attrs_affine_grid[] = {INT("align_corners", 0), END};
static const GraphAttrDef graph_attrs_roi_align[] = {
    STRING("coordinate_transformation_mode", "half_pixel"), STRING("mode", "avg"), INT("output_height", 1),
    INT("output_width", 1), INT("sampling_ratio", 0), FLOAT("spatial_scale", 1.0), END
};
static const GraphAttrDef graph_attrs_deform_conv[] = {
    INT("group", 1), INT("offset_group", 1), OPTIONAL("kernel_shape", INTS), OPTIONAL("pads", INTS),
    OPTIONAL("strides", INTS), OPTIONAL("dilations", INTS), END
};
static const GraphAttrDef graph_attrs_top_k[] = {INT("axis", -1), INT("largest", 1), INT("sorted", 1), END};
static const GraphAttrDef graph_attrs_compress[] = {OPTIONAL("axis", INT), END};
static const GraphAttrDef graph_attrs_unique[] = {INT("sorted", 1), OPTIONAL("axis", INT), END};
static const GraphAttrDef graph_attrs_non_max_suppression[] = {INT("center_point_box", 0), END};
static const GraphAttrDef graph_attrs_gather_elements[] = {INT("axis", 0), END};
static const GraphAttrDef graph_attrs_gather_nd[] = {INT("batch_dims", 0), END};
static const GraphAttrDef graph_attrs_scatter_elements[] = {INT("axis", 0), STRING("reduction", "none"), END};
static const GraphAttrDef graph_attrs_scatter_nd[] = {STRING("reduction", "none"), END};
static const GraphAttrDef graph_attrs_one_hot[] = {INT("axis", -1), END};
static const GraphAttrDef graph_attrs_trilu[] = {INT("upper", 1), END};
static const GraphAttrDef graph_attrs_eye_like[] = {INT("k", 0), END};
static const GraphAttrDef graph_attrs_depth_to_space[] = {REQUIRED("blocksize", INT), STRING("mode", "DCR"), END};
static const GraphAttrDef graph_attrs_space_to_depth[] = {REQUIRED("blocksize", INT), END};
static const GraphAttrDef graph_attrs_reverse_sequence[] = {INT("batch_axis", 1), INT("time_axis", 0), END};
static const GraphAttrDef graph_attrs_center_crop_pad[] = {OPTIONAL("axes", INTS), END};
static const GraphAttrDef graph_attrs_einsum[] = {REQUIRED("equation", STRING), END};
static const GraphAttrDef graph_attrs_conv_transpose[] = {
    STRING("auto_pad", "NOTSET"), INT("group", 1), OPTIONAL("kernel_shape", INTS), OPTIONAL("strides", INTS),
    OPTIONAL("pads", INTS), OPTIONAL("dilations", INTS), OPTIONAL("output_padding", INTS),
    OPTIONAL("output_shape", INTS), END
};
static const GraphAttrDef graph_attrs_conv_integer[] = {
    STRING("auto_pad", "NOTSET"), INT("group", 1), OPTIONAL("kernel_shape", INTS), OPTIONAL("strides", INTS),
    OPTIONAL("pads", INTS), OPTIONAL("dilations", INTS), END
};
static const GraphAttrDef graph_attrs_col2im[] = {
    OPTIONAL("dilations", INTS), OPTIONAL("pads", INTS), OPTIONAL("strides", INTS), END
};
static const GraphAttrDef graph_attrs_lp_pool[] = {
    STRING("auto_pad", "NOTSET"), REQUIRED("kernel_shape", INTS), OPTIONAL("strides", INTS), OPTIONAL("pads", INTS),
    OPTIONAL("dilations", INTS), INT("ceil_mode", 0), INT("p", 2), END
};
static const GraphAttrDef graph_attrs_max_unpool[] = {
    REQUIRED("kernel_shape", INTS), OPTIONAL("strides", INTS), OPTIONAL("pads", INTS), END
};
static const GraphAttrDef graph_attrs_quantize_linear[] = {
    INT("axis", 1), INT("saturate", 1), INT("block_size", 0), END
};
static const GraphAttrDef graph_attrs_dequantize_linear[] = {INT("axis", 1), INT("block_size", 0), END};
static const GraphAttrDef graph_attrs_qlinear_conv[] = {
    STRING("auto_pad", "NOTSET"), INT("group", 1), OPTIONAL("kernel_shape", INTS), OPTIONAL("strides", INTS),
    OPTIONAL("pads", INTS), OPTIONAL("dilations", INTS), END
};
static const GraphAttrDef graph_attrs_layout_transform[] = {
    REQUIRED("src_layout", STRING), REQUIRED("dst_layout", STRING), END
};
static const GraphAttrDef graph_attrs_conv_nchwc[] = {
    OPTIONAL("strides", INTS), OPTIONAL("dilations", INTS), OPTIONAL("pads", INTS), INT("group", 1),
    INT("winograd_tile", 0), END
};
static const GraphAttrDef graph_attrs_matmul_packed[] = {REQUIRED("n", INT), END};
static const GraphAttrDef graph_attrs_external[] = {REQUIRED("backend", STRING), REQUIRED("region", INT), END};

#undef REQUIRED
#undef OPTIONAL
#undef INT
#undef FLOAT
#undef STRING
#undef END

static const GraphOpInfo op_table[] = {
#define X(e, nm, pat, infer, in_min, in_max, out_min, out_max, const_in, attrs) \
  [GRAPH_OP_##e] = {nm, GRAPH_PATTERN_##pat, infer_##infer, in_min, in_max, out_min, out_max, const_in, graph_attrs_##attrs},
    GRAPH_OPS(X)
#undef X
};
_Static_assert(sizeof op_table / sizeof op_table[0] == GRAPH_OP_COUNT, "one op_table row per GraphOp");

const GraphOpInfo *graph_op_info(GraphOp op) {
  LOOM_ASSERT(op >= 0 && op < GRAPH_OP_COUNT);
  return &op_table[op];
}

bool graph_op_lookup(const char *name, GraphOp *out) {
  for (int k = 0; k < GRAPH_OP_COUNT; k++) {
    if (!strcmp(op_table[k].name, name)) {
      *out = (GraphOp)k;
      return true;
    }
  }
  return false;
}

bool graph_op_input_is_const(GraphOp op, int input) {
  return input >= 0 && (graph_op_info(op)->const_inputs >> (input < 31 ? input : 31) & 1u);
}

const GraphAttrDef *graph_op_attr(GraphOp op, const char *name) {
  for (const GraphAttrDef *d = graph_op_info(op)->attrs; d->name; d++)
    if (!strcmp(d->name, name)) return d;
  return NULL;
}

/* The declared default of n's attribute `name` of kind `kind`. */
static const GraphAttrDef *declared_default(const GraphNode *n, const char *name, GraphAttrKind kind) {
  const GraphAttrDef *d = graph_op_attr(n->op, name);
  LOOM_ASSERT(d && d->presence == GRAPH_ATTR_DEFAULT && d->kind == kind);
  return d;
}

int64_t graph_node_int(const GraphNode *n, const char *name) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_INT ? a->i : declared_default(n, name, GRAPH_ATTR_INT)->i;
}

double graph_node_float(const GraphNode *n, const char *name) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_FLOAT ? a->f : declared_default(n, name, GRAPH_ATTR_FLOAT)->f;
}

const char *graph_node_string(const GraphNode *n, const char *name) {
  const GraphAttr *a = graph_node_attr(n, name);
  return a && a->kind == GRAPH_ATTR_STRING ? a->s : declared_default(n, name, GRAPH_ATTR_STRING)->s;
}

const char *graph_pattern_name(GraphOpPattern p) {
  switch (p) {
  case GRAPH_PATTERN_ELEMWISE: return "elemwise";
  case GRAPH_PATTERN_BROADCAST: return "broadcast";
  case GRAPH_PATTERN_INJECTIVE: return "injective";
  case GRAPH_PATTERN_REDUCTION: return "reduction";
  case GRAPH_PATTERN_OUT_ELEMWISE_FUSABLE: return "out_elemwise_fusable";
  case GRAPH_PATTERN_OPAQUE: return "opaque";
  }
  return "?";
}

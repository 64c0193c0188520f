#!/usr/bin/env python3
"""Operator cases for the topi ONNX-semantics compute definitions.

Usage: make_op_cases.py OUTDIR

For every case: a one-node ONNX model run by ONNX Runtime; OUTDIR/<case>/
gets in0.npy, in1.npy... (the node's runtime inputs, in order) and out0.npy,
out1.npy... (ONNX Runtime's outputs). Operands that Loom folds at compile
time (Resize scales, Pad pads, Slice starts...) are initializers here and
are repeated as constants by tests/unit/topi/ops_onnx.c, which builds the
same op with topi and compares (f32: |got - want| <= 1e-5 |want| + 1e-6).
The case names must match the table in ops_onnx.c.
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

OPSET = 17
rng = np.random.default_rng(1234)


def f32(*shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def run_case(outdir, name, op, inputs, attrs=None, n_out=1, opset=OPSET):
    """inputs: list of ("in", array) | ("const", array) | None (omitted)."""
    graph_inputs, inits, node_inputs, feeds, saved = [], [], [], {}, []
    for i, item in enumerate(inputs):
        if item is None:
            node_inputs.append("")
            continue
        kind, arr = item
        nm = "x%d" % i
        node_inputs.append(nm)
        if kind == "const":
            inits.append(numpy_helper.from_array(arr, nm))
        else:
            elem = helper.np_dtype_to_tensor_dtype(arr.dtype)
            graph_inputs.append(helper.make_tensor_value_info(nm, elem, arr.shape))
            feeds[nm] = arr
            saved.append(arr)
    outs = ["y%d" % i for i in range(n_out)]
    node = helper.make_node(op, node_inputs, outs, **(attrs or {}))
    graph = helper.make_graph([node], name, graph_inputs,
                              [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    results = sess.run(None, feeds)
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    for i, arr in enumerate(saved):
        np.save(os.path.join(d, "in%d.npy" % i), np.array(arr, order="C"))
    for i, arr in enumerate(results):
        np.save(os.path.join(d, "out%d.npy" % i), np.array(arr, order="C"))


def i64(*vals):
    return np.array(vals, dtype=np.int64)


def main(outdir):
    os.makedirs(outdir, exist_ok=True)
    c = lambda name, op, ins, attrs=None, **kw: run_case(outdir, name, op, ins, attrs, **kw)
    c("conv_pad_stride_bias", "Conv", [("in", f32(1, 3, 9, 9)), ("in", f32(4, 3, 3, 3)), ("in", f32(4))],
      dict(strides=[2, 2], pads=[1, 1, 1, 1]))
    c("conv_group_dilated", "Conv", [("in", f32(1, 4, 7, 7)), ("in", f32(4, 2, 3, 3))],
      dict(group=2, dilations=[2, 2], pads=[2, 1, 2, 1]))
    c("conv_depthwise", "Conv", [("in", f32(1, 4, 6, 6)), ("in", f32(4, 1, 3, 3)), ("in", f32(4))],
      dict(group=4, pads=[1, 1, 1, 1]))
    c("maxpool_ceil", "MaxPool", [("in", f32(1, 2, 8, 8))], dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1))
    c("maxpool_pad", "MaxPool", [("in", f32(1, 2, 7, 7))], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    c("avgpool_exclude_pad", "AveragePool", [("in", f32(1, 2, 7, 7))],
      dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    c("avgpool_include_pad", "AveragePool", [("in", f32(1, 2, 7, 7))],
      dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1))
    c("global_avgpool", "GlobalAveragePool", [("in", f32(2, 3, 4, 5))])
    c("gemm_transb_bias", "Gemm", [("in", f32(3, 5)), ("in", f32(4, 5)), ("in", f32(4))],
      dict(transB=1, alpha=0.5, beta=2.0))
    c("matmul_batch_bcast", "MatMul", [("in", f32(2, 1, 3, 4)), ("in", f32(3, 4, 5))])
    c("matmul_1d", "MatMul", [("in", f32(4)), ("in", f32(2, 4, 3))])
    c("softmax_axis1", "Softmax", [("in", f32(2, 3, 4, lo=-4, hi=4))], dict(axis=1))
    c("layernorm_last", "LayerNormalization", [("in", f32(2, 3, 8)), ("in", f32(8)), ("in", f32(8))],
      dict(axis=-1, epsilon=1e-5))
    c("reduce_mean_keep", "ReduceMean", [("in", f32(2, 3, 4))], dict(axes=[1], keepdims=1))
    c("reduce_max_drop", "ReduceMax", [("in", f32(2, 3, 4))], dict(axes=[0, 2], keepdims=0))
    c("batchnorm", "BatchNormalization",
      [("in", f32(2, 3, 4, 4)), ("in", f32(3)), ("in", f32(3)), ("in", f32(3)), ("in", f32(3, lo=0.1, hi=2))],
      dict(epsilon=1e-5))
    c("resize_nearest_asym_floor", "Resize",
      [("in", f32(1, 2, 3, 4)), None, ("const", np.array([1, 1, 2, 2], np.float32))],
      dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
    c("resize_nearest_half_pixel", "Resize",
      [("in", f32(1, 2, 3, 4)), None, None, ("const", i64(1, 2, 5, 7))], dict(mode="nearest"))
    c("resize_linear_half_pixel", "Resize",
      [("in", f32(1, 2, 3, 4)), None, None, ("const", i64(1, 2, 5, 7))], dict(mode="linear"))
    c("resize_linear_align", "Resize",
      [("in", f32(1, 2, 3, 4)), None, ("const", np.array([1, 1, 2, 2], np.float32))],
      dict(mode="linear", coordinate_transformation_mode="align_corners"))
    c("resize_linear_pytorch", "Resize",
      [("in", f32(1, 2, 4, 4)), None, ("const", np.array([1, 1, 2, 2], np.float32))],
      dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"))
    c("slice_neg_step", "Slice", [("in", f32(4, 6, 5)), ("const", i64(-1, 1)), ("const", i64(-1000, 3)),
                                  ("const", i64(1, 0)), ("const", i64(-2, 1))])
    c("gather_neg", "Gather", [("in", f32(5, 4)), ("in", np.array([[0, -1], [2, -5]], np.int64))], dict(axis=0))
    c("gather_axis1_scalar", "Gather", [("in", f32(3, 5, 2)), ("in", np.array(-2, np.int64))], dict(axis=1))
    c("pad_reflect", "Pad", [("in", f32(2, 3, 4)), ("const", i64(0, 1, 2, 0, 1, 1))], dict(mode="reflect"))
    c("pad_constant", "Pad", [("in", f32(2, 3)), ("const", i64(1, 0, 0, 2)), ("const", np.array(0.5, np.float32))])
    c("pad_edge", "Pad", [("in", f32(2, 3)), ("const", i64(1, 2, 2, 1))], dict(mode="edge"))
    c("where_bcast", "Where", [("in", rng.uniform(size=(3, 1)) < 0.5), ("in", f32(2, 3, 4)), ("in", f32(4))])
    c("div_int", "Div", [("in", i64(7, -7, 7, -7, 0, 9)), ("in", i64(2, 2, -2, -2, 3, 4))])
    c("pow_bcast", "Pow", [("in", f32(2, 3, lo=0.1, hi=2)), ("in", f32(3, lo=-2, hi=2))])
    c("cast_f32_i64", "Cast", [("in", f32(3, 4, lo=-5, hi=5))], dict(to=onnx.TensorProto.INT64))
    c("equal_i64", "Equal", [("in", i64(1, 2, 3, 4)), ("in", i64(3))])
    c("hardswish", "HardSwish", [("in", f32(3, 5, lo=-5, hi=5))])
    c("hardsigmoid", "HardSigmoid", [("in", f32(3, 5, lo=-5, hi=5))], dict(alpha=0.3, beta=0.4))
    c("leakyrelu", "LeakyRelu", [("in", f32(3, 5))], dict(alpha=0.2))
    c("erf", "Erf", [("in", f32(3, 5, lo=-3, hi=3))])
    c("clip", "Clip", [("in", f32(3, 5, lo=-3, hi=3)), ("const", np.array(-1, np.float32)),
                       ("const", np.array(2, np.float32))])
    c("sigmoid", "Sigmoid", [("in", f32(3, 5, lo=-6, hi=6))])
    c("sum3", "Sum", [("in", f32(2, 3)), ("in", f32(3)), ("in", f32(2, 1))])
    c("prelu", "PRelu", [("in", f32(2, 3, 4)), ("in", f32(3, 1))])
    c("transpose", "Transpose", [("in", f32(2, 3, 4))], dict(perm=[1, 2, 0]))
    c("concat_axis1", "Concat", [("in", f32(2, 1, 3)), ("in", f32(2, 4, 3))], dict(axis=1))
    c("split_sizes", "Split", [("in", f32(2, 6)), ("const", i64(1, 2, 3))], dict(axis=1), n_out=3)
    c("expand", "Expand", [("in", f32(3, 1)), ("const", i64(2, 1, 4))])
    c("tile", "Tile", [("in", f32(2, 3)), ("const", i64(2, 2))])
    c("flatten_axis2", "Flatten", [("in", f32(2, 3, 4))], dict(axis=2))
    c("reshape_zero_neg", "Reshape", [("in", f32(2, 3, 4)), ("const", i64(0, -1, 2))])
    c("squeeze", "Squeeze", [("in", f32(1, 3, 1, 2)), ("const", i64(0, 2))])
    c("unsqueeze", "Unsqueeze", [("in", f32(3, 2)), ("const", i64(0, -1))])


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_op_cases.py OUTDIR")
    main(sys.argv[1])

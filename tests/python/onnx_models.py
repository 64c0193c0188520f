"""Small ONNX models for the package tests, made with onnx.helper (seeded
weights): each a function returning a ModelProto, in MODELS by name."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def _model(nodes, inputs, outputs, inits=(), name="test"):
    graph = helper.make_graph(nodes, name, inputs, outputs, [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="loom-tests")
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


def _w(seed, *shape):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.5


def mlp():
    """x f32[4, 16] -> MatMul + Add + Relu -> MatMul + Add -> Softmax -> y f32[4, 8]"""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
        helper.make_node("Add", ["h3", "b2"], ["h4"], name="add2"),
        helper.make_node("Softmax", ["h4"], ["y"], name="softmax", axis=-1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])],
                  [("w1", _w(1, 16, 32)), ("b1", _w(2, 32)), ("w2", _w(3, 32, 8)), ("b2", _w(4, 8))], "mlp")


def conv():
    """x f32[1, 3, 16, 16] -> Conv 3x3 + Relu -> MaxPool 2x2 -> GlobalAveragePool -> Flatten -> Gemm -> y f32[1, 10]"""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
    ]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                  [("w", _w(5, 8, 3, 3, 3)), ("b", _w(6, 8)), ("fc_w", _w(7, 10, 8)), ("fc_b", _w(8, 10))], "conv")


def two_io():
    """a, b f32[2, 3] -> s = a + b, p = a * b"""
    nodes = [helper.make_node("Add", ["a", "b"], ["s"], name="add"),
             helper.make_node("Mul", ["a", "b"], ["p"], name="mul")]
    info = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("a", "b")]
    return _model(nodes, info, [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("s", "p")],
                  name="two_io")


def gather():
    """idx i64[3] -> Gather(table f32[5, 4], idx) -> y f32[3, 4]"""
    nodes = [helper.make_node("Gather", ["table", "idx"], ["y"], name="gather", axis=0)]
    return _model(nodes, [helper.make_tensor_value_info("idx", TensorProto.INT64, [3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 4])], [("table", _w(9, 5, 4))], "gather")


def logical():
    """m bool[6] -> Not -> y bool[6]"""
    nodes = [helper.make_node("Not", ["m"], ["y"], name="not")]
    return _model(nodes, [helper.make_tensor_value_info("m", TensorProto.BOOL, [6])],
                  [helper.make_tensor_value_info("y", TensorProto.BOOL, [6])], name="logical")


def nonzero():
    """x f32[3, 4] -> NonZero -> y i64[2, n] (n depends on the data)"""
    nodes = [helper.make_node("NonZero", ["x"], ["y"], name="nonzero")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                  [helper.make_tensor_value_info("y", TensorProto.INT64, [2, None])], name="nonzero")


def symbolic_batch():
    """x f32["N", 8] -> Relu(x * 2) -> y f32["N", 8]: compiled specialized to an input"""
    nodes = [helper.make_node("Mul", ["x", "two"], ["t"], name="mul"), helper.make_node("Relu", ["t"], ["y"], name="relu")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])],
                  [("two", np.array(2.0, dtype=np.float32))], "symbolic_batch")


def reshape_input():
    """x f32[2, 6], shape i64[2] -> Reshape -> y: y's shape is shape's value"""
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["y"], name="reshape")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
                          helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None])], name="reshape_input")


MODELS = {f.__name__: f for f in (mlp, conv, two_io, gather, logical, nonzero, symbolic_batch, reshape_input)}

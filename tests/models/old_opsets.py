#!/usr/bin/env python3
"""Old ONNX files (opsets 1 to 6, IR version 3) through `loom`.

usage: old_opsets.py LOOM_BINARY WORKDIR

Writes small models of the opset 1-6 forms Loom adapts (src/frontend/onnx/
import_legacy.c) into WORKDIR, compiles each with `loom compile`, runs it
with `loom run` and compares every output with its reference:
max|loom - ref| / max(1, max|ref|) <= 1e-4, exact for integers and bools.

The cases of one opset share one model (values prefixed by the case name),
written as IR version 3 files do: every initializer is also a graph input.
A reference is ONNX Runtime's output for the case at its own opset where
ORT still runs that form (it then also has to agree with the numpy
reference, when the case has one); else a numpy reference computed here;
else, for a form ORT no longer runs, ORT's output for the equivalent newer
form written out by hand (`modern`).

Then: the error message of each form Loom refuses, and the IR version 3
defaults: an initializer listed among the inputs is a constant for `loom
compile` (it folds: ConstantOfShape and Reshape read one), and `loom run
MODEL.onnx --input NAME=FILE` replaces it. Exit status 1 if anything fails;
every failure is reported.
"""
import os
import subprocess
import sys
import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

os.environ.setdefault("ORT_LOGGING_LEVEL", "3")
import onnxruntime as ort  # noqa: E402

warnings.filterwarnings("ignore")
TOL = 1e-4
rng = np.random.default_rng(7)


def rnd(*shape):
    return rng.standard_normal(shape).astype(np.float32)


class P:
    """Case-local names: P("add").x == "add_x"."""

    def __init__(self, case):
        self.case = case

    def __getattr__(self, name):
        return f"{self.case}_{name}"


class Case:
    def __init__(self, nodes, inputs, ref=None, inits=None, modern=None):
        self.nodes = nodes
        self.inputs = inputs      # name -> array: fed at run time
        self.inits = inits or {}  # name -> array: initializers (and inputs, as IR v3 lists them)
        self.ref = ref            # output name -> numpy reference, or None
        self.modern = modern      # (opset, nodes, extra initializers): the same computation in a newer form


CASES = []  # (opset, name, builder)


def case(opset):
    def reg(fn):
        CASES.append((opset, fn.__name__, fn))
        return fn
    return reg


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


# ---- opset 1 ----

@case(1)
def relu_consumed(p):
    x = rnd(2, 3)
    return Case([node("Relu", [p.x], [p.y], consumed_inputs=[0])], {p.x: x}, {p.y: np.maximum(x, 0)})


@case(1)
def exp_consumed(p):
    x = rnd(3, 4)
    return Case([node("Exp", [p.x], [p.y], consumed_inputs=[0])], {p.x: x}, {p.y: np.exp(x)})


@case(1)
def add_axis(p):
    a, b = rnd(2, 3, 4, 5), rnd(3, 4)
    return Case([node("Add", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a}, {p.y: a + b.reshape(3, 4, 1)},
                inits={p.b: b})


@case(1)
def add_axis_computed(p):
    # B is computed (no constant): the alignment is shape arithmetic that folds.
    a, b = rnd(2, 3, 4), rnd(3)
    return Case([node("Abs", [p.b], [p.absb]), node("Add", [p.a, p.absb], [p.y], broadcast=1, axis=1)],
                {p.a: a, p.b: b}, {p.y: a + np.abs(b).reshape(3, 1)})


@case(1)
def add_axis_negative(p):
    # A negative axis counts from A's end (as Caffe2 did): -3 of rank 4 is 1.
    a, b = rnd(2, 3, 4, 5), rnd(3, 4)
    return Case([node("Add", [p.a, p.b], [p.y], broadcast=1, axis=-3)], {p.a: a}, {p.y: a + b.reshape(3, 4, 1)},
                inits={p.b: b})


@case(1)
def sub_suffix(p):
    a, b = rnd(2, 3, 4, 5), rnd(4, 5)
    return Case([node("Sub", [p.a, p.b], [p.y], broadcast=1)], {p.a: a, p.b: b}, {p.y: a - b})


@case(1)
def mul_axis0(p):
    a, b = rnd(2, 3, 4), rnd(2)
    return Case([node("Mul", [p.a, p.b], [p.y], broadcast=1, axis=0, consumed_inputs=[0, 0])], {p.a: a, p.b: b},
                {p.y: a * b.reshape(2, 1, 1)})


@case(1)
def div_scalar(p):
    a, b = rnd(2, 3), np.array(4.0, np.float32)
    return Case([node("Div", [p.a, p.b], [p.y], broadcast=1)], {p.a: a}, {p.y: a / b}, inits={p.b: b})


@case(1)
def div_same(p):
    a, b = rnd(2, 3), rnd(2, 3) + 3
    return Case([node("Div", [p.a, p.b], [p.y])], {p.a: a, p.b: b}, {p.y: a / b})


@case(1)
def pow_axis(p):
    a, b = np.abs(rnd(2, 3, 4)) + 0.5, np.array([1.0, 2.0, 0.5], np.float32)
    return Case([node("Pow", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a}, {p.y: a ** b.reshape(3, 1)},
                inits={p.b: b})


@case(1)
def greater_axis(p):
    a, b = rnd(2, 3, 4), rnd(3)
    return Case([node("Greater", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a, p.b: b},
                {p.y: a > b.reshape(3, 1)})


@case(1)
def equal_int_axis(p):
    a, b = rng.integers(0, 3, (2, 3, 4)).astype(np.int64), np.array([0, 1, 2], np.int64)
    return Case([node("Equal", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a, p.b: b},
                {p.y: a == b.reshape(3, 1)})


@case(1)
def and_axis(p):
    a, b = rng.integers(0, 2, (2, 3, 4)).astype(bool), np.array([True, False, True])
    return Case([node("And", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a, p.b: b},
                {p.y: a & b.reshape(3, 1)})


@case(1)
def prelu_channel(p):
    x, s = rnd(2, 3, 4, 5), np.array([0.1, 0.2, 0.3], np.float32)
    return Case([node("PRelu", [p.x, p.s], [p.y], consumed_inputs=[0])], {p.x: x},
                {p.y: np.where(x < 0, x * s.reshape(3, 1, 1), x)}, inits={p.s: s})


@case(1)
def gemm_broadcast(p):
    a, b, c = rnd(2, 3), rnd(4, 3), rnd(4)
    return Case([node("Gemm", [p.a, p.b, p.c], [p.y], broadcast=1, transB=1, alpha=0.5, beta=2.0)], {p.a: a},
                {p.y: 0.5 * a @ b.T + 2.0 * c}, inits={p.b: b, p.c: c})


@case(1)
def batchnorm_test(p):
    x = rnd(2, 3, 4, 5)
    s, b, m, v = rnd(3), rnd(3), rnd(3), np.abs(rnd(3)) + 0.5
    y = (x - m.reshape(3, 1, 1)) / np.sqrt(v.reshape(3, 1, 1) + 1e-3) * s.reshape(3, 1, 1) + b.reshape(3, 1, 1)
    return Case([node("BatchNormalization", [p.x, p.s, p.b, p.m, p.v], [p.y], is_test=1, epsilon=1e-3,
                      consumed_inputs=[0, 0, 0, 1, 1], spatial=0)], {p.x: x}, {p.y: y},
                inits={p.s: s, p.b: b, p.m: m, p.v: v})


@case(1)
def dropout_test(p):
    x = rnd(2, 3)
    return Case([node("Dropout", [p.x], [p.d], is_test=1, ratio=0.3, consumed_inputs=[0]), node("Neg", [p.d], [p.y])],
                {p.x: x}, {p.y: -x})


@case(1)
def cast_names(p):
    x, i = rnd(2, 3), rng.integers(-5, 5, (4,)).astype(np.int64)
    return Case([node("Cast", [p.x], [p.d], to="DOUBLE"), node("Cast", [p.i], [p.f], to="float")], {p.x: x, p.i: i},
                {p.d: x.astype(np.float64), p.f: i.astype(np.float32)})


@case(1)
def tile_axis(p):
    x = rnd(2, 3, 4)
    return Case([node("Tile", [p.x, p.t, p.ax], [p.y])], {p.x: x}, {p.y: np.tile(x, (1, 3, 1))},
                inits={p.t: np.array(3, np.int64), p.ax: np.array(1, np.int64)})


@case(1)
def selu_defaults(p):
    x = rnd(3, 4)
    alpha, gamma = np.float32(1.6732), np.float32(1.0507)
    return Case([node("Selu", [p.x], [p.y])], {p.x: x},
                {p.y: np.where(x > 0, gamma * x, gamma * alpha * (np.exp(x) - 1)).astype(np.float32)})


@case(1)
def reshape_attr(p):
    x = rnd(2, 3, 4)
    return Case([node("Reshape", [p.x], [p.y], shape=[0, -1], consumed_inputs=[0])], {p.x: x}, {p.y: x.reshape(2, 12)})


@case(1)
def concat_default_axis(p):
    a, b = rnd(2, 3, 2), rnd(2, 1, 2)
    return Case([node("Concat", [p.a, p.b], [p.y])], {p.a: a, p.b: b}, {p.y: np.concatenate([a, b], 1)})


@case(1)
def pad_paddings(p):
    x = rnd(1, 2, 3, 3)
    return Case([node("Pad", [p.x], [p.y], paddings=[0, 0, 1, 2, 0, 0, 2, 1], value=1.5)], {p.x: x},
                {p.y: np.pad(x, [(0, 0), (0, 0), (1, 2), (2, 1)], constant_values=1.5)})


@case(1)
def split_attr_and_input(p):
    x = rnd(2, 6)
    return Case([node("Split", [p.x], [p.a, p.b], axis=1, split=[2, 4]),
                 node("Split", [p.x, p.sizes], [p.c, p.d], axis=1)], {p.x: x},
                {p.a: x[:, :2], p.b: x[:, 2:], p.c: x[:, :5], p.d: x[:, 5:]},
                inits={p.sizes: np.array([5, 1], np.int64)})


@case(1)
def lppool_float_p(p):
    x = rnd(1, 2, 4, 4)
    return Case([node("LpPool", [p.x], [p.y], kernel_shape=[2, 2], strides=[2, 2], p=2.0)], {p.x: x}, None,
                modern=(11, [node("LpPool", [p.x], [p.y], kernel_shape=[2, 2], strides=[2, 2], p=2)], {}))


@case(1)
def upsample_nearest(p):
    x = rnd(1, 2, 2, 3)
    return Case([node("Upsample", [p.x], [p.y], height_scale=2.0, width_scale=3.0)], {p.x: x},
                {p.y: x.repeat(2, axis=2).repeat(3, axis=3)})


@case(1)
def upsample_bilinear(p):
    x = rnd(1, 2, 3, 3)
    return Case([node("Upsample", [p.x], [p.y], height_scale=2.0, width_scale=2.0, mode="bilinear")], {p.x: x}, None,
                modern=(7, [node("Upsample", [p.x], [p.y], scales=[1.0, 1.0, 2.0, 2.0], mode="linear")], {}))


@case(1)
def softmax_default_axis(p):
    x = rnd(2, 3, 4)
    e = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(1, keepdims=True))
    return Case([node("Softmax", [p.x], [p.y])], {p.x: x}, {p.y: (e / e.sum(1, keepdims=True)).reshape(2, 3, 4)})


@case(1)
def clip_min_only(p):
    x = rnd(3, 4)
    return Case([node("Clip", [p.x], [p.y], min=0.1, consumed_inputs=[0])], {p.x: x}, {p.y: np.maximum(x, 0.1)})


@case(1)
def sum_max_mean(p):
    a, b, c = rnd(2, 3), rnd(2, 3), rnd(2, 3)
    return Case([node("Sum", [p.a, p.b, p.c], [p.s], consumed_inputs=[0, 0, 0]), node("Max", [p.a, p.b], [p.m]),
                 node("Mean", [p.a, p.b, p.c], [p.e])], {p.a: a, p.b: b, p.c: c},
                {p.s: a + b + c, p.m: np.maximum(a, b), p.e: (a + b + c) / 3})


@case(1)
def leaky_elu_defaults(p):
    x = rnd(3, 4)
    return Case([node("LeakyRelu", [p.x], [p.l], consumed_inputs=[0]), node("Elu", [p.x], [p.e])], {p.x: x},
                {p.l: np.where(x < 0, 0.01 * x, x), p.e: np.where(x < 0, np.exp(x) - 1, x)})


@case(1)
def avgpool_excludes_pad(p):
    x = rnd(1, 2, 4, 4)
    return Case([node("AveragePool", [p.x], [p.y], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {p.x: x}, None,
                modern=(7, [node("AveragePool", [p.x], [p.y], kernel_shape=[3, 3], pads=[1, 1, 1, 1])], {}))


@case(1)
def instancenorm_consumed(p):
    x, s, b = rnd(2, 3, 4), rnd(3), rnd(3)
    m, v = x.mean(2, keepdims=True), x.var(2, keepdims=True)
    return Case([node("InstanceNormalization", [p.x, p.s, p.b], [p.y], consumed_inputs=[0, 0, 0])], {p.x: x},
                {p.y: (x - m) / np.sqrt(v + 1e-5) * s.reshape(3, 1) + b.reshape(3, 1)}, inits={p.s: s, p.b: b})


@case(1)
def lstm_output_sequence(p):
    x, w, r, b = rnd(3, 2, 4), rnd(1, 20, 4) * 0.3, rnd(1, 20, 5) * 0.3, rnd(1, 40) * 0.1
    return Case([node("LSTM", [p.x, p.w, p.r, p.b], [p.y, p.h], hidden_size=5, output_sequence=1)], {p.x: x}, None,
                inits={p.w: w, p.r: r, p.b: b},
                modern=(7, [node("LSTM", [p.x, p.w, p.r, p.b], [p.y, p.h], hidden_size=5)], {}))


@case(1)
def old_cnn(p):
    # What an early PyTorch or Caffe2 export looked like: Conv, BatchNorm in
    # test mode, Relu, MaxPool, Reshape with its shape attribute, Gemm with
    # broadcast, Softmax.
    x, w, cb = rnd(1, 3, 6, 6), rnd(4, 3, 3, 3) * 0.3, rnd(4)
    s, b, m, v = rnd(4), rnd(4), rnd(4), np.abs(rnd(4)) + 0.5
    fw, fb = rnd(5, 16) * 0.3, rnd(5)
    old = [node("Conv", [p.x, p.w, p.cb], [p.c], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
           node("BatchNormalization", [p.c, p.s, p.b, p.m, p.v], [p.n], is_test=1, consumed_inputs=[0, 0, 0, 1, 1]),
           node("Relu", [p.n], [p.r], consumed_inputs=[0]),
           node("MaxPool", [p.r], [p.q], kernel_shape=[3, 3], strides=[3, 3]),
           node("Reshape", [p.q], [p.f], shape=[1, 16]),
           node("Gemm", [p.f, p.fw, p.fb], [p.g], broadcast=1, transB=1),
           node("Softmax", [p.g], [p.y])]
    modern = [node("Conv", [p.x, p.w, p.cb], [p.c], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
              node("BatchNormalization", [p.c, p.s, p.b, p.m, p.v], [p.n]),
              node("Relu", [p.n], [p.r]),
              node("MaxPool", [p.r], [p.q], kernel_shape=[3, 3], strides=[3, 3]),
              node("Reshape", [p.q, p.shape], [p.f]),
              node("Gemm", [p.f, p.fw, p.fb], [p.g], transB=1),
              node("Softmax", [p.g], [p.y])]
    return Case(old, {p.x: x}, None, inits={p.w: w, p.cb: cb, p.s: s, p.b: b, p.m: m, p.v: v, p.fw: fw, p.fb: fb},
                modern=(7, modern, {p.shape: np.array([1, 16], np.int64)}))


@case(1)
def convtranspose_same_upper(p):
    # ORT runs ConvTranspose-1 (its reference); the auto_pad text changed in
    # opset 11, the meaning did not.
    x, w = rnd(1, 2, 3, 3), rnd(2, 3, 3, 3) * 0.3
    return Case([node("ConvTranspose", [p.x, p.w], [p.y], strides=[2, 2], auto_pad="SAME_UPPER")], {p.x: x}, None,
                inits={p.w: w})


@case(1)
def gather_flatten_transpose(p):
    x, i = rnd(3, 4, 2), np.array([2, 0], np.int64)
    return Case([node("Gather", [p.x, p.i], [p.g], axis=1), node("Flatten", [p.g], [p.f]),
                 node("Transpose", [p.x], [p.t])], {p.x: x},
                {p.f: x[:, [2, 0]].reshape(3, 4), p.t: x.transpose()}, inits={p.i: i})


@case(1)
def if_old_body(p):
    # The branches hold opset-1 forms too; the condition folds (a default).
    a, b = rnd(2, 3, 4), rnd(3)
    then = helper.make_graph([node("Add", [p.a, p.b], [p.t], broadcast=1, axis=1)], "then", [],
                             [helper.make_tensor_value_info(p.t, TensorProto.FLOAT, None)])
    other = helper.make_graph([node("Sub", [p.a, p.b], [p.e], broadcast=1, axis=1)], "else", [],
                              [helper.make_tensor_value_info(p.e, TensorProto.FLOAT, None)])
    return Case([node("If", [p.cond], [p.y], then_branch=then, else_branch=other)], {p.a: a},
                {p.y: a + b.reshape(3, 1)}, inits={p.b: b, p.cond: np.array(True)})


# ---- opsets 2 to 6 ----

@case(2)
def pad_pads_split_default(p):
    x = rnd(4, 3)
    return Case([node("Pad", [p.x], [p.y], pads=[1, 0, 0, 2], mode="edge"), node("Split", [p.x], [p.a, p.b])],
                {p.x: x}, {p.y: np.pad(x, [(1, 0), (0, 2)], mode="edge"), p.a: x[:2], p.b: x[2:]})


@case(3)
def concat_default_axis3(p):
    a, b = rnd(2, 1), rnd(2, 2)
    return Case([node("Concat", [p.a, p.b], [p.y])], {p.a: a, p.b: b}, {p.y: np.concatenate([a, b], 1)})


@case(4)
def reshape_attr4(p):
    x = rnd(2, 6)
    return Case([node("Reshape", [p.x], [p.y], shape=[3, 4])], {p.x: x}, {p.y: x.reshape(3, 4)})


@case(5)
def reshape_input5_cast_name(p):
    x = rnd(2, 6)
    return Case([node("Reshape", [p.x, p.shape], [p.r]), node("Cast", [p.r], [p.y], to="INT64")], {p.x: x * 4},
                {p.y: (x * 4).reshape(4, 3).astype(np.int64)}, inits={p.shape: np.array([4, 3], np.int64)})


@case(5)
def tile_axis5(p):
    x = rnd(2, 3)
    return Case([node("Tile", [p.x, p.t, p.ax], [p.y])], {p.x: x}, {p.y: np.tile(x, (2, 1))},
                inits={p.t: np.array([2], np.int64), p.ax: np.array([0], np.int64)})


@case(6)
def add_axis6(p):
    a, b = rnd(2, 3, 4), rnd(3)
    return Case([node("Add", [p.a, p.b], [p.y], broadcast=1, axis=1)], {p.a: a}, {p.y: a + b.reshape(3, 1)},
                inits={p.b: b})


@case(6)
def cast_number_tile_repeats(p):
    x = rnd(2, 3)
    return Case([node("Cast", [p.x], [p.d], to=int(TensorProto.DOUBLE)), node("Tile", [p.x, p.rep], [p.t])],
                {p.x: x}, {p.d: x.astype(np.float64), p.t: np.tile(x, (2, 3))},
                inits={p.rep: np.array([2, 3], np.int64)})


@case(6)
def selu_clip6(p):
    x = rnd(3, 4)
    alpha, gamma = np.float32(1.67326319217681884765625), np.float32(1.05070102214813232421875)
    return Case([node("Selu", [p.x], [p.s]), node("Clip", [p.x], [p.c], max=0.5)], {p.x: x},
                {p.s: np.where(x > 0, gamma * x, gamma * alpha * (np.exp(x) - 1)).astype(np.float32),
                 p.c: np.minimum(x, 0.5)})


@case(6)
def batchnorm_dropout6(p):
    x = rnd(2, 3, 4)
    s, b, m, v = rnd(3), rnd(3), rnd(3), np.abs(rnd(3)) + 0.5
    y = (x - m.reshape(3, 1)) / np.sqrt(v.reshape(3, 1) + 1e-5) * s.reshape(3, 1) + b.reshape(3, 1)
    return Case([node("BatchNormalization", [p.x, p.s, p.b, p.m, p.v], [p.n], is_test=1),
                 node("Dropout", [p.n], [p.y], is_test=1)], {p.x: x}, {p.y: y},
                inits={p.s: s, p.b: b, p.m: m, p.v: v})


@case(6)
def prelu_scalar6(p):
    x = rnd(2, 3, 4)
    return Case([node("PRelu", [p.x, p.s], [p.y])], {p.x: x}, {p.y: np.where(x < 0, 0.25 * x, x)},
                inits={p.s: np.array([0.25], np.float32)})


@case(6)
def upsample6(p):
    x = rnd(1, 1, 2, 2)
    return Case([node("Upsample", [p.x], [p.y], height_scale=3.0, width_scale=2.0)], {p.x: x},
                {p.y: x.repeat(3, axis=2).repeat(2, axis=3)})


# ---- forms Loom refuses: (opset, name, nodes, inputs, initializers, message) ----

def refusals():
    x = rnd(2, 3, 4)
    bn = [rnd(3), rnd(3), rnd(3), np.abs(rnd(3))]
    bn3 = [rnd(3, 2, 2) for _ in range(4)]
    return [
        (1, "split_no_axis", [node("Split", ["x"], ["a", "b"], name="s")], {"x": x}, {},
         'node "s" (Split, opset 1): attribute "axis" is missing (Split-1 defines no default; opset 2 made it 0)'),
        (6, "bn_training", [node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "m2", "v2", "sm", "sv"],
                                 name="bn")], {"x": x}, dict(zip("sbmv", bn)),
         'node "bn" (BatchNormalization, opset 6): output 1 ("m2") is a training-mode output (is_test=0)'),
        (6, "bn_per_activation", [node("BatchNormalization", ["x4", "s", "b", "m", "v"], ["y"], name="bn", spatial=0,
                                       is_test=1)], {"x4": rnd(1, 3, 2, 2)}, dict(zip("sbmv", bn3)),
         'node "bn" (BatchNormalization, opset 6): attribute "spatial" is 0 and input 1 ("s") is not a 1-D constant'),
        (7, "bn_per_activation7", [node("BatchNormalization", ["x4", "s", "b", "m", "v"], ["y"], name="bn", spatial=0)],
         {"x4": rnd(1, 3, 2, 2)}, dict(zip("sbmv", bn3)),
         'node "bn" (BatchNormalization): attribute "spatial" is 0 and input 1 is not a 1-D constant'),
        (6, "newer_op", [node("Expand", ["x", "shape"], ["y"], name="e")], {"x": x},
         {"shape": np.array([2, 3, 4], np.int64)}, '1 node uses unsupported operators: Expand at opset 6 (node "e")'),
        (1, "cast_bad_name", [node("Cast", ["x"], ["y"], name="c", to="FLOATY")], {"x": x}, {},
         'node "c" (Cast, opset 1): attribute "to" is "FLOATY", expected a TensorProto data type name'),
        (1, "lppool_fraction", [node("LpPool", ["x4"], ["y"], name="lp", kernel_shape=[2, 2], p=2.5)],
         {"x4": rnd(1, 1, 2, 2)}, {}, 'node "lp" (LpPool, opset 1): attribute "p" is 2.5'),
        (6, "add_axis_too_far", [node("Add", ["x", "b"], ["y"], name="a", broadcast=1, axis=2)], {"x": x},
         {"b": rnd(3, 4)}, 'node "a" (Add, opset 6): attribute "axis" is 2: "b" (rank 2) does not fit into "x" (rank 3)'),
        # The same with A computed: the ranks are known only once folded.
        (6, "add_axis_too_far_computed", [node("Relu", ["x"], ["r"]),
                                          node("Add", ["r", "b"], ["y"], name="a", broadcast=1, axis=2)], {"x": x},
         {"b": rnd(3, 4)}, 'node "a/legacy/broadcast_axis_ones" (ConstantOfShape): shape entry 0 is negative'),
        (6, "add_axis_mismatch", [node("Add", ["x", "b"], ["y"], name="a", broadcast=1, axis=1)], {"x": x},
         {"b": rnd(4)}, 'node "a" (Add): cannot broadcast extent 3 with 4'),
        (1, "tile_axis_out_of_range", [node("Tile", ["x", "t", "ax"], ["y"], name="t")], {"x": x},
         {"t": np.array(2, np.int64), "ax": np.array(3, np.int64)},
         'node "t" (Tile, opset 1): input "axis" is 3, out of range for "x" of rank 3'),
        (1, "add_negative_axis_computed", [node("Relu", ["x"], ["r"]),
                                           node("Add", ["r", "b"], ["y"], name="a", broadcast=1, axis=-2)], {"x": x},
         {"b": rnd(3)}, 'node "a" (Add, opset 1): attribute "axis" is -2: a negative axis needs the rank of "r"'),
        (1, "add_bad_broadcast_type", [node("Add", ["x", "x"], ["y"], name="a", broadcast=1.0)], {"x": x}, {},
         'node "a" (Add, opset 1): attribute "broadcast" has type FLOAT, expected INT'),
    ]


# ---- model assembly ----

def np_elem(a):
    return helper.np_dtype_to_tensor_dtype(a.dtype)


def build_model(opset, nodes, inputs, inits, outputs, ir_version=3):
    """IR v3 style: every initializer also listed among the graph inputs."""
    vis = [helper.make_tensor_value_info(n, np_elem(a), list(a.shape)) for n, a in inputs.items()]
    vis += [helper.make_tensor_value_info(n, np_elem(a), list(a.shape)) for n, a in inits.items()]
    outs = [helper.make_tensor_value_info(n, elem, None) for n, elem in outputs]
    g = helper.make_graph(nodes, f"old_opset{opset}", vis, outs,
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="loom-tests")
    m.ir_version = ir_version
    return m


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds)))


def output_names(nodes, inputs, inits):
    """Outputs of the case: values no node of it reads."""
    read = {i for n in nodes for i in n.input}
    return [o for n in nodes for o in n.output if o and o not in read and o not in inputs and o not in inits]


def compare(got, ref):
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"got {got.dtype}{list(got.shape)}, expected {ref.dtype}{list(ref.shape)}"
    if ref.dtype == np.bool_ or np.issubdtype(ref.dtype, np.integer):
        return None if np.array_equal(got, ref) else "integer/bool values differ"
    err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(1.0, float(np.max(np.abs(ref))))) if ref.size else 0
    return None if err <= TOL else f"relative error {err:.3g} > {TOL}"


def output_elems(c, outs):
    """The outputs' element types: the numpy reference's, or ONNX's inference on the newer form."""
    if c.ref:
        return [(o, np_elem(c.ref[o])) for o in outs]
    if not c.modern:  # ORT is the reference: float outputs
        return [(o, TensorProto.FLOAT) for o in outs]
    mop, mnodes, minits = c.modern
    m = build_model(mop, mnodes, c.inputs, {**c.inits, **minits}, [(o, TensorProto.FLOAT) for o in outs], 7)
    types = {v.name: v.type.tensor_type.elem_type for v in onnx.shape_inference.infer_shapes(m).graph.value_info}
    return [(o, types.get(o, TensorProto.FLOAT)) for o in outs]


def references(opset, name, c):
    """Each output's reference, and where it came from."""
    outs = output_names(c.nodes, c.inputs, c.inits)
    elems = output_elems(c, outs)
    try:
        got = ort_run(build_model(opset, c.nodes, c.inputs, c.inits, elems), c.inputs)
        if c.ref:
            for o in outs:
                why = compare(got[o].astype(c.ref[o].dtype), c.ref[o])
                if why:
                    raise SystemExit(f"{name}: ONNX Runtime and the numpy reference disagree on {o}: {why}")
        return got, "ORT"
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - ORT no longer runs this form
        if not c.ref and not c.modern:
            raise SystemExit(f"{name}: no reference: ONNX Runtime fails ({str(e).splitlines()[0]})") from e
    if c.ref:
        return c.ref, "numpy"
    mop, mnodes, minits = c.modern
    return ort_run(build_model(mop, mnodes, c.inputs, {**c.inits, **minits}, elems, ir_version=7), c.inputs), \
        f"ORT on the opset-{mop} form"


def safe(name):
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def save_inputs(workdir, stem, feeds):
    args = []
    for k, v in feeds.items():
        f = os.path.join(workdir, f"{stem}.{safe(k)}.npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    return args


def check_opset(loom, workdir, opset, cases):
    """One model for all cases of the opset: loom compile, loom run, compare."""
    nodes, inputs, inits, refs, srcs = [], {}, {}, {}, {}
    for name, c in cases:
        ref, src = references(opset, name, c)
        nodes += c.nodes
        inputs.update(c.inputs)
        inits.update(c.inits)
        for o in output_names(c.nodes, c.inputs, c.inits):
            refs[o] = ref[o]
            srcs[o] = (name, src)
    outputs = [(o, np_elem(r)) for o, r in refs.items()]
    path = os.path.join(workdir, f"old_opset{opset}.onnx")
    onnx.save(build_model(opset, nodes, inputs, inits, outputs), path)
    art = os.path.join(workdir, f"old_opset{opset}.loom")
    r = run([loom, "compile", path, "-o", art])
    if r.returncode:
        return [f"opset {opset}: compile failed: {r.stderr.strip()}"]
    odir = os.path.join(workdir, f"old_opset{opset}.out")
    r = run([loom, "run", art, "--output-dir", odir] + save_inputs(workdir, f"old_opset{opset}", inputs))
    if r.returncode:
        return [f"opset {opset}: run failed: {r.stderr.strip()}"]
    failures = []
    for o, ref in refs.items():
        why = compare(np.load(os.path.join(odir, safe(o) + ".npy")), ref)
        name, src = srcs[o]
        print(f"opset {opset} {name}: {o} vs {src}: {why or 'ok'}")
        if why:
            failures.append(f"opset {opset} {name}: output {o}: {why}")
    return failures


def check_refusals(loom, workdir):
    failures = []
    for opset, name, nodes, inputs, inits, msg in refusals():
        outs = [(o, TensorProto.UNDEFINED) for o in output_names(nodes, inputs, inits)]
        path = os.path.join(workdir, f"refuse_{name}.onnx")
        onnx.save(build_model(opset, nodes, inputs, inits, outs), path)
        r = run([loom, "compile", path, "-o", os.path.join(workdir, "refused.loom")])
        ok = r.returncode != 0 and msg in r.stderr
        print(f"refused {name}: {'ok' if ok else 'WRONG'}")
        if not ok:
            failures.append(f"refusal {name}: exit {r.returncode}, expected a message with {msg!r}, got {r.stderr.strip()!r}")
    return failures


def check_defaults(loom, workdir):
    """IR v3: initializers among the inputs are defaults, constants unless fed."""
    x = rnd(2, 3)
    shp, w = np.array([3, 2], np.int64), rnd(1)
    nodes = [node("Reshape", ["x", "shp"], ["r"]),
             node("ConstantOfShape", ["shp"], ["c"], value=numpy_helper.from_array(np.array([1.5], np.float32))),
             node("Add", ["r", "c"], ["a"]), node("Mul", ["a", "w"], ["y"])]
    m = build_model(9, nodes, {"x": x}, {"shp": shp, "w": w}, [("y", TensorProto.FLOAT)])
    path = os.path.join(workdir, "ir3_defaults.onnx")
    onnx.save(m, path)
    m7 = onnx.ModelProto()
    m7.CopyFrom(m)
    m7.ir_version = 7  # where ORT lets a feed replace an initializer listed among the inputs
    failures = []

    def expect(what, args, ref=None, msg=None):
        odir = os.path.join(workdir, "ir3_defaults.out")
        r = run([loom] + args + (["--output-dir", odir] if args[0] == "run" else []))
        if msg is not None:
            why = None if r.returncode and msg in r.stderr else f"expected an error with {msg!r}, got {r.stderr.strip()!r}"
        elif r.returncode:
            why = f"failed: {r.stderr.strip()}"
        else:
            why = compare(np.load(os.path.join(odir, "y.npy")), ref) if ref is not None else None
        print(f"defaults: {what}: {why or 'ok'}")
        if why:
            failures.append(f"defaults: {what}: {why}")
        return r

    xf = os.path.join(workdir, "ir3.x.npy")
    np.save(xf, x)
    art = os.path.join(workdir, "ir3_defaults.loom")
    expect("loom compile (defaults are constants that fold)", ["compile", path, "-o", art])
    r = run([loom, "inspect", art])
    if "inputs (1)" not in r.stdout:
        failures.append(f"defaults: the artifact should have x as its only input:\n{r.stdout}")
    expect("loom run of the artifact", ["run", art, xf], ort_run(m, {"x": x})["y"])
    expect("loom run MODEL.onnx, defaults kept", ["run", path, xf], ort_run(m, {"x": x})["y"])
    w2 = rnd(1)
    feeds = {"x": x, "w": w2}
    expect("--input w=FILE replaces the default", ["run", path] + save_inputs(workdir, "ir3a", feeds),
           ort_run(m7, feeds)["y"])
    feeds = {"x": x, "shp": np.array([6, 1], np.int64), "w": w2}
    expect("--input shp=FILE replaces a shape-deciding default", ["run", path] + save_inputs(workdir, "ir3b", feeds),
           ort_run(m7, feeds)["y"])
    wf = os.path.join(workdir, "ir3.w.npy")
    np.save(wf, w2)
    expect("a default is not a positional input", ["run", path, xf, wf],
           msg="2 positional input files, but the model has 1 inputs")
    expect("an unknown name is an error", ["run", path, xf, "--input", f"nope={wf}"],
           msg='the model has no input named "nope"')
    return failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    loom, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    by_opset = {}
    for opset, name, fn in CASES:
        by_opset.setdefault(opset, []).append((name, fn(P(name))))
    failures = []
    for opset in sorted(by_opset):
        failures += check_opset(loom, workdir, opset, by_opset[opset])
    failures += check_refusals(loom, workdir)
    failures += check_defaults(loom, workdir)
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Builds the small ONNX models the importer tests read.

Usage: make_models.py OUTDIR

Each model exercises one importer feature or one kind of bad input; the C
tests (tests/unit/onnx/test_import.c) check the resulting graph or the
error message. Weights are deterministic so expected values can be stated.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, outdir, name, check=True):
    if check:
        # Outputs are declared without shapes (Loom must infer them), but the
        # checker wants one: it checks a copy where ONNX's own inference
        # filled them in, or, where that cannot (shape computed at run time),
        # a symbolic placeholder (the structural check does not use it).
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        for out in inferred.graph.output:
            if not out.type.tensor_type.HasField("shape"):
                out.type.tensor_type.shape.dim.add().dim_param = "unknown"
        onnx.checker.check_model(inferred)
    onnx.save(model, os.path.join(outdir, name))


def model(graph, opset, ir_version=None):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="loom-tests")
    # Old opsets need an IR version the checker accepts for them.
    m.ir_version = ir_version or (3 if opset < 9 else 7 if opset < 13 else 8)
    return m


def conv_bn_relu(outdir):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = np.arange(8, dtype=np.float32)
    scale = np.ones(8, np.float32)
    bias = np.zeros(8, np.float32)
    mean = np.zeros(8, np.float32)
    var = np.ones(8, np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (b, "b"), (scale, "scale"), (bias, "bias"), (mean, "mean"), (var, "var")]]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv0", pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"], name="bn0", epsilon=1e-3),
        helper.make_node("Relu", ["n"], ["y"], name="relu0"),
    ]
    g = helper.make_graph(nodes, "conv_bn_relu", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(model(g, 13), outdir, "conv_bn_relu.onnx")


def mlp(outdir):
    # Weights as typed fields (float_data), not raw_data, to cover that path.
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [16, 8], [0.5] * 128)
    b1 = helper.make_tensor("b1", TensorProto.FLOAT, [8], [float(i) for i in range(8)])
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [4, 8], [0.25] * 32)
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["r"], name="act"),
        helper.make_node("Dropout", ["r"], ["d"], name="drop"),
        helper.make_node("Gemm", ["d", "w2"], ["y"], name="fc2", transB=1, alpha=2.0),
        helper.make_node("Softmax", ["y"], ["p"], name="sm"),
    ]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, None)], [w1, b1, w2])
    save(model(g, 13), outdir, "mlp.onnx")


def shape_chain(outdir, opset, name, batch=2):
    # x: [2, 3, 4, 5] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) -> [2, 60]
    const_m1 = numpy_helper.from_array(np.array([-1], np.int64), "minus_one")
    nodes = [helper.make_node("Shape", ["x"], ["s"], name="shape"),
             helper.make_node("Constant", [], ["zero"], name="zero_c", value=numpy_helper.from_array(np.array(0, np.int64)))]
    nodes.append(helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0))
    if opset >= 13:
        nodes.append(helper.make_node("Constant", [], ["ax0"], name="ax_c", value_ints=[0]))
        nodes.append(helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq"))
    else:
        nodes.append(helper.make_node("Unsqueeze", ["n"], ["n1"], name="unsq", axes=[0]))
    nodes += [
        helper.make_node("Concat", ["n1", "minus_one"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "target"], ["r"], name="reshape"),
        helper.make_node("Identity", ["r"], ["y"], name="ident"),
    ]
    g = helper.make_graph(nodes, "shape_chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [const_m1])
    save(model(g, opset), outdir, name)


def opset7(outdir):
    # Old forms: Slice/Squeeze/ReduceMean axes, Pad pads and Clip bounds as attributes; Upsample.
    nodes = [
        helper.make_node("Slice", ["x"], ["s"], name="slice", starts=[1], ends=[3], axes=[1]),
        helper.make_node("Pad", ["s"], ["p"], name="pad", pads=[0, 0, 1, 1, 0, 0, 1, 1], value=0.0),
        helper.make_node("Clip", ["p"], ["c"], name="clip", min=0.0, max=6.0),
        helper.make_node("Upsample", ["c"], ["u"], name="up", scales=[1.0, 1.0, 2.0, 2.0]),
        helper.make_node("ReduceMean", ["u"], ["m"], name="mean", axes=[2, 3], keepdims=1),
        helper.make_node("Squeeze", ["m"], ["y"], name="sq", axes=[2, 3]),
        helper.make_node("Softmax", ["y"], ["z"], name="sm"),
    ]
    g = helper.make_graph(nodes, "opset7", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    save(model(g, 7), outdir, "opset7.onnx")


def opset17(outdir):
    # New forms: axes and pads as inputs, LayerNormalization, Split with sizes input.
    def c(name, arr):
        return numpy_helper.from_array(np.array(arr, np.int64), name)
    inits = [c("sl_starts", [1]), c("sl_ends", [3]), c("sl_axes", [1]), c("pads", [0, 0, 1, 1, 0, 0, 1, 1]),
             c("rm_axes", [3]), c("sq_axes", [3]), c("split", [3, 5]),
             numpy_helper.from_array(np.ones(8, np.float32), "ln_scale"),
             numpy_helper.from_array(np.zeros(8, np.float32), "ln_bias"),
             numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
             numpy_helper.from_array(np.array(6.0, np.float32), "hi")]
    nodes = [
        helper.make_node("Slice", ["x", "sl_starts", "sl_ends", "sl_axes"], ["s"], name="slice"),
        helper.make_node("Pad", ["s", "pads"], ["p"], name="pad"),
        helper.make_node("Clip", ["p", "lo", "hi"], ["c"], name="clip"),
        helper.make_node("LayerNormalization", ["c", "ln_scale", "ln_bias"], ["ln"], name="ln", axis=-1),
        helper.make_node("ReduceSum", ["ln", "rm_axes"], ["m"], name="sum", keepdims=1),
        helper.make_node("Squeeze", ["m", "sq_axes"], ["q"], name="sq"),
        helper.make_node("Split", ["q", "split"], ["y0", "y1"], name="split", axis=2),
    ]
    g = helper.make_graph(nodes, "opset17", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                          [helper.make_tensor_value_info("y0", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("y1", TensorProto.FLOAT, None)], inits)
    save(model(g, 17), outdir, "opset17.onnx")


def external_data(outdir):
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = numpy_helper.from_array(w, "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "ext",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
    m = model(g, 13)
    onnx.external_data_helper.convert_model_to_external_data(m, all_tensors_to_one_file=True, location="external.bin",
                                                             size_threshold=0)
    onnx.save(m, os.path.join(outdir, "external.onnx"))
    # A copy whose location escapes the model directory must be refused.
    for init in m.graph.initializer:
        for e in init.external_data:
            if e.key == "location":
                e.value = "../external.bin"
    onnx.save(m, os.path.join(outdir, "external_escape.onnx"))


def bert_like(outdir):
    # Decomposed LayerNorm, Erf-Gelu, MatMul+Add, Where/Equal/Cast/Expand, attention-style reshape chain.
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 8)).astype(np.float32), "wq"),
             numpy_helper.from_array(np.array([2], np.int64), "two"),
             numpy_helper.from_array(np.array([4], np.int64), "four"),
             numpy_helper.from_array(np.array(2.0, np.float32), "p2"),
             numpy_helper.from_array(np.array(1e-5, np.float32), "eps"),
             numpy_helper.from_array(np.array(1.4142135, np.float32), "sqrt2"),
             numpy_helper.from_array(np.array([-1], np.int64), "last_axis"),
             numpy_helper.from_array(np.array([0, 1], np.int64), "ax01")]
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mu"], name="ln_mean", axes=[-1]),
        helper.make_node("Sub", ["x", "mu"], ["d"], name="ln_sub"),
        helper.make_node("Pow", ["d", "p2"], ["d2"], name="ln_pow"),
        helper.make_node("ReduceMean", ["d2"], ["v"], name="ln_var", axes=[-1]),
        helper.make_node("Add", ["v", "eps"], ["ve"], name="ln_add"),
        helper.make_node("Sqrt", ["ve"], ["sd"], name="ln_sqrt"),
        helper.make_node("Div", ["d", "sd"], ["ln"], name="ln_div"),
        helper.make_node("MatMul", ["ln", "wq"], ["q"], name="q_proj"),
        helper.make_node("Div", ["q", "sqrt2"], ["qs"], name="gelu_div"),
        helper.make_node("Erf", ["qs"], ["e"], name="gelu_erf"),
        helper.make_node("Mul", ["q", "e"], ["ge"], name="gelu_mul"),
        # heads: [B, S, 8] -> [B, S, 2, 4] -> [B, 2, S, 4]
        helper.make_node("Shape", ["ge"], ["shp"], name="shape"),
        helper.make_node("Slice", ["shp", "ax01_start", "ax01_end"], ["bs"], name="shape_slice"),
        helper.make_node("Concat", ["bs", "two", "four"], ["newshape"], name="shape_concat", axis=0),
        helper.make_node("Reshape", ["ge", "newshape"], ["heads"], name="split_heads"),
        helper.make_node("Transpose", ["heads"], ["ht"], name="heads_t", perm=[0, 2, 1, 3]),
        helper.make_node("MatMul", ["ht", "kt"], ["scores"], name="scores"),
        helper.make_node("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        # mask: Where(Equal(Cast(mask), 0), -1e4, probs) with Expand
        helper.make_node("Cast", ["mask"], ["maskf"], name="mask_cast", to=TensorProto.FLOAT),
        helper.make_node("Equal", ["maskf", "zero_f"], ["is0"], name="mask_eq"),
        helper.make_node("Expand", ["is0", "probs_shape"], ["is0e"], name="mask_expand"),
        helper.make_node("Where", ["is0e", "neg", "probs"], ["y"], name="mask_where"),
    ]
    inits += [numpy_helper.from_array(np.array([0], np.int64), "ax01_start"),
              numpy_helper.from_array(np.array([2], np.int64), "ax01_end"),
              numpy_helper.from_array(rng.standard_normal((1, 2, 4, 5)).astype(np.float32), "kt"),
              numpy_helper.from_array(np.array(0.0, np.float32), "zero_f"),
              numpy_helper.from_array(np.array(-1e4, np.float32), "neg"),
              numpy_helper.from_array(np.array([1, 2, 5, 5], np.int64), "probs_shape")]
    g = helper.make_graph(nodes, "bert_like",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 5, 8]),
                           helper.make_tensor_value_info("mask", TensorProto.INT64, [1, 1, 1, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    save(model(g, 13), outdir, "bert_like.onnx")


def flex_attention(outdir):
    """FlexAttention (ai.onnx.preview): GQA (4 query heads, 2 kv heads) and a
    score_mod reading an outer initializer; and two bad nodes."""
    def flex(name, qshape, kshape, vshape, inits=(), **attrs):
        node = helper.make_node("FlexAttention", ["q", "k", "v"], ["y"], name=name, domain="ai.onnx.preview", **attrs)
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in (("q", qshape), ("k", kshape), ("v", vshape))]
        g = helper.make_graph([node], name, ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], list(inits))
        m = model(g, 21)
        m.opset_import.append(helper.make_opsetid("ai.onnx.preview", 1))
        save(m, outdir, name + ".onnx", check=False)
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, None)
    s2 = helper.make_tensor_value_info("s2", TensorProto.FLOAT, None)
    mod = helper.make_graph([helper.make_node("Add", ["s", "bias"], ["s2"])], "mod", [s], [s2])
    bias = numpy_helper.from_array(np.array(0.5, np.float32), "bias")
    flex("flex_gqa", [1, 4, 3, 8], [1, 2, 5, 8], [1, 2, 5, 6], [bias], score_mod=mod, scale=0.25)
    flex("flex_rank3", [4, 3, 8], [2, 5, 8], [2, 5, 6])
    two = helper.make_graph([helper.make_node("Add", ["s", "t"], ["s2"])], "two", [s, helper.make_tensor_value_info("t", TensorProto.FLOAT, None)], [s2])
    flex("flex_bad_mod", [1, 2, 3, 8], [1, 2, 5, 8], [1, 2, 5, 6], prob_mod=two)


def bad_models(outdir):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    # Two unsupported ops (and one supported) in one model.
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["a"], name="ok"),
                           helper.make_node("FancyOp", ["a"], ["b"], name="fancy1"),
                           helper.make_node("StringNormalizer", ["b"], ["y"], name="strnorm1")],
                          "unsupported", [x], [y])
    save(model(g, 13), outdir, "unsupported.onnx", check=False)
    # A cycle: a -> b -> a.
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"], name="cyc_add"),
                           helper.make_node("Relu", ["a"], ["b"], name="cyc_relu"),
                           helper.make_node("Relu", ["b"], ["y"], name="out")], "cycle", [x], [y])
    save(model(g, 13), outdir, "cycle.onnx", check=False)
    # A dangling input name.
    g = helper.make_graph([helper.make_node("Add", ["x", "nowhere"], ["y"], name="dangling_add")], "dangling", [x], [y])
    save(model(g, 13), outdir, "dangling.onnx", check=False)
    # Wrong attribute type: Concat axis as a float.
    g = helper.make_graph([helper.make_node("Concat", ["x", "x"], ["y"], name="bad_concat", axis=1.5)], "badattr", [x], [y])
    save(model(g, 13), outdir, "bad_attr.onnx", check=False)
    # An input count outside the op's range (Relu takes one).
    g = helper.make_graph([helper.make_node("Relu", ["x", "x"], ["y"], name="bad_relu")], "badarity", [x], [y])
    save(model(g, 13), outdir, "bad_arity.onnx", check=False)
    # Unsupported opset (newer than Loom knows).
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "new", [x], [y])
    save(model(g, 29, ir_version=13), outdir, "opset29.onnx", check=False)
    # Unsupported input dtype (string).
    g = helper.make_graph([helper.make_node("Identity", ["s"], ["y"], name="i")], "strin",
                          [helper.make_tensor_value_info("s", TensorProto.STRING, [2])], [y])
    save(model(g, 13), outdir, "string_input.onnx", check=False)
    # Shape mismatch found by inference.
    w = numpy_helper.from_array(np.ones((5, 3), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm_bad")], "mismatch", [x], [y], [w])
    save(model(g, 13), outdir, "shape_mismatch.onnx", check=False)
    # Garbage and truncated files.
    with open(os.path.join(outdir, "garbage.onnx"), "wb") as f:
        f.write(bytes((i * 37 + 11) % 256 for i in range(256)))
    with open(os.path.join(outdir, "conv_bn_relu.onnx"), "rb") as f:
        data = f.read()
    with open(os.path.join(outdir, "truncated.onnx"), "wb") as f:
        f.write(data[: len(data) // 2])
    with open(os.path.join(outdir, "empty.onnx"), "wb") as f:
        pass


DTYPE_NAMES = {TensorProto.FLOAT: "f32", TensorProto.INT64: "i64", TensorProto.BOOL: "bool", TensorProto.INT32: "i32"}


def write_shapes(m, outdir, name):
    """Writes ONNX's own inferred shapes (name dtype d0,d1,...), the reference
    the C test compares Loom's inference with. Only fully static shapes."""
    inferred = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    # ONNX's C++ inference and its reference implementation disagree on
    # pools with ceil_mode: the reference (like PyTorch and ONNX Runtime)
    # drops a last window that would start in the end padding. Loom follows
    # the reference, so those outputs take the reference formula.
    from onnx.reference.ops.op_pool_common import get_output_shape_explicit_padding
    overrides = {}
    shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim] for vi in m.graph.input}
    for node in m.graph.node:
        at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type in ("MaxPool", "AveragePool") and at.get("ceil_mode") and node.input[0] in shapes:
            x = shapes[node.input[0]]
            sp, _ = get_output_shape_explicit_padding(at.get("pads"), x[2:], at["kernel_shape"], at.get("strides"),
                                                      at.get("dilations"), True)
            overrides[node.output[0]] = x[:2] + [int(d) for d in sp]
    lines = []
    for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape") or tt.elem_type not in DTYPE_NAMES:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        dims = overrides.get(vi.name, dims)
        if any(d < 0 for d in dims):
            continue
        lines.append("%s %s %s" % (vi.name, DTYPE_NAMES[tt.elem_type], ",".join(map(str, dims)) or "-"))
    with open(os.path.join(outdir, name), "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


def random_ops(outdir, count=240):
    """One model holding `count` independent single-op branches with random
    shapes and attributes; every branch output is a graph output."""
    rng = np.random.default_rng(2024)
    inputs, outputs, nodes, inits = [], [], [], []
    values = {}  # folded outputs -> numpy-computed expected values
    k = 0

    def inp(shape, dtype=TensorProto.FLOAT):
        name = "in%d_%d" % (k, len(inputs))
        inputs.append(helper.make_tensor_value_info(name, dtype, list(shape)))
        return name

    def const(arr):
        name = "c%d_%d" % (k, len(inits))
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def rand_shape(rank, lo=1, hi=6):
        return [int(rng.integers(lo, hi)) for _ in range(rank)]

    ops = ["Conv", "MaxPool", "AveragePool", "Gemm", "MatMul", "Add", "Slice", "ReduceSum", "Transpose", "Concat",
           "Split", "Gather", "Unsqueeze", "Squeeze", "Pad", "Expand", "Flatten", "Reshape", "GlobalAveragePool", "Where",
           "Tile", "Resize", "Shape", "Range", "ConstantOfShape", "Softmax", "LayerNormalization", "Cast"]
    while k < count:
        op = ops[k % len(ops)]
        out = "out%d" % k
        attrs = {}
        if op == "Conv":
            nsp = int(rng.integers(1, 3))
            group = int(rng.choice([1, 2]))
            cin = group * int(rng.integers(1, 3))
            x = inp([1, cin] + rand_shape(nsp, 5, 12))
            ks = rand_shape(nsp, 1, 4)
            w = const(np.zeros([group * int(rng.integers(1, 3)), cin // group] + ks, np.float32))
            attrs["strides"] = rand_shape(nsp, 1, 3)
            attrs["dilations"] = rand_shape(nsp, 1, 3)
            attrs["group"] = group
            if rng.random() < 0.5:
                attrs["auto_pad"] = str(rng.choice(["SAME_UPPER", "SAME_LOWER", "VALID"]))
            else:
                attrs["pads"] = rand_shape(2 * nsp, 0, 3)
            ins = [x, w]
        elif op in ("MaxPool", "AveragePool"):
            nsp = 2
            x = inp([1, 2] + rand_shape(nsp, 6, 12))
            attrs["kernel_shape"] = rand_shape(nsp, 1, 4)
            attrs["strides"] = rand_shape(nsp, 1, 3)
            attrs["ceil_mode"] = int(rng.integers(0, 2))
            # ONNX requires pads smaller than the kernel
            attrs["pads"] = [int(rng.integers(0, kk)) for kk in attrs["kernel_shape"] * 2]
            ins = [x]
        elif op == "Gemm":
            m, kk, n = rand_shape(3)
            ta, tb = int(rng.integers(0, 2)), int(rng.integers(0, 2))
            a = inp([kk, m] if ta else [m, kk])
            b = const(np.zeros([n, kk] if tb else [kk, n], np.float32))
            c = const(np.zeros(rand_shape(1, 1, 2) if rng.random() < 0.5 else [n], np.float32))
            attrs.update(transA=ta, transB=tb)
            ins = [a, b, c]
        elif op == "MatMul":
            batch = rand_shape(int(rng.integers(0, 3)), 1, 4)
            m, kk, n = rand_shape(3)
            sa = ([1 if rng.random() < 0.3 else d for d in batch] + [m, kk]) if rng.random() < 0.8 else [kk]
            sb = (batch[int(rng.integers(0, len(batch) + 1)):] + [kk, n]) if rng.random() < 0.8 else [kk]
            ins = [inp(sa), inp(sb)]
        elif op == "Add":
            shape = rand_shape(int(rng.integers(1, 5)))
            other = [1 if rng.random() < 0.4 else d for d in shape][int(rng.integers(0, len(shape))):]
            ins = [inp(shape), inp(other)]
        elif op == "Slice":
            shape = rand_shape(int(rng.integers(1, 4)), 1, 10)
            nax = int(rng.integers(1, len(shape) + 1))
            axes = list(rng.permutation(len(shape))[:nax])
            starts = [int(rng.integers(-12, 12)) for _ in axes]
            ends = [int(rng.integers(-12, 12)) for _ in axes]
            steps = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in axes]
            ins = [inp(shape), const(np.array(starts, np.int64)), const(np.array(ends, np.int64)),
                   const(np.array([int(a) - (len(shape) if rng.random() < 0.3 else 0) for a in axes], np.int64)),
                   const(np.array(steps, np.int64))]
        elif op == "ReduceSum":
            shape = rand_shape(int(rng.integers(1, 5)))
            axes = sorted(set(int(a) for a in rng.integers(0, len(shape), size=int(rng.integers(1, len(shape) + 1)))))
            attrs["keepdims"] = int(rng.integers(0, 2))
            ins = [inp(shape), const(np.array(axes, np.int64))]
        elif op == "Transpose":
            shape = rand_shape(int(rng.integers(1, 5)))
            if rng.random() < 0.7:
                attrs["perm"] = [int(p) for p in rng.permutation(len(shape))]
            ins = [inp(shape)]
        elif op == "Concat":
            shape = rand_shape(int(rng.integers(1, 4)))
            axis = int(rng.integers(0, len(shape)))
            ins = []
            for _ in range(int(rng.integers(1, 4))):
                s2 = list(shape)
                s2[axis] = int(rng.integers(1, 5))
                ins.append(inp(s2))
            attrs["axis"] = axis - (len(shape) if rng.random() < 0.3 else 0)
        elif op == "Split":
            shape = rand_shape(int(rng.integers(1, 4)), 2, 9)
            axis = int(rng.integers(0, len(shape)))
            parts = int(rng.integers(1, 4))
            attrs["axis"] = axis
            if rng.random() < 0.5 and shape[axis] >= parts:
                cuts = sorted(rng.choice(np.arange(1, shape[axis]), size=parts - 1, replace=False)) if parts > 1 else []
                sizes = np.diff([0] + [int(c) for c in cuts] + [shape[axis]])
                ins = [inp(shape), const(np.array(sizes, np.int64))]
            else:
                parts = min(parts, shape[axis])
                attrs["num_outputs"] = parts  # opset 18: the last part may be smaller
                ins = [inp(shape)]
            nodes.append(helper.make_node("Split", ins, ["%s_%d" % (out, j) for j in range(parts)], name="n%d" % k,
                                          **attrs))
            for j in range(parts):
                outputs.append(helper.make_tensor_value_info("%s_%d" % (out, j), TensorProto.FLOAT, None))
            k += 1
            continue
        elif op == "Gather":
            shape = rand_shape(int(rng.integers(1, 4)))
            axis = int(rng.integers(0, len(shape)))
            ins = [inp(shape), inp(rand_shape(int(rng.integers(0, 3))), TensorProto.INT64)]
            attrs["axis"] = axis
        elif op == "Unsqueeze":
            shape = rand_shape(int(rng.integers(0, 4)))
            r = len(shape) + int(rng.integers(1, 3))
            axes = [int(a) for a in rng.permutation(r)[: r - len(shape)]]
            ins = [inp(shape), const(np.array([a - (r if rng.random() < 0.3 else 0) for a in axes], np.int64))]
        elif op == "Squeeze":
            shape = [1 if rng.random() < 0.5 else d for d in rand_shape(int(rng.integers(1, 5)), 2, 5)]
            ones = [i for i, d in enumerate(shape) if d == 1]
            ins = [inp(shape)]
            if ones and rng.random() < 0.6:
                ins.append(const(np.array(ones[: int(rng.integers(1, len(ones) + 1))], np.int64)))
        elif op == "Pad":
            shape = rand_shape(int(rng.integers(1, 5)))
            pads = [int(rng.integers(0, 3)) for _ in range(2 * len(shape))]
            ins = [inp(shape), const(np.array(pads, np.int64))]
        elif op == "Expand":
            shape = [1 if rng.random() < 0.5 else d for d in rand_shape(int(rng.integers(1, 4)))]
            target = [int(rng.integers(1, 4)) if d == 1 else d for d in shape]
            target = rand_shape(int(rng.integers(0, 2))) + target
            ins = [inp(shape), const(np.array(target, np.int64))]
        elif op == "Flatten":
            shape = rand_shape(int(rng.integers(1, 5)))
            attrs["axis"] = int(rng.integers(-len(shape), len(shape) + 1))
            ins = [inp(shape)]
        elif op == "Reshape":
            shape = rand_shape(int(rng.integers(1, 5)))
            total = int(np.prod(shape))
            target = [total] if rng.random() < 0.3 else [shape[0], -1]
            if rng.random() < 0.3:
                target = [0] + [-1] if len(shape) > 1 else [-1]
            ins = [inp(shape), const(np.array(target, np.int64))]
        elif op == "GlobalAveragePool":
            ins = [inp([1, 3] + rand_shape(int(rng.integers(1, 3)), 2, 8))]
        elif op == "Where":
            a = rand_shape(3)
            ins = [inp([1 if rng.random() < 0.5 else d for d in a], TensorProto.BOOL), inp(a[1:]), inp([a[0], 1, 1])]
        elif op == "Tile":
            shape = rand_shape(int(rng.integers(1, 4)))
            ins = [inp(shape), const(np.array(rand_shape(len(shape), 1, 4), np.int64))]
        elif op == "Resize":
            shape = [1, 2] + rand_shape(2, 2, 8)
            if rng.random() < 0.5:
                ins = [inp(shape), "", const(np.array([1, 1, 2.0, 0.5], np.float32))]
            else:
                ins = [inp(shape), "", "", const(np.array([1, 2] + rand_shape(2, 1, 9), np.int64))]
        elif op == "Shape":
            shape = rand_shape(int(rng.integers(1, 5)))
            if rng.random() < 0.5:
                attrs["start"] = int(rng.integers(-5, 5))
                attrs["end"] = int(rng.integers(-5, 5))
            ins = [inp(shape)]
            values[out] = np.array(shape, np.int64)[slice(attrs.get("start"), attrs.get("end"))]
        elif op == "Range":
            start, limit, delta = int(rng.integers(-5, 5)), int(rng.integers(-9, 9)), int(rng.choice([-3, -1, 1, 2]))
            values[out] = np.arange(start, limit, delta, dtype=np.int64)
            ins = [const(np.array(start, np.int64)), const(np.array(limit, np.int64)), const(np.array(delta, np.int64))]
        elif op == "ConstantOfShape":
            cshape = rand_shape(int(rng.integers(1, 4)))
            ins = [const(np.array(cshape, np.int64))]
            attrs["value"] = numpy_helper.from_array(np.array([7], np.int64))
            values[out] = np.full(cshape, 7, np.int64)
        elif op == "Softmax":
            shape = rand_shape(int(rng.integers(1, 4)))
            ins = [inp(shape)]
            attrs["axis"] = int(rng.integers(-len(shape), len(shape)))
        elif op == "LayerNormalization":
            shape = rand_shape(int(rng.integers(1, 4)))
            axis = int(rng.integers(-len(shape), len(shape)))
            ins = [inp(shape), const(np.ones(shape[axis:], np.float32))]
            attrs["axis"] = axis
        elif op == "Cast":
            ins = [inp(rand_shape(2))]
            attrs["to"] = int(rng.choice([TensorProto.INT64, TensorProto.BOOL, TensorProto.INT32]))
        nodes.append(helper.make_node(op, ins, [out], name="n%d" % k, **attrs))
        outputs.append(helper.make_tensor_value_info(out, TensorProto.UNDEFINED, None))
        k += 1
    g = helper.make_graph(nodes, "random_ops", inputs, [onnx.ValueInfoProto(name=o.name) for o in outputs], inits)
    m = model(g, 18)
    onnx.save(m, os.path.join(outdir, "random_ops.onnx"))
    with open(os.path.join(outdir, "random_ops.values"), "w") as f:
        for name, v in values.items():
            f.write("%s %s\n" % (name, ",".join(map(str, v.ravel())) or "-"))
    n = write_shapes(m, outdir, "random_ops.shapes")
    assert n >= count * 0.9, "ONNX inferred only %d shapes" % n


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)
    conv_bn_relu(outdir)
    mlp(outdir)
    shape_chain(outdir, 13, "shape_chain.onnx")
    shape_chain(outdir, 11, "shape_chain_opset11.onnx")
    shape_chain(outdir, 13, "shape_chain_dynamic.onnx", batch="batch")
    opset7(outdir)
    opset17(outdir)
    external_data(outdir)
    bert_like(outdir)
    flex_attention(outdir)
    bad_models(outdir)
    random_ops(outdir)


if __name__ == "__main__":
    main()

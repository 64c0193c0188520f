#!/usr/bin/env python3
"""Small models for the graph compiler's end-to-end tests (compare_ort.py):
each exercises one family of real networks with random, seeded weights.

usage: make_compiler_models.py OUTDIR
  resnet_block.onnx      conv+BN+relu, 3x3 stride 2, residual add, max pool,
                         global average pool, flatten, gemm
  winograd_convs.onnx    3x3 stride-1 convs that Loom computes by Winograd's
                         F(2x2, 3x3) (64+ channels, 40+ output tiles): batch 2,
                         odd extents (partial tiles), asymmetric pads, no pad,
                         80 channels; BN + relu and a residual add fused after
  grouped_convs.onnx     ResNeXt-style grouped convs in the blocked layout: 4
                         groups of 16 (BN, relu), 2 groups stride 2, a 1x1 of 3
                         groups with bias, 6 groups of 8 channels, residual add
  mobilenet_block.onnx   1x1 expand, depthwise 3x3 (group = C), clip (relu6),
                         1x1 project, residual add
  transformer_block.onnx matmul QKV, reshape/transpose heads, scaled softmax,
                         layer norm (decomposed: ReduceMean/Sub/Pow/Sqrt/Div),
                         erf-GELU, residual adds
  vit_patch.onnx         conv patch embedding (stride = kernel), concat of a
                         class token, transpose, layer norm (opset 17 op)
  vision_ops.onnx        a spatial transformer (AffineGrid -> GridSample, border
                         padding), GridSample cubic, nearest with reflection padding, RoiAlign avg
                         and max, DeformConv with mask and bias, TopK (opset 20)
  dynamic_ops.onnx       outputs whose extents depend on the data: NonZero, Unique
                         along an axis (4 outputs), Compress, NonMaxSuppression
  classifier.onnx        classifier heads with big weights (split over K into
                         per-thread row ranges): Gemm transB=1 with bias,
                         MatMul without
  sequence_ops.onnx      bidirectional LSTM with peepholes, initial states and
                         sequence lengths, reverse GRU (linear_before_reset), RNN
                         with custom activations; Attention (GQA, causal, bool
                         mask, softcap), RotaryEmbedding; DFT (onesided, inverse,
                         dft_length), STFT with a window, windows,
                         MelWeightMatrix, Det (opset 23)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def W(name, *shape, scale=0.2):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def I(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def F(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.float32), name)


def bn(prefix, c, x, y, nodes, inits):
    inits += [F(prefix + "_g", rng.uniform(0.5, 1.5, c)), F(prefix + "_b", rng.uniform(-0.2, 0.2, c)),
              F(prefix + "_m", rng.uniform(-0.2, 0.2, c)), F(prefix + "_v", rng.uniform(0.5, 1.5, c))]
    nodes.append(helper.make_node("BatchNormalization", [x, prefix + "_g", prefix + "_b", prefix + "_m", prefix + "_v"],
                                  [y], name=prefix, epsilon=1e-5))


def save(model, outdir, name, opset=13, ir_version=8):
    model.opset_import[0].version = opset
    model.ir_version = ir_version
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(outdir, name + ".onnx"))


def resnet_block(outdir):
    nodes, inits = [], []
    inits += [W("w1", 32, 16, 3, 3), W("w2", 32, 32, 3, 3), W("wd", 32, 16, 1, 1), W("fc_w", 10, 32), F("fc_b", rng.uniform(-1, 1, 10))]
    nodes.append(helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]))
    bn("bn1", 32, "c1", "b1", nodes, inits)
    nodes.append(helper.make_node("Relu", ["b1"], ["r1"], name="relu1"))
    nodes.append(helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]))
    bn("bn2", 32, "c2", "b2", nodes, inits)
    nodes.append(helper.make_node("Conv", ["x", "wd"], ["cd"], name="down", strides=[2, 2]))
    nodes.append(helper.make_node("Add", ["b2", "cd"], ["s"], name="residual"))
    nodes.append(helper.make_node("Relu", ["s"], ["r2"], name="relu2"))
    nodes.append(helper.make_node("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("GlobalAveragePool", ["p"], ["g"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["g"], ["f"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], name="fc", transB=1))
    g = helper.make_graph(nodes, "resnet_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 20, 20])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    save(helper.make_model(g), outdir, "resnet_block")


def winograd_convs(outdir):
    nodes, inits = [], []
    inits += [W("wa", 64, 64, 3, 3, scale=0.05), W("wb", 80, 64, 3, 3, scale=0.05), W("wc", 64, 80, 3, 3, scale=0.05),
              W("ws", 64, 64, 3, 3, scale=0.05)]
    nodes.append(helper.make_node("Conv", ["x", "wa"], ["ca"], name="conv_a", pads=[1, 1, 1, 1]))
    bn("bna", 64, "ca", "ba", nodes, inits)
    nodes.append(helper.make_node("Relu", ["ba"], ["ra"], name="relu_a"))
    # 23x25 -> 24x25: top 2, left 0, bottom 1, right 2
    nodes.append(helper.make_node("Conv", ["ra", "wb"], ["cb"], name="conv_b", pads=[2, 0, 1, 2]))
    # 24x25 -> 22x23, no padding
    nodes.append(helper.make_node("Conv", ["cb", "wc"], ["cc"], name="conv_c"))
    # stride 2 stays a direct conv: 23x25 -> 11x12, then the residual
    nodes.append(helper.make_node("Conv", ["ra", "ws"], ["cs"], name="conv_s", strides=[2, 2]))
    nodes.append(helper.make_node("MaxPool", ["cc"], ["pc"], name="pool", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 1]))
    nodes.append(helper.make_node("Add", ["pc", "cs"], ["y"], name="residual"))
    g = helper.make_graph(nodes, "winograd_convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64, 23, 25])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64, 11, 12])], inits)
    save(helper.make_model(g), outdir, "winograd_convs")


def grouped_convs(outdir):
    nodes, inits = [], []
    inits += [W("wa", 64, 16, 3, 3, scale=0.1), W("wb", 96, 32, 3, 3, scale=0.1), W("wc", 48, 32, 1, 1),
              F("bc", rng.uniform(-0.5, 0.5, 48)), W("wd", 48, 8, 3, 3, scale=0.1)]
    nodes.append(helper.make_node("Conv", ["x", "wa"], ["ca"], name="g4", group=4, pads=[1, 1, 1, 1]))
    bn("bna", 64, "ca", "ba", nodes, inits)
    nodes.append(helper.make_node("Relu", ["ba"], ["ra"], name="relu_a"))
    nodes.append(helper.make_node("Conv", ["ra", "wb"], ["cb"], name="g2", group=2, strides=[2, 2], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Conv", ["cb", "wc", "bc"], ["cc"], name="g3", group=3))
    nodes.append(helper.make_node("Conv", ["cc", "wd"], ["cd"], name="g6", group=6, pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Add", ["cd", "cc"], ["y"], name="residual"))
    g = helper.make_graph(nodes, "grouped_convs", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 15, 15])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 48, 8, 8])], inits)
    save(helper.make_model(g), outdir, "grouped_convs")


def mobilenet_block(outdir):
    nodes, inits = [], []
    inits += [W("we", 48, 16, 1, 1), W("wdw", 48, 1, 3, 3), W("wp", 16, 48, 1, 1), F("lo", [0.0]), F("hi", [6.0])]
    nodes.append(helper.make_node("Conv", ["x", "we"], ["e"], name="expand"))
    bn("bne", 48, "e", "eb", nodes, inits)
    nodes.append(helper.make_node("Clip", ["eb", "lo", "hi"], ["er"], name="relu6a"))
    nodes.append(helper.make_node("Conv", ["er", "wdw"], ["d"], name="dw", group=48, pads=[1, 1, 1, 1]))
    bn("bnd", 48, "d", "db", nodes, inits)
    nodes.append(helper.make_node("Clip", ["db", "lo", "hi"], ["dr"], name="relu6b"))
    nodes.append(helper.make_node("Conv", ["dr", "wp"], ["p"], name="project"))
    bn("bnp", 16, "p", "pb", nodes, inits)
    nodes.append(helper.make_node("Add", ["pb", "x"], ["y"], name="residual"))
    g = helper.make_graph(nodes, "mobilenet_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 14, 14])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 14, 14])], inits)
    save(helper.make_model(g), outdir, "mobilenet_block")


def layer_norm(prefix, x, y, d, nodes, inits):
    inits += [F(prefix + "_gamma", rng.uniform(0.5, 1.5, d)), F(prefix + "_beta", rng.uniform(-0.5, 0.5, d)),
              F(prefix + "_eps", [1e-5]), F(prefix + "_two", [2.0]), I(prefix + "_ax", [-1])]
    nodes += [
        helper.make_node("ReduceMean", [x], [prefix + "_mu"], name=prefix + "_mean", axes=[-1]),
        helper.make_node("Sub", [x, prefix + "_mu"], [prefix + "_xc"], name=prefix + "_sub"),
        helper.make_node("Pow", [prefix + "_xc", prefix + "_two"], [prefix + "_sq"], name=prefix + "_pow"),
        helper.make_node("ReduceMean", [prefix + "_sq"], [prefix + "_var"], name=prefix + "_varmean", axes=[-1]),
        helper.make_node("Add", [prefix + "_var", prefix + "_eps"], [prefix + "_ve"], name=prefix + "_addeps"),
        helper.make_node("Sqrt", [prefix + "_ve"], [prefix + "_sd"], name=prefix + "_sqrt"),
        helper.make_node("Div", [prefix + "_xc", prefix + "_sd"], [prefix + "_n"], name=prefix + "_div"),
        helper.make_node("Mul", [prefix + "_n", prefix + "_gamma"], [prefix + "_s"], name=prefix + "_scale"),
        helper.make_node("Add", [prefix + "_s", prefix + "_beta"], [y], name=prefix + "_shift"),
    ]


def transformer_block(outdir):
    S, D, H = 16, 64, 4
    nodes, inits = [], []
    inits += [W("wq", D, D, scale=0.1), W("wk", D, D, scale=0.1), W("wv", D, D, scale=0.1), W("wo", D, D, scale=0.1),
              W("w1", D, 4 * D, scale=0.1), W("w2", 4 * D, D, scale=0.1), F("b1", rng.uniform(-0.1, 0.1, 4 * D)),
              I("heads", [1, S, H, D // H]), I("merge", [1, S, D]), F("scale", [1.0 / np.sqrt(D // H)]),
              F("half", [0.5]), F("one", [1.0]), F("rsqrt2", [1.0 / np.sqrt(2.0)])]
    for n in "qkv":
        nodes.append(helper.make_node("MatMul", ["x", "w" + n], [n], name="proj_" + n))
        nodes.append(helper.make_node("Reshape", [n, "heads"], [n + "h"], name="split_" + n))
        perm = [0, 2, 3, 1] if n == "k" else [0, 2, 1, 3]
        nodes.append(helper.make_node("Transpose", [n + "h"], [n + "t"], name="heads_" + n, perm=perm))
    nodes += [
        helper.make_node("MatMul", ["qt", "kt"], ["att"], name="scores"),
        helper.make_node("Mul", ["att", "scale"], ["atts"], name="scale_scores"),
        helper.make_node("Softmax", ["atts"], ["p"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["p", "vt"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_t", perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctxt", "merge"], ["ctxm"], name="merge_r"),
        helper.make_node("MatMul", ["ctxm", "wo"], ["o"], name="out_proj"),
        helper.make_node("Add", ["o", "x"], ["r1"], name="residual1"),
    ]
    layer_norm("ln1", "r1", "h1", D, nodes, inits)
    nodes += [
        helper.make_node("MatMul", ["h1", "w1"], ["f1"], name="ffn1"),
        helper.make_node("Add", ["f1", "b1"], ["f1b"], name="ffn1_bias"),
        helper.make_node("Mul", ["f1b", "rsqrt2"], ["gx"], name="gelu_scale"),
        helper.make_node("Erf", ["gx"], ["ge"], name="gelu_erf"),
        helper.make_node("Add", ["ge", "one"], ["g1"], name="gelu_add"),
        helper.make_node("Mul", ["f1b", "g1"], ["g2"], name="gelu_mul"),
        helper.make_node("Mul", ["g2", "half"], ["g3"], name="gelu_half"),
        helper.make_node("MatMul", ["g3", "w2"], ["f2"], name="ffn2"),
        helper.make_node("Add", ["f2", "h1"], ["r2"], name="residual2"),
    ]
    layer_norm("ln2", "r2", "y", D, nodes, inits)
    g = helper.make_graph(nodes, "transformer_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, D])], inits)
    save(helper.make_model(g), outdir, "transformer_block")


def vit_patch(outdir):
    D = 32
    nodes, inits = [], []
    inits += [W("wp", D, 3, 4, 4), F("bp", rng.uniform(-0.1, 0.1, D)), W("cls", 1, 1, D), I("flat", [1, D, 16]),
              F("gamma", rng.uniform(0.5, 1.5, D)), F("beta", rng.uniform(-0.5, 0.5, D))]
    nodes += [
        helper.make_node("Conv", ["x", "wp", "bp"], ["pe"], name="patch", kernel_shape=[4, 4], strides=[4, 4]),
        helper.make_node("Reshape", ["pe", "flat"], ["pf"], name="flatten_patches"),
        helper.make_node("Transpose", ["pf"], ["tokens"], name="to_tokens", perm=[0, 2, 1]),
        helper.make_node("Concat", ["cls", "tokens"], ["seq"], name="prepend_cls", axis=1),
        helper.make_node("LayerNormalization", ["seq", "gamma", "beta"], ["y"], name="ln", axis=-1, epsilon=1e-6),
    ]
    g = helper.make_graph(nodes, "vit_patch", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 17, D])], inits)
    save(helper.make_model(g), outdir, "vit_patch", opset=17)


def vision_ops(outdir):
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    nodes, inits = [], []
    inits += [I("grid_size", [2, 2, 3, 4]), I("k", [3]), F("two", [2.0]), W("dw", 4, 1, 3, 3, scale=0.5),
              F("db", rng.uniform(-0.5, 0.5, 4))]
    nodes += [
        helper.make_node("AffineGrid", ["theta", "grid_size"], ["grid"], name="affine", align_corners=1),
        helper.make_node("GridSample", ["x", "grid"], ["stn"], name="stn", mode="linear", padding_mode="border"),
        # cubic with border/reflection padding: ORT pads each tap (PyTorch), the ONNX
        # reference (and Loom) the coordinate first; they agree with zeros padding
        helper.make_node("GridSample", ["x", "g"], ["cubic"], name="cubic", mode="cubic", padding_mode="zeros"),
        helper.make_node("GridSample", ["x", "g"], ["nearest"], name="nearest", mode="nearest",
                         padding_mode="reflection", align_corners=1),
        helper.make_node("Mul", ["rois", "two"], ["rois2"], name="scale_rois"),
        helper.make_node("Abs", ["rois2"], ["rois_pos"], name="abs_rois"),
        helper.make_node("RoiAlign", ["fm", "rois_pos", "bi"], ["roi_avg"], name="roi_avg", output_height=2,
                         output_width=3, sampling_ratio=2, spatial_scale=0.5),
        helper.make_node("RoiAlign", ["fm", "rois_pos", "bi"], ["roi_max"], name="roi_max", mode="max",
                         coordinate_transformation_mode="output_half_pixel", output_height=3, output_width=2,
                         sampling_ratio=1),
        helper.make_node("DeformConv", ["dx", "dw", "off", "db", "mask"], ["deform"], name="deform", group=2,
                         offset_group=2, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("TopK", ["t", "k"], ["top_v", "top_i"], name="topk", axis=1, largest=0),
    ]
    ins = [helper.make_tensor_value_info("theta", f, [2, 2, 3]), helper.make_tensor_value_info("x", f, [2, 2, 5, 6]),
           helper.make_tensor_value_info("g", f, [2, 3, 4, 2]), helper.make_tensor_value_info("fm", f, [4, 2, 6, 6]),
           helper.make_tensor_value_info("rois", f, [3, 4]), helper.make_tensor_value_info("bi", i64, [3]),
           helper.make_tensor_value_info("dx", f, [1, 2, 4, 4]), helper.make_tensor_value_info("off", f, [1, 36, 4, 4]),
           helper.make_tensor_value_info("mask", f, [1, 18, 4, 4]), helper.make_tensor_value_info("t", f, [3, 7])]
    outs = [helper.make_tensor_value_info(n, f, s) for n, s in
            [("stn", [2, 2, 3, 4]), ("cubic", [2, 2, 3, 4]), ("nearest", [2, 2, 3, 4]), ("roi_avg", [3, 2, 2, 3]),
             ("roi_max", [3, 2, 3, 2]), ("deform", [1, 4, 4, 4]), ("top_v", [3, 3])]]
    outs.append(helper.make_tensor_value_info("top_i", i64, [3, 3]))
    g = helper.make_graph(nodes, "vision_ops", ins, outs, inits)
    save(helper.make_model(g), outdir, "vision_ops", opset=20, ir_version=9)


def dynamic_ops(outdir):
    f, i64, b = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL
    nodes, inits = [], []
    inits += [F("zero", [0.0]), I("max_boxes", [2]), F("iou", [0.3]), F("score_thr", [0.0])]
    nodes += [
        helper.make_node("Greater", ["xf", "zero"], ["pos"], name="positive"),
        helper.make_node("NonZero", ["pos"], ["nz"], name="nonzero"),
        helper.make_node("Unique", ["xi"], ["u_y", "u_idx", "u_inv", "u_cnt"], name="unique", axis=1),
        helper.make_node("Compress", ["xf", "cond"], ["comp"], name="compress", axis=1),
        helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_boxes", "iou", "score_thr"], ["nms"],
                         name="nms"),
    ]
    ins = [helper.make_tensor_value_info("xf", f, [3, 4]), helper.make_tensor_value_info("xi", i64, [2, 6]),
           helper.make_tensor_value_info("cond", b, [4]), helper.make_tensor_value_info("boxes", f, [1, 6, 4]),
           helper.make_tensor_value_info("scores", f, [1, 2, 6])]
    outs = [helper.make_tensor_value_info(n, i64, s) for n, s in
            [("nz", [2, "n"]), ("u_y", [2, "u"]), ("u_idx", ["u"]), ("u_inv", [6]), ("u_cnt", ["u"]), ("nms", ["s", 3])]]
    outs.append(helper.make_tensor_value_info("comp", f, [3, "c"]))
    g = helper.make_graph(nodes, "dynamic_ops", ins, outs, inits)
    save(helper.make_model(g), outdir, "dynamic_ops", opset=13)


def sequence_ops(outdir):
    f = TensorProto.FLOAT
    nodes, inits = [], []
    H, I_, T, B = 4, 3, 5, 2
    i32 = lambda name, v: numpy_helper.from_array(np.array(v, dtype=np.int32), name)
    inits += [W("lw", 2, 4 * H, I_), W("lr", 2, 4 * H, H), W("lb", 2, 8 * H), W("lp", 2, 3 * H), i32("lens", [5, 3]),
              W("gw", 1, 3 * H, I_), W("gr", 1, 3 * H, H), W("gb", 1, 6 * H), W("rw", 1, H, I_), W("rr", 1, H, H),
              I("axis1", 1), I("dlen", 7), I("step", 4), F("win", np.hanning(8)), i32("wsize", 6), i32("mbins", 6),
              i32("mlen", 16), i32("mrate", 8000), numpy_helper.from_array(np.array(20.0, dtype=np.float32), "mlo"),
              numpy_helper.from_array(np.array(3000.0, dtype=np.float32), "mhi")]
    nodes += [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "lens", "h0", "c0", "lp"], ["ly", "lyh", "lyc"], name="lstm",
                         hidden_size=H, direction="bidirectional"),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy", "gyh"], name="gru", hidden_size=H, direction="reverse",
                         linear_before_reset=1),
        helper.make_node("RNN", ["x", "rw", "rr"], ["ry", "ryh"], name="rnn", hidden_size=H,
                         activations=["LeakyRelu"], activation_alpha=[0.3]),
        helper.make_node("Attention", ["q", "k", "v", "mask"], ["att"], name="attention", is_causal=1, softcap=2.0),
        helper.make_node("RotaryEmbedding", ["q", "cos", "sin", "pos"], ["rope"], name="rope", interleaved=1),
        helper.make_node("DFT", ["sig", "", "axis1"], ["spec"], name="dft", onesided=1),
        helper.make_node("DFT", ["csig", "dlen", "axis1"], ["ispec"], name="idft", inverse=1),
        helper.make_node("STFT", ["audio", "step", "win"], ["stft"], name="stft"),
        helper.make_node("HammingWindow", ["wsize"], ["hamming"], name="hamming", periodic=0),
        helper.make_node("MelWeightMatrix", ["mbins", "mlen", "mrate", "mlo", "mhi"], ["mel"], name="mel"),
        helper.make_node("Det", ["m"], ["det"], name="det"),
    ]
    shapes = {"x": [T, B, I_], "h0": [2, B, H], "c0": [2, B, H], "q": [2, 4, 3, 8], "k": [2, 2, 5, 8],
              "v": [2, 2, 5, 8], "cos": [6, 4], "sin": [6, 4], "sig": [2, 9, 1], "csig": [2, 6, 2],
              "audio": [1, 32, 1], "m": [3, 5, 5]}
    ins = [helper.make_tensor_value_info(n, f, s) for n, s in shapes.items()]
    ins += [helper.make_tensor_value_info("mask", TensorProto.BOOL, [3, 5]),
            helper.make_tensor_value_info("pos", TensorProto.INT64, [2, 3])]
    outs = [helper.make_tensor_value_info(n, f, s) for n, s in
            [("ly", [T, 2, B, H]), ("lyh", [2, B, H]), ("lyc", [2, B, H]), ("gy", [T, 1, B, H]), ("gyh", [1, B, H]),
             ("ry", [T, 1, B, H]), ("ryh", [1, B, H]), ("att", [2, 4, 3, 8]), ("rope", [2, 4, 3, 8]),
             ("spec", [2, 5, 2]), ("ispec", [2, 7, 2]), ("stft", [1, 7, 5, 2]), ("hamming", [6]), ("mel", [9, 6]),
             ("det", [3])]]
    g = helper.make_graph(nodes, "sequence_ops", ins, outs, inits)
    save(helper.make_model(g), outdir, "sequence_ops", opset=23, ir_version=10)


def classifier(outdir):
    inits = [W("fc_w", 1000, 512, scale=0.05), F("fc_b", rng.uniform(-1, 1, 1000)), W("proj", 512, 700, scale=0.05)]
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], name="fc", transB=1),
             helper.make_node("MatMul", ["f", "proj"], ["z"], name="proj")]
    g = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 3, 3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1000]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, 700])], inits)
    save(helper.make_model(g), outdir, "classifier")


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(outdir, exist_ok=True)
    resnet_block(outdir)
    winograd_convs(outdir)
    grouped_convs(outdir)
    mobilenet_block(outdir)
    transformer_block(outdir)
    vit_patch(outdir)
    vision_ops(outdir)
    dynamic_ops(outdir)
    sequence_ops(outdir)
    classifier(outdir)


if __name__ == "__main__":
    main()

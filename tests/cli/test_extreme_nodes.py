#!/usr/bin/env python3
"""One-node models with extreme attributes, compiled cold and checked against ONNX Runtime.

usage: test_extreme_nodes.py LOOM_BINARY WORKDIR

Huge pooling windows, a 255x255 conv kernel, a 31x31 depthwise kernel, huge
strides and scales, long reduction axes: each is a huge unroll candidate
for some schedule or lowering pass. Code-size multipliers used to be capped
by loop extents only, and a MaxPool with a 60x80 dilated window made clang
run for more than 8 minutes on one kernel; the code-size budget
(docs/transform.md "Code size") bounds them now. Every `loom compile` runs
under `timeout 60` with an empty kernel cache: a hang guard (a compile
normally takes about a second), not a timing assertion. Outputs must match
ORT: max|loom - ort| / max(1, max|ort|) <= 1e-4.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

TOL = 1e-4
COMPILE_LIMIT_S = 60
F = TensorProto.FLOAT


def node_model(name, node, inputs, inits=(), opset=18):
    """inputs: [(name, shape)] of float inputs; inits: [(name, array)]."""
    graph = helper.make_graph(
        [node], name, [helper.make_tensor_value_info(n, F, s) for n, s in inputs],
        [helper.make_tensor_value_info(node.output[0], F, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in inits])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def weight(*shape):
    """A constant weight: convolutions and products with constant weights take
    the model paths (the blocked layout, the depthwise and conv schedules)."""
    return (np.random.default_rng(3).standard_normal(shape) * 0.05).astype(np.float32)


def cases():
    mk = helper.make_node
    return [
        # The window that took clang minutes: 4,800 taps over a tile of 7 columns.
        ("maxpool_60x80_dilated", node_model("m", mk("MaxPool", ["x"], ["y"], kernel_shape=[60, 80],
                                                     dilations=[10, 10], strides=[10, 10]),
                                             [("x", [1, 1, 1000, 1000])])),
        ("avgpool_99x99_pads", node_model("m", mk("AveragePool", ["x"], ["y"], kernel_shape=[99, 99],
                                                  pads=[49, 49, 49, 49], strides=[3, 3]),
                                          [("x", [1, 2, 120, 120])])),
        ("lppool_50x50", node_model("m", mk("LpPool", ["x"], ["y"], kernel_shape=[50, 50], p=2),
                                    [("x", [1, 1, 160, 160])])),
        ("maxpool_1d_1000", node_model("m", mk("MaxPool", ["x"], ["y"], kernel_shape=[1000], strides=[7]),
                                       [("x", [1, 2, 5000])])),
        ("conv_255x255", node_model("m", mk("Conv", ["x", "w"], ["y"], kernel_shape=[255, 255]),
                                    [("x", [1, 1, 300, 300])], [("w", weight(1, 1, 255, 255))])),
        # A depthwise window unrolled whole took clang 10 s at 31x31 (64 channels, 56x56).
        ("depthwise_31x31", node_model("m", mk("Conv", ["x", "w"], ["y"], kernel_shape=[31, 31],
                                               pads=[15, 15, 15, 15], group=16),
                                       [("x", [1, 16, 40, 40])], [("w", weight(16, 1, 31, 31))])),
        ("conv1d_2000", node_model("m", mk("Conv", ["x", "w"], ["y"], kernel_shape=[2000]),
                                   [("x", [1, 4, 6000])], [("w", weight(2, 4, 2000))])),
        ("convtranspose_stride_50", node_model("m", mk("ConvTranspose", ["x", "w"], ["y"], strides=[50, 50]),
                                               [("x", [1, 16, 8, 8])], [("w", weight(16, 16, 3, 3))])),
        ("resize_nearest_x64", node_model("m", mk("Resize", ["x", "", "s"], ["y"], mode="nearest"),
                                          [("x", [1, 1, 8, 8])], [("s", np.array([1, 1, 64, 64], np.float32))])),
        ("resize_linear_x64", node_model("m", mk("Resize", ["x", "", "s"], ["y"], mode="linear"),
                                         [("x", [1, 1, 8, 8])], [("s", np.array([1, 1, 64, 64], np.float32))])),
        ("reducesum_300000", node_model("m", mk("ReduceSum", ["x", "a"], ["y"], keepdims=1),
                                        [("x", [2, 300000])], [("a", np.array([1], np.int64))])),
        ("matmul_k_200000", node_model("m", mk("MatMul", ["x", "w"], ["y"]),
                                       [("x", [1, 200000])], [("w", weight(200000, 2))])),
        ("einsum_k_100000", node_model("m", mk("Einsum", ["x", "w"], ["y"], equation="ij,jk->ik"),
                                       [("x", [1, 100000]), ("w", [100000, 3])])),
    ]


def check(loom, workdir, name, model, env):
    path = os.path.join(workdir, name + ".onnx")
    onnx.save(model, path)
    rng = np.random.default_rng(7)
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name not in inits:
            shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]

    art = os.path.join(workdir, name + ".loom")
    start = time.monotonic()
    r = subprocess.run(["timeout", str(COMPILE_LIMIT_S), loom, "compile", path, "-o", art],
                       capture_output=True, text=True, env=env)
    took = time.monotonic() - start
    if r.returncode == 124:
        return f"compile still running after {COMPILE_LIMIT_S} s (killed)"
    if r.returncode:
        return f"compile failed: {r.stderr.strip()}"
    args = [loom, "run", art, "--output-dir", os.path.join(workdir, name + ".out")]
    for k, v in feeds.items():
        f = os.path.join(workdir, f"{name}.{k}.npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode:
        return f"run failed: {r.stderr.strip()}"
    got = np.load(os.path.join(workdir, name + ".out", "y.npy"))
    if got.shape != ref.shape:
        return f"shape {list(got.shape)}, expected {list(ref.shape)}"
    err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(1.0, float(np.max(np.abs(ref)))))
    if not err <= TOL:
        return f"relative error {err:.3g} > {TOL}"
    return f"ok (compiled in {took:.1f} s, max relative error {err:.2g})"


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    loom, workdir = sys.argv[1], sys.argv[2]
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    failed = 0
    with tempfile.TemporaryDirectory(prefix="loom-extreme-cache-") as cache:
        env = dict(os.environ, LOOM_CACHE_DIR=cache)  # cold: every kernel goes through the C compiler
        for name, model in cases():
            res = check(loom, workdir, name, model, env)
            print(f"{name}: {res}", flush=True)
            failed += not res.startswith("ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

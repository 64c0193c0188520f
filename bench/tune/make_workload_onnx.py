#!/usr/bin/env python3
"""One bench/tune/vs-tvm workload as a one-node ONNX model, for Loom's side.

usage: make_workload_onnx.py NAME OUT.onnx      prints the workload's FLOPs

matmul1024 (C[1024,1024] = A @ B) and matmul128x768 (C[128,768] =
A[128,768] @ B[768,768]): MatMul with A and B both graph inputs, so
nothing can pre-pack B. conv3x3 (ResNet-50's 3x3 conv): Conv, input NCHW
[1,64,56,56], weights [64,64,3,3] an initializer of seeded random values,
stride 1, pad 1, no bias. fp32.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_workload_onnx.py NAME OUT.onnx")
    name, out = sys.argv[1:]
    f32 = TensorProto.FLOAT
    inits = []
    if name in ("matmul1024", "matmul128x768"):
        m, n, k = (1024, 1024, 1024) if name == "matmul1024" else (128, 768, 768)
        node = helper.make_node("MatMul", ["A", "B"], ["C"])
        inputs = [helper.make_tensor_value_info("A", f32, [m, k]),
                  helper.make_tensor_value_info("B", f32, [k, n])]
        outputs = [helper.make_tensor_value_info("C", f32, [m, n])]
        flops = 2 * m * n * k
    elif name == "conv3x3":
        w = np.random.default_rng(0).uniform(-0.1, 0.1, (64, 64, 3, 3)).astype(np.float32)
        inits = [numpy_helper.from_array(w, "W")]
        node = helper.make_node("Conv", ["X", "W"], ["Y"], kernel_shape=[3, 3],
                                strides=[1, 1], pads=[1, 1, 1, 1])
        inputs = [helper.make_tensor_value_info("X", f32, [1, 64, 56, 56])]
        outputs = [helper.make_tensor_value_info("Y", f32, [1, 64, 56, 56])]
        flops = 2 * 1 * 64 * 64 * 56 * 56 * 3 * 3
    else:
        sys.exit(f"make_workload_onnx.py: unknown workload {name}")
    graph = helper.make_graph([node], name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, out)
    print(flops)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Weights produced by operators, as Caffe2-era exports and ONNX's "light"
models write them, through `loom` (issue 32).

usage: produced_weights.py LOOM_BINARY WORKDIR

Writes an IR version 3 model (opset 11, for Range; every initializer also a graph
input, a default that `loom compile` takes as a constant) whose conv
weights come from ConstantOfShape: the shape from a Constant node or from
an initializer, fill values 0.01, -0.003, 0.02, and one weight that is
Add(ConstantOfShape, initializer), all of 256x256x3x3 past the constant
folder's 65,536-element limit for other values; a conv with an initializer
weight; a 262,144-element fill added to the activations (not a weight: it
stays a fill kernel); an int64 fill that needs all 64 bits; a float and an
int64 Range of 100,000 elements. Compiles it with `loom compile`, runs it
with `loom run` and compares every output with ONNX Runtime:
max|loom - ort| / max(1, max|ort|) <= 1e-4, exact for integers.

Then: every Conv of the model is a ConvNCHWc in the fused graph (its
weight folded to a constant and prepacked, as an initializer's is), and
Shape and Size of a data-dependent output (NonZero's) are refused with a
message naming the nodes, not folded to the upper bound. Exit status 1 if
anything fails; every failure is reported.
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
rng = np.random.default_rng(32)


def node(op, ins, outs, **attrs):
    return helper.make_node(op, ins, outs, **attrs)


def const(name, value):
    return node("Constant", [], [name], value=numpy_helper.from_array(value))


def caffe2_light_model():
    """x [1, 3, 32, 32] -> 4 convs (3 -> 64 -> 256 -> 256 -> 256) -> + fill; and int64 fill, Ranges."""
    nodes, inits = [], {}

    def fill(out, shape, value, shape_from_init=False):
        s = out + "_shape"
        if shape_from_init:
            inits[s] = np.array(shape, np.int64)
        else:
            nodes.append(const(s, np.array(shape, np.int64)))
        nodes.append(node("ConstantOfShape", [s], [out], value=numpy_helper.from_array(np.array([value]))))

    x, chans = "x", [3, 64, 256, 256, 256]
    for i in range(4):
        w, b = f"conv{i + 1}_w_0", f"conv{i + 1}_b_0"
        shape = [chans[i + 1], chans[i], 3, 3]
        if i == 0:
            fill(w, shape, np.float32(0.01))                          # small: folds like metadata
        elif i == 1:
            fill(w, shape, np.float32(-0.003), shape_from_init=True)  # 147,456 elements
        elif i == 2:  # a weight computed from a fill and an initializer: the chain folds
            fill(w + "_base", shape, np.float32(0.02))
            inits[w + "_delta"] = (rng.standard_normal(shape) * 0.01).astype(np.float32)
            nodes.append(node("Add", [w + "_base", w + "_delta"], [w]))
        else:
            inits[w] = (rng.standard_normal(shape) * 0.02).astype(np.float32)
        inits[b] = rng.standard_normal(chans[i + 1]).astype(np.float32)
        nodes += [node("Conv", [x, w, b], [f"conv{i + 1}"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  node("Relu", [f"conv{i + 1}"], [f"relu{i + 1}"])]
        x = f"relu{i + 1}"
    fill("bias_map", [1, 256, 32, 32], np.float32(0.25))              # not a weight: a fill kernel
    nodes.append(node("Add", [x, "bias_map"], ["y"]))
    fill("big_i64", [300, 400], np.int64(2**40 + 1))
    nodes += [node("Range", ["r_start", "r_limit", "r_delta"], ["range_f32"]),
              node("Range", ["ri_start", "ri_limit", "ri_delta"], ["range_i64"])]
    for k, v in {"r_start": np.float32(0.5), "r_limit": np.float32(100000.5), "r_delta": np.float32(1),
                 "ri_start": np.int64(3), "ri_limit": np.int64(300003), "ri_delta": np.int64(3)}.items():
        nodes.insert(0, const(k, np.array(v)))
    outputs = [("y", TensorProto.FLOAT), ("big_i64", TensorProto.INT64), ("range_f32", TensorProto.FLOAT),
               ("range_i64", TensorProto.INT64)]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])]
    inputs += [helper.make_tensor_value_info(k, numpy_helper.from_array(v).data_type, v.shape)
               for k, v in inits.items()]
    g = helper.make_graph(nodes, "caffe2_light", inputs,
                          [helper.make_tensor_value_info(o, t, None) for o, t in outputs],
                          [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    m.ir_version = 3
    return m


def shape_of_nonzero_model(op):
    g = helper.make_graph([node("NonZero", ["x"], ["nz"]), node(op, ["nz"], ["y"])], f"{op.lower()}_of_nonzero",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def compare(got, ref):
    if got.shape != ref.shape or got.dtype != ref.dtype:
        return f"got {got.dtype}{list(got.shape)}, expected {ref.dtype}{list(ref.shape)}"
    if np.issubdtype(ref.dtype, np.integer):
        return None if np.array_equal(got, ref) else "integer values differ"
    err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(1.0, float(np.max(np.abs(ref))))) if ref.size else 0
    return None if err <= TOL else f"relative error {err:.3g} > {TOL}"


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True)


def check_model(loom, workdir):
    m = caffe2_light_model()
    path, art = os.path.join(workdir, "caffe2_light.onnx"), os.path.join(workdir, "caffe2_light.loom")
    onnx.save(m, path)
    r = run([loom, "compile", path, "-o", art])
    if r.returncode:
        return [f"compile failed: {r.stderr.strip()}"]
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    xf, odir = os.path.join(workdir, "caffe2_light.x.npy"), os.path.join(workdir, "caffe2_light.out")
    np.save(xf, x)
    r = run([loom, "run", art, xf, "--output-dir", odir])
    if r.returncode:
        return [f"run failed: {r.stderr.strip()}"]
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    failures = []
    for o, ref in zip([o.name for o in sess.get_outputs()], sess.run(None, {"x": x})):
        why = compare(np.load(os.path.join(odir, o + ".npy")), ref)
        print(f"{o} vs ORT: {why or 'ok'}")
        if why:
            failures.append(f"output {o}: {why}")
    r = run([loom, "inspect", path, "--dump", "fused"])
    convs = r.stdout.count('anchor ConvNCHWc "<conv')
    print(f"convs in NCHWc (weights folded and prepacked): {convs} of 4")
    if r.returncode or convs != 4:
        failures.append(f"expected the 4 convs as ConvNCHWc, got {convs}:\n{r.stdout}{r.stderr}")
    return failures


def check_data_dependent_shapes(loom, workdir):
    failures = []
    for op in ["Shape", "Size"]:
        path = os.path.join(workdir, f"{op.lower()}_of_nonzero.onnx")
        onnx.save(shape_of_nonzero_model(op), path)
        r = run([loom, "compile", path, "-o", os.path.join(workdir, "refused.loom")])
        msg = f'output "nz" has a data-dependent shape and feeds node "<y>" ({op})'
        ok = r.returncode != 0 and msg in r.stderr
        print(f"{op} of NonZero's output refused: {'ok' if ok else 'WRONG'}")
        if not ok:
            failures.append(f"{op} of NonZero: exit {r.returncode}, expected a message with {msg!r}, "
                            f"got {r.stderr.strip()!r}")
    return failures


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    loom, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    failures = check_model(loom, workdir) + check_data_dependent_shapes(loom, workdir)
    for f in failures:
        print("FAIL " + f)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

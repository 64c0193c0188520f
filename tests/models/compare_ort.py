#!/usr/bin/env python3
"""Compile ONNX models with `loom`, run them, and compare with ONNX Runtime.

usage: compare_ort.py LOOM_BINARY WORKDIR MODEL.onnx [MODEL.onnx ...] [--opt-level N] [--target T]

For each model: seeded random inputs (floats ~ N(0, 1), integers in [0, 4),
bools random), ORT's outputs (all graph optimizations off, so the reference
is the plain op semantics), `loom compile` + `loom run`, and per output the
metric  max|loom - ort| / max(1, max|ort|)  which must be <= 1e-4 (fp32).
Exit status 1 if any model fails; every failure is reported.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort

TOL = 1e-4
NP_OF = {
    onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.DOUBLE: np.float64,
    onnx.TensorProto.INT64: np.int64, onnx.TensorProto.INT32: np.int32,
    onnx.TensorProto.INT8: np.int8, onnx.TensorProto.UINT8: np.uint8,
    onnx.TensorProto.BOOL: np.bool_,
}


def safe(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def make_inputs(model, rng):
    inits = {i.name for i in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        dt = NP_OF[tt.elem_type]
        if dt in (np.float32, np.float64):
            feeds[vi.name] = rng.standard_normal(shape).astype(dt)
        elif dt == np.bool_:
            feeds[vi.name] = rng.integers(0, 2, shape).astype(np.bool_)
        else:
            feeds[vi.name] = rng.integers(0, 4, shape).astype(dt)
    return feeds


def check(loom, workdir, path, opt_level, target=None):
    name = os.path.splitext(os.path.basename(path))[0]
    model = onnx.load(path)
    feeds = make_inputs(model, np.random.default_rng(1234))
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    try:
        refs = sess.run(names, feeds)
    except Exception as e:  # noqa: BLE001 - report, don't crash the sweep
        return f"ONNX Runtime failed on the random inputs: {str(e).splitlines()[0]}"
    art = os.path.join(workdir, name + ".loom")
    r = subprocess.run([loom, "compile", path, "-o", art, "--opt-level", str(opt_level)] +
                       (["--target", target] if target else []), capture_output=True, text=True)
    if r.returncode:
        return f"compile failed: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}"
    args = [loom, "run", art, "--output-dir", os.path.join(workdir, name + ".out")]
    for k, v in feeds.items():
        f = os.path.join(workdir, f"{name}.{safe(k)}.npy")
        np.save(f, v)
        args += ["--input", f"{k}={f}"]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        return f"run failed: {r.stderr.strip()}"
    worst = 0.0
    for n, ref in zip(names, refs):
        got = np.load(os.path.join(workdir, name + ".out", safe(n) + ".npy"))
        if got.shape != ref.shape or got.dtype != ref.dtype:
            return f"output {n}: got {got.dtype}{list(got.shape)}, expected {ref.dtype}{list(ref.shape)}"
        if ref.dtype == np.bool_ or np.issubdtype(ref.dtype, np.integer):
            if not np.array_equal(got, ref):
                return f"output {n}: integer/bool values differ"
            continue
        err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(1.0, float(np.max(np.abs(ref)))))
        worst = max(worst, err)
        if not err <= TOL:
            return f"output {n}: relative error {err:.3g} > {TOL}"
    return f"ok (max relative error {worst:.2g})"


def main():
    argv = sys.argv[1:]
    opt_level = 2
    if "--opt-level" in argv:
        i = argv.index("--opt-level")
        opt_level = int(argv[i + 1])
        del argv[i:i + 2]
    target = None
    if "--target" in argv:
        i = argv.index("--target")
        target = argv[i + 1]
        del argv[i:i + 2]
    if len(argv) < 3:
        print(__doc__)
        return 2
    loom, workdir, models = argv[0], argv[1], argv[2:]
    os.makedirs(workdir, exist_ok=True)
    failed = 0
    for m in models:
        res = check(loom, workdir, m, opt_level, target)
        print(f"{os.path.basename(m)} (O{opt_level}{', ' + target if target else ''}): {res}")
        failed += not res.startswith("ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

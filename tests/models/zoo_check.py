#!/usr/bin/env python3
"""Compares Loom's output for one zoo model with ONNX Runtime and PyTorch.

usage: zoo_check.py --onnx M.onnx --input IN.npy --ref REF.npy [--loom OUT] [--tol T]

OUT is the .npy Loom wrote, or the --output-dir of `loom run` (its output.npy,
or its only .npy file). ONNX Runtime runs M.onnx on IN.npy (graph input
"input", or the first input). Metric, for Loom's output L against a reference R:

    rel_err(L, R) = max|L - R| / max(1, max|R|)        (computed in float64)

PASS when rel_err against ORT and against PyTorch's REF are both <= T
(default 1e-4); a shape mismatch or a NaN/Inf counts as an infinite error.
Prints one line "vs_ort vs_torch ort_vs_torch PASS|FAIL" (errors as %.3g;
without --loom the first two are "-", a check of the reference itself) and
exits 0 on PASS, 1 on FAIL, 2 on bad arguments or unreadable files.
Runs on the pyenv python3 (numpy + onnxruntime), never Debian's.
"""
import argparse
import glob
import math
import os
import sys

import numpy as np


def rel_err(out, ref):
    out = np.asarray(out, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if out.shape != ref.shape or not np.all(np.isfinite(out)):
        return math.inf
    return float(np.max(np.abs(out - ref), initial=0.0) / max(1.0, float(np.max(np.abs(ref), initial=0.0))))


def run_ort(model, x):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return sess.run(None, {name: x})[0]


def loom_output_file(path):
    if not os.path.isdir(path):
        return path
    if os.path.exists(os.path.join(path, "output.npy")):
        return os.path.join(path, "output.npy")
    files = glob.glob(os.path.join(path, "*.npy"))
    if len(files) != 1:
        raise FileNotFoundError(f"{path}: expected output.npy or exactly one .npy file, found {len(files)}")
    return files[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--loom")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()
    try:
        x = np.load(a.input)
        ref = np.load(a.ref)
        loom = np.load(loom_output_file(a.loom)) if a.loom else None
    except (OSError, ValueError) as e:
        print(f"zoo_check: {e}", file=sys.stderr)
        return 2
    ort_out = run_ort(a.onnx, x)
    ort_vs_torch = rel_err(ort_out, ref)
    if loom is None:
        print(f"- - {ort_vs_torch:.3g} {'PASS' if ort_vs_torch <= a.tol else 'FAIL'}")
        return 0 if ort_vs_torch <= a.tol else 1
    e_ort, e_torch = rel_err(loom, ort_out), rel_err(loom, ref)
    ok = e_ort <= a.tol and e_torch <= a.tol
    print(f"{e_ort:.3g} {e_torch:.3g} {ort_vs_torch:.3g} {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

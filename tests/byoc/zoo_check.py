#!/usr/bin/env python3
"""Zoo models with external back ends: correctness against ONNX Runtime and
the share of FLOPs each back end claimed (docs/byoc.md). No timing.

Usage: zoo_check.py [--byoc cblas] [--dir LOOM_MODEL_DIR] [model ...]
  (default models: resnet50 mobilenet_v2 bert_base_like; LOOM_BIN or build/tools/loom)

For each model: `loom compile --byoc B`, `loom run` on <model>.input.npy,
rel_err = max|loom - ort| / max(1, max|ort|) (the model tests' measure, <=
1e-4 passes), and from the artifact's metadata the FLOPs of the external
kernels over all kernels' FLOPs.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOM = os.environ.get("LOOM_BIN", os.path.join(ROOT, "build", "tools", "loom"))


def check(model_dir, name, byoc, work):
    onnx_path = os.path.join(model_dir, name + ".onnx")
    x = np.load(os.path.join(model_dir, name + ".input.npy"))
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    in_name = sess.get_inputs()[0].name
    ref = sess.run(None, {in_name: x})[0]
    art = os.path.join(work, name + ".loom")
    r = subprocess.run([LOOM, "compile", onnx_path, "-o", art, "--byoc", byoc], capture_output=True, text=True)
    if r.returncode:
        return name, "compile failed: " + r.stderr.strip().splitlines()[-1], None, None
    out = os.path.join(work, name + "_out")
    inp = os.path.join(work, name + ".in.npy")
    np.save(inp, x)
    r = subprocess.run([LOOM, "run", art, "--input", f"{in_name}={inp}", "--output-dir", out],
                       capture_output=True, text=True)
    if r.returncode:
        return name, "run failed: " + r.stderr.strip().splitlines()[-1], None, None
    got = np.load(os.path.join(out, sorted(os.listdir(out))[0]))
    err = float(np.max(np.abs(got.astype(np.float64) - ref)) / max(1.0, float(np.max(np.abs(ref)))))
    meta = json.loads(subprocess.run([LOOM, "inspect", art, "--dump", "json"], capture_output=True, text=True,
                                     check=True).stdout)
    meta = meta.get("metadata", meta)
    total = sum(k.get("flops", 0) for k in meta["kernels"])
    ext = sum(k.get("flops", 0) for k in meta["kernels"] if k.get("backend"))
    nk = sum(1 for k in meta["kernels"] if k.get("backend"))
    return name, "ok" if err <= 1e-4 else "MISMATCH", err, (ext / total if total else 0, nk, len(meta["kernels"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--byoc", default="cblas")
    ap.add_argument("--dir", default=os.environ.get("LOOM_MODEL_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("models", nargs="*", default=["resnet50", "mobilenet_v2", "bert_base_like"])
    a = ap.parse_args()
    bad = 0
    with tempfile.TemporaryDirectory(prefix="loom-byoc-zoo-") as work:
        print(f"{'model':<16} {'result':<10} {'rel err vs ORT':>14} {'FLOP share':>11} {'external kernels':>17}")
        for m in a.models:
            name, res, err, share = check(a.dir, m, a.byoc, work)
            bad += res != "ok"
            e = f"{err:.2e}" if err is not None else "-"
            s = f"{100 * share[0]:.1f}%" if share else "-"
            k = f"{share[1]} of {share[2]}" if share else "-"
            print(f"{name:<16} {res:<10} {e:>14} {s:>11} {k:>17}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

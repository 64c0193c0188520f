#!/usr/bin/env python3
"""Long recurrent sequences (issue 32): RNN/GRU/LSTM compiled as a loop over
the time steps (docs/compile.md "Recurrent ops"), checked against ONNX Runtime.

usage: test_rnn_long.py LOOM_BINARY WORKDIR

- a 2-layer bidirectional LSTM (input 64, hidden 128, batch 1) at 64, 512
  and 2,048 steps;
- a GRU (linear_before_reset, reverse) and a plain RNN (bidirectional) at
  300 steps with sequence_lens and initial_h;
- a 5,000-step LSTM: the right answer, and nothing left behind: the output
  directory holds the artifact only, no `loom` process outlives the test.
Each `loom compile` runs under `timeout` (COMPILE_LIMIT_S: a hang guard, not a
timing assertion; the compile time is printed). Outputs must match ORT:
max|loom - ort| / max(1, max|ort|) <= 1e-4.
"""
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models"))
from rnn_models import lstm_stack, one_node  # noqa: E402

TOL = 1e-4
COMPILE_LIMIT_S = 120


def feeds_for(model, rng):
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if vi.name == "lens":  # the sequences' lengths: the whole length, and shorter ones
            steps = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][0]
            feeds[vi.name] = np.array([steps, steps // 3, 1][:shape[0]], np.int32)
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def check(loom, work, name, model):
    """Compiles, runs and compares one model; returns the error message or None."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    path, art = os.path.join(d, "model.onnx"), os.path.join(d, "model.loom")
    onnx.save(model, path)
    feeds = feeds_for(model, np.random.default_rng(7))
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)
    env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(d, "cache"))
    t0 = time.perf_counter()
    r = subprocess.run(["timeout", str(COMPILE_LIMIT_S), loom, "compile", path, "-o", art], env=env,
                       capture_output=True, text=True)
    compile_s = time.perf_counter() - t0
    if r.returncode:
        return f"compile failed ({r.returncode}): {r.stderr.strip()[-400:]}"
    args = [loom, "run", art, "--output-dir", os.path.join(d, "out")]
    for k, v in feeds.items():
        np.save(os.path.join(d, f"{k}.npy"), v)
        args += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if r.returncode:
        return f"run failed: {r.stderr.strip()[-400:]}"
    worst = 0.0
    for out, w in zip(model.graph.output, want):
        got = np.load(os.path.join(d, "out", f"{out.name}.npy"))
        if got.shape != w.shape:
            return f"output {out.name}: shape {got.shape}, ORT {w.shape}"
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - w))) / max(1.0, float(np.max(np.abs(w)))))
    print(f"{name}: compile {compile_s:.2f} s, max relative error {worst:.1e}", flush=True)
    return None if worst <= TOL else f"max relative error {worst:.1e} > {TOL}"


def loom_processes(work):
    """Processes whose command line names the work directory."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if work.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def main():
    loom, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    cases = [(f"lstm2x_bidi_{t}", lstm_stack(t)) for t in (64, 512, 2048)]
    cases += [("gru_reverse_lbr_300", one_node("GRU", 300, linear_before_reset=1)),
              ("gru_bidi_300", one_node("GRU", 300, direction="bidirectional")),
              ("rnn_bidi_300", one_node("RNN", 300, direction="bidirectional")),
              ("rnn_reverse_300", one_node("RNN", 300)),
              ("lstm_5000", one_node("LSTM", 5000, direction="forward"))]
    failed = []
    for name, model in cases:
        msg = check(loom, work, name, model)
        if msg:
            print(f"{name}: FAILED: {msg}", flush=True)
            failed.append(name)
    # Nothing left behind by the 5,000-step case: the artifact and the
    # inputs/outputs this test wrote, no temporary file, no process.
    d = os.path.join(work, "lstm_5000")
    left = sorted(set(os.listdir(d)) - {"model.onnx", "model.loom", "cache", "out", "x.npy", "lens.npy", "h0.npy"})
    if left:
        print(f"lstm_5000: FAILED: files left beside the artifact: {left}")
        failed.append("lstm_5000 files")
    procs = loom_processes(work)
    if procs:
        print(f"FAILED: processes still running on {work}: {procs}")
        failed.append("processes")
    if failed:
        print(f"{len(failed)} failed: {', '.join(failed)}")
        return 1
    print(f"all {len(cases)} recurrent models match ORT")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""A 2-layer bidirectional LSTM (input 64, hidden 128, batch 1) at 64, 512
and 2,048 steps: Loom against ONNX Runtime, side by side in one process.

usage: bench/lstm.py [--steps 64,512,2048] [--threads 1,2] [--repeat N] [--out FILE]

For each length: the model (tests/models/rnn_models.py lstm_stack),
`loom compile` timed with an empty kernel cache, then for each thread
count bench/models.py's side_by_side: ORT (all graph optimizations,
intra_op_num_threads=T) and Loom (the runtime library, T threads) in
alternating blocks, medians of the block medians, ratio = median of the
per-round ORT/Loom ratios (> 1: Loom faster). The host is shared (other
jobs run beside it): the numbers are noisy, the interleaving and medians
are what keeps them comparable. Writes the raw results as JSON (default
bench/results/lstm-<host>.json) and prints a markdown table.
Environment: LOOM (default build/tools/loom), LOOM_RT (default build/libloomrt.so).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "models"))
import loom_rt  # noqa: E402
import models  # noqa: E402  (bench/models.py: ort_session, side_by_side, cpu_name)
from rnn_models import lstm_stack  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="64,512,2048")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "results", f"lstm-{platform.node() or 'host'}.json"))
    a = ap.parse_args()
    loom = os.environ.get("LOOM", os.path.join(ROOT, "build", "tools", "loom"))
    lib = os.environ.get("LOOM_RT", os.path.join(ROOT, "build", "libloomrt.so"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="loom-bench-lstm-") as work:
        for steps in [int(s) for s in a.steps.split(",")]:
            path = os.path.join(work, f"lstm{steps}.onnx")
            onnx.save(lstm_stack(steps), path)
            art = os.path.join(work, f"lstm{steps}.loom")
            env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(work, f"cache{steps}"))
            t0 = time.perf_counter()
            subprocess.run([loom, "compile", path, "-o", art], check=True, env=env, capture_output=True, timeout=600)
            compile_s = time.perf_counter() - t0
            x = np.random.default_rng(0).standard_normal((steps, 1, 64)).astype(np.float32)
            for t in [int(s) for s in a.threads.split(",")]:
                sess = models.ort_session(path, t)
                m = loom_rt.Model(art, t, lib)
                ort_ms, [(loom_ms, ratio, err)] = models.side_by_side(sess, [m], x, a.repeat, 3)
                m.close()
                rows.append({"steps": steps, "threads": t, "compile_s": round(compile_s, 3), "loom_ms": loom_ms,
                             "ort_ms": ort_ms, "ort_over_loom": ratio, "err": err})
                print(f"steps {steps} threads {t}: compile {compile_s:.2f} s, Loom {loom_ms:.3f} ms, "
                      f"ORT {ort_ms:.3f} ms, ORT/Loom {ratio:.2f}, err {err:.1e}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"host": platform.node(), "cpu": models.cpu_name(), "nproc": os.cpu_count(),
                   "date": time.strftime("%Y-%m-%d %H:%M"), "repeat": a.repeat, "rows": rows}, f, indent=1)
    print("\n| steps | threads | compile s | Loom ms | ORT ms | ORT/Loom |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['steps']} | {r['threads']} | {r['compile_s']:.2f} | {r['loom_ms']:.2f} | {r['ort_ms']:.2f} "
              f"| {r['ort_over_loom']:.2f} |")
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A 2-layer bidirectional LSTM (input 64, hidden 128, batch 1) at 64, 512
and 2,048 steps, and one forward LSTM and one forward GRU layer (same
sizes) at 512 steps: Loom against ONNX Runtime, side by side in one process.

usage: bench/lstm.py [--steps 64,512,2048] [--single-steps 512] [--threads 1,2] [--repeat N] [--out FILE]
       bench/lstm.py --table FILE   (the markdown table of docs/compile.md from a raw results file)

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
import doc_block  # noqa: E402
import loom_rt  # noqa: E402
import models  # noqa: E402  (bench/models.py: ort_session, side_by_side, cpu_name)
from rnn_models import lstm_stack, one_layer  # noqa: E402

MODELS = {"lstm 2x bidir": lambda steps: lstm_stack(steps),
          "lstm 1 fwd": lambda steps: one_layer("LSTM", steps),
          "gru 1 fwd": lambda steps: one_layer("GRU", steps)}


def cpu_features():
    """The vector ISA flags /proc/cpuinfo lists (the model name of a VM is often
    generic): avx512_fp16 and amx_tile first came with Sapphire Rapids."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return ""
    return " ".join(x for x in ("avx2", "avx512f", "avx512_fp16", "amx_tile") if x in flags)


def table(res):
    """The markdown table of a raw results file (docs/compile.md has its output)."""
    feats = f", flags {res['cpu_features']}" if res.get("cpu_features") else ""
    lines = [f"{res['date']}, {res['cpu']}{feats} ({res['nproc']} vCPUs, host `{res['host']}`), "
             f"{res['repeat']} rounds, medians:", "",
             "| model | steps | compile s | Loom ms 1t | ORT ms 1t | ORT/Loom 1t | Loom ms 2t | ORT ms 2t | ORT/Loom 2t |",
             "|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    keys = []
    for r in res["rows"]:
        k = (r.get("model", "lstm 2x bidir"), r["steps"])
        if k not in keys:
            keys.append(k)
    for model, steps in keys:
        rs = {r["threads"]: r for r in res["rows"] if (r.get("model", "lstm 2x bidir"), r["steps"]) == (model, steps)}
        cells = [model, str(steps), f"{next(iter(rs.values()))['compile_s']:.2f}"]
        for t in (1, 2):
            r = rs.get(t)
            cells += [f"{r['loom_ms']:.3g}", f"{r['ort_ms']:.3g}", f"{r['ort_over_loom']:.2f}"] if r else ["-"] * 3
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="64,512,2048")
    ap.add_argument("--single-steps", default="512", help="steps of the one-layer LSTM and GRU ('' for none)")
    ap.add_argument("--table", help="print the markdown table of this raw results file and exit")
    ap.add_argument("--update", metavar="DOC", help="with --table: write it into DOC between its markers instead")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--out", default=os.path.join(HERE, "results", f"lstm-{platform.node() or 'host'}.json"))
    a = ap.parse_args()
    if a.table:
        with open(a.table) as f:
            text = table(json.load(f))
        if a.update:
            doc_block.replace_block(a.update, f"<!-- bench/lstm.py --table {os.path.relpath(a.table, ROOT)} -->",
                                    "<!-- end of the generated table -->", text + "\n")
        else:
            print(text)
        return
    loom = os.environ.get("LOOM", os.path.join(ROOT, "build", "tools", "loom"))
    lib = os.environ.get("LOOM_RT", os.path.join(ROOT, "build", "libloomrt.so"))
    rows = []
    with tempfile.TemporaryDirectory(prefix="loom-bench-lstm-") as work:
        runs = [("lstm 2x bidir", int(s)) for s in a.steps.split(",") if s]
        runs += [(m, int(s)) for m in ("lstm 1 fwd", "gru 1 fwd") for s in a.single_steps.split(",") if s]
        for model, steps in runs:
            tag = model.replace(" ", "_") + str(steps)
            path = os.path.join(work, f"{tag}.onnx")
            onnx.save(MODELS[model](steps), path)
            art = os.path.join(work, f"{tag}.loom")
            env = dict(os.environ, LOOM_CACHE_DIR=os.path.join(work, f"cache_{tag}"))
            t0 = time.perf_counter()
            subprocess.run([loom, "compile", path, "-o", art], check=True, env=env, capture_output=True, timeout=600)
            compile_s = time.perf_counter() - t0
            x = np.random.default_rng(0).standard_normal((steps, 1, 64)).astype(np.float32)
            for t in [int(s) for s in a.threads.split(",")]:
                sess = models.ort_session(path, t)
                m = loom_rt.Model(art, t, lib)
                ort_ms, [(loom_ms, ratio, err)], _ = models.side_by_side(sess, [m], x, a.repeat, 3)
                m.close()
                rows.append({"model": model, "steps": steps, "threads": t, "compile_s": round(compile_s, 3), "loom_ms": loom_ms,
                             "ort_ms": ort_ms, "ort_over_loom": ratio, "err": err})
                print(f"{model} steps {steps} threads {t}: compile {compile_s:.2f} s, Loom {loom_ms:.3f} ms, "
                      f"ORT {ort_ms:.3f} ms, ORT/Loom {ratio:.2f}, err {err:.1e}", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    res = {"host": platform.node(), "cpu": models.cpu_name(), "cpu_features": cpu_features(), "nproc": os.cpu_count(),
           "date": time.strftime("%Y-%m-%d %H:%M"), "repeat": a.repeat, "rows": rows}
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    print("\n" + table(res))
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()

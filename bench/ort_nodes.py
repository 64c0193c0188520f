#!/usr/bin/env python3
"""Per-node times of ONNX Runtime on one model, to put next to
`loom run MODEL.loom --profile` (the kernel that falls behind shows up as
the row where the running difference jumps).

usage: bench/ort_nodes.py MODEL.onnx INPUT.npy [--threads N] [--repeat N]

ORT runs with all graph optimizations, intra-op threads N, profiling on;
prints the median time of each node (ms), its op type and name, in
execution order, then the total. Uses the pyenv python3 (onnxruntime)."""
import argparse
import collections
import json
import os
import statistics

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser(prog="bench/ort_nodes.py")
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    so = ort.SessionOptions()
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    feed = {sess.get_inputs()[0].name: np.load(a.input)}
    for _ in range(a.repeat + 5):
        sess.run(None, feed)
    trace = sess.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    times, ops = collections.OrderedDict(), {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            name = e["name"][: -len("_kernel_time")]
            times.setdefault(name, []).append(e["dur"] / 1000.0)
            ops[name] = e.get("args", {}).get("op_name", "?")
    total = 0.0
    for name, ts in times.items():
        ms = statistics.median(ts[5:] or ts)  # the warm-up runs excluded
        total += ms
        print(f"{ms:8.3f}  {ops[name]:20s} {name}")
    print(f"{total:8.3f}  total (sum of node medians, {a.threads} thread(s))")


if __name__ == "__main__":
    main()

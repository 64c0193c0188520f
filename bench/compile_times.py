#!/usr/bin/env python3
"""Cold compile times of the model zoo: `loom compile` with an empty kernel
cache, for one or more loom binaries side by side (runs alternate between
them, so a host that speeds up or slows down affects all alike).

    bench/compile_times.py [--loom BIN ...] [--repeat N] [--models DIR] [name ...]

Prints a markdown table of the median wall seconds per model and binary, and
the CPU seconds (user + sys of loom and every compiler it started). The
models are those scripts/export-zoo writes (default: models/).
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ZOO = ["resnet18", "resnet50", "mobilenet_v2", "squeezenet1_1", "densenet121", "efficientnet_b0", "inception_v3",
       "vit_b_16", "bert_base_like", "convnext_tiny", "lstm_bidir"]


def cold_compile(loom, model, workdir):
    cache = tempfile.mkdtemp(prefix="cache-", dir=workdir)
    out = os.path.join(workdir, "out.loom")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([loom, "compile", model, "-o", out], env=dict(os.environ, LOOM_CACHE_DIR=cache),
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        sys.exit("compile_times: %s failed on %s: %s" % (loom, model, r.stderr.strip()))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--loom", action="append", help="loom binary (repeatable; default build/tools/loom)")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--models", default=os.environ.get("LOOM_MODEL_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    looms = args.loom or [os.path.join(ROOT, "build/tools/loom")]
    names = args.names or [n for n in ZOO if os.path.exists(os.path.join(args.models, n + ".onnx"))]
    if not names:
        sys.exit("compile_times: no models in %s (scripts/export-zoo writes them)" % args.models)
    work = tempfile.mkdtemp(prefix="loom-compile-times-")
    try:
        head = "| model | " + " | ".join("%s wall s | CPU s" % l for l in looms) + " |"
        print(head)
        print("|---|" + "--:|--:|" * len(looms))
        for n in names:
            model = os.path.join(args.models, n + ".onnx")
            times = {l: [] for l in looms}
            for _ in range(args.repeat):
                for l in looms:
                    times[l].append(cold_compile(l, model, work))
            cells = []
            for l in looms:
                cells.append("%.1f" % statistics.median(t[0] for t in times[l]))
                cells.append("%.1f" % statistics.median(t[1] for t in times[l]))
            print("| %s | %s |" % (n, " | ".join(cells)), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

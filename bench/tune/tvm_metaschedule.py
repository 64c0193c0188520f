#!/usr/bin/env python3
"""TVM MetaSchedule's side of bench/tune/vs-tvm: tune one workload with
MetaSchedule (TVM 0.27: tvm.s_tir.meta_schedule), build its best schedule,
check it against numpy and time it. Runs in build/bench/tvm-venv
(bench/tune/setup-tvm).

usage: tvm_metaschedule.py --workload matmul1024|matmul128x768|conv3x3
                           --trials N --threads T --work-dir DIR [--seed S]
                           [--timeout S]

--timeout: the builder's and runner's limit per candidate (TVM's default
30 s; a build on a busy or niced machine can take longer, and a timed-out
candidate is a failed trial).

Prints one JSON line: system, workload, trials, threads, tune_s (wall
seconds of tune_tir), best_ms (median of time_evaluator's repeats),
gflops, max_rel_err (max |out - ref| / max |ref|, ref in float64),
ok_trials (the candidates that built and ran: a failed or timed-out one
still counts as a trial).
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def workload(name):
    """(te tensors [inputs..., output], flops, numpy inputs -> reference)."""
    from tvm import te
    if name in ("matmul1024", "matmul128x768"):
        m, n, k = (1024, 1024, 1024) if name == "matmul1024" else (128, 768, 768)
        a = te.placeholder((m, k), "float32", name="A")
        b = te.placeholder((k, n), "float32", name="B")
        r = te.reduce_axis((0, k), name="k")
        c = te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="C")
        return [a, b, c], 2 * m * n * k, lambda x, y: x @ y
    if name == "conv3x3":
        n, c, h, w, k, rs = 1, 64, 56, 56, 64, 3
        x = te.placeholder((n, c, h, w), "float32", name="X")
        wt = te.placeholder((k, c, rs, rs), "float32", name="W")
        xp = te.compute(
            (n, c, h + 2, w + 2),
            lambda i, j, y, z: te.if_then_else(
                te.all(y >= 1, y < h + 1, z >= 1, z < w + 1), x[i, j, y - 1, z - 1], 0.0),
            name="pad")
        rc = te.reduce_axis((0, c), name="rc")
        ry = te.reduce_axis((0, rs), name="ry")
        rx = te.reduce_axis((0, rs), name="rx")
        out = te.compute(
            (n, k, h, w),
            lambda i, f, y, z: te.sum(xp[i, rc, y + ry, z + rx] * wt[f, rc, ry, rx],
                                      axis=[rc, ry, rx]),
            name="conv")

        def ref(xv, wv):
            win = np.lib.stride_tricks.sliding_window_view(
                np.pad(xv, ((0, 0), (0, 0), (1, 1), (1, 1))), (rs, rs), axis=(2, 3))
            return np.einsum("nchwrs,kcrs->nkhw", win, wv, optimize=True)
        return [x, wt, out], 2 * n * k * c * h * w * rs * rs, ref
    sys.exit(f"tvm_metaschedule.py: unknown workload {name}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", required=True)
    ap.add_argument("--trials", type=int, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=30.0)
    args = ap.parse_args()
    os.environ["TVM_NUM_THREADS"] = str(args.threads)  # before tvm is imported

    import tvm
    from tvm import te
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import codegen

    tensors, flops, ref = workload(args.workload)
    func = te.create_prim_func(tensors).with_attr("global_symbol", "main")
    target = tvm.target.Target({"kind": "llvm", "mcpu": codegen.llvm_get_system_cpu(),
                                "num-cores": args.threads})

    t0 = time.perf_counter()
    db = ms.tune_tir(func, target, args.work_dir, max_trials_global=args.trials,
                     num_trials_per_iter=64, seed=args.seed,
                     builder=ms.builder.LocalBuilder(max_workers=ms.utils.cpu_count(logical=False),
                                                     timeout_sec=args.timeout),
                     runner=ms.runner.LocalRunner(timeout_sec=args.timeout))
    tune_s = time.perf_counter() - t0
    ok = sum(1 for r in db.get_all_tuning_records()
             if r.run_secs and max(float(x) for x in r.run_secs) < 1e9)
    sch = ms.tir_integration.compile_tir(db, func, target)
    if sch is None:
        sys.exit("tvm_metaschedule.py: no valid schedule in the database")
    lib = tvm.tirx.build(sch.mod, target=target)

    rng = np.random.default_rng(0)
    ins = [rng.uniform(-1, 1, [int(d) for d in t.shape]).astype("float32") for t in tensors[:-1]]
    dev = tvm.cpu()
    out_shape = [int(d) for d in tensors[-1].shape]
    args_tvm = [tvm.runtime.tensor(a, dev) for a in ins] + [tvm.runtime.empty(out_shape, "float32", dev)]
    lib["main"](*args_tvm)
    want = ref(*[a.astype("float64") for a in ins])
    err = float(np.max(np.abs(args_tvm[-1].numpy() - want)) / np.max(np.abs(want)))

    timer = lib.time_evaluator("main", dev, number=1, repeat=15, min_repeat_ms=50)
    best_ms = float(np.median(timer(*args_tvm).results)) * 1e3
    print(json.dumps({"system": "tvm-metaschedule", "workload": args.workload,
                      "trials": args.trials, "threads": args.threads,
                      "tune_s": round(tune_s, 1), "best_ms": round(best_ms, 4),
                      "gflops": round(flops / best_ms / 1e6, 2), "max_rel_err": err,
                      "ok_trials": ok}))
    if err > 1e-4:
        sys.exit(f"tvm_metaschedule.py: output differs from numpy (max_rel_err {err:g})")


if __name__ == "__main__":
    main()

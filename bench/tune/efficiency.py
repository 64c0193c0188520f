#!/usr/bin/env python3
"""Search efficiency, the AutoTVM figure: the best GFLOP/s found against the
number of trials, model-guided (evolutionary search + XGBoost cost model)
against random search, on a few operators, several seeds each.

usage: bench/tune/efficiency.py [--ops OP,...] [--seeds N] [--trials N] [--threads T]
                                [--target NAME] [--out DIR] [--from-records]
       build/bench/tvm-venv/bin/python bench/tune/efficiency.py --plot [--out DIR]

Each (operator, search, seed) is one fresh tuning run of bench_ops --tune
(the same tuner as `loom tune`, on that operator alone) into its own
records file; the curve is read back from the records in the order they
were measured (the first is the default schedule, for both searches).
Writes DIR/efficiency.json and DIR/efficiency.md; --plot draws
DIR/efficiency.png from the JSON (matplotlib: bench/tune/setup-tvm's venv
has it); --from-records reads the records files of an earlier run in DIR
again instead of tuning.

Curves are speedups over the run's own default schedule (the first record,
measured again in the tuner's final round), shown in GFLOP/s as that
speedup times the op's mean default GFLOP/s over all its runs. On a shared
host the machine's speed drifts by about 1% between runs minutes apart,
as much as the differences being compared; each run's default measures
that run's machine, so the ratio cancels the drift (the raw GFLOP/s are in
the JSON too). The runs are interleaved (seed by seed, guided then random)
so that a slow stretch does not fall on one search only. The bar (issue
14): on at least 4 of the operators, model-guided search reaches random
search's best after all trials (mean over seeds) within 96 trials (its
mean curve).
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_OPS = ["resnet50/conv03", "resnet50/conv07", "mobilenetv2/dwconv05", "bert/qkv_out_proj", "bert/attn_qk"]


def run_db(out, op, search, seed):
    return os.path.join(out, f"eff-{op.replace('/', '_')}-{search}-{seed}.db")


def remove_run_state(db):
    """Everything an earlier run into db left: the records (and SQLite's
    side files), the cost model the tuner saves beside them and loads at
    its start (a run that found one would not start fresh), the timing,
    and the run's own build cache (LOOM_CACHE_DIR, set per run in tune():
    a shared cache's hits would shorten the tuning times compared)."""
    for path in (db, db + "-wal", db + "-shm", db + "-journal", db + ".model", db + ".json"):
        if os.path.exists(path):
            os.remove(path)
    shutil.rmtree(db + ".cache", ignore_errors=True)


def tune(bench, op, search, seed, trials, threads, target, db):
    remove_run_state(db)
    cmd = [bench, "--threads", str(threads), "--filter", op, "--records", db, "--tune", str(trials), "--tune-only",
           "--search", search, "--seed", str(seed)] + (["--target", target] if target else [])
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "LOOM_CACHE_DIR": db + ".cache"})
    if r.returncode != 0:
        sys.exit(f"efficiency: {' '.join(cmd)} failed:\n{r.stderr}")
    m = re.search(r"in ([0-9.]+) s, .* flops (\d+)", r.stderr)
    if not m:
        sys.exit(f"efficiency: no 'tuned' line from bench_ops:\n{r.stderr}")
    with open(db + ".json", "w") as f:
        json.dump({"seconds": float(m.group(1)), "flops": int(m.group(2))}, f)


def read_run(db):
    """A run's curve from its records: the best speedup over its default
    (the first record) after each trial, and the raw best GFLOP/s."""
    with open(db + ".json") as f:
        run = json.load(f)
    with sqlite3.connect(db) as c:
        rows = c.execute("select status, median_us from records order by id").fetchall()
    if not rows or rows[0][0] != "ok" or not rows[0][1]:
        sys.exit(f"efficiency: {db}: the first record (the default) did not run")
    default_us, best_us, curve, raw = rows[0][1], None, [], []
    for status, us in rows:
        if status == "ok" and us and us > 0:
            best_us = us if best_us is None else min(best_us, us)
        curve.append(default_us / best_us)
        raw.append(run["flops"] / (best_us * 1e3))
    return {"curve": curve, "raw": raw, "default_gflops": run["flops"] / (default_us * 1e3), **run}


def mean_curve(runs, n):
    return [statistics.mean(r["curve"][min(i, len(r["curve"]) - 1)] for r in runs) for i in range(n)]


def main():
    ap = argparse.ArgumentParser(prog="bench/tune/efficiency.py")
    ap.add_argument("--ops", default=",".join(DEFAULT_OPS))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--trials", type=int, default=256)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--target", default=None)
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "tune"))
    ap.add_argument("--plot", action="store_true", help="draw DIR/efficiency.png from DIR/efficiency.json")
    ap.add_argument("--from-records", action="store_true", help="analyse the records of an earlier run in DIR")
    a = ap.parse_args()
    if a.plot:
        return plot(a.out)
    bench = os.environ.get("BENCH_OPS", os.path.join(ROOT, "build", "bench", "bench_ops"))
    os.makedirs(a.out, exist_ok=True)
    ops = a.ops.split(",")
    searches = ("evolutionary", "random")
    for op in ops:
        for seed in range(1, a.seeds + 1):
            for search in searches:
                if not a.from_records:
                    print(f"-- {op} seed {seed} {search}", file=sys.stderr, flush=True)
                    tune(bench, op, search, seed, a.trials, a.threads, a.target, run_db(a.out, op, search, seed))
    results = {op: {search: [read_run(run_db(a.out, op, search, seed)) for seed in range(1, a.seeds + 1)]
                    for search in searches} for op in ops}

    lines = [f"| op | default GFLOP/s | random best @{a.trials} | guided best @96 | guided best @{a.trials} | "
             f"guided trials to random's best | tuning s (guided / random) |", "|---|--:|--:|--:|--:|--:|--:|"]
    summary, reached = [], 0
    for op in ops:
        g, r = results[op]["evolutionary"], results[op]["random"]
        # Speedup curves in GFLOP/s units: times the op's mean default GFLOP/s.
        unit = statistics.mean(x["default_gflops"] for x in g + r)
        gc = [v * unit for v in mean_curve(g, a.trials)]
        rc = [v * unit for v in mean_curve(r, a.trials)]
        target_best = rc[-1]
        hit = next((i + 1 for i, v in enumerate(gc) if v >= target_best), None)
        reached += hit is not None and hit <= 96
        secs = (statistics.mean(x["seconds"] for x in g), statistics.mean(x["seconds"] for x in r))
        lines.append(f"| {op} | {unit:.1f} | {target_best:.1f} | {gc[min(95, a.trials - 1)]:.1f} | {gc[-1]:.1f} | "
                     f"{hit if hit else f'> {a.trials}'} | {secs[0]:.0f} / {secs[1]:.0f} |")
        summary.append({"op": op, "guided": gc, "random": rc, "trials_to_random_best": hit,
                        "guided_runs": [[v * unit for v in x["curve"]] for x in g],
                        "random_runs": [[v * unit for v in x["curve"]] for x in r],
                        "guided_raw": [x["raw"] for x in g], "random_raw": [x["raw"] for x in r],
                        "guided_default_gflops": [x["default_gflops"] for x in g],
                        "random_default_gflops": [x["default_gflops"] for x in r]})
    lines.append("")
    lines.append(f"model-guided reached random search's {a.trials}-trial best within 96 trials on {reached} of "
                 f"{len(ops)} operators (bar: 4 of 5); means over {a.seeds} seeds, {a.threads} thread(s), "
                 f"target {a.target or 'host'}; speedups over each run's default x the mean default GFLOP/s")
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(a.out, "efficiency.md"), "w") as f:
        f.write(text)
    with open(os.path.join(a.out, "efficiency.json"), "w") as f:
        json.dump({"trials": a.trials, "seeds": a.seeds, "threads": a.threads, "target": a.target, "ops": summary}, f)
    print(f"plot: build/bench/tvm-venv/bin/python bench/tune/efficiency.py --plot --out {a.out}")
    return 0


def plot(out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(os.path.join(out, "efficiency.json")) as f:
        data = json.load(f)
    summary, trials = data["ops"], data["trials"]
    fig, axes = plt.subplots(1, len(summary), figsize=(3.6 * len(summary), 3.2), squeeze=False)
    for ax, s in zip(axes[0], summary):
        x = range(1, trials + 1)
        for key, color, label in (("guided", "tab:blue", "evolutionary + XGBoost"), ("random", "tab:orange", "random")):
            runs = s[key + "_runs"]
            lo = [min(r[min(i, len(r) - 1)] for r in runs) for i in range(trials)]
            hi = [max(r[min(i, len(r) - 1)] for r in runs) for i in range(trials)]
            ax.plot(x, s[key], color=color, label=label)
            ax.fill_between(x, lo, hi, color=color, alpha=0.2)
        ax.axvline(96, color="gray", lw=0.8, ls=":")
        ax.set_title(s["op"], fontsize=9)
        ax.set_xlabel("trials")
        ax.set_ylabel("best GFLOP/s (drift-corrected)")
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.suptitle(f"best found vs trials, mean (line) and range (band) over {data['seeds']} seeds, "
                 f"{data['threads']} thread(s)", fontsize=9)
    fig.tight_layout()
    png = os.path.join(out, "efficiency.png")
    fig.savefig(png, dpi=100)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

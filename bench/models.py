#!/usr/bin/env python3
"""Model latency, Loom against ONNX Runtime, side by side in one run.

usage: bench/models [--threads 1,2] [--repeat N] [--warmup W] [--target NAME] [--records FILE]
                    [--variants native,dnnl,cblas,...] [--label TEXT] [--out FILE] [name ...]
       (default models: resnet18 resnet50 mobilenet_v2 bert_base_like)

For each model (exported with scripts/export-zoo when missing; batch 1, its
fixed .input.npy): `loom compile` at the default opt level (timed, with an
empty kernel cache, LOOM_CACHE_DIR; with --records FILE, the tuned
schedules of `loom tune`), then for each thread count T, in this
one process, ORT and Loom in alternating blocks (rounds of one block each,
which goes first alternating; a block's first runs, for 0.15 s, untimed),
--repeat timed runs of each in all, after --warmup runs of each:
  ORT   all graph optimizations, intra_op_num_threads=T, sequential execution
  Loom  the artifact loaded through the runtime library (bench/loom_rt.py,
        build/libloomrt.so), T threads
ms = median of each side's block medians; ratio = median of the per-round
ratios; --variants times several Loom artifacts of each model in the same
rotation: `native` is Loom alone, any other variant names the back ends of
`loom compile --byoc` joined by '+' (dnnl, cblas, dnnl+cblas, PATH.so), so
one table holds Loom native, Loom + each back end and ORT; err = each Loom
artifact's largest error against ORT's outputs (the bench refuses to
report a model whose err is over 1e-3). Prints a markdown table (ratio =
ORT ms / Loom ms, > 1 means Loom is faster; range = the lowest and highest
per-round ratio) and the compile times, writes them to
build/bench/models-<date>.md, writes the raw results (every block median of
every side, the run's conditions) to --out (default
bench/results/models-<date>-<time>.json: commit the ones a doc quotes;
bench/models_table.py makes docs tables from them), and exits 1 when any
model failed (its cells say "FAILED: <first error line>").
Environment: LOOM (default build/tools/loom), LOOM_RT (default build/libloomrt.so),
LOOM_MODEL_DIR (default models/).
Runs on the pyenv python3 (numpy + onnxruntime); exporting runs Debian's
python in its own process (scripts/export-zoo).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime as ort

from loom_rt import LoomError, Model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v2", "bert_base_like"]


class Failed(Exception):
    """A step failed; str() is the first line worth showing in the table."""


def first_error_line(text):
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[-1] if lines else "no message"


def run(cmd, what, timeout, env=None):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except FileNotFoundError:
        raise Failed(f"{what}: {cmd[0]} not found") from None
    except subprocess.TimeoutExpired:
        raise Failed(f"{what}: timed out after {timeout} s") from None
    if p.returncode != 0:
        raise Failed(f"{what}: {first_error_line(p.stderr + p.stdout)}")
    return p.stdout


def ensure_exported(model_dir, name):
    files = [os.path.join(model_dir, name + s) for s in (".onnx", ".input.npy")]
    if not all(os.path.exists(f) for f in files):
        print(f"-- {name}: exporting", file=sys.stderr, flush=True)
        run([os.path.join(ROOT, "scripts", "export-zoo"), name], "export", 1800)
    return files


def ort_session(onnx_path, threads):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    return ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])


# Each block of runs starts with untimed ones, for at least SETTLE_S: ORT's
# worker threads spin for up to ~0.1 s after its last run (its default), and
# take a core from Loom's first runs at 2 threads meanwhile.
SETTLE_S = 0.15
# Loom's outputs against ORT's (max|loom - ort| / max(1, max|ort|)): the
# tests hold 1e-4; a timing of wrong outputs is not reported.
MAX_ERR = 1e-3


def block_ms(fn, runs):
    """Runs fn untimed for SETTLE_S (once at least), then `runs` timed
    times; returns the median in ms."""
    t_end = time.perf_counter() + SETTLE_S
    fn()
    while time.perf_counter() < t_end:
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def side_by_side(sess, models, x, repeat, warmup):
    """ORT and each Loom artifact in one process, in alternating blocks of a
    few runs (the order rotates each round), so that a shared machine's
    speed, which drifts by tens of percent within seconds, hits all alike.
    Returns (ORT ms, [(Loom ms, ratio, err)] per model, raw): the medians of
    each side's block medians, the median of the per-round ratios ORT/Loom,
    Loom's largest error against ORT's outputs, max|loom - ort| / max(1,
    max|ort|), and raw = {"ort_blocks_ms": [...], "loom_blocks_ms": [[...]
    per model]}, every block median in round order."""
    name = sess.get_inputs()[0].name
    feed = {name: x}
    for m in models:
        m.set_input(name, x)
    for _ in range(warmup):
        sess.run(None, feed)
        for m in models:
            m.run()
    want = sess.run(None, feed)
    errs = []
    for m in models:
        m.run()
        errs.append(max(float(np.max(np.abs(g.astype(np.float64) - w)) / max(1.0, float(np.max(np.abs(w)))))
                        for g, w in zip(m.outputs(), want)))
    rounds = max(5, repeat // 3)
    per = max(3, -(-repeat // rounds))
    ort_ms, loom_ms = [], [[] for _ in models]
    sides = [lambda: ort_ms.append(block_ms(lambda: sess.run(None, feed), per))]
    sides += [lambda m=m, out=out: out.append(block_ms(m.run, per)) for m, out in zip(models, loom_ms)]
    for i in range(rounds):
        k = i % len(sides)
        for side in sides[k:] + sides[:k]:
            side()
    return statistics.median(ort_ms), [
        (statistics.median(ms), statistics.median([o / lo for o, lo in zip(ort_ms, ms)]), e)
        for ms, e in zip(loom_ms, errs)], {"ort_blocks_ms": ort_ms, "loom_blocks_ms": loom_ms}


def loom_target(loom, target):
    """The target's name and vector width as `loom target` prints them."""
    try:
        out = subprocess.run([loom, "target", *(["--target", target] if target else [])], capture_output=True,
                             text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    lines = dict(ln.split(": ", 1) for ln in out.splitlines() if ": " in ln)
    return f"{lines.get('target', '?')}, {lines.get('vector', '?')}"


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for ln in f:
                if ln.startswith("model name"):
                    return ln.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def fmt_ms(v):
    return f"{v:.2f}" if isinstance(v, float) else v


def variant_flags(v):
    """loom compile's flags for a variant: native, or back ends joined by '+'."""
    return [] if v == "native" else ["--byoc", ",".join(v.split("+"))]


def compile_variant(loom, onnx_path, artifact, variant, a, work):
    print(f"-- {os.path.basename(artifact)}: loom compile", file=sys.stderr, flush=True)
    flags = (["--target", a.target] if a.target else []) + variant_flags(variant)
    flags += ["--records", os.path.abspath(a.records)] if a.records else []
    # an empty kernel cache: the compile time is a cold one
    with tempfile.TemporaryDirectory(dir=work) as cache:
        t0 = time.perf_counter()
        run([loom, "compile", onnx_path, "-o", artifact, *flags], "loom compile", a.timeout,
            env=dict(os.environ, LOOM_CACHE_DIR=cache))
        return f"{time.perf_counter() - t0:.1f}"


def time_model(onnx_path, artifacts, x, t, a, raw):
    """One model at t threads: (ORT ms, [(Loom ms, ratio, err)] per variant),
    a cell holding "FAILED: ..." where a side failed; the block medians go
    to raw (side_by_side's)."""
    try:
        sess = ort_session(onnx_path, t)
    except Exception as e:  # noqa: BLE001 - ORT failures are reported, not raised
        return f"FAILED: {first_error_line(str(e))}", [("-", "-", "-")] * len(artifacts)
    loaded, cells = [], []
    try:
        for art in artifacts:
            if isinstance(art, Failed):
                cells.append((f"FAILED: {art}", "-", "-"))
                continue
            try:
                loaded.append(Model(art, t))
                cells.append(None)
            except LoomError as e:
                cells.append((f"FAILED: {first_error_line(str(e))}", "-", "-"))
        if not loaded:
            feed = {sess.get_inputs()[0].name: x}
            return block_ms(lambda: sess.run(None, feed), a.repeat), cells
        ort_ms, timed, blocks = side_by_side(sess, loaded, x, a.repeat, a.warmup)
        raw.update(blocks)
    except LoomError as e:
        return "-", [c or (f"FAILED: {first_error_line(str(e))}", "-", "-") for c in cells]
    except Exception as e:  # noqa: BLE001
        return f"FAILED: {first_error_line(str(e))}", [c or ("-", "-", "-") for c in cells]
    finally:
        for m in loaded:
            m.close()
    it = iter(timed)
    out = []
    for c in cells:
        if c is not None:
            out.append(c)
            continue
        ms, r, e = next(it)
        if e > MAX_ERR:
            out.append((f"FAILED: Loom's outputs differ from ORT's by {e:.1e} (> {MAX_ERR})", "-", f"{e:.1e}"))
        else:
            out.append((ms, f"{r:.2f}", f"{e:.1e}"))
    return ort_ms, out


def git_commit():
    try:
        out = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], capture_output=True, text=True,
                             timeout=30)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def load_average():
    try:
        return [float(v) for v in open("/proc/loadavg").read().split()[:3]]
    except (OSError, ValueError):
        return None


def write_raw(path, a, variants, started, loom, rows, raw_rows):
    """The run's raw results: its conditions, the summary rows (as the JSON
    line) and, per model and thread count, every block median of ORT and of
    each variant, in round order (round i's ratio: ort[i] / loom[v][i])."""
    policy = {getattr(os, n): n for n in ("SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_BATCH", "SCHED_IDLE")
              if hasattr(os, n)}.get(os.sched_getscheduler(0), "?") if hasattr(os, "sched_getscheduler") else "?"
    doc = {
        "bench": "models", "label": a.label, "started": f"{started:%Y-%m-%d %H:%M:%S}", "cpu": cpu_name(), "cpus": os.cpu_count(),
        "onnxruntime": ort.__version__, "loom": loom, "loom_rt": os.environ.get("LOOM_RT", "build/libloomrt.so"),
        "commit": git_commit(), "target": a.target or "host", "records": a.records, "repeat": a.repeat,
        "warmup": a.warmup, "settle_s": SETTLE_S, "variants": variants, "sched_policy": policy,
        "load_average_at_end": load_average(), "argv": sys.argv[1:], "rows": rows,
        "blocks": [{"model": m, "threads": t, **raw} for m, t, raw in raw_rows],
    }
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(prog="bench/models", description="Loom vs ONNX Runtime latency on the model zoo")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=30, help="timed runs of each per measurement (default 30)")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up runs of each (default 3)")
    ap.add_argument("--timeout", type=int, default=900, help="seconds per loom compile or run (default 900)")
    ap.add_argument("--target", default=None,
                    help="loom compile --target (e.g. x86_64-avx2 on an AVX-512 host; ORT still uses every ISA it finds)")
    ap.add_argument("--records", default=None, help="loom compile --records (tuning records from loom tune)")
    ap.add_argument("--variants", default="native",
                    help="comma-separated Loom variants timed side by side: native, or --byoc back ends "
                         "joined by '+' (e.g. native,dnnl,cblas,dnnl+cblas; default native)")
    ap.add_argument("--label", default=None, help="a name for this run in its raw results (bench/models_table.py)")
    ap.add_argument("--out", default=None,
                    help="the raw results' JSON file (default bench/results/models-<date>-<time>.json)")
    ap.add_argument("models", nargs="*", default=DEFAULT_MODELS)
    a = ap.parse_args()
    try:
        threads = [int(t) for t in a.threads.split(",")]
        assert threads and min(threads) >= 1 and a.repeat >= 1 and a.warmup >= 0
    except (ValueError, AssertionError):
        ap.error(f"--threads {a.threads!r} / --repeat / --warmup: expected counts >= 1 like 1,2")
    variants = a.variants.split(",")
    if not all(variants) or len(set(variants)) != len(variants):
        ap.error(f"--variants {a.variants!r}: expected distinct names like native,dnnl,cblas")
    loom = os.environ.get("LOOM", os.path.join(ROOT, "build", "tools", "loom"))
    model_dir = os.path.abspath(os.environ.get("LOOM_MODEL_DIR", os.path.join(ROOT, "models")))
    os.environ["LOOM_MODEL_DIR"] = model_dir
    work = os.path.join(ROOT, "build", "bench", "models")
    os.makedirs(work, exist_ok=True)

    rows, compile_rows, raw_rows, failed = [], [], [], False
    started = datetime.datetime.now()
    for name in a.models:
        try:
            onnx_path, input_path = ensure_exported(model_dir, name)
            x = np.load(input_path)
        except Failed as e:
            failed = True
            rows += [(name, t, f"FAILED: {e}", [("-", "-", "-")] * len(variants)) for t in threads]
            compile_rows.append((name, ["-"] * len(variants)))
            continue
        artifacts, secs = [], []
        for v in variants:
            suffix = "" if v == "native" else "." + "+".join(os.path.basename(b).replace(".so", "")
                                                             for b in v.split("+"))
            artifact = os.path.join(work, name + suffix + ".loom")
            try:
                if not os.access(loom, os.X_OK):
                    raise Failed(f"no loom binary at {loom} (build: cmake --build build --target loom)")
                secs.append(compile_variant(loom, onnx_path, artifact, v, a, work))
                artifacts.append(artifact)
            except Failed as e:
                secs.append(f"FAILED: {e}")
                artifacts.append(e)
        compile_rows.append((name, secs))
        for t in threads:
            print(f"-- {name}: {t} thread(s)", file=sys.stderr, flush=True)
            raw = {}
            ort_ms, cells = time_model(onnx_path, artifacts, x, t, a, raw)
            raw_rows.append((name, t, raw))
            failed |= not (isinstance(ort_ms, float) and all(isinstance(c[0], float) for c in cells))
            rows.append((name, t, fmt_ms(ort_ms), [(fmt_ms(ms), r, e) for ms, r, e in cells]))

    label = ["Loom" if v == "native" else f"Loom+{v}" for v in variants]
    ranges = {}
    for m, t, raw in raw_rows:
        for i, _ in enumerate(variants):
            if raw and raw["loom_blocks_ms"][i]:
                rs = [o / lo for o, lo in zip(raw["ort_blocks_ms"], raw["loom_blocks_ms"][i])]
                ranges[(m, t, i)] = f"{min(rs):.2f}-{max(rs):.2f}"
    report = [
        f"# bench/models, {datetime.datetime.now():%Y-%m-%d %H:%M}",
        "",
        f"{cpu_name()}, {os.cpu_count()} CPUs; onnxruntime {ort.__version__}; "
        f"batch 1; ORT and Loom in one process, in alternating blocks ({a.repeat} timed runs of each in "
        f"all, after {a.warmup} warm-up runs; a block's first runs, for {SETTLE_S} s, untimed); ms = median "
        f"of each side's block medians, ratio = median of the per-round ratios, err = max|loom - ort| / "
        f"max(1, max|ort|); loom: {loom}, target {a.target or 'host'} ({loom_target(loom, a.target)}); "
        f"schedules: {'tuned, records ' + a.records if a.records else 'the defaults'}",
        "",
        "| model | threads | ORT ms | " + " | ".join(f"{lb} ms | ORT/{lb} | range | err" for lb in label) + " |",
        "|---|---|---|" + "---|---|---|---|" * len(label),
        *(f"| {m} | {t} | {o} | " + " | ".join(f"{ms} | {r} | {ranges.get((m, t, i), '-')} | {e}"
                                             for i, (ms, r, e) in enumerate(cells)) + " |"
          for m, t, o, cells in rows),
        "",
        "ORT/Loom > 1 means Loom is faster; range: the lowest and highest per-round ratio.",
        "",
        "| model | " + " | ".join(f"{lb} compile s" for lb in label) + " |",
        "|---|" + "---|" * len(label),
        *(f"| {m} | " + " | ".join(c) + " |" for m, c in compile_rows),
    ]
    text = "\n".join(report) + "\n"
    print(text)
    # One JSON line for scripts: per model, thread count and variant, the
    # medians and both ratios (null where a side failed).
    js = []
    for m, t, o, cells in rows:
        for v, (lo, r, e) in zip(variants, cells):
            ok = r != "-"
            js.append({"model": m, "threads": t, "variant": v, "ort_ms": float(o) if ok else None,
                       "loom_ms": float(lo) if ok else None, "ort_over_loom": float(r) if ok else None,
                       "loom_over_ort": round(1.0 / float(r), 4) if ok and float(r) > 0 else None,
                       "max_err": float(e) if e != "-" else None})
    print(json.dumps({"bench": "models", "target": a.target or "host", "records": a.records, "repeat": a.repeat,
                      "variants": variants, "onnxruntime": ort.__version__, "rows": js}))
    out = os.path.join(ROOT, "build", "bench", f"models-{datetime.datetime.now():%Y-%m-%d-%H%M%S}.md")
    with open(out, "w") as f:
        f.write(text)
    print(f"wrote {out}")
    raw_out = a.out or os.path.join(ROOT, "bench", "results", f"models-{started:%Y-%m-%d-%H%M%S}.json")
    write_raw(raw_out, a, variants, started, loom, js, raw_rows)
    print(f"wrote {raw_out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

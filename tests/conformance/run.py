"""ONNX backend conformance: every test folder of ../shared/onnx-tests compiled
by the real pipeline (`loom compile`) and run (`loom run`) on its .pb inputs,
compared with the expected outputs the way ONNX's own runner does.

Usage: tests/conformance/run [--filter REGEX] [--json] [--jobs N] [--subset FILE]
                             [--report docs/conformance.md] [--loom PATH]
                             [--check PASSING.txt] [--write-passing PASSING.txt]

--check fails (exit 1) when a test listed in the file (one folder per line)
and selected by this run does not pass: the regression check CI runs on
tests/conformance/ci_subset.txt against tests/conformance/passing.txt.

A test is excluded (listed, not counted) when it is training-only, uses
sequence/optional/map or string types, or has random outputs (issue 4's
list); everything else counts. A test that fails to compile with an
"unsupported" error is reported as unsupported with the compiler's message;
any other compile error, a run error, a crash or a wrong value is a failure.
"""
import argparse
import collections
import json
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(os.path.dirname(ROOT), "shared", "onnx-tests")
RTOL, ATOL = 1e-3, 1e-7  # onnx/backend/test/loader: the defaults of every test here
EXCLUDED_TAGS = {
    "training": "training-only",
    "sequence/optional/map": "sequence/optional/map types",
    "string": "string types",
    "random": "random outputs",
}
TIMEOUT = 300
# Every op type in the model zoo of issue 3 (scripts/export-zoo: ResNet-18/50,
# MobileNetV2, EfficientNet-B0, DenseNet-121, Inception-v3, BERT-base...;
# at opsets 13 and 17). Issue 4's bar: 100% of these ops' tests pass.
ZOO_OPS = ["Add", "AveragePool", "BatchNormalization", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv", "Div",
           "Equal", "Erf", "Expand", "Flatten", "Gather", "Gemm", "GlobalAveragePool", "LayerNormalization", "MatMul",
           "MaxPool", "Mul", "Pad", "Pow", "ReduceMean", "Relu", "Reshape", "Shape", "Sigmoid", "Slice", "Softmax",
           "Sqrt", "Sub", "Transpose", "Where"]


def read_manifest():
    rows = []
    with open(os.path.join(DATA, "MANIFEST.tsv")) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(head, line.rstrip("\n").split("\t"))))
    by_folder = {r["folder"]: r for r in rows}
    for r in rows:
        tags = set() if r["tags"] == "-" else set(r["tags"].split(","))
        r["tagset"] = tags
        folder = r["folder"]
        # "<test>_expanded" and "<test>_expanded_verNN" are function bodies of <test>'s op
        m = re.match(r"^(.*)_expanded(_ver\d+)?$", folder)
        base = m and (by_folder.get(m.group(1) + (m.group(2) or "")) or by_folder.get(m.group(1)))
        if base:
            r["op"] = base["op_types"].split(",")[0]
        elif folder.startswith("node/"):
            r["op"] = r["op_types"].split(",")[0]
        else:
            r["op"] = "(simple) " + folder.split("/", 1)[1]
        r["excluded"] = next((why for tag, why in EXCLUDED_TAGS.items() if tag in tags), None)
    return rows


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    for l in lines:
        if "error:" in l:
            return l.split("error:", 1)[1].strip()
    return lines[-1].strip() if lines else "(no message)"


def compare(got, want):
    """None when equal under ONNX's rules, else why not."""
    if got.dtype != want.dtype:
        return "dtype %s, expected %s" % (got.dtype, want.dtype)
    if got.shape != want.shape:
        return "shape %s, expected %s" % (list(got.shape), list(want.shape))
    if want.dtype.kind in "biu":
        bad = got != want
        if bad.any():
            return "%d of %d values differ (exact dtype %s)" % (int(bad.sum()), want.size, want.dtype)
        return None
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    with np.errstate(invalid="ignore"):  # inf - inf: equal infinities are handled below
        bad = (np.isnan(g) != nan) | (~nan & ~(np.abs(g - w) <= ATOL + RTOL * np.abs(w)))
    bad &= ~(np.isinf(w) & (g == w))
    if bad.any():
        i = np.unravel_index(int(np.argmax(bad)), bad.shape) if bad.ndim else ()
        return "%d of %d values outside rtol %g atol %g (at %s: %r, expected %r)" % (
            int(bad.sum()), want.size, RTOL, ATOL, list(i), g[i].item(), w[i].item())
    return None


def run_test(job):
    """run_one_test, and its wall seconds (the compile and every run)."""
    t0 = time.perf_counter()
    folder, status, msg, seen = run_one_test(job)
    return folder, status, msg, seen, time.perf_counter() - t0


def run_one_test(job):
    """One test folder: `loom run model.onnx` compiles the model with the full
    pipeline, specialized to the test's inputs (their shapes, and the values
    of inputs that decide shapes), and runs it on every test_data_set.
    Returns (folder, status, message, inputs) with inputs None where no run
    finished, else (number of inputs, names of those compiled in)."""
    loom, folder, cold, threads = job
    seen = None
    path = os.path.join(DATA, folder)
    model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
    outs = [o.name for o in model.graph.output]
    sets = sorted(d for d in os.listdir(path) if d.startswith("test_data_set_"))
    with tempfile.TemporaryDirectory(prefix="loomconf") as tmp:
        env = dict(os.environ, TMPDIR=tmp)
        if cold:  # an empty kernel cache: the first run's time is a cold compile
            env["LOOM_CACHE_DIR"] = os.path.join(tmp, "cache")
        for ds in sets:
            dpath = os.path.join(path, ds)
            n_in = len([f for f in os.listdir(dpath) if f.startswith("input_")])
            inputs = [os.path.join(dpath, "input_%d.pb" % k) for k in range(n_in)]
            odir = os.path.join(tmp, "out_" + ds)
            try:
                p = subprocess.run([loom, "run", os.path.join(path, "model.onnx"), *inputs, "--output-dir", odir,
                                    "--output-format", "pb", "--threads", str(threads), "--json"],
                                   capture_output=True, text=True, errors="replace", timeout=TIMEOUT, env=env)
            except subprocess.TimeoutExpired:
                return folder, "failed", "timed out after %d s" % TIMEOUT, seen
            if p.returncode < 0:
                return folder, "failed", "crashed (signal %d)" % -p.returncode, seen
            if p.returncode != 0:
                msg = first_line(p.stderr)
                msg = re.sub(r"^run: ", "", msg).replace(path + "/", "")
                unsupported = re.search(r"not supported|unsupported", msg, re.I)
                return folder, "unsupported" if unsupported else "failed", msg, seen
            report = json.loads(p.stdout.strip().splitlines()[-1])
            compiled_in = set(report.get("compiled_in", [])) | (set(seen[1]) if seen else set())
            seen = (n_in, sorted(compiled_in))
            files = {o["name"]: o["file"] for o in report["outputs"]}
            if len(files) != len(outs):
                return folder, "failed", "%d outputs, expected %d" % (len(files), len(outs)), seen
            for k, name in enumerate(outs):
                want = numpy_helper.to_array(onnx.load_tensor(os.path.join(dpath, "output_%d.pb" % k)))
                if name not in files:
                    return folder, "failed", "no output named %r" % name, seen
                got = numpy_helper.to_array(onnx.load_tensor(files[name]))
                why = compare(got, want)
                if why:
                    return folder, "failed", "output %r: %s" % (name, why), seen
    return folder, "passed", "", seen


def reason_class(msg):
    """A failure message without the test-specific parts, to group failures."""
    m = re.sub(r"\"[^\"]*\"|'[^']*'", "\"…\"", msg)
    m = re.sub(r"\d+", "N", m)
    return m[:160]


def zoo_summary(rows, results):
    """Counted tests of the zoo's ops: how many ran and passed, and per op
    how many did not."""
    z = {"passed": 0, "counted": 0, "missing": collections.Counter()}
    for r in rows:
        res = results.get(r["folder"])
        if r["excluded"] or not res or r["op"] not in ZOO_OPS:
            continue
        z["counted"] += 1
        if res[0] == "passed":
            z["passed"] += 1
        else:
            z["missing"][r["op"]] += 1
    return z


def inputs_summary(bound):
    """How the tests that ran got their inputs: every input read at run
    time, some values compiled in (specialization), all of them compiled in
    (no runtime input left), or no inputs at all."""
    c = collections.Counter()
    for n_in, names in bound.values():
        c["none" if n_in == 0 else "runtime" if not names else "all" if len(names) >= n_in else "some"] += 1
    return c


def write_report(path, rows, results, subset, bound, seconds, cold, jobs):
    ops = collections.OrderedDict()
    for r in sorted(rows, key=lambda r: r["op"]):
        ops.setdefault(r["op"], []).append(r)
    totals = collections.Counter()
    lines = []
    for op, rs in ops.items():
        c = collections.Counter()
        reasons = collections.Counter()
        for r in rs:
            if r["excluded"]:
                c["excluded"] += 1
                continue
            res = results.get(r["folder"])
            if not res:
                continue
            c[res[0]] += 1
            if res[0] != "passed":
                reasons[reason_class(res[1])] += 1
        if not sum(c.values()):
            continue
        totals.update(c)
        why = "; ".join("%s (%d)" % (k, n) for k, n in reasons.most_common(3))
        lines.append("| %s | %d | %d | %d | %d | %s |" % (op, c["passed"], c["failed"], c["unsupported"],
                                                        c["excluded"], why.replace("|", "\\|")))
    counted = totals["passed"] + totals["failed"] + totals["unsupported"]
    zoo = zoo_summary(rows, results)
    why_excluded = collections.Counter(r["excluded"] for r in rows if r["excluded"])
    out = ["# ONNX conformance", "",
           "Generated by `tests/conformance/run%s` from ONNX's backend test data (`../shared/onnx-tests`):"
           % (" --subset " + subset if subset else ""),
           "each test is compiled (specialized to its inputs) and run by `loom run model.onnx` on its `.pb` inputs, and the",
           "outputs are compared as ONNX's runner does (rtol %g, atol %g, exact for integers and bools, NaN == NaN)."
           % (RTOL, ATOL), "",
           "**%d of %d counted tests pass (%.1f%%)**; %d failed, %d unsupported, %d excluded (%s)."
           % (totals["passed"], counted, 100.0 * totals["passed"] / max(1, counted), totals["failed"],
              totals["unsupported"], totals["excluded"],
              ", ".join("%s %d" % (k, v) for k, v in sorted(why_excluded.items()))),
           "",
           "Ops of the model zoo (issue 4 asks for 100%%): %d of %d of their counted tests pass%s."
           % (zoo["passed"], zoo["counted"], "" if not zoo["missing"] else
              "; not yet: " + ", ".join("%s (%d)" % (k, v) for k, v in sorted(zoo["missing"].items()))),
           ""]
    ins = inputs_summary(bound)
    out += ["Inputs (`loom run --json`'s `compiled_in`; docs/compile.md, \"Shapes that depend on values\"): of the %d tests"
            " that ran, %d read every input at run time, %d have some inputs' values compiled in (they decide"
            " shapes), %d have all of them compiled in (no runtime input left), %d take no inputs."
            % (sum(ins.values()), ins["runtime"], ins["some"], ins["all"], ins["none"]), "",
            "| op | passed | failed | unsupported | excluded | why (most common classes) |",
            "|---|--:|--:|--:|--:|---|"] + lines
    listed = sorted(k for k, (n_in, names) in bound.items() if names)
    if listed:
        out += ["", "## Inputs compiled in", "",
                "The tests whose run compiled some inputs' values in, and which (of how many inputs).", "",
                "| test | compiled in | of |", "|---|---|--:|"]
        out += ["| %s | %s | %d |" % (k.split("/", 1)[1], ", ".join(bound[k][1]), bound[k][0]) for k in listed]
    slowest = sorted(seconds, key=seconds.get, reverse=True)[:10]
    if slowest:
        out += ["", "## Slowest tests", "",
                "Wall seconds of each test (its compile and every run, %d jobs on this host; %s)."
                % (jobs, "every test with an empty kernel cache: a cold compile" if cold
                   else "kernel cache as found: `--cold` empties it per test"), "",
                "| test | seconds |", "|---|--:|"]
        out += ["| %s | %.1f |" % (k.split("/", 1)[1], seconds[k]) for k in slowest]
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(out) + "\n")
    os.replace(tmp, path)
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--filter", help="only test folders matching this regex (re.search)")
    ap.add_argument("--subset", help="only the test folders listed in this file (one per line, # comments)")
    ap.add_argument("--json", action="store_true", help="print the summary as a JSON last line")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--threads", type=int, default=1, help="threads of each model's run (loom run --threads)")
    ap.add_argument("--report", help="write the per-op table here (default docs/conformance.md for a full run)")
    ap.add_argument("--results", help="write every test's result as JSON here")
    ap.add_argument("--loom", default=os.environ.get("LOOM", os.path.join(ROOT, "build", "tools", "loom")))
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test's result")
    ap.add_argument("--check", help="exit 1 when a selected test listed in this file does not pass")
    ap.add_argument("--write-passing", help="write the folders of the passing tests here")
    ap.add_argument("--cold", action="store_true",
                    help="every test with an empty kernel cache (its time then includes a cold compile)")
    args = ap.parse_args()
    if not os.path.isdir(DATA):
        sys.exit("conformance: no test data at %s" % DATA)
    if not os.access(args.loom, os.X_OK):
        sys.exit("conformance: no loom binary at %s (build first, or pass --loom)" % args.loom)
    rows = read_manifest()
    if args.subset:
        with open(args.subset) as f:
            keep = {l.split("#")[0].strip() for l in f} - {""}
        unknown = keep - {r["folder"] for r in rows}
        if unknown:
            sys.exit("conformance: %s names unknown tests: %s" % (args.subset, ", ".join(sorted(unknown))))
        rows = [r for r in rows if r["folder"] in keep]
    if args.filter:
        rows = [r for r in rows if re.search(args.filter, r["folder"])]
    jobs = [(args.loom, r["folder"], args.cold, args.threads) for r in rows if not r["excluded"]]
    results, bound, seconds = {}, {}, {}
    with multiprocessing.Pool(max(1, args.jobs)) as pool:
        for folder, status, msg, inputs, secs in pool.imap_unordered(run_test, jobs):
            results[folder] = (status, msg)
            seconds[folder] = secs
            if inputs is not None:
                bound[folder] = inputs
            if args.verbose or (status == "failed" and not args.json):
                print("%-8s %s%s" % (status, folder, "  " + msg if msg else ""), flush=True)
    report = args.report
    if report is None and not args.filter and not args.subset:
        report = os.path.join(ROOT, "docs", "conformance.md")
    if report:
        write_report(report, rows, results, args.subset, bound, seconds, args.cold, max(1, args.jobs))
    if args.results:
        with open(args.results, "w") as f:
            json.dump({k: list(v) + [bound.get(k)] for k, v in results.items()}, f, indent=1, sort_keys=True)
    c = collections.Counter(s for s, _ in results.values())
    summary = {"passed": c["passed"], "failed": c["failed"], "unsupported": c["unsupported"],
               "excluded": sum(1 for r in rows if r["excluded"])}
    summary["total"] = sum(summary.values())
    zoo = zoo_summary(rows, results)
    ins = inputs_summary(bound)
    if args.json:
        print(json.dumps({"zoo_ops_passed": zoo["passed"], "zoo_ops_counted": zoo["counted"],
                          "inputs_runtime": ins["runtime"], "inputs_some_compiled_in": ins["some"],
                          "inputs_all_compiled_in": ins["all"], "no_inputs": ins["none"]}))
        print(json.dumps(summary))
    else:
        counted = summary["passed"] + summary["failed"] + summary["unsupported"]
        print("conformance: %d of %d counted tests pass (%.1f%%), %d failed, %d unsupported, %d excluded; "
              "zoo ops: %d of %d; inputs: %d tests all at run time, %d some compiled in, %d all compiled in"
              % (summary["passed"], counted, 100.0 * summary["passed"] / max(1, counted), summary["failed"],
                 summary["unsupported"], summary["excluded"], zoo["passed"], zoo["counted"], ins["runtime"],
                 ins["some"], ins["all"]))
    if args.write_passing:
        with open(args.write_passing, "w") as f:
            f.write("# Tests that pass (tests/conformance/run --write-passing); CI checks them with --check.\n")
            f.write("".join(k + "\n" for k in sorted(results) if results[k][0] == "passed"))
    if args.check:
        with open(args.check) as f:
            expected = {l.split("#")[0].strip() for l in f} - {""}
        regressed = sorted(k for k in expected if k in results and results[k][0] != "passed")
        for k in regressed:
            print("REGRESSION %s: %s %s" % (k, results[k][0], results[k][1]), file=sys.stderr)
        if regressed:
            print("conformance: %d test(s) of %s no longer pass" % (len(regressed), args.check), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

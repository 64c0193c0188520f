#!/usr/bin/env python3
"""The long export test (scripts/test-long; issue 16 item 3): ResNet-18,
MobileNetV2 (the model zoo, scripts/export-zoo), a small BERT-style encoder
(made here with onnx.helper) and the ONNX conformance CI subset
(tests/conformance/ci_subset.txt, data in ../shared/onnx-tests), each
exported with `loom export-c` for generic, aarch64 and riscv64, built with
the project's Makefile (the cross compilers for aarch64/riscv64), run
(under qemu-user for the cross targets) and compared with the host
artifact: `loom run MODEL INPUTS` on this machine. The export gets every
input's value with --input, as `loom run MODEL.onnx` specializes to them:
inputs whose values decide shapes (a Reshape's shape, an If's condition...)
are compiled in, and example_main reads only the inputs left in PREFIX.h.

Metric: max |export - host| / max |host| per output over the host's finite
values (an output whose host values are all 0 must be exactly 0; NaN and
infinities must match exactly); a case passes when every output of it is
<= 1e-5.

A conformance test that the host cannot run, or that export refuses with a
`loom: error:` (a dtype C cannot spell...), is counted as such with its
reason, not as a failure; anything else (a build error, a crash, a wrong
value) fails the run. Prints a table per target and exits 1 on a failure.

  tests/cli/export_long.py --loom build-long/tools/loom [--jobs N] [--work DIR]
      [--models DIR] [--targets generic,aarch64,riscv64] [--filter REGEX] [--no-models] [--no-conformance]
"""
import argparse
import collections
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from export_fixtures import CROSS, cross_tools_missing, qemu_runner

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ONNX_TESTS = os.path.join(os.path.dirname(ROOT), "shared", "onnx-tests")
REL_TOL = 1e-5
TIMEOUT = 1800


def make_bert_small(path, rng):
    """A BERT-style encoder: token + position embeddings, LayerNorm, then two
    post-norm layers (4-head self-attention, GELU feed-forward). int64 ids
    [1, 32] -> hidden states [1, 32, 64]."""
    vocab, seq, d, heads, ff, layers = 512, 32, 64, 4, 256, 2
    hd = d // heads
    inits, nodes = [], []

    def w(name, *shape, scale=0.08):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(values, dtype=dtype), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(helper.make_node(op, ins, [out], **attrs))
        return out

    def layer_norm(x, name):
        g = const(name + "_g", np.ones(d), np.float32)
        b = const(name + "_b", np.zeros(d), np.float32)
        return node("LayerNormalization", [x, g, b], name, axis=-1, epsilon=1e-12)

    def linear(x, name, n_in, n_out):
        return node("Add", [node("MatMul", [x, w(name + "_w", n_in, n_out)], name + "_mm"), w(name + "_b", n_out)], name)

    split = const("split_heads", [1, seq, heads, hd])
    merge = const("merge_heads", [1, seq, d])
    x = node("Gather", [w("tok_emb", vocab, d, scale=0.5), "ids"], "tok")
    x = layer_norm(node("Add", [x, w("pos_emb", 1, seq, d, scale=0.1)], "emb"), "ln_emb")
    for i in range(layers):
        p = f"l{i}_"
        q, k, v = (node("Transpose", [node("Reshape", [linear(x, p + t, d, d), split], p + t + "_r")], p + t + "_h",
                        perm=[0, 2, 1, 3]) for t in ("q", "k", "v"))
        kt = node("Transpose", [k], p + "kt", perm=[0, 1, 3, 2])
        scores = node("Div", [node("MatMul", [q, kt], p + "qk"), const(p + "scale", np.sqrt(hd), np.float32)],
                      p + "scores")
        ctx = node("MatMul", [node("Softmax", [scores], p + "probs", axis=-1), v], p + "ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], p + "ctx_t", perm=[0, 2, 1, 3]), merge], p + "ctx_m")
        x = layer_norm(node("Add", [x, linear(ctx, p + "o", d, d)], p + "res1"), p + "ln1")
        h = linear(x, p + "ff1", d, ff)
        # GELU as BERT exports it: 0.5 x (1 + erf(x / sqrt 2))
        erf = node("Erf", [node("Div", [h, const(p + "sqrt2", np.sqrt(2.0), np.float32)], p + "hs")], p + "erf")
        gelu = node("Mul", [node("Mul", [h, node("Add", [erf, const(p + "one", 1.0, np.float32)], p + "erf1")],
                                 p + "g0"), const(p + "half", 0.5, np.float32)], p + "gelu")
        x = layer_norm(node("Add", [x, linear(gelu, p + "ff2", ff, d)], p + "res2"), p + "ln2" if i + 1 < layers
                       else "hidden")
    g = helper.make_graph(nodes, "bert_small", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, seq])],
                          [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, seq, d])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    return {"ids": rng.integers(0, vocab, (1, seq)).astype(np.int64)}


def rel_err(got, want):
    got, want = got.astype(np.float64), want.astype(np.float64)
    # NaN and infinities (a cast's test data has them) must match exactly;
    # the metric is over the finite values
    finite = np.isfinite(want)
    if not np.array_equal(got[~finite], want[~finite], equal_nan=True):
        return float("inf")
    got, want = got[finite], want[finite]
    scale = float(np.abs(want).max()) if want.size else 0.0
    diff = float(np.abs(got - want).max()) if want.size else 0.0
    return diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf"))


def run(cmd, cwd=None, timeout=TIMEOUT, stdout_only=False):
    """(exit status, output): stderr after stdout, or stdout alone."""
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout if stdout_only and p.returncode == 0 else p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout} s: {' '.join(cmd)}"


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    err = [l for l in lines if "error" in l]
    return (err or lines or ["(no output)"])[0][:200]


def header_io(proj):
    """[(onnx name, field)] of inputs and of outputs, from example_main.c's table (header order)."""
    with open(os.path.join(proj, "example_main.c")) as f:
        text = f.read()
    n_in = int(re.search(r"enum \{ NI = (\d+)", text).group(1))
    rows = re.findall(r'^    \{"((?:[^"\\]|\\.)*)", "([A-Za-z0-9_]+)", ', text, re.M)
    return rows[:n_in], rows[n_in:]


def is_bf16(arr):
    return arr.dtype.name == "bfloat16"  # ml_dtypes' (onnx's numpy_helper): .npy cannot hold it


def one_case(job):
    """(name, kind, {target: (status, detail)}, seconds): host run, then export + build + run per target."""
    name, kind, model, inputs, work, loom, targets = job
    t0 = time.time()
    d = os.path.join(work, re.sub(r"[^A-Za-z0-9_.-]", "_", name))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    # inputs: {onnx name: array}
    files = []
    for k, (iname, arr) in enumerate(inputs):
        if is_bf16(arr):  # loom reads it from a TensorProto
            files.append(os.path.join(d, f"in{k}.pb"))
            onnx.save_tensor(numpy_helper.from_array(arr, iname), files[-1])
        else:
            files.append(os.path.join(d, f"in{k}.npy"))
            np.save(files[-1], arr)
    graph_outputs = onnx.load(model, load_external_data=False).graph.output
    out_pb = any(o.type.tensor_type.elem_type == TensorProto.BFLOAT16 for o in graph_outputs)
    rc, out = run([loom, "run", model, *files, "--output-dir", os.path.join(d, "host"), "--json",
                   *(["--output-format", "pb"] if out_pb else [])], stdout_only=True)
    if rc != 0:
        return name, kind, {t: ("host-fails", first_line(out)) for t in targets}, time.time() - t0
    report = json.loads(out.strip().splitlines()[-1])
    host = {o["name"]: numpy_helper.to_array(onnx.load_tensor(o["file"])) if out_pb else np.load(o["file"])
            for o in report["outputs"]}
    by_name = dict(inputs)
    res = {}
    for target in targets:
        proj = os.path.join(d, "export_" + target)
        # every input's value, as `loom run` specializes to them: those that
        # decide shapes are compiled in, the rest only fix their shapes
        binds = [a for k, (iname, _) in enumerate(inputs) for a in ("--input", f"{iname}={files[k]}")]
        rc, out = run([loom, "export-c", model, "-o", proj, "--target", target, "--name", "m", "--force", *binds])
        if rc != 0:
            res[target] = ("refused", first_line(out).replace("loom: error: ", ""))
            continue
        rc, out = run(["make", "-s", "-C", proj] + ([] if target in CROSS else ["CC=cc"]))
        if rc != 0:
            res[target] = ("failed", "build: " + first_line(out))
            continue
        ins, outs = header_io(proj)
        args = []
        for k, (iname, field) in enumerate(ins):
            iname = bytes(iname, "utf-8").decode("unicode_escape")
            if iname not in by_name:
                break
            args.append(os.path.join(d, f"x_{target}_{k}.npy"))
            arr = by_name[iname]
            np.save(args[-1], arr.view(np.uint16) if is_bf16(arr) else arr)  # example_main: bfloat16 as its bits
        if len(args) != len(ins):
            res[target] = ("refused", "an input of the export is not among the test's inputs")
            continue
        weights = os.path.join(proj, "m.weights")
        odir = os.path.join(d, "out_" + target)
        os.makedirs(odir, exist_ok=True)
        runner = qemu_runner(target) if target in CROSS else []
        rc, out = run([*runner, os.path.join(proj, "example_main"), *([weights] if os.path.exists(weights) else []),
                       *args, odir])
        if rc != 0:
            res[target] = ("failed", "run: " + first_line(out))
            continue
        worst, why = 0.0, None
        for oname, field in outs:
            oname = bytes(oname, "utf-8").decode("unicode_escape")
            if oname not in host:
                why = f"output {oname!r}: not among the host's"
                break
            got, want = np.load(os.path.join(odir, field + ".npy")), host[oname]
            if is_bf16(want) and got.dtype == np.uint16:
                got = got.view(want.dtype)
            if got.shape != want.shape or got.dtype != want.dtype:
                why = f"output {oname!r}: {got.dtype}{got.shape}, host {want.dtype}{want.shape}"
                break
            worst = max(worst, rel_err(got, want))
        if why is None and worst > REL_TOL:
            why = f"rel err {worst:.3g} > {REL_TOL:g}"
        res[target] = ("failed", why) if why else ("passed", worst)
        shutil.rmtree(proj, ignore_errors=True)  # keep failures only
    return name, kind, res, time.time() - t0


def conformance_cases(filt):
    subset = os.path.join(ROOT, "tests", "conformance", "ci_subset.txt")
    with open(subset) as f:
        folders = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    cases = []
    for folder in folders:
        if filt and not re.search(filt, folder):
            continue
        path = os.path.join(ONNX_TESTS, folder)
        model = onnx.load(os.path.join(path, "model.onnx"), load_external_data=False)
        init = {i.name for i in model.graph.initializer}
        graph_inputs = [i.name for i in model.graph.input if i.name not in init]
        ds = os.path.join(path, "test_data_set_0")
        inputs = []
        for k in range(len([f for f in os.listdir(ds) if f.startswith("input_")])):
            t = onnx.load_tensor(os.path.join(ds, f"input_{k}.pb"))
            name = t.name or (graph_inputs[k] if k < len(graph_inputs) else f"input_{k}")
            try:
                inputs.append((name, numpy_helper.to_array(t)))
            except Exception as e:  # a type numpy cannot hold
                inputs = None
                print(f"export_long: {folder}: input {k}: {e}", file=sys.stderr)
                break
        if inputs is not None:
            cases.append((folder, "conformance", os.path.join(path, "model.onnx"), inputs))
    return cases


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", default=os.path.join(ROOT, "build", "tools", "loom"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--work", default=os.path.join(ROOT, "build-long", "export"))
    ap.add_argument("--models", default=os.environ.get("LOOM_MODEL_DIR", os.path.join(ROOT, "models")))
    ap.add_argument("--targets", default="generic,aarch64,riscv64")
    ap.add_argument("--filter", help="only conformance folders matching this regex")
    ap.add_argument("--no-models", action="store_true")
    ap.add_argument("--no-conformance", action="store_true")
    a = ap.parse_args()
    t_start = time.time()
    loom = os.path.abspath(a.loom)
    targets = a.targets.split(",")
    for t in targets:
        missing = cross_tools_missing(t) if t in CROSS else None
        if missing:
            sys.exit(f"export_long: {missing}")
    os.makedirs(a.work, exist_ok=True)
    work = os.path.abspath(a.work)
    cases = []
    if not a.no_models:
        for m in ("resnet18", "mobilenet_v2"):
            path = os.path.join(a.models, m + ".onnx")
            if not os.path.exists(path):
                sys.exit(f"export_long: {path} missing: run scripts/export-zoo {m}")
            model = onnx.load(path, load_external_data=False)
            init = {i.name for i in model.graph.initializer}
            iname = [i.name for i in model.graph.input if i.name not in init][0]
            cases.append((m, "model", path, [(iname, np.load(os.path.join(a.models, m + ".input.npy")))]))
        bert = os.path.join(work, "bert_small.onnx")
        cases.append(("bert_small", "model", bert, list(make_bert_small(bert, np.random.default_rng(3)).items())))
    if not a.no_conformance:
        if not os.path.isdir(ONNX_TESTS):
            sys.exit(f"export_long: no {ONNX_TESTS}: the conformance subset cannot run")
        cases += conformance_cases(a.filter)
    jobs = [(n, k, m, i, work, loom, targets) for n, k, m, i in cases]
    results = []
    with multiprocessing.Pool(a.jobs) as pool:
        for n, (name, kind, res, secs) in enumerate(pool.imap_unordered(one_case, jobs), 1):
            results.append((name, kind, res, secs))
            marks = " ".join(f"{t}:{res[t][0]}" for t in targets)
            print(f"[{n}/{len(jobs)}] {name} ({secs:.0f} s) {marks}", flush=True)

    # ---- the table ----
    print(f"\nexport-c vs host artifact (max|a-b|/max|b| <= {REL_TOL:g}), targets {', '.join(targets)}")
    print(f"{'model':<16}" + "".join(f"{t:>16}" for t in targets) + f"{'wall s':>10}")
    for name, kind, res, secs in sorted(r for r in results if r[1] == "model"):
        cells = [f"{res[t][1]:.2e}" if res[t][0] == "passed" else res[t][0] for t in targets]
        print(f"{name:<16}" + "".join(f"{c:>16}" for c in cells) + f"{secs:>10.0f}")
    conf = [r for r in results if r[1] == "conformance"]
    if conf:
        print(f"\nconformance CI subset ({len(conf)} tests):")
        print(f"{'':<16}" + "".join(f"{t:>16}" for t in targets))
        for status in ("passed", "refused", "host-fails", "failed"):
            print(f"{status:<16}" + "".join(f"{sum(r[2][t][0] == status for r in conf):>16}" for t in targets))
        reasons = collections.Counter(re.sub(r"\"[^\"]*\"|\d+", "…", r[2][t][1])[:110] for r in conf
                                      for t in targets[:1] if r[2][t][0] == "refused")
        if reasons:
            print("\nwhy export refused (first target), most common first:")
            for why, n in reasons.most_common(12):
                print(f"  {n:4d}  {why}")
    failed = [(r[0], t, r[2][t][1]) for r in results for t in targets if r[2][t][0] == "failed"]
    model_bad = [(r[0], t, r[2][t]) for r in results if r[1] == "model" for t in targets if r[2][t][0] != "passed"]
    for name, t, why in failed[:60]:
        print(f"FAILED {name} [{t}]: {why}")
    for name, t, st in model_bad:
        if st[0] != "failed":
            print(f"FAILED {name} [{t}]: a zoo model must export: {st[0]}: {st[1]}")
    print(f"\nexport_long: {len(results)} cases x {len(targets)} targets, "
          f"{sum(r[2][t][0] == 'passed' for r in results for t in targets)} passed, {len(failed)} failed, "
          f"wall {time.time() - t_start:.0f} s")
    sys.exit(1 if failed or model_bad else 0)


if __name__ == "__main__":
    main()

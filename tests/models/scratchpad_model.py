#!/usr/bin/env python3
"""A zoo model on a scratchpad target (docs/export.md "Scratchpad targets"),
for scripts/test-long:

  1. `loom compile --target-opt local_mem=SIZE` for this host: the same
     outputs as the normal artifact;
  2. `loom export-c --target aarch64 --target-opt local_mem=SIZE`, built
     with the Debian cross compiler and run under qemu-aarch64: the same
     outputs as the normal host artifact;
  3. `loom export-c --target-opt local_mem=SIZE,dma=double` for this host,
     built with tests/cli/test_scratchpad.py's deferred-copy DMA engine
     (every asynchronous copy happens at its wait, the tile NaN from its
     start) and -DPREFIX_LOCAL_MEM_BASE naming an array of SIZE bytes that
     every copy's local end must lie in: the same outputs again.

Metric: max |x - normal| / max |normal| over the output, <= 1e-5.

usage: scratchpad_model.py LOOM MODEL.onnx INPUT.npy WORKDIR [--local-mem 64KiB]
"""
import argparse
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
import test_scratchpad  # noqa: E402  (its deferred-copy DMA engine)
from export_fixtures import (CC, cross_tools_missing, qemu_runner, read_outputs, rel_err,  # noqa: E402
                             weights_files)

REL_TOL = 1e-5


def run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"scratchpad_model: {' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r


def compare(what, got, want):
    if sorted(got) != sorted(want):
        sys.exit(f"scratchpad_model: {what}: outputs {sorted(got)}, expected {sorted(want)}")
    worst = max(rel_err(got[k], want[k]) for k in want)
    print(f"scratchpad_model: {what}: max rel err {worst:.2e} (<= {REL_TOL:g})")
    if worst > REL_TOL:
        sys.exit(f"scratchpad_model: {what}: rel err {worst:.2e} over {REL_TOL:g}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loom")
    ap.add_argument("model")
    ap.add_argument("input")
    ap.add_argument("workdir")
    ap.add_argument("--local-mem", default="64KiB")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    name = os.path.splitext(os.path.basename(a.model))[0]
    opt = f"local_mem={a.local_mem}"

    results = {}
    for tag, extra in (("normal", []), ("scratchpad", ["--target-opt", opt])):
        art, outdir = os.path.join(a.workdir, f"{name}_{tag}.loom"), os.path.join(a.workdir, f"{name}_{tag}_out")
        shutil.rmtree(outdir, ignore_errors=True)
        run([a.loom, "compile", a.model, "-o", art, *extra])
        run([a.loom, "run", art, a.input, "--output-dir", outdir])
        results[tag] = read_outputs(outdir)
    compare(f"{name} host {opt}", results["scratchpad"], results["normal"])

    missing = cross_tools_missing("aarch64")
    if missing:
        sys.exit(f"scratchpad_model: {missing}")
    proj = os.path.join(a.workdir, f"{name}_aarch64")
    run([a.loom, "export-c", a.model, "-o", proj, "--target", "aarch64", "--target-opt", opt, "--name", name,
         "--force"])
    run(["make", "-j2"], cwd=proj)
    outdir = os.path.join(a.workdir, f"{name}_aarch64_out")
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    run([*qemu_runner("aarch64"), os.path.join(proj, "example_main"), *weights_files(proj), a.input, outdir])
    compare(f"{name} exported aarch64 {opt} under qemu", read_outputs(outdir), results["normal"])

    proj = os.path.join(a.workdir, f"{name}_deferred")
    run([a.loom, "export-c", a.model, "-o", proj, "--target-opt", opt + ",dma=double", "--name", name, "--force"])
    for fname, text in ((name + "_dma.h", test_scratchpad.DEFERRED_HEADER),
                        ("deferred_hooks.c", test_scratchpad.DEFERRED_HOOKS), ("spm.h", "extern char PREFIX_spm[];\n")):
        with open(os.path.join(proj, fname), "w") as f:
            f.write(text.replace("PREFIX", name))
    spm_bytes = int(run([a.loom, "target", "--target-opt", opt]).stdout.split("local memory: ")[1].split()[0]) * 1024
    sources = [f for f in (name + ".c", name + "_weights.c") if os.path.exists(os.path.join(proj, f))]
    run([CC, "-std=c11", "-O2", f"-D{name.upper()}_DMA_EXTERNAL", "-I.",
         f"-DSPM_BYTES={spm_bytes}", f"-D{name.upper()}_LOCAL_MEM_BASE={name}_spm", "-include", "spm.h", "-o",
         "deferred_main", "example_main.c", *sources, "deferred_hooks.c", "-lm"], cwd=proj)
    outdir = os.path.join(a.workdir, f"{name}_deferred_out")
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    r = run([os.path.join(proj, "deferred_main"), *weights_files(proj), a.input, outdir])
    print(f"scratchpad_model: {name} dma=double deferred engine: {r.stderr.strip()}")
    compare(f"{name} exported {opt},dma=double, deferred-copy DMA, local memory at PREFIX_LOCAL_MEM_BASE",
            read_outputs(outdir), results["normal"])


if __name__ == "__main__":
    main()

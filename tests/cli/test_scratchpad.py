#!/usr/bin/env python3
"""Scratchpad targets end to end (docs/schedule.md and docs/export.md,
"Scratchpad targets"): `--target-opt local_mem=SIZE` in `loom target`,
`loom compile` and `loom export-c`. A small conv model and an MLP compiled
for the host with a 16 KiB local memory (sync and double-buffered DMA)
give the results of the normal artifact; their C calls the DMA hooks;
exported, the project runs with the default hooks and with counting hooks
of its own (-DPREFIX_DMA_EXTERNAL), and at dma=double with a deferred-copy
engine (every asynchronous copy happens at its wait, the tile NaN until
then), and under qemu-aarch64 when the cross toolchain is installed; bad
values are `loom: error:`.

Metric: max |scratchpad - normal| / max |normal| over each output (<= 1e-5).
Environment: LOOM_BIN (CTest sets it), CC. python3 with numpy and onnx.
(The ResNet-18 runs are in scripts/test-long.)
"""
import os
import unittest

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from export_fixtures import CC, ExportCase, cross_cc, make_cmd, read_outputs, rel_err, save

REL_TOL = 1e-5
LOCAL_MEM = "local_mem=16KiB"


def make_conv(path, rng):
    """Two 3x3 convs (bias, Relu; the second strided) around a depthwise 3x3 conv, and a MaxPool: every
    kernel but the layout transforms staged through the local memory."""
    w1 = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) * 0.2
    b1 = rng.standard_normal((16,)).astype(np.float32) * 0.1
    wd = rng.standard_normal((16, 1, 3, 3)).astype(np.float32) * 0.3
    w2 = rng.standard_normal((16, 16, 3, 3)).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd"], ["d1"], pads=[1, 1, 1, 1], group=16),
             helper.make_node("Conv", ["d1", "w2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("MaxPool", ["c2"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 20, 20])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 5, 5])],
         [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(wd, "wd"),
          numpy_helper.from_array(w2, "w2")])
    return {"x": rng.standard_normal((1, 8, 20, 20)).astype(np.float32)}


def make_mlp(path, rng):
    """MatMul, bias Add, Relu, MatMul."""
    w1 = rng.standard_normal((48, 64)).astype(np.float32) * 0.1
    b1 = rng.standard_normal((64,)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((64, 24)).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 48])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 24])],
         [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(w2, "w2")])
    return {"x": rng.standard_normal((32, 48)).astype(np.float32)}


# Counting hooks for an exported project built with -DCONV_DMA_EXTERNAL:
# memcpy copies that count calls and bytes, printed at exit.
COUNTING_HOOKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long long calls, bytes;
static void report(void) { fprintf(stderr, "dma calls %lld bytes %lld\n", calls, bytes); }
static void count(size_t n) { if (!calls++) atexit(report); bytes += (long long)n; }
void conv_dma_get(void *dst, const void *src, size_t n) { count(n); memcpy(dst, src, n); }
void conv_dma_put(void *dst, const void *src, size_t n) { count(n); memcpy(dst, src, n); }
void conv_dma_get2d(void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  count(row * rows);
  for (size_t r = 0; r < rows; ++r) memcpy((char *)dst + r * ds, (const char *)src + r * ss, row);
}
void conv_dma_put2d(void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  count(row * rows);
  for (size_t r = 0; r < rows; ++r) memcpy((char *)dst + r * ds, (const char *)src + r * ss, row);
}
"""


# A DMA engine as slow as the ABI allows, for a project built with
# -DPREFIX_DMA_EXTERNAL at dma=double: an asynchronous start only records
# the copy in its ticket and fills the destination with NaN; the copy
# happens at the wait. A kernel that read a tile before waiting for it
# would compute with NaN. Blocking copies are memcpy. Counts at exit.
DEFERRED_HEADER = r"""
#include <stddef.h>
typedef struct PREFIX_dma_ticket {
  void *dst;
  const void *src;
  size_t row_bytes, rows, dst_stride, src_stride;
  int in_flight;
} PREFIX_dma_ticket;
"""

DEFERRED_HOOKS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "PREFIX_dma.h"
static long long starts, waits, bytes;
static void report(void) { fprintf(stderr, "dma starts %lld waits %lld bytes %lld\n", starts, waits, bytes); }
#ifdef SPM_BYTES
/* The board's local memory (-DPREFIX_LOCAL_MEM_BASE=PREFIX_spm): every
 * local end of a copy must lie in it. */
char PREFIX_spm[SPM_BYTES] __attribute__((aligned(64)));
static const void *local_end(const void *p, size_t extent) {
  if ((const char *)p < PREFIX_spm || (const char *)p + extent > PREFIX_spm + SPM_BYTES) {
    fprintf(stderr, "local end %p outside the local memory\n", p);
    exit(4);
  }
  return p;
}
#else
static const void *local_end(const void *p, size_t extent) { (void)extent; return p; }
#endif
static void copy_rows(void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  for (size_t r = 0; r < rows; ++r) memcpy((char *)dst + r * ds, (const char *)src + r * ss, row);
}
static void start(PREFIX_dma_ticket *t, void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  /* the ticket's contents before a start are undefined: the start sets them all */
  if (!starts++) atexit(report);
  *t = (PREFIX_dma_ticket){dst, src, row, rows, ds, ss, 1};
  for (size_t r = 0; r < rows; ++r) /* poison: all-ones bytes are a NaN */
    memset((char *)dst + r * ds, 0xff, row);
}
#define EXTENT(row, rows, stride) ((rows) ? ((rows) - 1) * (stride) + (row) : 0)
void PREFIX_dma_get(void *dst, const void *src, size_t n) { memcpy((void *)local_end(dst, n), src, n); }
void PREFIX_dma_put(void *dst, const void *src, size_t n) { memcpy(dst, local_end(src, n), n); }
void PREFIX_dma_get2d(void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  copy_rows((void *)local_end(dst, EXTENT(row, rows, ds)), src, row, rows, ds, ss);
}
void PREFIX_dma_put2d(void *dst, const void *src, size_t row, size_t rows, size_t ds, size_t ss) {
  copy_rows(dst, local_end(src, EXTENT(row, rows, ss)), row, rows, ds, ss);
}
void PREFIX_dma_get_async(PREFIX_dma_ticket *t, void *dst, const void *src, size_t n) {
  start(t, (void *)local_end(dst, n), src, n, 1, n, n);
}
void PREFIX_dma_put_async(PREFIX_dma_ticket *t, void *dst, const void *src, size_t n) {
  start(t, dst, local_end(src, n), n, 1, n, n);
}
void PREFIX_dma_get2d_async(PREFIX_dma_ticket *t, void *dst, const void *src, size_t row, size_t rows, size_t ds,
                            size_t ss) {
  start(t, (void *)local_end(dst, EXTENT(row, rows, ds)), src, row, rows, ds, ss);
}
void PREFIX_dma_put2d_async(PREFIX_dma_ticket *t, void *dst, const void *src, size_t row, size_t rows, size_t ds,
                            size_t ss) {
  start(t, dst, local_end(src, EXTENT(row, rows, ss)), row, rows, ds, ss);
}
void PREFIX_dma_wait(PREFIX_dma_ticket *t) {
  if (!t->in_flight) { fprintf(stderr, "wait without a copy in flight\n"); exit(3); }
  copy_rows(t->dst, t->src, t->row_bytes, t->rows, t->dst_stride, t->src_stride);
  bytes += (long long)(t->row_bytes * t->rows);
  t->in_flight = 0;
  waits++;
}
"""


class ScratchpadTest(ExportCase):
    dir_prefix = "loom-scratchpad-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.models = cls.write_models((("conv", make_conv), ("mlp", make_mlp)), np.random.default_rng(3))
        cls.outputs = {}

    def compiled_outputs(self, model, *target_opt):
        """Outputs of `loom run` on the artifact compiled with --target-opt (none: the normal one)."""
        key = (model,) + target_opt
        if key not in self.outputs:
            path, inputs = self.models[model]
            tag = "_".join([model] + [o.replace("=", "_").replace(",", "_") for o in target_opt])
            art, outdir = os.path.join(self.dir, tag + ".loom"), os.path.join(self.dir, tag + "_out")
            opts = ["--target-opt", ",".join(target_opt)] if target_opt else []
            self.ok("compile", path, "-o", art, *opts)
            self.ok("run", art, *inputs, "--output-dir", outdir)
            self.outputs[key] = read_outputs(outdir)
        return self.outputs[key]

    def assert_same(self, got, want, what):
        self.assertEqual(sorted(got), sorted(want), what)
        for name, w in want.items():
            self.assertEqual(got[name].shape, w.shape, name)
            self.assertLessEqual(rel_err(got[name], w), REL_TOL, f"{what} {name}")

    # ---- loom target ----

    def test_target_describes_local_memory(self):
        out = self.ok("target", "--target-opt", "local_mem=64KiB").stdout
        self.assertIn("local memory: 64 KiB", out)
        self.assertIn("loom_dma_get", out)
        self.assertIn("double-buffered", self.ok("target", "--target-opt", "local_mem=64KiB,dma=double").stdout)
        self.assertNotIn("local memory", self.ok("target").stdout)

    def test_bad_values(self):
        self.err("target", "--target-opt", "local_mem=12", expect=["local_mem=12", "from 1KiB to 1GiB"])
        self.err("target", "--target-opt", "local_mem=lots", expect=["local_mem=lots"])
        self.err("target", "--target-opt", "dma=double", expect=["local_mem=SIZE"])
        self.err("compile", self.models["mlp"][0], "-o", os.path.join(self.dir, "bad.loom"), "--target-opt",
                 "local_mem=64KiB,dma=maybe", expect=["dma=maybe", "sync", "double"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "bad.loom")))

    # ---- loom compile for the host ----

    def test_compiled_matches_normal_artifact(self):
        for model in self.models:
            want = self.compiled_outputs(model)
            self.assert_same(self.compiled_outputs(model, LOCAL_MEM), want, f"{model} {LOCAL_MEM}")
            self.assert_same(self.compiled_outputs(model, LOCAL_MEM, "dma=double"), want, f"{model} dma=double")
            self.assert_same(self.compiled_outputs(model, "local_mem=1KiB"), want, f"{model} local_mem=1KiB")

    def test_generated_c_calls_the_hooks(self):
        c = self.ok("inspect", self.models["conv"][0], "--dump", "c", "--target-opt", LOCAL_MEM).stdout
        self.assertIn("loom_dma_get", c)
        self.assertIn("loom_dma_put", c)
        self.assertIn("local memory plan: ", c)
        self.assertIn("(loom_local_mem + ", c)
        # the convs, the depthwise conv and the pooling each stage their tiles (not the layout transforms)
        kernels = c.split("\nint32_t k")[1:]
        staged = sorted(k.split("(")[0].split("_", 1)[1] for k in kernels if "local memory plan" in k)
        self.assertEqual(staged, ["convnchwc", "convnchwc", "convnchwc", "maxpoolnchwc"])
        self.assertNotIn("loom_dma_get", self.ok("inspect", self.models["conv"][0], "--dump", "c").stdout)

    # ---- loom export-c ----

    def export(self, model, *extra):
        """The project of model at LOCAL_MEM with extra flags (exported once, not built)."""
        out = os.path.join(self.dir, "proj_" + model + "_" + "_".join(e.strip("-").replace("=", "_") for e in extra))
        if not os.path.isdir(out):
            self.ok("export-c", self.models[model][0], "-o", out, "--name", model, "--target-opt", LOCAL_MEM, *extra)
        return out

    def check_project_output(self, proj, model, runner=(), exe="example_main"):
        got, r = self.run_example(proj, self.models[model][1], runner, exe)
        self.assert_same(got, self.compiled_outputs(model), f"exported {model} {runner}")
        return r

    def test_export_default_hooks(self):
        for model in self.models:
            proj = self.export(model)
            with open(os.path.join(proj, model + ".c")) as f:
                src = f.read()
            self.assertIn(f"#define loom_dma_get {model}_dma_get", src)
            self.assertIn(f"#ifndef {model.upper()}_DMA_EXTERNAL", src)
            self.run_cmd(make_cmd(()), cwd=proj)
            self.check_project_output(proj, model)
            names = self.assert_symbols_prefixed(os.path.join(proj, model + ".o"), model + "_")
            self.assertIn(f"{model}_dma_get", names)

    def test_export_counting_hooks(self):
        """The project's own hooks (-DCONV_DMA_EXTERNAL) are the ones called."""
        proj = self.export("conv")
        hooks = os.path.join(proj, "counting_hooks.c")
        with open(hooks, "w") as f:
            f.write(COUNTING_HOOKS)
        exe = os.path.join(proj, "counting_main")
        self.run_cmd([CC, "-std=c11", "-O2", "-DCONV_DMA_EXTERNAL", "-o", exe, "example_main.c", "conv.c",
                      "conv_weights.c", "counting_hooks.c", "-lm"], cwd=proj)
        r = self.check_project_output(proj, "conv", exe="counting_main")
        fields = r.stderr.split()
        self.assertIn("calls", fields, r.stderr)
        calls, nbytes = int(fields[fields.index("calls") + 1]), int(fields[fields.index("bytes") + 1])
        # at least every output element of both convs leaves local memory once
        self.assertGreater(calls, 2)
        self.assertGreaterEqual(nbytes, 4 * (16 * 20 * 20 + 16 * 10 * 10))

    def build_deferred(self, model, cc=CC, spm=False):
        """The dma=double project of `model` built with the deferred-copy engine (-DMODEL_DMA_EXTERNAL);
        with spm, its local buffers placed in a 16 KiB array of the test's (-DMODEL_LOCAL_MEM_BASE),
        which every copy's local end must lie in."""
        proj = self.export(model, "--target-opt", LOCAL_MEM + ",dma=double")
        for name, text in ((model + "_dma.h", DEFERRED_HEADER), ("deferred_hooks.c", DEFERRED_HOOKS),
                           ("spm.h", "extern char PREFIX_spm[];" + chr(10))):
            with open(os.path.join(proj, name), "w") as f:
                f.write(text.replace("PREFIX", model))
        exe = "deferred_main_" + os.path.basename(cc) + ("_spm" if spm else "")
        flags = ["-DSPM_BYTES=16384", f"-D{model.upper()}_LOCAL_MEM_BASE={model}_spm", "-include", "spm.h"] if spm else []
        self.run_cmd([cc, "-std=c11", "-O2", f"-D{model.upper()}_DMA_EXTERNAL", "-I.", *flags, "-o", exe,
                      "example_main.c", model + ".c", model + "_weights.c", "deferred_hooks.c", "-lm"], cwd=proj)
        return proj, exe

    def test_export_deferred_async_dma(self):
        """dma=double against an engine that copies only at the wait and poisons the tile at the start."""
        for model in self.models:
            proj, exe = self.build_deferred(model)
            with open(os.path.join(proj, model + ".c")) as f:
                src = f.read()
            self.assertIn(f"#include \"{model}_dma.h\"", src)
            self.assertIn("loom_dma_wait(&loom_dma_tickets[", src)
            r = self.check_project_output(proj, model, exe=exe)
            fields = r.stderr.split()
            self.assertIn("starts", fields, r.stderr)
            starts, waits = int(fields[fields.index("starts") + 1]), int(fields[fields.index("waits") + 1])
            self.assertGreater(starts, 2)
            self.assertEqual(starts, waits)

    def test_export_local_memory_base(self):
        """-DPREFIX_LOCAL_MEM_BASE places every local buffer in the project's local memory."""
        for model in self.models:
            proj, exe = self.build_deferred(model, spm=True)
            with open(os.path.join(proj, model + ".c")) as f:
                src = f.read()
            self.assertIn(f"#define LOOM_LOCAL_MEM_BASE {model.upper()}_LOCAL_MEM_BASE", src)
            plans = [int(x.split()[0]) for x in src.split("local memory plan: ")[1:]]
            self.assertTrue(plans, "no kernel has a local memory plan")
            self.assertTrue(all(0 < p <= 16384 for p in plans), plans)
            self.check_project_output(proj, model, exe=exe)

    def test_export_aarch64_under_qemu(self):
        runner = self.require_cross("aarch64")
        flags = ("--target", "aarch64", "--target-opt", LOCAL_MEM + ",dma=double")
        proj = self.export("conv", *flags)
        self.run_cmd(make_cmd(flags), cwd=proj)
        self.check_project_output(proj, "conv", runner=runner)
        # the deferred-copy engine too (its project exported for this host: the kernels are the same C)
        proj, exe = self.build_deferred("conv", cc=cross_cc("aarch64"))
        self.check_project_output(proj, "conv", runner=runner, exe=exe)


if __name__ == "__main__":
    unittest.main()

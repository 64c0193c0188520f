#!/usr/bin/env python3
"""`loom export-c` end to end: export small ONNX models, build the project
with `make`, run its example_main on .npy inputs and compare with `loom run`
of the host artifact; the object has no allocation symbols, builds with
-std=c11 -pedantic on gcc and clang, two instances run side by side; bad
arguments fail with `loom: error:` and leave nothing behind.

Metric: max |export - host| / max |host| over each output (<= 1e-5).
Environment: LOOM_BIN (CTest sets it). python3 with numpy and onnx.
"""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOOM = os.environ.get("LOOM_BIN", "loom")
CC = os.environ.get("CC", "cc")
REL_TOL = 1e-5
ALLOC_SYMBOLS = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign"}


def save(path, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "export", inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def make_mlp(path, rng):
    """MatMul, Relu, MatMul, Softmax; the output name is not a C identifier."""
    w1 = rng.standard_normal((64, 96)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((96, 48)).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["z"]), helper.make_node("Softmax", ["z"], ["y:0"], axis=-1)]
    save(path, nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
         [helper.make_tensor_value_info("y:0", TensorProto.FLOAT, [32, 48])],
         [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    return {"x": rng.standard_normal((32, 64)).astype(np.float32)}


def make_conv(path, rng):
    """Conv + bias + Relu, MaxPool, and a second input added: two inputs, two outputs."""
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.2
    b = rng.standard_normal((8,)).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["img", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["pooled"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["pooled", "bias2"], ["sum"])]
    save(path, nodes,
         [helper.make_tensor_value_info("img", TensorProto.FLOAT, [1, 3, 16, 16]),
          helper.make_tensor_value_info("bias2", TensorProto.FLOAT, [1, 8, 8, 8])],
         [helper.make_tensor_value_info("sum", TensorProto.FLOAT, [1, 8, 8, 8]),
          helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 8, 16, 16])],
         [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    return {"img": rng.standard_normal((1, 3, 16, 16)).astype(np.float32),
            "bias2": rng.standard_normal((1, 8, 8, 8)).astype(np.float32)}


def rel_err(got, want):
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


class ExportTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom-export-")
        rng = np.random.default_rng(7)
        cls.models = {}
        for name, make in (("mlp", make_mlp), ("conv", make_conv)):
            path = os.path.join(cls.dir, name + ".onnx")
            inputs = make(path, rng)
            files = []
            for k, v in inputs.items():
                files.append(os.path.join(cls.dir, f"{name}_{k}.npy"))
                np.save(files[-1], v)
            cls.models[name] = (path, files)
        cls.projects = {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom(self, *args):
        return subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=300)

    def ok(self, *args):
        r = self.loom(*args)
        self.assertEqual(r.returncode, 0, f"loom {args}: {r.stderr}")
        return r

    def err(self, *args, expect=()):
        r = self.loom(*args)
        self.assertNotEqual(r.returncode, 0, f"loom {args} succeeded: {r.stdout}")
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        return r

    def run_cmd(self, cmd, cwd=None):
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, f"{cmd}: {r.stdout}{r.stderr}")
        return r

    def project(self, model, *extra):
        """The exported + built project of a model (built once per model and flags)."""
        key = (model,) + extra
        if key not in self.projects:
            out = os.path.join(self.dir, "proj_" + "_".join(k.strip("-") for k in key))
            self.ok("export-c", self.models[model][0], "-o", out, "--name", model, *extra)
            # a cross target's Makefile names its compiler; the host's takes CC
            self.run_cmd(["make"] + ([] if "--target" in extra else ["CC=" + CC]), cwd=out)
            self.projects[key] = out
        return self.projects[key]

    def host_outputs(self, model):
        path, inputs = self.models[model]
        art = os.path.join(self.dir, model + ".loom")
        outdir = os.path.join(self.dir, model + "_host")
        if not os.path.isdir(outdir):
            self.ok("compile", path, "-o", art)
            self.ok("run", art, *inputs, "--output-dir", outdir)
        return {os.path.basename(f): np.load(f) for f in glob.glob(os.path.join(outdir, "*.npy"))}

    def check_matches_host(self, model, *extra, runner=()):
        proj = self.project(model, *extra)
        outdir = tempfile.mkdtemp(dir=self.dir)
        self.run_cmd([*runner, os.path.join(proj, "example_main"), *self.models[model][1], outdir])
        got = {f: np.load(os.path.join(outdir, f)) for f in os.listdir(outdir)}
        want = self.host_outputs(model)
        self.assertEqual(len(got), len(want))
        # loom run and example_main both name files by the output name with
        # every non-identifier character as '_'
        for name, w in want.items():
            self.assertIn(name, got)
            self.assertEqual(got[name].shape, w.shape, name)
            self.assertEqual(got[name].dtype, w.dtype, name)
            self.assertLessEqual(rel_err(got[name], w), REL_TOL, f"{model} {name}")

    # ---- results ----

    def test_mlp_matches_host_artifact(self):
        self.check_matches_host("mlp")

    def test_conv_matches_host_artifact(self):
        self.check_matches_host("conv")

    def test_cmake_project_builds(self):
        if not shutil.which("cmake"):
            self.skipTest("cmake not installed")
        proj = self.project("mlp")
        build = os.path.join(self.dir, "mlp_cmake_build")
        self.run_cmd(["cmake", "-S", proj, "-B", build])
        self.run_cmd(["cmake", "--build", build])
        self.assertTrue(os.path.exists(os.path.join(build, "example_main")))

    # ---- cross targets, run under qemu-user ----

    def check_cross(self, target, package):
        cc, qemu = f"{target}-linux-gnu-gcc", f"qemu-{target}"
        for tool, pkg in ((cc, package), (qemu, "qemu-user")):
            if not shutil.which(tool):
                self.skipTest(f"{tool} not found: install the Debian package {pkg} (scripts/setup does)")
        for model in self.models:
            proj = self.project(model, "--target", target)
            with open(os.path.join(proj, "Makefile")) as f:
                self.assertIn(f"CC = {cc}", f.read())
            self.check_matches_host(model, "--target", target,
                                    runner=[qemu, "-L", f"/usr/{target}-linux-gnu"])

    def test_aarch64_under_qemu(self):
        self.check_cross("aarch64", "gcc-aarch64-linux-gnu")
        with open(os.path.join(self.project("conv", "--target", "aarch64"), "conv.c")) as f:
            self.assertIn("vector_size(16)", f.read())  # 128-bit NEON through GCC vector types

    def test_riscv64_under_qemu(self):
        self.check_cross("riscv64", "gcc-riscv64-linux-gnu")

    # ---- the generated code ----

    def test_objects_do_not_allocate(self):
        for model in self.models:
            proj = self.project(model)
            for obj in (f"{model}.o", f"{model}_weights.o"):
                syms = self.run_cmd(["nm", "-u", os.path.join(proj, obj)]).stdout.split()
                self.assertFalse(ALLOC_SYMBOLS & set(syms), f"{obj} references {ALLOC_SYMBOLS & set(syms)}")

    def test_symbols_carry_the_prefix(self):
        proj = self.project("conv")
        out = self.run_cmd(["nm", "-g", "--defined-only", os.path.join(proj, "conv.o")]).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
        self.assertIn("conv_run", names)
        self.assertEqual([n for n in names if not n.startswith("conv_")], [])

    def test_generic_is_pedantic_c11_on_gcc_and_clang(self):
        compilers = [c for c in ("gcc", "clang") if shutil.which(c)]
        if not compilers:
            self.skipTest("neither gcc nor clang installed")
        for model in self.models:
            proj = self.project(model)
            for cc in compilers:
                for src in (f"{model}.c", f"{model}_weights.c", "example_main.c"):
                    self.run_cmd([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", src,
                                  "-o", os.path.join(self.dir, f"pedantic_{cc}.o")], cwd=proj)

    def test_two_instances_side_by_side(self):
        """Two threads, each with its own workspace and inputs, run conv_run
        interleaved many times; each result equals its serial run bit for bit."""
        proj = self.project("conv")
        src = os.path.join(proj, "two_instances.c")
        with open(src, "w") as f:
            f.write(TWO_INSTANCES)
        exe = os.path.join(proj, "two_instances")
        self.run_cmd([CC, "-std=c11", "-O1", "-o", exe, src, "conv.o", "conv_weights.o", "-lm", "-pthread"],
                     cwd=proj)
        r = self.run_cmd([exe])
        self.assertIn("same", r.stdout)

    def test_bad_workspace_is_a_status(self):
        proj = self.project("mlp")
        src = os.path.join(proj, "bad_workspace.c")
        with open(src, "w") as f:
            f.write(BAD_WORKSPACE)
        exe = os.path.join(proj, "bad_workspace")
        self.run_cmd([CC, "-std=c11", "-o", exe, src, "mlp.o", "mlp_weights.o", "-lm"], cwd=proj)
        self.assertEqual(self.run_cmd([exe]).stdout.split("\n")[:2], ["2 " + "a NULL inputs, outputs or "
                         "workspace pointer, or a NULL tensor pointer in them", "8 misaligned data: tensors need "
                         "their element alignment (some kernels 64 bytes), the workspace 64 bytes"])

    # ---- bad input ----

    def test_unknown_target(self):
        self.err("export-c", self.models["mlp"][0], "-o", os.path.join(self.dir, "t"), "--target", "sparc",
                 expect=["--target", "sparc", "aarch64, riscv64"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "t")))

    def test_cross_target_is_export_only(self):
        self.err("compile", self.models["mlp"][0], "-o", os.path.join(self.dir, "x.loom"), "--target", "riscv64",
                 expect=["--target riscv64", "export-c"])

    def test_unwritable_output_dir(self):
        blocker = os.path.join(self.dir, "a_file")
        open(blocker, "w").close()
        self.err("export-c", self.models["mlp"][0], "-o", os.path.join(blocker, "proj"), expect=["-o", "a_file"])

    def test_existing_non_empty_dir_needs_force(self):
        out = os.path.join(self.dir, "existing")
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "keep.txt"), "w") as f:
            f.write("mine")
        self.err("export-c", self.models["mlp"][0], "-o", out, expect=["-o", "not empty", "--force"])
        self.assertEqual(os.listdir(out), ["keep.txt"])
        self.ok("export-c", self.models["mlp"][0], "-o", out, "--force")
        self.assertIn("model.h", os.listdir(out))
        self.assertNotIn("keep.txt", os.listdir(out))
        self.assertEqual([p for p in os.listdir(self.dir) if ".tmp-" in p or ".old-" in p], [])

    def test_existing_empty_dir_is_used(self):
        out = os.path.join(self.dir, "empty")
        os.makedirs(out, exist_ok=True)
        self.ok("export-c", self.models["mlp"][0], "-o", out, "--name", "m2")
        self.assertEqual(sorted(os.listdir(out)), ["CMakeLists.txt", "Makefile", "example_main.c", "m2.c", "m2.h",
                                                   "m2_weights.c"])

    def test_model_that_does_not_compile_leaves_nothing(self):
        bad = os.path.join(self.dir, "broken.onnx")
        with open(bad, "wb") as f:
            f.write(b"not a model")
        out = os.path.join(self.dir, "never")
        self.err("export-c", bad, "-o", out)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([p for p in os.listdir(self.dir) if p.startswith("never")], [])

    def test_options_not_yet_supported(self):
        m = self.models["mlp"][0]
        out = os.path.join(self.dir, "notyet")
        self.err("export-c", m, "-o", out, "--weights", "file", expect=["--weights file", "not yet"])
        self.err("export-c", m, "-o", out, "--weights", "zip", expect=["--weights", "embed or file"])
        self.err("export-c", m, "-o", out, "--threads", "2", expect=["--threads 2", "not yet"])
        self.err("export-c", m, "-o", out, "--name", "9lives", expect=["--name", "C identifier"])
        self.err("export-c", m, expect=["-o"])
        self.assertFalse(os.path.exists(out))


TWO_INSTANCES = r"""
#include "conv.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NI0 = CONV_INPUT_0_NUMEL, NI1 = CONV_INPUT_1_NUMEL, NO0 = CONV_OUTPUT_0_NUMEL, NO1 = CONV_OUTPUT_1_NUMEL };
typedef struct Instance {
  float in0[NI0], in1[NI1], out0[NO0], out1[NO1], want0[NO0], want1[NO1];
  void *workspace;
  int status, differs;
} Instance;

static int run(Instance *s, float *o0, float *o1) {
  conv_inputs in = {s->in0, s->in1};
  conv_outputs out = {o0, o1};
  return conv_run(&in, &out, s->workspace);
}

static void *loop(void *arg) {
  Instance *s = arg;
  for (int k = 0; k < 200 && !s->status; k++) {
    s->status = run(s, s->out0, s->out1);
    if (memcmp(s->out0, s->want0, sizeof s->out0) || memcmp(s->out1, s->want1, sizeof s->out1)) s->differs = 1;
  }
  return NULL;
}

int main(void) {
  static Instance inst[2];
  for (int i = 0; i < 2; i++) {
    Instance *s = &inst[i];
    for (int j = 0; j < NI0; j++) s->in0[j] = (float)((j * 7 + i * 13) % 17) / 8.0f - 1.0f;
    for (int j = 0; j < NI1; j++) s->in1[j] = (float)((j * 5 + i * 3) % 11) / 4.0f - 1.0f;
    s->workspace = aligned_alloc(CONV_WORKSPACE_ALIGN, (CONV_WORKSPACE_BYTES + 63) / 64 * 64);
    if (run(s, s->want0, s->want1)) return 1;
  }
  if (!memcmp(inst[0].want0, inst[1].want0, sizeof inst[0].want0)) return printf("inputs too alike\n"), 1;
  pthread_t t[2];
  for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, loop, &inst[i]);
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 2; i++) {
    if (inst[i].status) return printf("status %s\n", conv_status_string(inst[i].status)), 1;
    if (inst[i].differs) return printf("instance %d differs\n", i), 1;
    free(inst[i].workspace);
  }
  printf("same\n");
  return 0;
}
"""

BAD_WORKSPACE = r"""
#include "mlp.h"
#include <stdio.h>
#include <stdlib.h>

int main(void) {
  static float x[MLP_INPUT_0_NUMEL], y[MLP_OUTPUT_0_NUMEL];
  mlp_inputs in = {x};
  mlp_outputs out = {y};
  unsigned char *ws = aligned_alloc(64, (MLP_WORKSPACE_BYTES + 64 + 63) / 64 * 64);
  int a = mlp_run(&in, &out, NULL);
  int b = mlp_run(&in, &out, ws + 1);
  printf("%d %s\n%d %s\n", a, mlp_status_string(a), b, mlp_status_string(b));
  free(ws);
  return 0;
}
"""

if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""BYOC end to end (docs/byoc.md): `loom compile --byoc` with the built-in
CBLAS back end and with the out-of-tree example plugin (built here by its own
CMake project), mixed artifacts run and checked against numpy, the profile
marks external kernels, `inspect --dump partitioned`; and every kind of bad
plugin is a `loom: error:` naming it.

Environment (tests/CMakeLists.txt): LOOM_BIN, LOOM_SOURCE_DIR,
LOOM_BYOC_BAD_DIR (where libbyoc_bad_<mode>.so were built) and LOOM_BYOC_RUN_ALLOC
(the allocation counter, tests/byoc/run_alloc.c; unset in a sanitizer build).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx
import onnxruntime as ort

# oneDNN (--byoc dnnl) runs on libgomp's worker threads, which crash
# LeakSanitizer's tracer at exit in the sanitizer build; on one thread (the
# model's: oneDNN follows it) the leak check stays on and the results are
# the same.
SANITIZED = os.environ.get("LOOM_TEST_SANITIZED") == "1"
if SANITIZED:
    os.environ.setdefault("LOOM_NUM_THREADS", "1")

LOOM = os.environ.get("LOOM_BIN", "loom")
SRC = os.environ.get("LOOM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BAD = os.environ.get("LOOM_BYOC_BAD_DIR", ".")
RUN_ALLOC = os.environ.get("LOOM_BYOC_RUN_ALLOC")  # tests/byoc/run_alloc.c, not in a sanitizer build


def dnnl_isa_avx512():
    """Whether oneDNN runs AVX-512 kernels here: the CPU has them and ONEDNN_MAX_CPU_ISA (scripts/test's AVX2
    pass sets it) does not cap them. Below AVX-512, oneDNN 2.6 runs a conv of 4 channels a group on its gemm."""
    with open("/proc/cpuinfo") as f:
        flags = next((line for line in f if line.startswith("flags")), "").split()
    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    return "avx512f" in flags and (cap == "ALL" or cap.startswith("AVX512") or cap.startswith("AVX10"))


def save_model(path, nodes, inputs, outputs, inits):
    g = helper.make_graph(nodes, "m", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="loom-tests")
    m.ir_version = 8
    onnx.save(m, path)


def relu(x):
    return np.maximum(x, 0)


class Byoc(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom-byoc-")
        rng = np.random.default_rng(0)
        d = cls.dir
        # MLP: MatMul + bias Add (cblas.matmul_bias), Relu (Loom), Gemm with transB and C (cblas.gemm),
        # and a batched MatMul of two runtime tensors (cblas, runtime B).
        cls.w1 = rng.standard_normal((16, 32)).astype(np.float32) * 0.3
        cls.b1 = rng.standard_normal(32).astype(np.float32)
        cls.w2 = rng.standard_normal((10, 32)).astype(np.float32) * 0.3
        cls.c2 = rng.standard_normal(10).astype(np.float32)
        save_model(os.path.join(d, "mlp.onnx"), [
            helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
            helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
            helper.make_node("Relu", ["hb"], ["r"], name="relu1"),
            helper.make_node("Gemm", ["r", "w2", "c2"], ["y"], name="fc2", transB=1, alpha=0.5, beta=2.0),
            helper.make_node("MatMul", ["p", "q"], ["z"], name="bmm"),
        ], [("x", [4, 16]), ("p", [2, 3, 4, 8]), ("q", [3, 8, 5])], ["y", "z"],
            {"w1": cls.w1, "b1": cls.b1, "w2": cls.w2, "c2": cls.c2})
        # Add -> Relu chains for the example plugin (two that feed each other merge), then a Sigmoid.
        save_model(os.path.join(d, "addrelu.onnx"), [
            helper.make_node("Add", ["a", "b"], ["s1"], name="add1"),
            helper.make_node("Relu", ["s1"], ["r1"], name="relu1"),
            helper.make_node("Add", ["r1", "c"], ["s2"], name="add2"),
            helper.make_node("Relu", ["s2"], ["r2"], name="relu2"),
            helper.make_node("Sigmoid", ["r2"], ["y"], name="sig"),
        ], [("a", [2, 3, 8]), ("b", [2, 3, 8])], ["y"], {"c": rng.standard_normal((2, 3, 8)).astype(np.float32)})
        cls.c = numpy_helper.to_array(onnx.load(os.path.join(d, "addrelu.onnx")).graph.initializer[0])
        # Convolutions and pools for oneDNN: conv + bias + residual Add + Relu, max pool, grouped strided
        # dilated conv + Clip (relu6), average pool, global average pool.
        cls.convs = {"w1": rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3,
                     "b1": rng.standard_normal(8).astype(np.float32),
                     "w2": rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3,
                     "b2": rng.standard_normal(8).astype(np.float32)}
        save_model(os.path.join(d, "convnet.onnx"), [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Add", ["c1", "res"], ["s1"], name="res1"),
            helper.make_node("Relu", ["s1"], ["r1"], name="relu1"),
            helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", group=2, strides=[2, 2],
                             dilations=[2, 2], pads=[2, 1, 2, 1]),
            helper.make_node("Clip", ["c2", "lo", "hi"], ["k2"], name="relu6"),
            helper.make_node("AveragePool", ["k2"], ["a2"], name="pool2", kernel_shape=[2, 2], pads=[1, 1, 0, 0]),
            helper.make_node("GlobalAveragePool", ["a2"], ["y"], name="gap"),
        ], [("x", [1, 3, 12, 12]), ("res", [1, 8, 12, 12])], ["y"],
            dict(cls.convs, lo=np.array(0, np.float32), hi=np.array(6, np.float32)))
        # Gemms: transB with alpha, beta and a [1, N] C, then Relu (dnnl.gemm_act); transA (cblas only); plain B.
        cls.gemms = {"gw1": rng.standard_normal((32, 16)).astype(np.float32) * 0.3,
                     "gc1": rng.standard_normal((1, 32)).astype(np.float32),
                     "gw2": rng.standard_normal((4, 6)).astype(np.float32),
                     "gw3": rng.standard_normal((16, 8)).astype(np.float32)}
        save_model(os.path.join(d, "gemms.onnx"), [
            helper.make_node("Gemm", ["x", "gw1", "gc1"], ["h"], name="g1", transB=1, alpha=0.5, beta=2.0),
            helper.make_node("Relu", ["h"], ["r"], name="relu1"),
            helper.make_node("Gemm", ["r", "gw2"], ["y1"], name="g2", transA=1),
            helper.make_node("Gemm", ["x", "gw3"], ["y2"], name="g3"),
        ], [("x", [4, 16])], ["y1", "y2"], cls.gemms)
        # Nothing for the example plugin to claim.
        save_model(os.path.join(d, "sigmoid.onnx"), [helper.make_node("Sigmoid", ["a"], ["y"], name="sig")],
                   [("a", [4])], ["y"], {})
        cls.inputs = {"x": rng.standard_normal((4, 16)).astype(np.float32),
                      "p": rng.standard_normal((2, 3, 4, 8)).astype(np.float32),
                      "q": rng.standard_normal((3, 8, 5)).astype(np.float32),
                      "a": rng.standard_normal((2, 3, 8)).astype(np.float32),
                      "b": rng.standard_normal((2, 3, 8)).astype(np.float32),
                      "res": rng.standard_normal((1, 8, 12, 12)).astype(np.float32)}
        cls.inputs["cx"] = rng.standard_normal((1, 3, 12, 12)).astype(np.float32)
        for k, v in cls.inputs.items():
            np.save(os.path.join(d, k + ".npy"), v)
        # The example plugin, built out of tree by its own CMake project.
        ex = os.path.join(d, "example-build")
        subprocess.run(["cmake", "-S", os.path.join(SRC, "examples", "byoc-plugin"), "-B", ex,
                        "-DLOOM_INCLUDE_DIR=" + os.path.join(SRC, "include")], check=True, capture_output=True)
        subprocess.run(["cmake", "--build", ex], check=True, capture_output=True)
        cls.example = os.path.join(ex, "libloom_byoc_add_relu.so")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom(self, *args, env=None):
        return subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=300, env=env)

    def ok(self, *args, env=None):
        r = self.loom(*args, env=env)
        self.assertEqual(r.returncode, 0, f"loom {args}: {r.stderr}")
        return r

    def err(self, *args, expect=(), env=None):
        r = self.loom(*args, env=env)
        self.assertNotEqual(r.returncode, 0, f"loom {args} succeeded: {r.stdout}")
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        return r

    def path(self, name):
        return os.path.join(self.dir, name)

    def run_model(self, art, names, outdir):
        args = ["run", art, "--output-dir", self.path(outdir)]
        for n in names:
            args += ["--input", f"{n}={self.path(n + '.npy')}"]
        self.ok(*args)
        return lambda name: np.load(os.path.join(self.path(outdir), name + ".npy"))

    def check_mlp(self, art, outdir):
        """Runs mlp.onnx's artifact art on x, p, q and compares with numpy."""
        out = self.run_model(art, ["x", "p", "q"], outdir)
        x, p, q = self.inputs["x"], self.inputs["p"], self.inputs["q"]
        y = 0.5 * relu(x @ self.w1 + self.b1) @ self.w2.T + 2.0 * self.c2
        np.testing.assert_allclose(out("y"), y, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out("z"), p @ q, rtol=1e-4, atol=1e-4)

    def test_cblas_mlp(self):
        art = self.path("mlp_cblas.loom")
        self.ok("compile", self.path("mlp.onnx"), "-o", art, "--byoc", "cblas")
        self.check_mlp(art, "out_cblas")
        prof = self.ok("run", art, "--input", f"x={self.path('x.npy')}", "--input", f"p={self.path('p.npy')}",
                       "--input", f"q={self.path('q.npy')}", "--profile").stdout
        self.assertIn("[cblas]", prof)
        self.assertIn("mm1, bias1", prof)  # the ONNX nodes of the external kernel
        meta = self.ok("inspect", art, "--dump", "json").stdout
        self.assertIn('"backend"', meta)
        self.assertIn("libopenblas", meta)

    def test_tune_leaves_external_kernels_alone(self):
        # loom tune --byoc: the back end takes its regions first, only Loom's own kernels are tasks, and
        # the records apply to `compile --byoc --records` with the external kernels unchanged.
        db, art = self.path("mlp_cblas.db"), self.path("mlp_cblas_tuned.loom")
        self.ok("compile", self.path("mlp.onnx"), "-o", self.path("mlp_cblas_plain.loom"), "--byoc", "cblas")
        meta = json.loads(self.ok("inspect", self.path("mlp_cblas_plain.loom"), "--dump", "json").stdout)
        native = [k for k in meta["kernels"] if not k.get("backend")]
        self.assertTrue(native and len(native) < len(meta["kernels"]), meta["kernels"])
        log = self.ok("tune", self.path("mlp.onnx"), "--byoc", "cblas", "--records", db, "--trials", "8").stdout
        self.assertIn(f"tasks 0/{len(native)} ", log)  # not one task per kernel of the model
        self.ok("compile", self.path("mlp.onnx"), "-o", art, "--byoc", "cblas", "--records", db)
        self.check_mlp(art, "out_cblas_tuned")
        tuned = json.loads(self.ok("inspect", art, "--dump", "json").stdout)["kernels"]
        self.assertEqual([k.get("backend") for k in tuned], [k.get("backend") for k in meta["kernels"]])
        # a model the back end takes whole leaves nothing to tune
        save_model(self.path("bmm.onnx"), [helper.make_node("MatMul", ["p", "q"], ["z"], name="bmm")],
                   [("p", [2, 3, 4, 8]), ("q", [3, 8, 5])], ["z"], {})
        self.err("tune", self.path("bmm.onnx"), "--byoc", "cblas", "--records", self.path("bmm.db"),
                 "--trials", "4", expect=("nothing of Loom's to tune",))

    def test_dnnl_convnet(self):
        art = self.path("convnet_dnnl.loom")
        self.ok("compile", self.path("convnet.onnx"), "-o", art, "--byoc", "dnnl")
        args = ["run", art, "--input", f"x={self.path('cx.npy')}", "--input", f"res={self.path('res.npy')}",
                "--output-dir", self.path("out_dnnl")]
        self.ok(*args)
        ref = ort.InferenceSession(self.path("convnet.onnx"), providers=["CPUExecutionProvider"]).run(
            None, {"x": self.inputs["cx"], "res": self.inputs["res"]})[0]
        np.testing.assert_allclose(np.load(os.path.join(self.path("out_dnnl"), "y.npy")), ref, rtol=1e-4, atol=1e-4)
        r = self.ok("inspect", self.path("convnet.onnx"), "--byoc", "dnnl", "--dump", "partitioned").stdout
        # conv + residual Add + Relu is one primitive; the chain of primitives that feed one another is one region
        if dnnl_isa_avx512():
            self.assertIn("region 0 backend dnnl (dnnl.conv_sum_act, dnnl.pool, dnnl.conv_sum_act, dnnl.pool, "
                          "dnnl.pool) 8 nodes", r)
            self.assertNotIn("region 1", r)
            self.assertIn("backend dnnl: 8 nodes claimed, 0 vetoed", r)
        else:
            # oneDNN would run the grouped conv on its gemm, which mallocs at every execute: Loom keeps it
            self.assertIn("region 0 backend dnnl (dnnl.conv_sum_act, dnnl.pool) 4 nodes", r)
            self.assertIn("region 1 backend dnnl (dnnl.pool, dnnl.pool) 2 nodes", r)
            self.assertIn("backend dnnl: 6 nodes claimed, 1 vetoed", r)
        # as many threads as the model: the same results on 1 and 2
        for threads in ("1",) if SANITIZED else ("1", "2"):
            self.ok(*args, "--threads", threads)
            np.testing.assert_allclose(np.load(os.path.join(self.path("out_dnnl"), "y.npy")), ref, rtol=1e-4,
                                       atol=1e-4)
        prof = self.ok("run", art, "--input", f"x={self.path('cx.npy')}", "--input", f"res={self.path('res.npy')}",
                       "--profile").stdout
        self.assertIn("[dnnl]", prof)

    def test_dnnl_mlp(self):
        # dnnl alone: MatMul + bias, Gemm (transB, alpha, beta) as an inner product, the batched runtime MatMul
        art = self.path("mlp_dnnl.loom")
        self.ok("compile", self.path("mlp.onnx"), "-o", art, "--byoc", "dnnl")
        self.check_mlp(art, "out_mlp_dnnl")
        r = self.ok("inspect", self.path("mlp.onnx"), "--byoc", "dnnl", "--dump", "partitioned").stdout
        if not dnnl_isa_avx512():  # oneDNN would run every product on its allocating gemm: Loom keeps them
            self.assertIn("backend dnnl: 0 nodes claimed, 3 vetoed", r)
            return
        self.assertIn("(dnnl.gemm_act) 1 node", r)
        self.assertIn("backend dnnl: 4 nodes claimed", r)
        # a back end listed after one that took everything it matches is no error
        r = self.ok("inspect", self.path("mlp.onnx"), "--byoc", "dnnl,cblas", "--dump", "partitioned").stdout
        self.assertIn("backend cblas: 0 nodes claimed", r)

    def test_dnnl_then_cblas(self):
        # dnnl claims the Gemms with constant B (with the Relu after one), cblas what is left (transA)
        art = self.path("gemms_both.loom")
        self.ok("compile", self.path("gemms.onnx"), "-o", art, "--byoc", "dnnl,cblas")
        out = self.run_model(art, ["x"], "out_both")
        x, g = self.inputs["x"], self.gemms
        r1 = relu(0.5 * x @ g["gw1"].T + 2.0 * g["gc1"])
        np.testing.assert_allclose(out("y1"), r1.T @ g["gw2"], rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(out("y2"), x @ g["gw3"], rtol=1e-4, atol=1e-4)
        r = self.ok("inspect", self.path("gemms.onnx"), "--byoc", "dnnl,cblas", "--dump", "partitioned").stdout
        if not dnnl_isa_avx512():  # dnnl declines its gemm-based inner products: cblas takes all three
            self.assertIn("backend dnnl: 0 nodes claimed, 2 vetoed", r)
            self.assertIn("backend cblas: 3 nodes claimed", r)
            return
        self.assertIn("(dnnl.gemm_act) 2 nodes", r)
        self.assertIn("backend dnnl: 3 nodes claimed", r)
        self.assertIn("backend cblas: 1 node claimed", r)

    @unittest.skipUnless(RUN_ALLOC, "no run_alloc (a sanitizer build owns malloc)")
    def test_runs_allocate_nothing(self):
        # Scratchpads and a region's intermediate tensors (kilobytes) come from the workspace Loom planned:
        # no allocation of 1 KiB or more during a run, on 1 and 2 threads, at every ISA (a conv that oneDNN
        # would run on its gemm, which mallocs, stays with Loom). oneDNN's execute allocates its argument map,
        # about a hundred bytes per primitive; Loom's own kernels nothing; OpenBLAS nothing at these sizes
        # (a product big enough to thread mallocs its job table: test_cblas_threaded_sgemm_allocates_its_job_table).
        cases = [("convnet.onnx", "dnnl"), ("mlp.onnx", "dnnl"), ("mlp.onnx", "cblas"), ("gemms.onnx", "dnnl,cblas")]
        for model, byoc in cases:
            art = self.path(f"alloc_{byoc}_{model}.loom")
            self.ok("compile", self.path(model), "-o", art, "--byoc", byoc)
            for threads in ("1", "2"):
                r = subprocess.run([RUN_ALLOC, art, threads, "1024"], capture_output=True, text=True, timeout=300)
                self.assertEqual(r.returncode, 0, f"{model} --byoc {byoc}, {threads} threads: {r.stdout}{r.stderr}")
                self.assertIn("run_alloc: 5 runs", r.stdout)

    @unittest.skipUnless(RUN_ALLOC, "no run_alloc (a sanitizer build owns malloc)")
    def test_cblas_threaded_sgemm_allocates_its_job_table(self):
        # What the MLP above is too small to show: a product OpenBLAS splits over its threads (64x256x256
        # here) mallocs a job table per sgemm call (level3_thread.c; 512 KiB in Debian's 0.3.21 pthreads
        # build), which the back end cannot avoid (docs/byoc.md, "Threads"). On one thread: nothing.
        model, art = self.path("mm_threads.onnx"), self.path("mm_threads_cblas.loom")
        w = (np.arange(256 * 256, dtype=np.float32).reshape(256, 256) % 7 - 3) * 0.01
        save_model(model, [helper.make_node("MatMul", ["x", "w"], ["y"])], [("x", [64, 256])], ["y"], {"w": w})
        self.ok("compile", model, "-o", art, "--byoc", "cblas")
        r = subprocess.run([RUN_ALLOC, art, "1", "1024"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        if (os.cpu_count() or 1) < 2:
            self.skipTest("one CPU: OpenBLAS does not split the product")
        r = subprocess.run([RUN_ALLOC, art, "2", str(1 << 30)], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        calls, total, largest = (int(v) for v in re.search(
            r"(\d+) allocations, (\d+) bytes, the largest (\d+) bytes", r.stdout).groups())
        # One sgemm call per run, 5 runs: one allocation each, all of one size (the table).
        self.assertEqual((calls, total), (5, 5 * largest), r.stdout)
        self.assertGreaterEqual(largest, 1024, r.stdout)

    def test_inspect_partitioned(self):
        r = self.ok("inspect", self.path("mlp.onnx"), "--byoc", "cblas", "--dump", "partitioned").stdout
        self.assertIn("External(", r)
        self.assertIn("region 0 backend cblas (cblas.matmul_bias) 2 nodes", r)
        self.assertIn("cblas.gemm", r)
        self.assertIn("backend cblas: 4 nodes claimed", r)
        self.assertIn("partition", self.ok("compile", "--dump-list-passes").stdout)
        d = self.ok("compile", self.path("mlp.onnx"), "-o", self.path("d.loom"), "--byoc", "cblas",
                    "--dump-after=partition").stderr
        self.assertIn("after partition", d)
        self.assertIn("External(", d)

    def test_example_plugin(self):
        art = self.path("addrelu_example.loom")
        self.ok("compile", self.path("addrelu.onnx"), "-o", art, "--byoc", self.example)
        out = self.run_model(art, ["a", "b"], "out_example")
        a, b = self.inputs["a"], self.inputs["b"]
        y = 1 / (1 + np.exp(-relu(relu(a + b) + self.c)))
        np.testing.assert_allclose(out("y"), y, rtol=1e-5, atol=1e-6)
        r = self.ok("inspect", self.path("addrelu.onnx"), "--byoc", self.example, "--dump", "partitioned").stdout
        self.assertIn("(example.add_relu, example.add_relu) 4 nodes", r)  # the two chains merged
        prof = self.ok("run", art, "--input", f"a={self.path('a.npy')}", "--input", f"b={self.path('b.npy')}",
                       "--profile").stdout
        self.assertIn("[example]", prof)

    def test_bad_plugins(self):
        m, o = self.path("addrelu.onnx"), self.path("bad.loom")
        lib = lambda mode: os.path.join(BAD, f"libbyoc_bad_{mode}.so")
        self.err("compile", m, "-o", o, "--byoc", self.path("missing.so"), expect=["missing.so", "cannot load"])
        self.err("compile", m, "-o", o, "--byoc", "nope", expect=["nope", "built in: cblas"])
        self.err("compile", m, "-o", o, "--byoc", lib("abi"), expect=["libbyoc_bad_abi.so", "ABI version 1, expected 2"])
        self.err("compile", m, "-o", o, "--byoc", lib("nosym"), expect=["libbyoc_bad_nosym.so", "loom_byoc_register"])
        # A sanitizer build reports the child's crash on stderr first: the error comes after it.
        r = self.loom("compile", m, "-o", o, "--byoc", lib("crash"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('loom: error: compile: BYOC back end "bad": codegen of region 0', r.stderr)
        self.err("compile", m, "-o", o, "--byoc", lib("badc"), expect=['back end "bad"', "does not compile"])
        # a back end that declines every match leaves the model to Loom (dnnl does so below AVX-512 for matmuls)
        self.ok("compile", m, "-o", self.path("vetoed.loom"), "--byoc", lib("veto"))
        r = self.ok("inspect", m, "--byoc", lib("veto"), "--dump", "partitioned").stdout
        self.assertNotIn("External(", r)
        self.assertRegex(r, r"backend bad: 0 nodes claimed, [1-9][0-9]* vetoed by supports\(\)")
        self.err("compile", self.path("sigmoid.onnx"), "-o", o, "--byoc", self.example,
                 expect=['back end "example" claimed nothing', "example.add_relu"])
        self.assertFalse(os.path.exists(o))

    def test_blob_form(self):
        # codegen returns a blob and a runtime entry; init runs at load, run per call
        art = self.path("addrelu_blob.loom")
        self.ok("compile", self.path("addrelu.onnx"), "-o", art, "--byoc", os.path.join(BAD, "libbyoc_bad_blob.so"))
        out = self.run_model(art, ["a", "b"], "out_blob")
        a, b = self.inputs["a"], self.inputs["b"]
        np.testing.assert_allclose(out("y"), 1 / (1 + np.exp(-relu(relu(a + b) + self.c))), rtol=1e-5, atol=1e-6)
        meta = self.ok("inspect", art, "--dump", "json").stdout
        self.assertIn('"runtime_entry"', meta)
        self.assertIn("bad_relu_runtime", meta)
        prof = self.ok("run", art, "--input", f"a={self.path('a.npy')}", "--input", f"b={self.path('b.npy')}",
                       "--profile").stdout
        self.assertIn("[bad]", prof)
        env = dict(os.environ, LOOM_TEST_BYOC_INIT_FAIL="1")
        self.err("run", art, "--input", f"a={self.path('a.npy')}", "--input", f"b={self.path('b.npy')}", env=env,
                 expect=['BYOC back end "bad": init of kernel', "code 7"])

    def test_threads_reach_back_ends(self):
        # the model's thread count (loom run --threads) reaches the C form's function and the blob form's init
        rt = self.path("libthreads_runtime.so")
        shutil.copy(self.example, rt)
        ins = ["--input", f"a={self.path('a.npy')}", "--input", f"b={self.path('b.npy')}"]
        env = dict(os.environ, LOOM_TEST_BYOC_RUNTIME=rt, LOOM_TEST_BYOC_EXPECT_THREADS="3")
        c_art, blob_art = self.path("threads_c.loom"), self.path("threads_blob.loom")
        self.ok("compile", self.path("addrelu.onnx"), "-o", c_art, "--byoc", os.path.join(BAD, "libbyoc_bad_runtime.so"),
                env=env)
        self.ok("compile", self.path("addrelu.onnx"), "-o", blob_art, "--byoc",
                os.path.join(BAD, "libbyoc_bad_blob.so"))
        if SANITIZED:
            return  # LOOM_NUM_THREADS=1 there; the kernels' checks still compiled and loaded above
        self.ok("run", c_art, *ins, "--threads", "3")
        self.err("run", c_art, *ins, "--threads", "2", expect=["external back end"])
        self.ok("run", blob_art, *ins, "--threads", "3", env=env)
        self.err("run", blob_art, *ins, "--threads", "2", env=env, expect=['BYOC back end "bad": init of kernel', "code 9"])

    def test_relocated_loom_finds_dnnl_runtime(self):
        # The artifact names libloom_byoc_dnnl_rt.so by file name, not by the build's path: a Loom moved
        # elsewhere (bin/loom, lib/the runtime, as an install lays them out) compiles and runs it; without
        # the library the run is an error naming it and where Loom looked.
        lib = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(LOOM))), "libloom_byoc_dnnl_rt.so")
        prefix = self.path("moved")
        os.makedirs(os.path.join(prefix, "bin"), exist_ok=True)
        os.makedirs(os.path.join(prefix, "lib"), exist_ok=True)
        loom = shutil.copy(LOOM, os.path.join(prefix, "bin", "loom"))
        moved_lib = shutil.copy(lib, os.path.join(prefix, "lib"))
        art = self.path("moved_convnet.loom")
        env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LOOM_BYOC_DNNL_RUNTIME")}
        run = lambda *a: subprocess.run([loom, *a], capture_output=True, text=True, timeout=300, env=env)
        r = run("compile", self.path("convnet.onnx"), "-o", art, "--byoc", "dnnl")
        self.assertEqual(r.returncode, 0, r.stderr)
        meta = json.loads(run("inspect", art, "--dump", "json").stdout)
        meta = meta.get("metadata", meta)
        self.assertEqual([rt["library"] for rt in meta["byoc_runtimes"]], ["libloom_byoc_dnnl_rt.so"])
        args = ["run", art, "--input", f"x={self.path('cx.npy')}", "--input", f"res={self.path('res.npy')}"]
        r = run(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        os.remove(moved_lib)
        r = run(*args)
        self.assertNotEqual(r.returncode, 0)
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for e in ['BYOC back end "dnnl"', '"libloom_byoc_dnnl_rt.so"', "cannot be loaded", os.path.join(prefix, "bin")]:
            self.assertIn(e, r.stderr)

    def test_missing_runtime_library(self):
        rt = self.path("libfake_runtime.so")
        shutil.copy(self.example, rt)  # any loadable library stands in for a vendor runtime
        env = dict(os.environ, LOOM_TEST_BYOC_RUNTIME=rt)
        art = self.path("needs_runtime.loom")
        self.ok("compile", self.path("addrelu.onnx"), "-o", art, "--byoc",
                os.path.join(BAD, "libbyoc_bad_runtime.so"), env=env)
        self.run_model(art, ["a", "b"], "out_rt")
        os.remove(rt)
        self.err("run", art, "--input", f"a={self.path('a.npy')}", "--input", f"b={self.path('b.npy')}",
                 expect=['back end "bad"', "libfake_runtime.so", "cannot be loaded"])


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""Tests of the `loom` command line (run, inspect, compile's availability).

Environment: LOOM_BIN (the loom binary) and LOOM_MAKE_TEST_ARTIFACT (writes
model.loom computing y = relu(x + w) for x: float32[2, 3], plus copies for
another target and another Loom version). CTest sets both (tests/CMakeLists.txt).
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

import numpy as np

LOOM = os.environ.get("LOOM_BIN", "loom")
MAKER = os.environ.get("LOOM_MAKE_TEST_ARTIFACT")


class LoomCli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom-cli-")
        out = subprocess.run([MAKER, cls.dir], check=True, capture_output=True, text=True).stdout
        cls.w = np.array([float(v) for v in out.split()], dtype=np.float32).reshape(2, 3)
        cls.model = os.path.join(cls.dir, "model.loom")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom(self, *args):
        return subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=60)

    def ok(self, *args):
        r = self.loom(*args)
        self.assertEqual(r.returncode, 0, f"loom {args}: {r.stderr}")
        return r

    def err(self, *args, expect=(), code=None):
        r = self.loom(*args)
        self.assertNotEqual(r.returncode, 0, f"loom {args} succeeded: {r.stdout}")
        if code is not None:
            self.assertEqual(r.returncode, code)
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        return r

    def npy(self, name, a):
        p = os.path.join(self.dir, name)
        np.save(p, a)
        return p

    def fresh_dir(self, name):
        d = os.path.join(self.dir, name)
        shutil.rmtree(d, ignore_errors=True)
        return d

    def reference(self, x):
        return np.maximum(x + self.w, 0)

    # ---- run ----

    def test_run_positional_writes_outputs(self):
        x = np.arange(-3, 3, dtype=np.float32).reshape(2, 3)
        out = self.fresh_dir("out_pos")
        r = self.ok("run", self.model, self.npy("x1.npy", x), "--output-dir", out)
        # the output "y:0/out" becomes a file-safe name
        self.assertEqual(sorted(os.listdir(out)), ["y_0_out.npy"])
        y = np.load(os.path.join(out, "y_0_out.npy"))
        self.assertEqual(y.dtype, np.float32)
        np.testing.assert_array_equal(y, self.reference(x))
        self.assertIn("wrote", r.stdout)

    def test_run_named_input_and_existing_dir(self):
        x = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
        out = self.fresh_dir("out_named")
        os.mkdir(out)
        self.ok("run", self.model, "--input", "x=" + self.npy("x2.npy", x), "--output-dir=" + out)
        np.testing.assert_array_equal(np.load(os.path.join(out, "y_0_out.npy")), self.reference(x))

    def pb(self, name, a, tensor_name="t"):
        from onnx import numpy_helper
        p = os.path.join(self.dir, name)
        with open(p, "wb") as f:
            f.write(numpy_helper.from_array(a, tensor_name).SerializeToString())
        return p

    def test_run_pb_in_and_out(self):
        from onnx import numpy_helper, load_tensor
        x = np.array([[1, -2, 3], [-4, 5, -6]], dtype=np.float32)
        out = self.fresh_dir("out_pb")
        self.ok("run", self.model, "--input", "x=" + self.pb("x.pb", x), "--output-dir", out, "--output-format", "pb")
        self.assertEqual(sorted(os.listdir(out)), ["y_0_out.pb"])
        t = load_tensor(os.path.join(out, "y_0_out.pb"))
        self.assertEqual(t.name, "y:0/out")  # the real output name, not the file name
        np.testing.assert_array_equal(numpy_helper.to_array(t), self.reference(x))
        # .npy and .pb inputs give the same result; npy stays the default output
        out2 = self.fresh_dir("out_pb2")
        self.ok("run", self.model, self.pb("x2.pb", x), "--output-dir", out2)
        np.testing.assert_array_equal(np.load(os.path.join(out2, "y_0_out.npy")), self.reference(x))

    def test_run_onnx_specializes_shape_inputs(self):
        """`loom run MODEL.onnx` compiles for the given inputs: Reshape's target
        shape is a graph input, so each shape value gets its own kernels."""
        from onnx import helper, TensorProto
        g = helper.make_graph(
            [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Relu", ["r"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
             helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        path = os.path.join(self.dir, "reshape.onnx")
        with open(path, "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
        for shape in ([3, 4], [4, -1]):
            out = self.fresh_dir("out_spec")
            r = self.ok("run", path, self.npy("xs.npy", x), self.pb("s.pb", np.array(shape, dtype=np.int64)),
                        "--output-dir", out, "--json")
            report = json.loads(r.stdout.splitlines()[-1])
            self.assertEqual(report["model"], path)
            self.assertEqual(report["compiled_in"], ["shape"])
            np.testing.assert_array_equal(np.load(os.path.join(out, "y.npy")), np.maximum(x.reshape(shape), 0))
        self.err("run", path, self.npy("xs.npy", x), self.pb("s.pb", np.array([5, 5], dtype=np.int64)),
                 expect=("Reshape",))
        self.err("run", path, "--input", "nope=" + self.npy("xs.npy", x), expect=("no input named \"nope\"",))

    def test_run_onnx_compiles_in_only_what_decides_shapes(self):
        """Only the If condition and the shape an If branch reshapes to are
        compiled in (the shape is found once the branch is inlined); Clip's
        float bounds stay runtime inputs, so new bounds need no new values
        compiled in."""
        from onnx import helper, TensorProto
        def branch(name, op):
            nodes = [helper.make_node("Reshape", ["x", "shape"], [name + "_r"]),
                     helper.make_node(op, [name + "_r"], [name + "_y"])]
            return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, None)])
        g = helper.make_graph(
            [helper.make_node("If", ["cond"], ["b"], then_branch=branch("then", "Neg"), else_branch=branch("else", "Abs")),
             helper.make_node("Clip", ["b", "lo", "hi"], ["y"])], "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
             helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
             helper.make_tensor_value_info("shape", TensorProto.INT64, [2]),
             helper.make_tensor_value_info("lo", TensorProto.FLOAT, []),
             helper.make_tensor_value_info("hi", TensorProto.FLOAT, [])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        path = os.path.join(self.dir, "if_clip.onnx")
        with open(path, "wb") as f:
            f.write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
        x = np.arange(-6, 6, dtype=np.float32).reshape(2, 6)
        for cond, lo, hi in ((True, -3.5, 2.0), (False, 1.0, 4.5)):
            out = self.fresh_dir("out_if")
            r = self.ok("run", path, self.npy("xi.npy", x), self.pb("c.pb", np.array(cond)),
                        self.pb("sh.pb", np.array([3, 4], dtype=np.int64)), self.pb("lo.pb", np.array(lo, dtype=np.float32)),
                        self.pb("hi.pb", np.array(hi, dtype=np.float32)), "--output-dir", out, "--json")
            self.assertEqual(json.loads(r.stdout.splitlines()[-1])["compiled_in"], ["cond", "shape"])
            b = -x.reshape(3, 4) if cond else np.abs(x.reshape(3, 4))
            np.testing.assert_array_equal(np.load(os.path.join(out, "y.npy")), np.clip(b, lo, hi))

    def test_bad_pb_files(self):
        x = np.zeros((2, 3), dtype=np.float32)
        self.err("run", self.model, self.pb("wrong.pb", x.astype(np.float64)), expect=("float64",))
        bad = os.path.join(self.dir, "bad.pb")
        with open(bad, "wb") as f:
            f.write(b"\x0a\xff\xff\xff")
        self.err("run", self.model, bad, expect=("bad.pb", "TensorProto"))
        self.err("run", self.model, os.path.join(self.dir, "missing.pb"), expect=("missing.pb",))
        self.err("run", self.model, self.pb("x3.pb", x), "--output-format", "csv", expect=("npy or pb",), code=2)

    def test_run_without_output_dir_prints_summary(self):
        x = np.ones((2, 3), dtype=np.float32)
        r = self.ok("run", self.model, self.npy("x3.npy", x))
        self.assertIn("output y:0/out: float32 [2, 3]", r.stdout)
        self.assertIn("median", r.stdout)

    def test_repeat_json_last_line(self):
        x = np.ones((2, 3), dtype=np.float32)
        r = self.ok("run", self.model, self.npy("x4.npy", x), "--repeat", "7", "--json", "--threads", "2")
        last = r.stdout.strip().splitlines()[-1]
        j = json.loads(last)
        self.assertEqual(j["repeat"], 7)
        self.assertEqual(j["warmup"], 1)
        self.assertEqual(j["threads"], 2)
        self.assertLessEqual(j["min_ms"], j["median_ms"])
        self.assertGreaterEqual(j["min_ms"], 0)
        self.assertEqual(j["outputs"][0]["name"], "y:0/out")
        self.assertEqual(j["outputs"][0]["shape"], [2, 3])

    def test_profile(self):
        x = np.ones((2, 3), dtype=np.float32)
        r = self.ok("run", self.model, self.npy("x5.npy", x), "--repeat", "4", "--profile")
        self.assertIn("add_w", r.stdout)
        self.assertIn("Add_0, Identity_1", r.stdout)
        self.assertIn("relu_p", r.stdout)
        r = self.ok("run", self.model, self.npy("x5.npy", x), "--repeat", "4", "--profile", "--json")
        j = json.loads(r.stdout.strip().splitlines()[-1])
        prof = j["profile"]
        self.assertEqual([p["kernel"] for p in prof], ["add_w", "relu_p"])
        self.assertEqual(prof[0]["nodes"], ["Add_0", "Identity_1"])
        self.assertEqual([p["calls"] for p in prof], [4, 4])

    def test_target(self):
        t = self.ok("target").stdout
        for key in ("target:", "vector:", "cores:", "l1d:", "l2:", "l3:", "clock:", "FLOP/cycle", "peak:"):
            self.assertIn(key, t)
        t = self.ok("target", "--target", "x86_64-avx2", "--target-opt", "l2=2MiB,cores=8").stdout
        self.assertIn("target: x86_64-avx2", t)
        self.assertIn("vector: 256 bits, 16 registers", t)
        self.assertIn("cores: 8", t)
        self.assertIn("l2: 2048 KiB", t)
        t = self.ok("target", "--target", "x86_64-sse2").stdout
        self.assertIn("target: x86_64-sse2", t)
        self.assertIn("vector: 128 bits, 16 registers", t)
        self.err("target", "--target-opt", "l2=lots", expect=["l2=lots", "expected a size"])
        self.err("target", "--target-opt", "warp=4", expect=["unknown key \"warp\""])
        self.err("target", "--target", "riscv", expect=["riscv", "x86_64-sse2", "x86_64-avx2", "x86_64-avx512"])

    def test_compile_sse2(self):
        """--target x86_64-sse2: 128-bit SSE2 code (no AVX, no FMA) whose
        artifact needs no ISA feature, so it runs on any x86-64 CPU; the
        result matches numpy."""
        try:
            import onnx
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            self.skipTest("the onnx package is not installed (scripts/setup)")
        import platform
        if platform.machine() not in ("x86_64", "AMD64"):
            self.skipTest("x86_64 targets need an x86_64 machine")
        M, K, N = 5, 40, 36
        w = np.linspace(-0.1, 0.1, K * N, dtype=np.float32).reshape(K, N)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Tanh", ["h"], ["t"]),
             helper.make_node("Softmax", ["t"], ["y"], axis=-1)], "sse2",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])],
            [numpy_helper.from_array(w, "w")])
        src = os.path.join(self.dir, "sse2.onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), src)
        art = os.path.join(self.dir, "sse2.loom")
        self.ok("compile", src, "-o", art, "--target", "x86_64-sse2")
        info = self.ok("inspect", art).stdout
        self.assertIn("target x86_64 (runs here", info)
        x = np.linspace(-3, 3, M * K, dtype=np.float32).reshape(M, K)
        out = self.fresh_dir("out_sse2")
        self.ok("run", art, self.npy("sse2_x.npy", x), "--output-dir", out)
        t = np.tanh(x.astype(np.float64) @ w.astype(np.float64))
        e = np.exp(t - t.max(axis=-1, keepdims=True))
        np.testing.assert_allclose(np.load(os.path.join(out, "y.npy")), e / e.sum(axis=-1, keepdims=True),
                                   rtol=1e-5, atol=1e-6)

    def test_profile_flops(self):
        # The hand-made artifact says add_w does 6 FLOPs and nothing for relu_p.
        x = np.ones((2, 3), dtype=np.float32)
        r = self.ok("run", self.model, self.npy("x6.npy", x), "--repeat", "3", "--profile")
        self.assertIn("GFLOP/s", r.stdout)
        self.assertIn("%peak", r.stdout)
        self.assertIn("GFLOP per run", r.stdout)
        r = self.ok("run", self.model, self.npy("x6.npy", x), "--repeat", "3", "--profile", "--json", "--threads", "2")
        report = json.loads(r.stdout.strip().splitlines()[-1])
        prof = report["profile"]
        self.assertEqual([p["flops"] for p in prof], [6, 0])
        add = prof[0]
        self.assertGreater(add["gflops"], 0)
        self.assertAlmostEqual(add["gflops"], 6 / (add["avg_ms"] * 1e6), delta=1e-9 + 1e-6 * add["gflops"])
        # percent of this host's peak per core (`loom target`: FLOP/cycle x
        # the clock, timed in each process) x 2 threads
        peak = report["peak_gflops_per_thread"]
        self.assertGreater(peak, 0)
        self.assertAlmostEqual(add["peak_pct"], 100 * add["gflops"] / (2 * peak), delta=1e-6 * add["peak_pct"] + 1e-12)
        self.assertIsNone(prof[1]["gflops"])
        self.assertIsNone(prof[1]["peak_pct"])

    def test_profile_matmul_flops_compiled(self):
        # A compiled MatMul: its kernel's FLOP count is exactly 2 * M * N * K.
        try:
            import onnx
            from onnx import TensorProto, helper, numpy_helper
        except ImportError:
            self.skipTest("the onnx package is not installed (scripts/setup)")
        M, K, N = 6, 40, 24
        w = np.linspace(-1, 1, K * N, dtype=np.float32).reshape(K, N)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "w"], ["y"], name="MatMul_0")], "mm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [M, K])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [M, N])],
            [numpy_helper.from_array(w, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
        src = os.path.join(self.dir, "mm.onnx")
        onnx.save(model, src)
        art = os.path.join(self.dir, "mm.loom")
        self.ok("compile", src, "-o", art)
        x = np.linspace(-2, 2, M * K, dtype=np.float32).reshape(M, K)
        out = self.fresh_dir("out_mm")
        r = self.ok("run", art, self.npy("mm_x.npy", x), "--repeat", "3", "--profile", "--json",
                    "--threads", "1", "--output-dir", out)
        np.testing.assert_allclose(np.load(os.path.join(out, "y.npy")), x @ w, rtol=1e-5, atol=1e-5)
        report = json.loads(r.stdout.strip().splitlines()[-1])
        prof = report["profile"]
        mm = [p for p in prof if "MatMul_0" in p["nodes"]]
        self.assertEqual(len(mm), 1, prof)
        self.assertEqual(mm[0]["flops"], 2 * M * N * K)
        self.assertGreater(mm[0]["gflops"], 0)
        self.assertGreater(mm[0]["peak_pct"], 0)
        r = self.ok("inspect", art, "--dump", "json")
        kernels = json.loads(r.stdout)["kernels"]
        self.assertIn(2 * M * N * K, [k.get("flops") for k in kernels])
        # The profile names the ISA the kernels were built for, and rates
        # them against that ISA's peak: built for SSE2 (128-bit vectors), the
        # peak per cycle is below the host's own wherever the host has AVX
        # (per cycle: each process times the clock, which a busy host skews).
        host_peak = report["peak_flops_per_cycle"]
        art2 = os.path.join(self.dir, "mm_sse2.loom")
        self.ok("compile", src, "-o", art2, "--target", "x86_64-sse2")
        r = self.ok("run", art2, self.npy("mm_x.npy", x), "--repeat", "2", "--profile", "--threads", "1")
        self.assertIn("target x86_64-sse2 (kernels built for x86_64)", r.stdout)
        r = self.ok("run", art2, self.npy("mm_x.npy", x), "--repeat", "2", "--profile", "--json", "--threads", "1")
        report2 = json.loads(r.stdout.strip().splitlines()[-1])
        self.assertEqual(report2["target"], "x86_64-sse2")
        self.assertEqual(report2["artifact_target"], "x86_64")
        host_bits = int(self.ok("target").stdout.split("vector: ")[1].split(" ")[0])
        if host_bits > 128:
            self.assertLess(report2["peak_flops_per_cycle"], host_peak)

    # ---- run: bad input, never a partial output ----

    def run_fails(self, args, expect, out_name):
        out = self.fresh_dir(out_name)
        self.err("run", self.model, *args, "--output-dir", out, expect=expect)
        self.assertEqual(os.listdir(out) if os.path.isdir(out) else [], [])

    def test_wrong_shape(self):
        p = self.npy("bad_shape.npy", np.zeros((3, 2), dtype=np.float32))
        self.run_fails([p], ['input "x"', "expected float32 [2, 3], got float32 [3, 2]", "bad_shape.npy"], "o1")

    def test_wrong_dtype(self):
        p = self.npy("bad_dtype.npy", np.zeros((2, 3), dtype=np.float64))
        self.run_fails([p], ['input "x"', "expected float32 [2, 3], got float64 [2, 3]"], "o2")

    def test_wrong_name(self):
        p = self.npy("good.npy", np.zeros((2, 3), dtype=np.float32))
        self.run_fails(["--input", "z=" + p], ['no input named "z"', '"x"'], "o3")

    def test_missing_input(self):
        self.run_fails([], ['missing input "x"', "float32 [2, 3]"], "o4")

    def test_too_many_inputs(self):
        p = self.npy("good.npy", np.zeros((2, 3), dtype=np.float32))
        self.run_fails([p, p], ["2 positional input files", "1 inputs"], "o5")
        self.run_fails([p, "--input", "x=" + p], ['input "x" is given twice'], "o6")

    def test_bad_npy_files(self):
        fortran = self.npy("fortran.npy", np.asfortranarray(np.zeros((2, 3), dtype=np.float32)))
        self.run_fails([fortran], ["Fortran"], "o7")
        big = self.npy("big.npy", np.zeros((2, 3), dtype=">f4"))
        self.run_fails([big], ["big-endian"], "o8")
        garbage = os.path.join(self.dir, "garbage.npy")
        with open(garbage, "wb") as f:
            f.write(b"not numpy at all")
        self.run_fails([garbage], ["garbage.npy", "not a .npy file"], "o9")
        self.run_fails([os.path.join(self.dir, "absent.npy")], ["absent.npy"], "o10")

    def test_unwritable_output_dir(self):
        p = self.npy("good.npy", np.zeros((2, 3), dtype=np.float32))
        afile = os.path.join(self.dir, "a_file")
        open(afile, "w").close()
        self.err("run", self.model, p, "--output-dir", afile, expect=["not a directory"])
        self.err("run", self.model, p, "--output-dir", os.path.join(afile, "sub"), expect=["output directory"])
        if os.geteuid() != 0:  # root writes anywhere
            ro = self.fresh_dir("readonly")
            os.mkdir(ro)
            os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
            try:
                self.err("run", self.model, p, "--output-dir", ro, expect=["not writable"])
                self.assertEqual(os.listdir(ro), [])
            finally:
                os.chmod(ro, stat.S_IRWXU)

    def test_artifact_errors(self):
        p = self.npy("good.npy", np.zeros((2, 3), dtype=np.float32))
        self.err("run", os.path.join(self.dir, "nope.loom"), p, expect=["nope.loom"])
        self.err("run", os.path.join(self.dir, "other_target.loom"), p,
                 expect=['compiled for target "aarch64"', "this machine is"])
        self.err("run", os.path.join(self.dir, "other_version.loom"), p, expect=["Loom 7.0.0", "recompile"])
        with open(self.model, "rb") as f:
            data = f.read()
        cut = os.path.join(self.dir, "cut.loom")
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        self.err("run", cut, p, expect=["truncated"])
        self.err("run", p, p, expect=["not a Loom artifact"])

    def test_usage_errors(self):
        p = self.npy("good.npy", np.zeros((2, 3), dtype=np.float32))
        self.err("run", self.model, p, "--bogus", expect=['unknown flag "--bogus"'], code=2)
        self.err("run", self.model, p, "--repeat", "0", expect=["--repeat"], code=2)
        self.err("run", self.model, p, "--threads", "x", expect=["--threads"], code=2)
        self.err("run", self.model, p, "--input", "x", expect=["NAME=FILE (.npy or .pb)"], code=2)
        self.err("run", self.model, p, "--output-dir", expect=["needs a value"], code=2)
        self.err("run", expect=["missing OUT.loom"], code=2)
        self.err("frobnicate", expect=['unknown command "frobnicate"'], code=2)
        self.err(expect=["missing command"], code=2)
        self.err("inspect", self.model, "--dump", "bogus", expect=["--dump"], code=2)
        self.err("compile", "m.onnx", "-o", "x.loom", "--opt-level", "5", expect=["--opt-level"], code=2)
        self.err("compile", "m.onnx", "-o", "x.loom", "--what", expect=['unknown flag "--what"'], code=2)

    # ---- --dump-before / --dump-after ----

    DUMP_HEADER = re.compile(r"^# ---- (before|after) (\w+) \((graph|lowering) step (\d+)\)(?: kernel (\S+))? ----$", re.M)

    def conv_bn_model(self):
        """y = relu(batchnorm(conv(x))): fold_batchnorm folds the BN into the conv."""
        try:
            from onnx import TensorProto, helper, numpy_helper
            import onnx
        except ImportError:
            self.skipTest("the onnx package is not installed (scripts/setup)")
        path = os.path.join(self.dir, "conv_bn.onnx")
        if os.path.exists(path):
            return path
        rng = np.random.default_rng(0)
        inits = [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")]
        for name, v in (("scale", 1.5), ("shift", 0.25), ("mean", 0.1), ("var", 2.0)):
            inits.append(numpy_helper.from_array(np.full(4, v, dtype=np.float32), name))
        graph = helper.make_graph(
            [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"], ["b"], name="bn"),
             helper.make_node("Relu", ["b"], ["y"], name="relu")], "conv_bn",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], inits)
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), path)
        return path

    def dump_sections(self, text):
        """[(side, pass, level, step, kernel, body)] in the order printed."""
        heads = list(self.DUMP_HEADER.finditer(text))
        out = []
        for i, h in enumerate(heads):
            end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
            out.append((h[1], h[2], h[3], int(h[4]), h[5], text[h.end():end].lstrip("\n")))
        return out

    def pass_list(self):
        """[(level, name)] as --dump-list-passes prints them."""
        passes, level = [], None
        for line in self.ok("inspect", "--dump-list-passes").stdout.splitlines():
            if line.endswith("in order):"):
                level = line.split()[0]
            elif line.startswith("  "):
                passes.append((level, line.split()[0]))
        return passes

    def test_dump_list_passes(self):
        passes = self.pass_list()
        names = [n for _, n in passes]
        self.assertEqual(names[:3], ["fold_empty", "fold_batchnorm", "canonicalize"])
        # the last three run on scratchpad kernels only (docs/schedule.md "Scratchpad targets")
        self.assertEqual(names[-5:], ["storage_rewrite", "simplify", "inject_dma", "verify_scratchpad", "plan_local_mem"])
        self.assertEqual(names.index("fuse") + 2, names.index("simplify"))
        self.assertEqual(passes[names.index("fuse")][0], "graph")
        self.assertEqual(passes[names.index("vectorize")][0], "lowering")
        self.assertEqual(self.ok("compile", "--dump-list-passes").stdout, self.ok("inspect", "--dump-list-passes").stdout)

    def test_dump_around_graph_pass(self):
        m = self.conv_bn_model()
        r = self.ok("inspect", m, "--dump-before=fold_batchnorm", "--dump-after", "fold_batchnorm")
        secs = self.dump_sections(r.stdout)
        self.assertEqual([s[:4] for s in secs], [("before", "fold_batchnorm", "graph", 2),
                                                 ("after", "fold_batchnorm", "graph", 2)])
        self.assertIn("= BatchNormalization(", secs[0][5])
        self.assertNotIn("BatchNormalization", secs[1][5])
        self.assertIn("= Conv(", secs[1][5])
        self.assertIn("kernels (fused groups):", r.stdout)  # the summary follows the dumps
        # compile: dumps on stderr, stdout keeps its one line
        art = os.path.join(self.dir, "conv_bn.loom")
        r = self.ok("compile", m, "-o", art, "--dump-after=fold_batchnorm,fuse")
        self.assertEqual(r.stdout, "wrote %s\n" % art)
        secs = self.dump_sections(r.stderr)
        self.assertEqual([s[1] for s in secs], ["fold_batchnorm", "fuse"])
        self.assertNotIn("BatchNormalization", secs[0][5])
        self.assertIn("group 0 anchor", secs[1][5])  # from fuse on, the fused groups too

    def test_dump_after_all(self):
        m = self.conv_bn_model()
        passes = self.pass_list()
        graph = [n for lvl, n in passes if lvl == "graph"]
        # the scratchpad steps (the last three) run on kernels marked local_mem only
        lowering = [n for lvl, n in passes
                    if lvl == "lowering" and n not in ("inject_dma", "verify_scratchpad", "plan_local_mem")]
        secs = self.dump_sections(self.ok("inspect", m, "--dump-after=all").stdout)
        self.assertTrue(all(s[0] == "after" for s in secs))
        # opt level 2: every graph step runs, once, in the listed order
        self.assertEqual([(s[1], s[3]) for s in secs if s[2] == "graph"],
                         [(n, i + 1) for i, n in enumerate(graph)])
        kernels = list(dict.fromkeys(s[4] for s in secs if s[2] == "lowering"))
        self.assertGreaterEqual(len(kernels), 1)
        for k in kernels:  # every lowering step, once per kernel, kernel after kernel
            self.assertEqual([(s[1], s[3]) for s in secs if s[4] == k], [(n, i + 1) for i, n in enumerate(lowering)])
        self.assertEqual([s[4] for s in secs if s[2] == "lowering"], [k for k in kernels for _ in lowering])
        # opt level 0 skips the steps that need a higher one (partition runs at every level: --byoc)
        art = os.path.join(self.dir, "conv_bn0.loom")
        r = self.ok("compile", m, "-o", art, "--opt-level", "0", "--dump-after=all")
        self.assertEqual([s[1] for s in self.dump_sections(r.stderr) if s[2] == "graph"],
                         ["fold_empty", "partition", "infer", "attach_extents", "materialize_outputs", "fuse",
                          "plan_memory"])

    def test_dump_around_lowering_pass(self):
        m = self.conv_bn_model()
        r = self.ok("inspect", m, "--dump-before=lower_blocks", "--dump-after=lower_blocks,vectorize")
        secs = self.dump_sections(r.stdout)
        kernels = list(dict.fromkeys(s[4] for s in secs))
        self.assertGreaterEqual(len(kernels), 1)
        for k in kernels:
            mine = [s for s in secs if s[4] == k]
            self.assertEqual([s[:4] for s in mine], [("before", "lower_blocks", "lowering", 2),
                                                     ("after", "lower_blocks", "lowering", 2),
                                                     ("after", "vectorize", "lowering", 10)])
            self.assertTrue(mine[0][5].startswith("func " + k), mine[0][5][:80])
            self.assertIn("block ", mine[0][5])  # blocks before, plain loops after
            self.assertNotIn("block ", mine[1][5])
            self.assertNotIn(" vectorized", mine[2][5])

    def test_dump_unknown_pass(self):
        m = self.conv_bn_model()
        for args in (("inspect", m), ("compile", m, "-o", os.path.join(self.dir, "never.loom"))):
            self.err(*args, "--dump-after=fusion", code=2,
                     expect=['--dump-after: unknown pass "fusion"', "fold_batchnorm", "plan_memory", "vectorize",
                             "storage_rewrite", "all"])
            self.err(*args, "--dump-before", "dce,,cse", code=2, expect=["--dump-before", "empty pass name"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "never.loom")))
        self.err("inspect", m, "--dump-after", code=2, expect=["needs a value"])
        self.err("inspect", self.model, "--dump-after=fuse", code=2, expect=["need an ONNX model"])

    # ---- inspect ----

    def test_inspect_artifact(self):
        r = self.ok("inspect", self.model)
        self.assertIn("arena: 128 bytes; sum of intermediate tensors: 24 bytes", r.stdout)
        self.assertIn("input[0] x: float32 [2, 3]", r.stdout)
        self.assertIn("add_w: Add_0 Identity_1", r.stdout)
        self.assertIn("runs here", r.stdout)
        r = self.ok("inspect", os.path.join(self.dir, "other_target.loom"))
        self.assertIn("does NOT run here", r.stdout)
        r = self.ok("inspect", self.model, "--dump", "json")
        meta = json.loads(r.stdout)
        self.assertEqual(meta["arena_bytes"], 128)
        self.assertEqual(meta["kernels"][1]["name"], "relu_p")
        self.err("inspect", self.model, "--dump", "tir", expect=["needs an ONNX model"])
        self.err("inspect", os.path.join(self.dir, "absent.loom"), expect=["absent.loom"])

    def test_compile_availability(self):
        # Without the compiler linked in, compile says so; with it, a missing
        # model is still an error naming the file.
        self.err("compile", os.path.join(self.dir, "absent.onnx"), "-o", os.path.join(self.dir, "o.loom"),
                 expect=["absent.onnx"])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "o.loom")))
        self.ok("--version")


if __name__ == "__main__":
    if not MAKER:
        sys.exit("LOOM_MAKE_TEST_ARTIFACT is not set (run through ctest)")
    unittest.main(verbosity=2)

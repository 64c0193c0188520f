#!/usr/bin/env python3
"""`loom export-c` end to end: export small ONNX models, build the project
with `make`, run its example_main on .npy inputs and compare with `loom run`
of the host artifact; the object has no allocation symbols, builds with
-std=c11 -pedantic on gcc and clang, two instances run side by side; bad
arguments fail with `loom: error:` and leave nothing behind. Also the
weights file (its documented layout, and every refusal of the generated
loader), --threads (results, two instances, no allocation, records tuned
at that many threads, the pool through the runtime pool's test cases) and
--bench (builds and runs; no timing checked).

Metric: max |export - host| / max |host| over each output (<= 1e-5).
Environment: LOOM_BIN (CTest sets it). python3 with numpy and onnx.
"""
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import unittest

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from export_fixtures import CC, ExportCase, cross_cc, cross_tools_missing, qemu_runner, read_outputs, rel_err, save

REL_TOL = 1e-5


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


def make_big(path, rng):
    """One MatMul with 4096 x 300 float weights: 4.9 MB, past the 4 MiB embed default."""
    w = rng.standard_normal((4096, 300)).astype(np.float32)
    save(path, [helper.make_node("MatMul", ["x", "w"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4096])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 300])], [numpy_helper.from_array(w, "w")])


def fnv1a64(data, h=0xcbf29ce484222325):
    """The weights file's hash (byte by byte: fine for the tests' small files)."""
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def parse_weights_file(blob):
    """The documented layout (docs/export.md "The weights file"): header
    fields, the table and the payload; asserts nothing."""
    (magic, version, mark, file_bytes, poff, pbytes, count, align, layout,
     checksum) = struct.unpack_from("<8sIIQQQIIQQ", blob, 0)
    table = [struct.unpack_from("<QQ", blob, 64 + 16 * i) for i in range(count)]
    return dict(magic=magic, version=version, mark=mark, file_bytes=file_bytes, payload_offset=poff,
                payload_bytes=pbytes, count=count, align=align, layout=layout, checksum=checksum, table=table,
                payload=blob[poff:poff + pbytes])


def embedded_words(source):
    """The bytes of PREFIX_weights.c's little-endian 64-bit words."""
    body = source[source.index("] = {") + 5:source.rindex("}")]
    words = [int(w, 0) for w in re.findall(r"0x[0-9a-f]+|\b0\b", body)]
    return b"".join(struct.pack("<Q", w) for w in words)


class ExportTest(ExportCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.models = cls.write_models((("mlp", make_mlp), ("conv", make_conv)), np.random.default_rng(7))
        cls.projects = {}

    def project(self, model, *extra):
        """The exported + built project of a model (built once per model and flags)."""
        key = (model,) + extra
        if key not in self.projects:
            out = os.path.join(self.dir, "proj_" + "_".join(k.strip("-") for k in key))
            self.projects[key] = self.export_and_make(self.models[model][0], out, "--name", model, *extra)
        return self.projects[key]

    def host_outputs(self, model):
        path, inputs = self.models[model]
        art = os.path.join(self.dir, model + ".loom")
        outdir = os.path.join(self.dir, model + "_host")
        if not os.path.isdir(outdir):
            self.ok("compile", path, "-o", art)
            self.ok("run", art, *inputs, "--output-dir", outdir)
        return read_outputs(outdir)

    def export_outputs(self, model, *extra, runner=()):
        """example_main's outputs of the built project (the weights file first when it has one)."""
        return self.run_example(self.project(model, *extra), self.models[model][1], runner)[0]

    def check_matches_host(self, model, *extra, runner=()):
        got = self.export_outputs(model, *extra, runner=runner)
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

    def check_cross(self, target):
        runner = self.require_cross(target)
        for model in self.models:
            proj = self.project(model, "--target", target)
            with open(os.path.join(proj, "Makefile")) as f:
                self.assertIn(f"CC = {cross_cc(target)}", f.read())
            self.check_matches_host(model, "--target", target, runner=runner)
        return runner

    def test_aarch64_under_qemu(self):
        runner = self.check_cross("aarch64")
        # the pool and the weights file on another ISA (qemu-user runs the threads)
        self.check_matches_host("mlp", "--target", "aarch64", "--threads", "2", "--weights", "file", runner=runner)
        with open(os.path.join(self.project("conv", "--target", "aarch64"), "conv.c")) as f:
            self.assertIn("vector_size(16)", f.read())  # 128-bit NEON through GCC vector types

    def test_riscv64_under_qemu(self):
        runner = self.check_cross("riscv64")
        self.check_matches_host("mlp", "--target", "riscv64", "--threads", "2", runner=runner)

    # ---- the generated code ----

    def test_objects_do_not_allocate(self):
        for model in self.models:
            proj = self.project(model)
            for obj in (f"{model}.o", f"{model}_weights.o"):
                self.assert_allocates_nothing(os.path.join(proj, obj))

    def test_objects_have_no_writable_data(self):
        # Everything a run writes is in caller memory (the arena, the pool's
        # state, the bound weights), so the objects are read-only data and
        # code: no writable symbol (nm's d, b, c, g, s in either case) and no
        # writable section with contents (readelf's W flag, size 0).
        for model, extra in (("mlp", ()), ("conv", ()), ("mlp", ("--threads", "2")), ("mlp", ("--weights", "file"))):
            proj = self.project(model, *extra)
            for obj in sorted(f for f in os.listdir(proj) if f.endswith(".o") and f != "example_main.o"):
                path = os.path.join(proj, obj)
                syms = self.run_cmd(["nm", "--defined-only", path]).stdout.split("\n")
                writable = [line for line in syms if len(line.split()) == 3 and line.split()[1] in "dDbBcCgGsS"]
                self.assertEqual(writable, [], f"{model} {extra}: {obj}")
                sections = self.run_cmd(["readelf", "-SW", path]).stdout
                for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+\s+(\S*)", sections):
                    if "W" in m.group(3):
                        self.assertEqual(int(m.group(2), 16), 0, f"{model} {extra}: {obj} section {m.group(1)}")

    def test_symbols_carry_the_prefix(self):
        names = self.assert_symbols_prefixed(os.path.join(self.project("conv"), "conv.o"), "conv_")
        self.assertIn("conv_run", names)

    def test_generic_is_pedantic_c11_on_gcc_and_clang(self):
        compilers = [c for c in ("gcc", "clang") if shutil.which(c)]
        if not compilers:
            self.skipTest("neither gcc nor clang installed")
        for model in self.models:
            proj = self.project(model)
            # no GCC vector types either (-pedantic lets attributes through):
            # generic has no vectors, so vectorized loops stay loops
            with open(os.path.join(proj, f"{model}.c")) as f:
                self.assertNotIn("vector_size", f.read())
            for cc in compilers:
                for src in (f"{model}.c", f"{model}_weights.c", "example_main.c"):
                    self.run_cmd([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", src,
                                  "-o", os.path.join(self.dir, f"pedantic_{cc}.o")], cwd=proj)

    def test_generic_blocked_conv_has_no_vector_types(self):
        """A 1x1 conv over 16 channels is laid out NCHW16c and its kernel
        vectorized on vector targets; generic keeps those loops scalar."""
        w = np.random.default_rng(3).standard_normal((16, 16, 1, 1)).astype(np.float32)
        path = os.path.join(self.dir, "conv16.onnx")
        save(path, [helper.make_node("Conv", ["x", "w"], ["y"])],
             [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 8, 8])],
             [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16, 8, 8])],
             [numpy_helper.from_array(w, "w")])
        out = os.path.join(self.dir, "conv16_generic")
        self.ok("export-c", path, "-o", out, "--target", "generic", "--name", "conv16", "--force")
        with open(os.path.join(out, "conv16.c")) as f:
            self.assertNotIn("vector_size", f.read())
        self.run_cmd([CC, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", "conv16.c"], cwd=out)

    def two_instances(self, *extra):
        proj = self.project("conv", *extra)
        src = os.path.join(proj, "two_instances.c")
        with open(src, "w") as f:
            f.write(TWO_INSTANCES)
        exe = os.path.join(proj, "two_instances")
        objs = ["conv.o"] + (["conv_weights.o"] if os.path.exists(os.path.join(proj, "conv_weights.o")) else [])
        defs = ["-DWITH_CONTEXT"] if "--threads" in extra else []
        self.run_cmd([CC, "-std=c11", "-O1", *defs, "-o", exe, src, *objs, "-lm", "-pthread"], cwd=proj)
        r = self.run_cmd([exe])
        self.assertIn("same", r.stdout)

    def test_two_instances_side_by_side(self):
        """Two threads, each with its own workspace and inputs, run conv_run
        interleaved many times; each result equals its serial run bit for bit."""
        self.two_instances()

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

    def test_bfloat16_and_float16_tensors(self):
        # stored as their 16 bits (uint16_t) with loom_convert.h's conversions
        # in the project; example_main's .npy of a bfloat16 holds its bits as uint16
        path = os.path.join(self.dir, "narrow.onnx")
        save(path, [helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
                    helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
                    helper.make_node("Add", ["bf", "hf"], ["s"]),
                    helper.make_node("Cast", ["s"], ["y"], to=TensorProto.BFLOAT16)],
             [helper.make_tensor_value_info("b", TensorProto.BFLOAT16, [6]),
              helper.make_tensor_value_info("h", TensorProto.FLOAT16, [6])],
             [helper.make_tensor_value_info("y", TensorProto.BFLOAT16, [6])], [])
        proj = os.path.join(self.dir, "proj_narrow")
        self.ok("export-c", path, "-o", proj, "--name", "narrow")
        with open(os.path.join(proj, "narrow.h")) as f:
            header = f.read()
        self.assertIn('#define NARROW_INPUT_0_DTYPE "bfloat16"', header)
        self.assertIn("const uint16_t *h;", header)
        self.run_cmd(["make", "CC=" + CC], cwd=proj)
        b = np.array([1.5, -2.25, 3.0, 0.125, 1024.0, -0.5], np.float32)
        h = np.array([0.5, 0.25, -1.0, 2.0, 8.0, 0.75], np.float16)
        np.save(os.path.join(proj, "b.npy"), (b.view(np.uint32) >> 16).astype(np.uint16))  # exact in bfloat16
        np.save(os.path.join(proj, "h.npy"), h)
        self.run_cmd([os.path.join(proj, "example_main"), "b.npy", "h.npy", "."], cwd=proj)
        y = np.load(os.path.join(proj, "y.npy"))
        self.assertEqual(y.dtype, np.uint16)
        want = b + h.astype(np.float32)  # every sum exact in bfloat16
        np.testing.assert_array_equal((y.astype(np.uint32) << 16).view(np.float32), want)

    def test_model_that_does_not_compile_leaves_nothing(self):
        bad = os.path.join(self.dir, "broken.onnx")
        with open(bad, "wb") as f:
            f.write(b"not a model")
        out = os.path.join(self.dir, "never")
        self.err("export-c", bad, "-o", out)
        self.assertFalse(os.path.exists(out))
        self.assertEqual([p for p in os.listdir(self.dir) if p.startswith("never")], [])

    def test_bad_options(self):
        m = self.models["mlp"][0]
        out = os.path.join(self.dir, "bad")
        self.err("export-c", m, "-o", out, "--weights", "zip", expect=["--weights", "embed or file"])
        for n in ("0", "abc", "1025", "-2"):
            self.err("export-c", m, "-o", out, "--threads", n, expect=["--threads", n, "1 to 1024"])
        self.err("export-c", m, "-o", out, "--threads", "2", "--target-opt", "cores=4",
                 expect=["cores=4", "--threads 2"])
        self.err("export-c", m, "-o", out, "--target-opt", "cores=many", expect=["cores=many"])
        self.err("export-c", m, "-o", out, "--name", "9lives", expect=["--name", "C identifier"])
        self.err("export-c", m, expect=["-o"])
        self.assertFalse(os.path.exists(out))

    # ---- --weights file ----

    def test_weights_file_matches_host(self):
        for model in self.models:
            self.check_matches_host(model, "--weights", "file")
            proj = self.project(model, "--weights", "file")
            self.assertFalse(os.path.exists(os.path.join(proj, f"{model}_weights.c")))
            self.assert_allocates_nothing(os.path.join(proj, f"{model}.o"))

    def test_weights_file_layout(self):
        """The file as docs/export.md describes it, its payload the embedded words' bytes."""
        for model in self.models:
            with open(os.path.join(self.project(model, "--weights", "file"), f"{model}.weights"), "rb") as f:
                blob = f.read()
            h = parse_weights_file(blob)
            self.assertEqual(h["magic"], b"\x89LOOMWT\n")
            self.assertEqual((h["version"], h["mark"], h["align"]), (1, 0x01020304, 64))
            self.assertEqual(h["file_bytes"], len(blob))
            self.assertEqual(h["payload_offset"] % 64, 0)
            self.assertGreaterEqual(h["payload_offset"], 64 + 16 * h["count"])
            self.assertEqual(h["payload_offset"] + h["payload_bytes"], len(blob))
            self.assertGreaterEqual(h["count"], 1)
            for off, n in h["table"]:
                self.assertEqual(off % 64, 0)
                self.assertLessEqual(off + n, h["payload_bytes"])
            self.assertEqual(h["layout"], fnv1a64(blob[64:64 + 16 * h["count"]]))
            self.assertEqual(h["checksum"], fnv1a64(blob[64:], fnv1a64(blob[:56])))
            with open(os.path.join(self.project(model), f"{model}_weights.c")) as f:
                words = embedded_words(f.read())
            self.assertEqual(words[:h["payload_bytes"]], h["payload"])
            self.assertEqual(words[h["payload_bytes"]:], bytes(len(words) - h["payload_bytes"]))

    def test_weights_bind_refusals(self):
        """The generated loader names each way a weights file can be wrong."""
        proj = self.project("mlp", "--weights", "file")
        conv = self.project("conv", "--weights", "file")
        src = os.path.join(proj, "bind_errors.c")
        with open(src, "w") as f:
            f.write(BIND_ERRORS)
        exe = os.path.join(proj, "bind_errors")
        self.run_cmd([CC, "-std=c11", "-o", exe, src, "mlp.o", "-lm"], cwd=proj)
        out = self.run_cmd([exe, os.path.join(proj, "mlp.weights"), os.path.join(conv, "conv.weights")]).stdout
        got = dict(line.split(" ", 1) for line in out.splitlines())
        expect = {"ok": "0 ok", "truncated": "16 the weights file is truncated", "header_only": "16 the weights file is truncated",
                  "longer": "17 the weights buffer is longer", "magic": "18 not a Loom weights file",
                  "endian": "19 the weights file is little-endian", "version": "20 the weights file has a format version",
                  "misaligned": "21 the weights buffer is not 64-byte aligned",
                  "other_model": "22 the weights file is another model's", "count": "22 the weights file is another model's",
                  "corrupt_payload": "23 the weights file is corrupt (checksum mismatch)",
                  "corrupt_table": "22 the weights file is another model's", "null": "2 a NULL",
                  "run_unbound": "2 a NULL", "run_bound": "0 ok"}
        for what, want in expect.items():
            self.assertIn(what, got, out)
            self.assertTrue(got[what].startswith(want), f"{what}: {got[what]} (want {want}...)")

    def test_embedded_weights_are_hex_words(self):
        with open(os.path.join(self.project("mlp"), "mlp_weights.c")) as f:
            text = f.read()
        self.assertIn("_Alignas(64) const uint64_t mlp_embedded_weights[", text)
        self.assertIn("__ORDER_LITTLE_ENDIAN__", text)  # the byte order checked at compile time
        self.assertLess(max(len(line) for line in text.splitlines()), 200)
        # 2.5 source bytes per weight byte at most (decimal bytes took ~3.6)
        self.assertLess(len(text), 2.6 * len(embedded_words(text)) + 2000)

    def test_default_weights_mode_by_size(self):
        """Embedded up to 4 MiB of weights (the tests' models), a file above."""
        big = os.path.join(self.dir, "big.onnx")
        make_big(big, np.random.default_rng(1))
        out = os.path.join(self.dir, "proj_big")
        self.ok("export-c", big, "-o", out, "--name", "big")
        self.assertIn("big.weights", os.listdir(out))
        self.assertNotIn("big_weights.c", os.listdir(out))
        with open(os.path.join(out, "big.h")) as f:
            self.assertIn("big_weights_bind", f.read())
        self.ok("export-c", big, "-o", out, "--name", "big", "--weights", "embed", "--force")
        self.assertIn("big_weights.c", os.listdir(out))
        self.assertIn("mlp_weights.c", os.listdir(self.project("mlp")))

    # ---- --threads ----

    def test_threads_match_host_and_one_thread(self):
        parallel = False
        for model in self.models:
            self.check_matches_host(model, "--threads", "2")
            one, two = self.export_outputs(model), self.export_outputs(model, "--threads", "2")
            for name, w in one.items():
                self.assertLessEqual(rel_err(two[name], w), REL_TOL, f"{model} {name}")
            proj = self.project(model, "--threads", "2")
            with open(os.path.join(proj, f"{model}.c")) as f:
                parallel |= "env->parallel_for(env->pool" in f.read()
            obj = os.path.join(proj, f"{model}.o")
            self.assertIn("pthread_create", self.assert_allocates_nothing(obj))
            self.assertIn(f"{model}_context_init", self.assert_symbols_prefixed(obj, model + "_"))
        self.assertTrue(parallel, "no kernel has a parallel loop at 2 threads")

    def test_threads_pool_passes_the_runtime_pools_cases(self):
        """The exported pool (3 threads: uneven shares) through the runtime
        pool's unit-test cases (every iteration once: many small jobs,
        nested, long and short chunks, two callers on one context, shutdown
        asleep and mid-spin) and in the runtime's chunks, with the caller's
        CPU clock and without it (the plain spin bound); natively, and
        cross-compiled under qemu-user where the toolchains are here."""
        proj = self.project("mlp", "--threads", "3")
        src = os.path.join(proj, "pool_cases.c")
        with open(src, "w") as f:
            f.write(POOL_CASES)
        builds = [(CC, [], "1"), (CC, ["-DMLP_POOL_CALLER_CLOCK=0"], "0")]
        builds += [(cross_cc(t), [], t) for t in ("aarch64", "riscv64") if not cross_tools_missing(t)]
        for cc, defs, what in builds:
            exe = os.path.join(proj, f"pool_cases_{what}")
            self.run_cmd([cc, "-std=c11", "-pedantic", "-O1", "-Wall", "-Wextra", "-Werror", *defs, "-o", exe, src,
                          "mlp_weights.c", "-lm", "-pthread"], cwd=proj)
            runner = qemu_runner(what) if what in ("aarch64", "riscv64") else []
            r = self.run_cmd([*runner, exe])
            clock = "0" if defs else "1"
            self.assertIn(f"pool ok (3 threads, caller clock {clock})", r.stdout, what)

    def test_threads_two_instances_side_by_side(self):
        """Each thread its own context (a pool of 2) and workspace."""
        self.two_instances("--threads", "2")

    def test_threads_apply_records_tuned_at_that_count(self):
        """Records tuned at 2 threads change the kernels of --threads 2, and not of --threads 1."""
        m = self.models["mlp"][0]
        db = os.path.join(self.dir, "threads.db")
        self.ok("tune", m, "--records", db, "--trials", "8", "--batch", "8", "--seed", "1", "--target-opt", "cores=2")

        def source(threads, records):
            out = os.path.join(self.dir, f"rec_{threads}_{records}")
            self.ok("export-c", m, "-o", out, "--target", "host", "--threads", str(threads), "--force",
                    *(["--records", db] if records else []))
            with open(os.path.join(out, "model.c")) as f:
                return f.read()

        default2, default1 = source(2, False), source(1, False)
        with sqlite3.connect(db) as c:
            rows = c.execute("select id, median_us from records where status = 'ok' and provenance != 'default' "
                             "and threads = 2 order by id limit 6").fetchall()
        self.assertTrue(rows)
        changed = False
        for rid, us in rows:
            with sqlite3.connect(db) as c:
                c.execute("update records set median_us = 1e-6 where id = ?", (rid,))
            if source(2, True) != default2:
                changed = True
                break
            with sqlite3.connect(db) as c:
                c.execute("update records set median_us = ? where id = ?", (us, rid))
        self.assertTrue(changed, "no record tuned at 2 threads changed the --threads 2 export")
        self.assertEqual(source(1, True), default1)

    # ---- --bench, and everything at once ----

    def test_bench_builds_and_runs(self):
        proj = self.project("conv", "--bench")
        r = self.run_cmd([os.path.join(proj, "conv_bench"), "-n", "5", "-w", "1"])
        self.assertRegex(r.stdout, r"^conv: median [0-9.]+ ms, min [0-9.]+ ms, max [0-9.]+ ms over 5 runs "
                                   r"\(1 warm-up\), 1 thread\n$")
        bad = subprocess.run([os.path.join(proj, "conv_bench"), "-n", "0"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("usage", bad.stderr)

    def test_file_threads_bench_together(self):
        """--weights file --threads 2 --bench: pedantic C11 on gcc and clang, builds, runs."""
        extra = ("--weights", "file", "--threads", "2", "--bench")
        proj = self.project("mlp", *extra)
        for cc in [c for c in ("gcc", "clang") if shutil.which(c)]:
            for src in ("mlp.c", "example_main.c", "mlp_bench.c"):
                self.run_cmd([cc, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-c", src,
                              "-o", os.path.join(self.dir, f"pedantic_{cc}.o")], cwd=proj)
        r = self.run_cmd([os.path.join(proj, "mlp_bench"), "-n", "3", "-w", "1", os.path.join(proj, "mlp.weights")])
        self.assertIn("2 threads", r.stdout)
        self.check_matches_host("mlp", *extra)
        bad = subprocess.run([os.path.join(proj, "mlp_bench"), os.path.join(proj, "Makefile")],
                             capture_output=True, text=True)
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn("not a Loom weights file", bad.stderr)


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
#ifdef WITH_CONTEXT
  conv_context ctx;
#endif
} Instance;

static int run(Instance *s, float *o0, float *o1) {
  conv_inputs in = {s->in0, s->in1};
  conv_outputs out = {o0, o1};
#ifdef WITH_CONTEXT
  return conv_run(&in, &out, s->workspace, &s->ctx);
#else
  return conv_run(&in, &out, s->workspace);
#endif
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
#ifdef WITH_CONTEXT
    if (conv_context_init(&s->ctx)) return printf("context_init failed\n"), 1;
#endif
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
#ifdef WITH_CONTEXT
    conv_context_destroy(&inst[i].ctx);
#endif
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

BIND_ERRORS = r"""
#include "mlp.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) exit(3);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = aligned_alloc(64, (*n + 64 + 63) / 64 * 64 + 64);
  if (fread(b, 1, *n, f) != *n) exit(3);
  fclose(f);
  return b;
}

static void show(const char *what, int st) { printf("%s %d %s\n", what, st, mlp_status_string(st)); }

/* bind a copy of the file with byte `at` set to v (at == (size_t)-1: unchanged), at blob + shift */
static int bind_edited(mlp_weights *w, const unsigned char *file, size_t n, size_t at, unsigned char v, size_t shift) {
  static unsigned char *copy;
  free(copy);
  copy = aligned_alloc(64, (n + 64 + 63) / 64 * 64 + 64);
  memcpy(copy + shift, file, n);
  if (at != (size_t)-1) copy[shift + at] = v;
  return mlp_weights_bind(w, copy + shift, n);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  size_t n, nc;
  unsigned char *b = slurp(argv[1], &n), *c = slurp(argv[2], &nc);
  mlp_weights w;
  static float x[MLP_INPUT_0_NUMEL], y[MLP_OUTPUT_0_NUMEL];
  mlp_inputs in = {x};
  mlp_outputs out = {y};
  void *ws = aligned_alloc(64, (MLP_WORKSPACE_BYTES + 63) / 64 * 64);
  show("ok", mlp_weights_bind(&w, b, n));
  show("truncated", mlp_weights_bind(&w, b, n - 1));
  show("header_only", mlp_weights_bind(&w, b, 10));
  show("longer", mlp_weights_bind(&w, b, n + 64));
  show("magic", bind_edited(&w, b, n, 1, 'X', 0));
  show("endian", bind_edited(&w, b, n, 12, 1, 0));
  show("version", bind_edited(&w, b, n, 8, 2, 0));
  show("misaligned", bind_edited(&w, b, n, (size_t)-1, 0, 8));
  show("other_model", mlp_weights_bind(&w, c, nc));
  show("count", bind_edited(&w, b, n, 40, (unsigned char)(b[40] + 1), 0));
  show("corrupt_payload", bind_edited(&w, b, n, n - 1, (unsigned char)(b[n - 1] ^ 1), 0));
  show("corrupt_table", bind_edited(&w, b, n, 64, (unsigned char)(b[64] ^ 64), 0));
  show("null", mlp_weights_bind(&w, NULL, n));
  show("run_unbound", mlp_run(&in, &out, ws, &w));
  mlp_weights_bind(&w, b, n);
  show("run_bound", mlp_run(&in, &out, ws, &w));
  return 0;
}
"""

POOL_CASES = r"""
/* The exported pool (mlp.c's static mlp_parallel_for) through the cases of
 * the runtime pool's unit test (tests/unit/runtime/test_threadpool.c), and
 * its chunks checked against the runtime's split (chunking_of, chunk_range).
 * mlp.c first: its feature macros precede every system header. */
#include "mlp.c"

#include <stdio.h>
#include <stdlib.h>

enum { THREADS = MLP_THREADS, PER = 4 };

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (!(cond)) {                                                     \
      printf("%s:%d: %s failed\n", __FILE__, __LINE__, #cond);         \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

typedef struct Hits {
  atomic_int *counts; /* how often each iteration ran */
  atomic_int calls;
  int64_t begins[THREADS * PER], ends[THREADS * PER];
} Hits;

static void count_body(void *c, int64_t begin, int64_t end) {
  Hits *h = c;
  int k = atomic_fetch_add(&h->calls, 1);
  if (k < THREADS * PER) h->begins[k] = begin, h->ends[k] = end;
  for (int64_t i = begin; i < end; i++) atomic_fetch_add(&h->counts[i], 1);
}

static void run(mlp_context *ctx, int64_t n, loom_parallel_body body, void *closure) {
  mlp_parallel_for(mlp_pool_of(ctx), n, body, closure);
}

/* The runtime's chunks of a loop of n (src/runtime/threadpool.c). */
static int expected_chunks(int64_t n, int64_t *begins, int64_t *ends) {
  int threads = THREADS < n ? THREADS : (int)n;
  int per = n / threads < PER ? (int)(n / threads) : PER, m = 0;
  for (int t = 0; t < threads; t++)
    for (int j = 0; j < per; j++) {
      int64_t tb = t * n / threads, te = (t + 1) * n / threads;
      begins[m] = tb + j * (te - tb) / per;
      ends[m++] = tb + (j + 1) * (te - tb) / per;
    }
  return m;
}

/* Every iteration once, in the runtime's chunks, for many small jobs back to back. */
static void many_small_jobs(mlp_context *ctx) {
  enum { MAXN = 97 };
  atomic_int counts[MAXN];
  static Hits h;
  for (int job = 0; job < 3000; job++) {
    int64_t n = job % MAXN;
    for (int i = 0; i < MAXN; i++) atomic_init(&counts[i], 0);
    h.counts = counts;
    atomic_init(&h.calls, 0);
    run(ctx, n, count_body, &h);
    for (int i = 0; i < MAXN; i++) CHECK(atomic_load(&counts[i]) == (i < n ? 1 : 0));
    if (n <= 1) continue;
    int64_t want_b[THREADS * PER], want_e[THREADS * PER];
    int m = expected_chunks(n, want_b, want_e);
    CHECK(atomic_load(&h.calls) == m);
    for (int i = 0; i < m; i++) { /* each chunk run is one of the runtime's (they do not overlap) */
      int found = 0;
      for (int j = 0; j < m; j++) found |= h.begins[i] == want_b[j] && h.ends[i] == want_e[j];
      CHECK(found);
    }
  }
}

typedef struct Nested {
  mlp_context *ctx;
  atomic_int *counts; /* 16 x 16 */
} Nested;

static void inner_body(void *c, int64_t begin, int64_t end) {
  atomic_int *row = c;
  for (int64_t j = begin; j < end; j++) atomic_fetch_add(&row[j], 1);
}

static void outer_body(void *c, int64_t begin, int64_t end) {
  Nested *n = c;
  for (int64_t i = begin; i < end; i++) run(n->ctx, 16, inner_body, &n->counts[i * 16]);
}

/* A parallel loop inside one runs serially instead of deadlocking. */
static void nested(mlp_context *ctx) {
  atomic_int counts[256];
  for (int rep = 0; rep < 200; rep++) {
    for (int i = 0; i < 256; i++) atomic_init(&counts[i], 0);
    Nested n = {ctx, counts};
    run(ctx, 16, outer_body, &n);
    for (int i = 0; i < 256; i++) CHECK(atomic_load(&counts[i]) == 1);
  }
}

typedef struct Slow {
  atomic_int *counts;
  int64_t work; /* busy iterations per index */
} Slow;

static void slow_body(void *c, int64_t begin, int64_t end) {
  Slow *s = c;
  for (int64_t i = begin; i < end; i++) {
    volatile int64_t sink = 0;
    for (int64_t j = 0; j < s->work * (1 + i % 3); j++) sink += j;
    atomic_fetch_add(&s->counts[i], 1);
  }
}

/* Long chunks (threads then spin past their minimum), instant ones, pauses
 * (they sleep), fewer iterations than threads. */
static void long_and_short_chunks(mlp_context *ctx) {
  struct timespec pause = {0, 2 * 1000 * 1000};
  enum { MAXN = 29 };
  atomic_int counts[MAXN];
  for (int job = 0; job < 300; job++) {
    int64_t n = 1 + job % MAXN;
    for (int i = 0; i < MAXN; i++) atomic_init(&counts[i], 0);
    Slow s = {counts, job % 3 == 0 ? 20000 : job % 3 == 1 ? 0 : 500};
    run(ctx, n, slow_body, &s);
    for (int i = 0; i < MAXN; i++) CHECK(atomic_load(&counts[i]) == (i < n ? 1 : 0));
    if (job % 50 == 49) nanosleep(&pause, NULL);
  }
}

typedef struct Caller {
  mlp_context *ctx;
  atomic_int counts[41];
  int wrong;
} Caller;

static void *caller_main(void *arg) {
  Caller *c = arg;
  static _Thread_local Hits h;
  for (int job = 0; job < 1000; job++) {
    int64_t n = 1 + job % 41;
    for (int i = 0; i < 41; i++) atomic_init(&c->counts[i], 0);
    h.counts = c->counts;
    atomic_init(&h.calls, 0);
    run(c->ctx, n, count_body, &h);
    for (int i = 0; i < 41; i++) c->wrong += atomic_load(&c->counts[i]) != (i < n ? 1 : 0);
  }
  return NULL;
}

/* Two threads share a context: whichever finds it busy runs serially. */
static void concurrent_callers(mlp_context *ctx) {
  static Caller a, b;
  a.ctx = b.ctx = ctx;
  pthread_t ta, tb;
  CHECK(pthread_create(&ta, NULL, caller_main, &a) == 0);
  CHECK(pthread_create(&tb, NULL, caller_main, &b) == 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  CHECK(a.wrong == 0 && b.wrong == 0);
}

static void slow_once_body(void *c, int64_t begin, int64_t end) {
  Slow s = {c, 200000};
  slow_body(&s, begin, end);
}

/* Destroy finds the workers asleep, spinning after long chunks (their
 * deadline far ahead), or never having seen a job. */
static void shutdown(void) {
  struct timespec pause = {0, 50 * 1000 * 1000};
  for (int how = 0; how < 3; how++) {
    static mlp_context ctx;
    CHECK(mlp_context_init(&ctx) == MLP_OK);
    atomic_int counts[16];
    static Hits h;
    for (int i = 0; i < 16; i++) atomic_init(&counts[i], 0);
    h.counts = counts;
    atomic_init(&h.calls, 0);
    if (how == 0) {
      run(&ctx, 16, count_body, &h);
      nanosleep(&pause, NULL);
    } else if (how == 1) {
      run(&ctx, 16, slow_once_body, counts);
    }
    mlp_context_destroy(&ctx);
    for (int i = 0; i < 16; i++) CHECK(atomic_load(&counts[i]) == (how < 2 ? 1 : 0));
  }
}

int main(void) {
  static mlp_context ctx;
  CHECK(mlp_context_init(&ctx) == MLP_OK);
  many_small_jobs(&ctx);
  nested(&ctx);
  long_and_short_chunks(&ctx);
  concurrent_callers(&ctx);
  mlp_context_destroy(&ctx);
  shutdown();
  printf("pool ok (%d threads, caller clock %d)\n", THREADS, MLP_POOL_CALLER_CLOCK);
  return 0;
}
"""


if __name__ == "__main__":
    unittest.main()

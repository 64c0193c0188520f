#!/usr/bin/env python3
"""`loom export-c --input NAME=FILE`: export specialized to input values, as
`loom run MODEL.onnx --input` compiles (docs/export.md "Binding inputs").
A Reshape whose shape is an input and an If on an input condition are
exported with those values compiled in (they leave PREFIX_inputs and the
header's macros; PREFIX.h names them and their files), built with make,
run with only the remaining inputs and compared with numpy; an input given
for its shape only stays an input with that shape; every bad --input is a
`loom: error:` naming the input and the file, with nothing written.

Metric: max |export - numpy| / max |numpy| per output (<= 1e-6: Reshape,
Relu and Neg are exact). Environment: LOOM_BIN, CC (CTest sets them).
"""
import os
import re
import tempfile
import unittest

import numpy as np
from onnx import TensorProto, helper

from export_fixtures import ExportCase, save


def make_reshape(path):
    """y = Relu(Reshape(x, shape)): the output's shape is shape's value."""
    save(path, [helper.make_node("Reshape", ["x", "shape"], ["r"]), helper.make_node("Relu", ["r"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4]),
          helper.make_tensor_value_info("shape", TensorProto.INT64, [3])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def make_if(path):
    """y = Relu(x) if cond else -x: which branch runs is cond's value."""
    x_out = helper.make_tensor_value_info("b", TensorProto.FLOAT, [4, 5])
    then_g = helper.make_graph([helper.make_node("Relu", ["x"], ["b"])], "then", [], [x_out])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["b"])], "else", [], [x_out])
    save(path, [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g)],
         [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
          helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 5])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 5])])


def make_symbolic(path):
    """y = Relu(x) with x [N, 4]: export needs N, which a given x fixes."""
    save(path, [helper.make_node("Relu", ["x"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])


class ExportBindTest(ExportCase):
    dir_prefix = "loom-export-bind-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for make in (make_reshape, make_if, make_symbolic):
            make(os.path.join(cls.dir, make.__name__[len("make_"):] + ".onnx"))
        rng = np.random.default_rng(11)
        arrays = {"x": rng.standard_normal((2, 3, 4)).astype(np.float32),
                  "shape": np.array([4, 3, 2], np.int64),
                  "x45": rng.standard_normal((4, 5)).astype(np.float32),
                  "true": np.array(True), "false": np.array(False),
                  "x34": rng.standard_normal((3, 4)).astype(np.float32),
                  "shape_f32": np.array([4, 3, 2], np.float32),
                  "x_rank2": np.zeros((6, 4), np.float32)}
        cls.files = {}
        for k, v in arrays.items():
            cls.files[k] = os.path.join(cls.dir, k + ".npy")
            np.save(cls.files[k], v)
        cls.arrays = arrays

    def model(self, name):
        return os.path.join(self.dir, name + ".onnx")

    def export_and_run(self, model, binds, runtime):
        """Exports with --input NAME=FILE per binds, builds, runs example_main on
        the runtime files; (PREFIX.h's text, {output file: array})."""
        proj = tempfile.mkdtemp(dir=self.dir)
        args = [a for name, key in binds for a in ("--input", f"{name}={self.files[key]}")]
        self.export_and_make(self.model(model), proj, "--name", "m", "--force", *args, make_args=("-s",))
        outs = self.run_example(proj, [self.files[k] for k in runtime])[0]
        with open(os.path.join(proj, "m.h")) as f:
            header = f.read()
        return header, outs

    def assert_close(self, got, want):
        self.assertEqual(got.shape, want.shape)
        self.assertEqual(got.dtype, want.dtype)
        self.assertLessEqual(float(np.abs(got - want).max()) / float(np.abs(want).max()), 1e-6)

    def test_reshape_shape_is_compiled_in(self):
        header, outs = self.export_and_run("reshape", [("x", "x"), ("shape", "shape")], ["x"])
        self.assertIn("#define M_NUM_INPUTS 1\n", header)
        self.assertIn('#define M_INPUT_0_NAME "x"', header)
        self.assertNotIn("*shape;", header)  # not a field of m_inputs
        self.assertIn('"shape" from ' + self.files["shape"], header)
        self.assertIn("#define M_OUTPUT_0_SHAPE {4, 3, 2}", header)
        x = self.arrays["x"]
        self.assert_close(outs["y.npy"], np.maximum(x.reshape(4, 3, 2), 0))

    def test_if_condition_is_compiled_in(self):
        x = self.arrays["x45"]
        for cond, want in (("true", np.maximum(x, 0)), ("false", -x)):
            header, outs = self.export_and_run("if", [("cond", cond), ("x", "x45")], ["x45"])
            self.assertIn("#define M_NUM_INPUTS 1\n", header)
            self.assertNotIn("cond;", header)
            self.assertIn('"cond" from ' + self.files[cond], header)
            self.assert_close(outs["y.npy"], want)

    def test_input_given_for_its_shape_stays_an_input(self):
        r = self.loom("export-c", self.model("symbolic"), "-o", os.path.join(self.dir, "unbound"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("static shape", r.stderr)
        header, outs = self.export_and_run("symbolic", [("x", "x34")], ["x34"])
        self.assertIn("#define M_NUM_INPUTS 1\n", header)
        self.assertIn("#define M_INPUT_0_SHAPE {3, 4}", header)
        self.assertRegex(header, r"read at run time\):\n \*   \"x\" from ")
        self.assert_close(outs["y.npy"], np.maximum(self.arrays["x34"], 0))

    def test_bad_inputs(self):
        out = os.path.join(self.dir, "never")
        cases = [
            (["--input", "nope=" + self.files["shape"]], ["nope", self.files["shape"], '"x", "shape"']),
            (["--input", "shape=" + os.path.join(self.dir, "missing.npy")], ['"shape"', "missing.npy"]),
            (["--input", "shape=" + self.files["shape_f32"]], ['"shape"', self.files["shape_f32"], "i64", "f32"]),
            (["--input", "x=" + self.files["x_rank2"]], ['"x"', self.files["x_rank2"], "rank 3"]),
            (["--input", "x=" + self.files["x"], "--input", "x=" + self.files["x"]], ['"x"', "twice"]),
            (["--input", "shape"], ["NAME=FILE"]),
            (["--input", "=" + self.files["x"]], ["NAME=FILE"]),
        ]
        bad = os.path.join(self.dir, "bad.npy")
        with open(bad, "w") as f:
            f.write("not a npy file")
        cases.append((["--input", "x=" + bad], ['"x"', bad]))
        for args, expect in cases:
            r = self.err("export-c", self.model("reshape"), "-o", out, *args, expect=expect)
            self.assertTrue(r.stderr.startswith("loom: error: export-c: "), r.stderr)
            self.assertFalse(os.path.exists(out), args)
            self.assertEqual([f for f in os.listdir(self.dir) if re.match(r"never\.", f)], [])


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""`loom export-c` of outputs with data-dependent shapes (docs/export.md
"Outputs with data-dependent shapes"): NonZero beside a static output,
Unique with its four outputs, and Compress are exported, built with make
(-std=c11 -pedantic -Werror), run on inputs that give different real
shapes (an empty one included; Unique also for aarch64 and riscv64 under
qemu-user, NonZero also with a weights file and 2 threads) and compared
with numpy: shape, dtype and
values exactly (the ops only select and count). The header has the
upper-bound macros, `_DYNAMIC 1` and the `FIELD_shape` arrays; the object
allocates nothing; a C caller of PREFIX_run sees the shape array filled.

Environment: LOOM_BIN, CC (CTest sets them). python3 with numpy and onnx.
"""
import os
import unittest

import numpy as np
from onnx import TensorProto, helper

from export_fixtures import CC, ExportCase, save


def make_nonzero(path):
    """idx = NonZero(x) (int64 [2, <= 12]) and r = Relu(x) (static) side by side."""
    save(path, [helper.make_node("NonZero", ["x"], ["idx"]), helper.make_node("Relu", ["x"], ["r"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
         [helper.make_tensor_value_info("idx", TensorProto.INT64, None),
          helper.make_tensor_value_info("r", TensorProto.FLOAT, [3, 4])])


def make_unique(path):
    """Unique (sorted, flattened) of a float [10]: y, indices, counts data-dependent; inverse static."""
    save(path, [helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], sorted=1)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [10])],
         [helper.make_tensor_value_info(n, t, None)
          for n, t in (("y", TensorProto.FLOAT), ("indices", TensorProto.INT64), ("inverse", TensorProto.INT64),
                       ("counts", TensorProto.INT64))])


def make_compress(path):
    """Compress(x [4, 3], cond [4], axis 0): the rows where cond holds."""
    save(path, [helper.make_node("Compress", ["x", "cond"], ["y"], axis=0)],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3]),
          helper.make_tensor_value_info("cond", TensorProto.BOOL, [4])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])


def numpy_unique(x):
    y, idx, inv, cnt = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    return {"y": y.astype(np.float32), "indices": idx.astype(np.int64), "inverse": inv.astype(np.int64).ravel(),
            "counts": cnt.astype(np.int64)}


class ExportDynamicTest(ExportCase):
    dir_prefix = "loom-export-dyn-"

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.projects = {}

    def project(self, name, make, *extra):
        """The model exported (name = PREFIX) with extra flags and built with pedantic warnings as errors."""
        key = (name,) + extra
        if key not in self.projects:
            model = os.path.join(self.dir, name + ".onnx")
            make(model)
            proj = os.path.join(self.dir, "proj_" + "_".join(k.strip("-") for k in key))
            self.projects[key] = self.export_and_make(model, proj, "--name", name, *extra,
                                                      make_args=("CFLAGS=-pedantic -Wall -Wextra -Werror",))
        return self.projects[key]

    def run_arrays(self, proj, inputs, runner=()):
        """example_main's outputs {field: array} for inputs (arrays, in header order)."""
        files = []
        for k, arr in enumerate(inputs):
            files.append(os.path.join(self.dir, f"in_{os.path.basename(proj)}_{k}.npy"))
            np.save(files[-1], arr)
        return {f[:-4]: a for f, a in self.run_example(proj, files, runner)[0].items()}

    def assert_exact(self, got, want):
        self.assertEqual(sorted(got), sorted(want))
        for name, w in want.items():
            self.assertEqual(got[name].shape, w.shape, name)
            self.assertEqual(got[name].dtype, w.dtype, name)
            np.testing.assert_array_equal(got[name], w, err_msg=name)

    def test_nonzero_beside_a_static_output(self):
        proj = self.project("nz", make_nonzero)
        x = np.array([[0, 1.5, 0, -2], [3, 0, 0, 0], [0, 0, 4, 5]], np.float32)
        cases = [x, np.zeros((3, 4), np.float32), np.ones((3, 4), np.float32)]  # 5, 0 and all 12 nonzeros
        for xs in cases:
            got = self.run_arrays(proj, [xs])
            self.assert_exact(got, {"idx": np.array(np.nonzero(xs), np.int64), "r": np.maximum(xs, 0)})

    def test_nonzero_weights_file_and_threads(self):
        proj = self.project("nz", make_nonzero, "--weights", "file", "--threads", "2")
        x = np.array([[0, 0, 0, 1], [0, 2, 0, 0], [0, 0, 0, 0]], np.float32)
        self.assert_exact(self.run_arrays(proj, [x]), {"idx": np.array(np.nonzero(x), np.int64),
                                                        "r": np.maximum(x, 0)})

    def check_unique(self, *extra, runner=()):
        proj = self.project("uq", make_unique, *extra)
        for x in (np.array([2, 1, 1, 3, 4, 3, 2, 2, 9, 1], np.float32), np.full(10, 7, np.float32),
                  np.arange(10, 0, -1).astype(np.float32)):
            self.assert_exact(self.run_arrays(proj, [x], runner), numpy_unique(x))

    def test_unique_four_outputs(self):
        self.check_unique()

    def test_unique_aarch64_under_qemu(self):
        self.check_unique("--target", "aarch64", runner=self.require_cross("aarch64"))

    def test_unique_riscv64_under_qemu(self):
        self.check_unique("--target", "riscv64", runner=self.require_cross("riscv64"))

    def test_compress_rows(self):
        proj = self.project("cp", make_compress)
        x = np.arange(12, dtype=np.float32).reshape(4, 3)
        for cond in ([True, False, True, True], [False] * 4, [True] * 4):
            cond = np.array(cond)
            self.assert_exact(self.run_arrays(proj, [x, cond]), {"y": x[cond]})

    def test_header_declares_bound_and_shape_array(self):
        proj = self.project("nz", make_nonzero)
        with open(os.path.join(proj, "nz.h")) as f:
            h = f.read()
        self.assertIn("#define NZ_OUTPUT_0_SHAPE {2, 12}", h)
        self.assertIn("#define NZ_OUTPUT_0_NUMEL 24", h)
        self.assertIn("#define NZ_OUTPUT_0_DYNAMIC 1", h)
        self.assertIn("#define NZ_OUTPUT_1_DYNAMIC 0", h)
        # the shape arrays follow the pointers: {idx, r} still sets both pointers
        self.assertRegex(h, r"int64_t \*idx;[^\n]*\n  float \*r;[^\n]*\n  int64_t idx_shape\[2\];")
        self.assertNotIn("r_shape", h)
        for obj in ("nz.o", "nz_weights.o"):
            self.assert_allocates_nothing(os.path.join(proj, obj))

    def test_output_named_like_a_shape_array_is_numbered(self):
        def make(path):
            save(path, [helper.make_node("NonZero", ["x"], ["idx"]), helper.make_node("Relu", ["x"], ["idx_shape"])],
                 [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
                 [helper.make_tensor_value_info("idx", TensorProto.INT64, None),
                  helper.make_tensor_value_info("idx_shape", TensorProto.FLOAT, [2, 2])])
        proj = self.project("clash", make)
        with open(os.path.join(proj, "clash.h")) as f:
            self.assertIn("float *idx_shape_2;", f.read())
        x = np.array([[0, 1], [2, 0]], np.float32)
        self.assert_exact(self.run_arrays(proj, [x]), {"idx": np.array(np.nonzero(x), np.int64),
                                                        "idx_shape_2": np.maximum(x, 0)})

    def test_c_caller_gets_the_shape(self):
        """PREFIX_run from a caller's own C: the shape array is filled, the data compact."""
        proj = self.project("nz", make_nonzero)
        main = os.path.join(proj, "caller.c")
        with open(main, "w") as f:
            f.write(r"""
#include "nz.h"
#include <stdio.h>
static float x[NZ_INPUT_0_NUMEL] = {0, 0, 7, 0, 0, 0, 0, 0, 0, 1, 0, 0};
static int64_t idx[NZ_OUTPUT_0_NUMEL];
static float r[NZ_OUTPUT_1_NUMEL];
static _Alignas(64) unsigned char ws[NZ_WORKSPACE_BYTES];
int main(void) {
  nz_inputs in = {x};
  nz_outputs out = {.idx = idx, .r = r};
  int st = nz_run(&in, &out, ws);
  if (st != NZ_OK) return 1;
  printf("%lld %lld:", (long long)out.idx_shape[0], (long long)out.idx_shape[1]);
  for (int64_t i = 0; i < out.idx_shape[0] * out.idx_shape[1]; i++) printf(" %lld", (long long)idx[i]);
  printf("\n");
  return 0;
}
""")
        exe = os.path.join(proj, "caller")
        self.run_cmd([CC, "-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-o", exe, main,
                      os.path.join(proj, "nz.o"), os.path.join(proj, "nz_weights.o"), "-lm"])
        # x[0][2] and x[2][1] nonzero: rows [0, 2], columns [2, 1]
        self.assertEqual(self.run_cmd([exe]).stdout.strip(), "2 2: 0 2 2 1")


if __name__ == "__main__":
    unittest.main()

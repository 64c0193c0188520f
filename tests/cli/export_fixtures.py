"""What the `loom export-c` tests share: test_export.py, test_export_bind.py,
test_export_dynamic.py, test_scratchpad.py, export_long.py and
tests/models/scratchpad_model.py. The loom binary and C compiler CTest
names, writing an ONNX model, the relative-error metric, the cross
toolchains (and the package that installs each), and ExportCase: a
TestCase with a temporary folder that runs loom, builds exported projects
with make and runs their example_main. Each test keeps its own models,
tolerances and checks.

Imported by name: python3 puts a script's folder (tests/cli) first on
sys.path, which is how CTest runs the tests; tests/models adds it itself.
"""
import glob
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import onnx
from onnx import helper

LOOM = os.environ.get("LOOM_BIN", "loom")
CC = os.environ.get("CC", "cc")
ALLOC_SYMBOLS = {"malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign"}
# export-c's cross targets and the Debian package of each one's compiler
# (qemu-user, from `qemu-user`, runs what it builds).
CROSS = {"aarch64": "gcc-aarch64-linux-gnu", "riscv64": "gcc-riscv64-linux-gnu"}


def save(path, nodes, inputs, outputs, inits=()):
    """A one-graph opset-13 model of these nodes, graph inputs and outputs, and initializers."""
    g = helper.make_graph(nodes, "test", inputs, outputs, inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def rel_err(got, want):
    """max |got - want| / max |want| (in float64)."""
    scale = max(float(np.abs(want).max()), 1e-30)
    return float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale


def read_outputs(outdir):
    """{file name: array} of every file in outdir (`loom run --output-dir` and example_main write .npy)."""
    return {f: np.load(os.path.join(outdir, f)) for f in sorted(os.listdir(outdir))}


def weights_files(proj):
    """example_main's first argument when the export wrote its weights to a file, else none."""
    return sorted(glob.glob(os.path.join(proj, "*.weights")))


def cross_cc(target):
    return f"{target}-linux-gnu-gcc"


def qemu_runner(target):
    """The command prefix that runs a program built for target here."""
    return [f"qemu-{target}", "-L", f"/usr/{target}-linux-gnu"]


def cross_tools_missing(target):
    """Why target's projects cannot be built and run here (its compiler or qemu is missing), or None."""
    for tool, pkg in ((cross_cc(target), CROSS[target]), (f"qemu-{target}", "qemu-user")):
        if not shutil.which(tool):
            return f"{tool} not found: install the Debian package {pkg} (scripts/setup does)"
    return None


def make_cmd(export_flags, *args):
    """make for a project exported with export_flags: a cross target's Makefile names its compiler, the host's
    takes CC."""
    return ["make", *([] if "--target" in export_flags else ["CC=" + CC]), *args]


class ExportCase(unittest.TestCase):
    """self.dir: a temporary folder for the class (its prefix: dir_prefix), removed after it."""
    dir_prefix = "loom-export-"

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix=cls.dir_prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def write_models(cls, makers, rng):
        """{name: (model path, input .npy files)}: each make(path, rng) of makers [(name, make)] writes its
        model and returns its inputs {graph input: array}, saved in that order."""
        models = {}
        for name, make in makers:
            path = os.path.join(cls.dir, name + ".onnx")
            files = []
            for k, v in make(path, rng).items():
                files.append(os.path.join(cls.dir, f"{name}_{k}.npy"))
                np.save(files[-1], v)
            models[name] = (path, files)
        return models

    def loom(self, *args):
        return subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=300)

    def run_cmd(self, cmd, cwd=None, fails=False):
        """cmd's result; it must succeed, or with fails=True fail."""
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode != 0, fails, f"{cmd}: {r.stdout}{r.stderr}")
        return r

    def ok(self, *args):
        return self.run_cmd([LOOM, *args])

    def err(self, *args, expect=()):
        """loom's failure with `loom: error: ` and each of expect in its message."""
        r = self.run_cmd([LOOM, *args], fails=True)
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for e in expect:
            self.assertIn(e, r.stderr)
        return r

    def require_cross(self, target):
        """qemu_runner(target), or the test skipped with the package to install."""
        missing = cross_tools_missing(target)
        if missing:
            self.skipTest(missing)
        return qemu_runner(target)

    def export_and_make(self, model, out, *flags, make_args=()):
        """`loom export-c model -o out flags`, built with its Makefile."""
        self.ok("export-c", model, "-o", out, *flags)
        self.run_cmd(make_cmd(flags, *make_args), cwd=out)
        return out

    def assert_allocates_nothing(self, obj):
        """obj references none of ALLOC_SYMBOLS; the words of `nm -u obj` (the symbols it references)."""
        syms = set(self.run_cmd(["nm", "-u", obj]).stdout.split())
        self.assertFalse(ALLOC_SYMBOLS & syms, f"{obj} references {ALLOC_SYMBOLS & syms}")
        return syms

    def assert_symbols_prefixed(self, obj, prefix):
        """Every global symbol obj defines starts with prefix; their names."""
        out = self.run_cmd(["nm", "-g", "--defined-only", obj]).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
        self.assertEqual([n for n in names if not n.startswith(prefix)], [])
        return names

    def run_example(self, proj, inputs, runner=(), exe="example_main"):
        """(outputs {file: array}, result) of proj's exe on the input files (after the weights file when the
        project has one), under runner."""
        outdir = tempfile.mkdtemp(dir=self.dir)
        r = self.run_cmd([*runner, os.path.join(proj, exe), *weights_files(proj), *inputs, outdir])
        return read_outputs(outdir), r

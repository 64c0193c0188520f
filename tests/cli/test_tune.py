#!/usr/bin/env python3
"""`loom tune` and `loom compile --records` end to end, on a small model
(MatMul -> Relu -> MatMul -> Softmax, three tasks):

  - a tuning run measures the default schedule of every task first and
    writes one record per candidate, no trace twice;
  - a second run resumes: it measures only traces not yet recorded;
  - `kill -9` in the middle of a run loses at most the batch in flight:
    the database passes PRAGMA integrity_check and a resumed run finishes;
  - `loom compile --records` takes the fastest record of each kernel (a
    record made the fastest here by hand changes the generated code) and
    the outputs stay those of the default schedules;
  - bad input: a records file that is not a Loom database is refused with
    its path in the message and left unchanged; a missing --records, a bad
    --time or --search are usage errors.
Environment: LOOM_BIN (CTest sets it)."""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOOM = os.environ.get("LOOM_BIN", "loom")


def make_model(path):
    rng = np.random.default_rng(3)
    w1 = rng.standard_normal((64, 96)).astype(np.float32) * 0.1
    w2 = rng.standard_normal((96, 48)).astype(np.float32) * 0.1
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["z"]), helper.make_node("Softmax", ["z"], ["y"], axis=-1)]
    g = helper.make_graph(nodes, "tune", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [32, 48])],
                          [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def records(db):
    with sqlite3.connect(db) as c:
        return c.execute("select workload, trace, status, provenance, median_us from records").fetchall()


class TuneTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom-tune-")
        cls.model = os.path.join(cls.dir, "m.onnx")
        make_model(cls.model)
        cls.x = os.path.join(cls.dir, "x.npy")
        np.save(cls.x, np.random.default_rng(5).standard_normal((32, 64)).astype(np.float32))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom(self, *args, ok=True, timeout=300):
        r = subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=timeout)
        if ok and r.returncode != 0:
            self.fail(f"loom {' '.join(args)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        return r

    def run_outputs(self, artifact, name):
        out = os.path.join(self.dir, name)
        os.makedirs(out, exist_ok=True)
        self.loom("run", artifact, self.x, "--output-dir", out)
        return np.load(os.path.join(out, "y.npy"))

    def test_tune_resume_and_compile(self):
        db = os.path.join(self.dir, "a.db")
        r = self.loom("tune", self.model, "--records", db, "--trials", "20", "--batch", "8", "--seed", "1")
        self.assertIn("20 candidates measured", r.stdout)
        recs = records(db)
        self.assertEqual(len(recs), 20)
        self.assertEqual(len({(w, t) for w, t, *_ in recs}), 20)  # no trace twice
        workloads = {w for w, *_ in recs}
        self.assertGreaterEqual(len(workloads), 2)
        for w in workloads:  # every task measured its default first
            self.assertIn("default", [p for wk, _, _, p, _ in recs if wk == w])
        # The final round measured each task's best records and default again
        # (three times in all); the cost model was saved beside the records.
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("select max(json_array_length(times_us)) from records").fetchone()[0], 3)
        # The saved model has trees (read back by inspect: a model never
        # trained is saved too, with 0 rounds), and the search was the
        # model-guided one (records that mutate a measured trace).
        r = self.loom("inspect", self.model, "--records", db)
        m = re.search(r"cost model \S+: (\d+) boosting rounds, (\d+) samples", r.stdout)
        self.assertTrue(m, r.stdout)
        self.assertGreater(int(m.group(1)), 0, r.stdout)
        self.assertEqual(int(m.group(2)), 20, r.stdout)
        self.assertIn("evolutionary", {p for _, _, _, p, _ in recs})
        # Resume: only new traces. A cost model file that does not load is
        # noted and replaced (it only caches what the records hold).
        with open(db + ".model", "w") as f:
            f.write("not a cost model\n")
        r = self.loom("tune", self.model, "--records", db, "--trials", "8", "--batch", "8", "--seed", "2")
        self.assertIn("starting a new cost model", r.stderr)
        with open(db + ".model", "rb") as f:
            self.assertTrue(f.read().startswith(b"loom-cost-model"))
        recs2 = records(db)
        self.assertGreater(len(recs2), len(recs))
        self.assertLessEqual(len(recs2), len(recs) + 8)
        self.assertEqual(len({(w, t) for w, t, *_ in recs2}), len(recs2))
        # Compile with the records: first as they are (never slower than the
        # default: the default is one of them), then with a non-default
        # record made the fastest by hand, which must change the code.
        default = os.path.join(self.dir, "d.loom")
        self.loom("compile", self.model, "-o", default)
        want = self.run_outputs(default, "out_d")
        # Another schedule, another shared object inside the artifact (the
        # same source builds to the same bytes). Two traces can make the
        # same program (a decision without effect on this kernel), so the
        # first few candidates are tried until one changes the code.
        with sqlite3.connect(db) as c:
            rows = c.execute("select id, median_us from records where status = 'ok' and provenance != 'default' "
                             "order by id limit 6").fetchall()
        self.assertTrue(rows)
        with open(default, "rb") as f:
            default_bytes = f.read()
        tuned = os.path.join(self.dir, "t.loom")
        changed = False
        for rid, us in rows:
            with sqlite3.connect(db) as c:
                c.execute("update records set median_us = 1e-6 where id = ?", (rid,))
            r = self.loom("compile", self.model, "-o", tuned, "--records", db)
            self.assertNotIn("does not replay", r.stderr)
            with open(tuned, "rb") as f:
                changed = f.read() != default_bytes
            if changed:
                break
            with sqlite3.connect(db) as c:
                c.execute("update records set median_us = ? where id = ?", (us, rid))
        self.assertTrue(changed, "no record among the first six changed the generated code")
        again = os.path.join(self.dir, "d2.loom")
        self.loom("compile", self.model, "-o", again)
        with open(default, "rb") as f1, open(again, "rb") as f2:
            self.assertEqual(f1.read(), f2.read())
        got = self.run_outputs(tuned, "out_t")
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        # inspect --records: one row per workload with its records.
        r = self.loom("inspect", self.model, "--records", db)
        self.assertIn("tuning records", r.stdout)
        rows = [ln for ln in r.stdout.splitlines() if ln[:1] == "k" and ln[1:2].isdigit()]
        self.assertEqual(len(rows), len(workloads), r.stdout)
        self.assertIn("kernels with records", r.stdout)

    def test_random_search(self):
        db = os.path.join(self.dir, "r.db")
        self.loom("tune", self.model, "--records", db, "--trials", "12", "--search", "random", "--batch", "6")
        provenance = {p for _, _, _, p, _ in records(db)}
        self.assertLessEqual(provenance, {"default", "random"})

    def test_kill_then_resume(self):
        db = os.path.join(self.dir, "k.db")
        p = subprocess.Popen([LOOM, "tune", self.model, "--records", db, "--trials", "200", "--batch", "4"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 120
        while time.time() < deadline and (not os.path.exists(db) or len(records(db)) < 6):
            time.sleep(0.2)
        p.send_signal(signal.SIGKILL)
        p.communicate()
        before = records(db)
        self.assertGreaterEqual(len(before), 6)
        with sqlite3.connect(db) as c:
            self.assertEqual(c.execute("pragma integrity_check").fetchone()[0], "ok")
        self.loom("tune", self.model, "--records", db, "--trials", "8", "--batch", "4")
        after = records(db)
        self.assertEqual(len({(w, t) for w, t, *_ in after}), len(after))
        self.assertGreater(len(after), len(before))

    def test_inspect_target(self):
        # inspect lists the records of the target and thread count a compile
        # with the same flags would use; an artifact takes no such flags.
        db = os.path.join(self.dir, "i.db")
        self.loom("tune", self.model, "--records", db, "--trials", "3", "--target-opt", "cores=1")
        r = self.loom("inspect", self.model, "--records", db, "--target-opt", "cores=1")
        self.assertIn("1 threads", r.stdout)
        self.assertRegex(r.stdout, r"k0_\w+ +1 +\d+ +[1-9]")  # calls 1, samples, records >= 1
        r = self.loom("inspect", self.model, "--records", db, "--target", "x86_64-sse2")
        self.assertIn("target x86_64-sse2", r.stdout)
        art = os.path.join(self.dir, "i.loom")
        self.loom("compile", self.model, "-o", art)
        r = self.loom("inspect", art, "--target", "x86_64-avx2", ok=False)
        self.assertEqual(r.returncode, 2)
        self.assertIn("need an ONNX model", r.stderr)

    def test_bad_input(self):
        text = os.path.join(self.dir, "notes.txt")
        with open(text, "w") as f:
            f.write("not a database\n")
        r = self.loom("tune", self.model, "--records", text, "--trials", "4", ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(text, r.stderr)
        with open(text) as f:
            self.assertEqual(f.read(), "not a database\n")
        r = self.loom("compile", self.model, "-o", os.path.join(self.dir, "x.loom"), "--records", text, ok=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(text, r.stderr)
        for args, msg in ((["--trials", "4"], "missing --records"),
                          (["--records", "x.db", "--time", "soon"], "--time"),
                          (["--records", "x.db", "--search", "genetic"], "--search")):
            r = self.loom("tune", self.model, *args, ok=False)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(msg, r.stderr)


if __name__ == "__main__":
    unittest.main()

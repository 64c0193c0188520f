#!/usr/bin/env python3
"""A killed `loom compile` leaves nothing behind: no compiler still running,
no temporary file in the build cache, no half-written artifact.

KilledCompile: the C compiler is replaced (LOOM_CC) by a script that writes
part of its output and then never finishes, so the kill always lands
mid-build. Its processes carry this test's folder in their command line,
which is how the test finds any that survived.

KilledRealCompiler: gcc (a driver whose children are cc1, as, collect2 and
ld) builds a model of several kernels, and each of SIGTERM, SIGINT, SIGHUP,
SIGQUIT and SIGKILL lands at random moments of the compile (2 of each;
KilledClang: the same with clang, 1 of each; LOOM_KILL_ITERATIONS=20 in
scripts/test-long; LOOM_KILL_SEED repeats a run). After each: no process left with the run's environment token (the
compilers, their children and Loom's janitor), no temporary in the cache,
the output directory or TMPDIR, and the artifact either absent or complete
with the right answer; a compile again in that cache works.

Environment: LOOM_BIN (CTest sets it).
"""
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOOM = os.environ.get("LOOM_BIN", "loom")

# Writes part of the -o file, says it started, then sleeps "forever": in
# the background with a wait (a compiler driver with a child of its own,
# which only a process-group kill reaches), or by exec (one process, like
# clang with its in-process cc1).
FAKE_CC = """#!/bin/sh
out=""; prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out=$a
  prev=$a
done
[ -n "$out" ] && echo partial > "$out"
touch "$MARK/started"
if [ "$FAKE_CC_MODE" = exec ]; then
  exec "$MARK/loom-test-sleeper" 300
fi
"$MARK/loom-test-sleeper" 300 &
wait
"""


def read_proc(name):
    """{pid: /proc/<pid>/<name>'s bytes} of every other process that can be read."""
    found = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                found[int(pid)] = f.read()
        except OSError:
            continue
    return found


def processes_mentioning(text):
    cmds = {pid: raw.replace(b"\0", b" ").decode(errors="replace") for pid, raw in read_proc("cmdline").items()}
    return [(pid, cmd) for pid, cmd in cmds.items() if text in cmd]


def temporaries(cache):
    return [n for n in os.listdir(cache) if ".tmp." in n] if os.path.isdir(cache) else []


class KilledCompile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom-kill-")
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
        cls.model = os.path.join(cls.dir, "relu.onnx")
        onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), cls.model)
        cc = os.path.join(cls.dir, "fake-cc")
        with open(cc, "w") as f:
            f.write(FAKE_CC)
        os.chmod(cc, 0o755)
        sleep = subprocess.run(["sh", "-c", "command -v sleep"], capture_output=True, text=True).stdout.strip()
        os.symlink(sleep, os.path.join(cls.dir, "loom-test-sleeper"))

    def start(self, name, mode):
        cache = os.path.join(self.dir, name + "-cache")
        out = os.path.join(self.dir, name + ".loom")
        started = os.path.join(self.dir, "started")
        if os.path.exists(started):
            os.unlink(started)
        env = dict(os.environ, LOOM_CACHE_DIR=cache, LOOM_CC=os.path.join(self.dir, "fake-cc"), MARK=self.dir,
                   FAKE_CC_MODE=mode)
        p = subprocess.Popen([LOOM, "compile", self.model, "-o", out], env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while not os.path.exists(started):
            if p.poll() is not None:
                self.fail("loom ended before its compiler started: %s" % p.communicate()[1])
            self.assertLess(time.time(), deadline, "the compiler never started")
            time.sleep(0.02)
        time.sleep(0.1)  # the compiler's own child is running too
        self.assertTrue(processes_mentioning(self.dir + "/loom-test-sleeper"))
        return p, cache, out

    def assert_no_survivors(self):
        deadline = time.time() + 10
        while processes_mentioning(self.dir + "/loom-test-sleeper") and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(processes_mentioning(self.dir + "/loom-test-sleeper"), [])

    def stop_by(self, sig, name):
        p, cache, out = self.start(name, "background")
        p.send_signal(sig)
        p.communicate(timeout=30)
        self.assertEqual(p.returncode, -sig, "loom should end by the signal it got")
        self.assert_no_survivors()
        self.assertEqual(temporaries(cache), [])
        self.assertFalse(os.path.exists(out))
        # What is left in the cache is only the generated source, and the
        # next build (with the real compiler) works.
        env = dict(os.environ, LOOM_CACHE_DIR=cache)
        r = subprocess.run([LOOM, "compile", self.model, "-o", out], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_sigterm(self):
        self.stop_by(signal.SIGTERM, "term")

    def test_sigint(self):
        self.stop_by(signal.SIGINT, "int")

    def test_sigkill(self):
        # No handler runs: the kernel kills the compiler (PR_SET_PDEATHSIG),
        # Loom's janitor the compiler's own child (the sleeper in the
        # background) and the temporaries, before any next build.
        for mode in ("exec", "background"):
            p, cache, out = self.start("kill-" + mode, mode)
            p.kill()
            p.communicate(timeout=30)
            self.assert_no_survivors()
            self.assertFalse(os.path.exists(out))
            deadline = time.time() + 10
            while temporaries(cache) and time.time() < deadline:
                time.sleep(0.02)
            self.assertEqual(temporaries(cache), [], mode)
            env = dict(os.environ, LOOM_CACHE_DIR=cache)
            r = subprocess.run([LOOM, "compile", self.model, "-o", out], env=env, capture_output=True, text=True,
                               timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(temporaries(cache), [])


def processes_with_env(token):
    """(pid, command name) of the processes whose environment holds token (children inherit it), zombies aside
    (a zombie runs nothing and holds no file)."""
    stats = read_proc("stat")
    found = []
    for pid, env in read_proc("environ").items():
        if token.encode() in env and pid in stats:
            head, tail = stats[pid].decode(errors="replace").rsplit(")", 1)
            if tail.split()[0] != "Z":
                found.append((pid, head.split("(", 1)[1]))
    return found


def save_convnet(path):
    """Six convs of different shapes (one kernel each): gcc takes a second or more on it cold."""
    rng = np.random.default_rng(0)
    nodes, inits, x, c = [], [], "x", 3
    for i, (co, k, st) in enumerate([(16, 3, 1), (24, 3, 2), (32, 1, 1), (40, 3, 1), (48, 3, 2), (56, 1, 1)]):
        inits += [numpy_helper.from_array((rng.standard_normal((co, c, k, k)) * 0.1).astype(np.float32), f"w{i}"),
                  numpy_helper.from_array((rng.standard_normal(co) * 0.1).astype(np.float32), f"b{i}")]
        nodes += [helper.make_node("Conv", [x, f"w{i}", f"b{i}"], [f"c{i}"], kernel_shape=[k, k], strides=[st, st],
                                   pads=[k // 2] * 4),
                  helper.make_node("Relu", [f"c{i}"], [f"r{i}"])]
        x, c = f"r{i}", co
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["y"]))
    g = helper.make_graph(nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


@unittest.skipUnless(shutil.which("gcc"), "no gcc")
class KilledRealCompiler(unittest.TestCase):
    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGKILL)
    CC, ITERATIONS = "gcc", 2

    @classmethod
    def setUpClass(cls):
        if not shutil.which(cls.CC):
            raise unittest.SkipTest(f"no {cls.CC}")
        cls.dir = tempfile.mkdtemp(prefix=f"loom-kill-{cls.CC}-")
        cls.model = os.path.join(cls.dir, "convnet.onnx")
        save_convnet(cls.model)
        cls.input = os.path.join(cls.dir, "x.npy")
        np.save(cls.input, np.random.default_rng(1).standard_normal((1, 3, 32, 32)).astype(np.float32))
        cls.iterations = int(os.environ.get("LOOM_KILL_ITERATIONS", str(cls.ITERATIONS)))
        cls.seed = int(os.environ.get("LOOM_KILL_SEED", str(random.randrange(1 << 30))))
        # The reference: one whole cold compile (its time bounds the random moments) and its output.
        t0 = time.time()
        ref = os.path.join(cls.dir, "ref.loom")
        cls.compile_in(os.path.join(cls.dir, "ref-cache"), ref, os.path.join(cls.dir, "ref-tmp"), "ref").check_returncode()
        cls.seconds = time.time() - t0
        cls.want = cls.answer(ref)

    @classmethod
    def compile_in(cls, cache, out, tmp, token, wait=True):
        os.makedirs(tmp, exist_ok=True)
        env = dict(os.environ, LOOM_CC=cls.CC, LOOM_CACHE_DIR=cache, TMPDIR=tmp, LOOM_KILL_TEST_TOKEN=token)
        args = [LOOM, "compile", cls.model, "-o", out]
        no_core = lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # SIGQUIT dumps core by default
        if wait:
            return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300, preexec_fn=no_core)
        return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                preexec_fn=no_core)

    @classmethod
    def answer(cls, art):
        outdir = art + ".out"
        r = subprocess.run([LOOM, "run", art, cls.input, "--output-dir", outdir], capture_output=True, text=True,
                           timeout=120)
        if r.returncode != 0:
            raise AssertionError(f"{art} does not run: {r.stderr}")
        return {f: np.load(os.path.join(outdir, f)) for f in sorted(os.listdir(outdir))}

    def leftovers(self, token, dirs):
        """What is still running with token, and the temporaries in dirs."""
        # The compilers go at once (killed by Loom, or by its janitor when
        # Loom got SIGKILL: a cc1 left alone would run on for seconds); the
        # janitor itself ("loom") may take a moment more.
        for grace, compilers_only in ((1, True), (10, False)):
            deadline = time.time() + grace
            while time.time() < deadline and any(
                    not compilers_only or comm != "loom" for _, comm in processes_with_env(token)):
                time.sleep(0.02)
            running = [p for p in processes_with_env(token) if not compilers_only or p[1] != "loom"]
            if running:
                break
        files = [os.path.join(d, n) for d in dirs if os.path.isdir(d) for n in os.listdir(d)
                 if ".tmp." in n or not d.endswith("-cache")]
        return running, files

    def test_killed_at_random_moments(self):
        rng = random.Random(self.seed)
        for sig in self.SIGNALS:
            for i in range(self.iterations):
                name = f"{sig.name}-{i}"
                what = f"{self.CC}, {name}, LOOM_KILL_SEED={self.seed}"
                cache, out = os.path.join(self.dir, name + "-cache"), os.path.join(self.dir, name + "-out")
                tmp, token = os.path.join(self.dir, name + "-tmp"), f"loom-kill-{os.getpid()}-{name}"
                os.makedirs(out)
                art = os.path.join(out, "convnet.loom")
                delay = rng.uniform(0, 1.1 * self.seconds)
                p = self.compile_in(cache, art, tmp, token, wait=False)
                time.sleep(delay)
                if p.poll() is None:
                    p.send_signal(sig)
                _, err = p.communicate(timeout=60)
                self.assertIn(p.returncode, (0, -sig), f"{what} after {delay:.2f} s: {err}")
                running, files = self.leftovers(token, [cache, out, tmp])
                self.assertEqual(running, [], f"{what} after {delay:.2f} s: still running")
                others = [f for f in files if f != art]
                self.assertEqual(others, [], f"{what} after {delay:.2f} s: left behind")
                if p.returncode == 0 or os.path.exists(art):  # finished, or killed after the rename
                    got = self.answer(art)
                    self.assertEqual(got.keys(), self.want.keys(), what)
                    for k in got:
                        np.testing.assert_array_equal(got[k], self.want[k], err_msg=what)
            # A compile again in the last cache (whatever the kill left there) works and is right.
            r = self.compile_in(cache, art, tmp, token + "-again")
            self.assertEqual(r.returncode, 0, f"{sig.name}: the compile after the kill: {r.stderr}")
            got = self.answer(art)
            for k in got:
                np.testing.assert_array_equal(got[k], self.want[k], err_msg=f"{sig.name}: again")



class KilledClang(KilledRealCompiler):
    """The same with clang: one process for a unit (cc1 in-process) that
    writes "<output>-<random>.tmp" beside Loom's temporary, and ld as its
    child at the link."""
    CC, ITERATIONS = "clang", 1


if __name__ == "__main__":
    unittest.main(verbosity=2)

#!/usr/bin/env python3
"""A killed `loom compile` leaves nothing behind: no compiler still running,
no temporary file in the build cache, no half-written artifact.

The C compiler is replaced (LOOM_CC) by a script that writes part of its
output and then never finishes, so the kill always lands mid-build. Its
processes carry this test's folder in their command line, which is how the
test finds any that survived. Environment: LOOM_BIN (CTest sets it).
"""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

import onnx
from onnx import TensorProto, helper

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


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmd:
            found.append((int(pid), cmd))
    return found


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
        # No handler runs: the kernel kills the compiler (PR_SET_PDEATHSIG)
        # and the next build in that cache removes the dead process's files.
        p, cache, out = self.start("kill", "exec")
        p.kill()
        p.communicate(timeout=30)
        self.assert_no_survivors()
        self.assertFalse(os.path.exists(out))
        env = dict(os.environ, LOOM_CACHE_DIR=cache)
        r = subprocess.run([LOOM, "compile", self.model, "-o", out], env=env, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(temporaries(cache), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)

"""loom.te, loom.Schedule and loom.build: define kernels in Python, schedule
them, print the loop IR, build them and check them against numpy; every
schedule primitive at least once; refused schedules and wrong arguments
raise with Loom's message and leave nothing changed."""

import gc
import re
import threading
import weakref

import numpy as np
import pytest

import loom
from loom import te
from loom.errors import ClosedError, InputError, LoomError, ScheduleError


@pytest.fixture
def ctx(tmp_path_factory):
    """A fresh context per test, current for the test's definitions; kernels
    cached in this session's temp dir and compiled with -Werror."""
    cache = tmp_path_factory.getbasetemp() / "loom-te-cache"
    c = te.Context(cache_dir=str(cache), cflags="-Wall -Wextra -Werror")
    with c:
        yield c


def rand(rng, shape, dtype=np.float32):
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def matmul(m, n, k, name="matmul"):
    A = te.placeholder((m, k), "float32", name="A")
    B = te.placeholder((k, n), "float32", name="B")
    r = te.reduce_axis(k, name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_func([A, B, C], name=name)


def matmul_schedule(m, n, k):
    """The matmul, a fresh schedule of it, its block C and C's loops."""
    f = matmul(m, n, k)
    s = loom.Schedule(f)
    C = s.get_block("C")
    return f, s, C, s.get_loops(C)


def run_matmul(f, m, n, k, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rand(rng, (m, k)), rand(rng, (k, n))
    c = np.zeros((m, n), np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------- definitions

def test_matmul_definition_prints_its_loops(ctx):
    f = matmul(64, 48, 32)
    text = str(f)
    assert text.startswith("func matmul(A: f32[64, 32], B: f32[32, 48], C: f32[64, 48]) {")
    for loop in ("for i in 0:64 {", "for j in 0:48 {", "for k in 0:32 {"):
        assert loop in text
    assert "block C(vi: spatial[0:64] = i, vj: spatial[0:48] = j, vk: reduce[0:32] = k)" in text
    assert "C[vi, vj] = (C[vi, vj] + (A[vi, vk] * B[vk, vj]))" in text
    assert [(p.name, p.shape, p.dtype, p.written) for p in f.params] == [
        ("A", (64, 32), "float32", False), ("B", (32, 48), "float32", False),
        ("C", (64, 48), "float32", True)]
    assert "matmul(" in f.c_source
    # The same text parses back to the same function, in another context too.
    assert str(te.Func.parse(text, te.Context())) == text


def test_expression_operators_against_numpy(ctx):
    n = 16
    X = te.placeholder((n,), "float32", name="X")
    Y = te.placeholder((n,), "float32", name="Y")
    I = te.placeholder((n,), "int32", name="I")
    Z = te.compute((n,), lambda i: te.if_then_else(
        (X[i] > Y[i]) & ~(X[i] == 0.0) | (Y[i] < -0.5),
        te.exp(X[i]) * 2 - Y[i] / 3.0 + abs(Y[i]),
        te.max(X[i], Y[i]) + te.min(X[i], 0.25) + te.power(te.fabs(Y[i]), 2.0)
        + te.sqrt(te.fabs(X[i])) + te.tanh(X[i]) + te.floor(X[i]) + te.cast(I[i] // 3 + I[i] % 3,
                                                                               "float32")),
        name="Z")
    f = loom.build(te.create_func([X, Y, I, Z], name="ops"))
    rng = np.random.default_rng(1)
    x, y = rand(rng, n), rand(rng, n)
    i = rng.integers(-20, 20, size=n).astype(np.int32)
    z = np.empty(n, np.float32)
    f(x, y, i, z)
    cond = ((x > y) & ~(x == 0.0)) | (y < -0.5)
    then = np.exp(x) * 2 - y / np.float32(3.0) + np.abs(y)
    other = (np.maximum(x, y) + np.minimum(x, 0.25) + np.abs(y) ** 2 + np.sqrt(np.abs(x))
             + np.tanh(x) + np.floor(x) + (i // 3 + i % 3).astype(np.float32))
    np.testing.assert_allclose(z, np.where(cond, then, other), rtol=1e-5, atol=1e-5)


def test_integer_division_rounds_like_python_and_truncdiv_like_c(ctx):
    n = 12
    A = te.placeholder((n,), "int64", name="A")
    F = te.compute((n,), lambda i: A[i] // 4 * 100 + A[i] % 4, name="F")
    T = te.compute((n,), lambda i: te.truncdiv(A[i], 4) * 100 + te.truncmod(A[i], 4), name="T")
    f = loom.build(te.create_func([A, F, T], name="divs"))
    a = np.arange(-6, 6, dtype=np.int64)
    fl, tr = np.empty(n, np.int64), np.empty(n, np.int64)
    f(a, fl, tr)
    np.testing.assert_array_equal(fl, a // 4 * 100 + a % 4)
    np.testing.assert_array_equal(tr, np.trunc(a / 4).astype(np.int64) * 100 + np.fmod(a, 4))


def test_expressions_have_no_truth_value_but_compare_by_identity(ctx):
    X = te.placeholder((4,), "float32", name="X")
    seen = []

    def body(i):
        e = X[i] * 2.0
        with pytest.raises(TypeError, match="no truth value"):
            bool(e > 1.0)
        assert e in [e] and e not in [X[i]]  # == between expressions: identity
        assert e.dtype == "float32" and (i * 2).dtype == "int64"
        seen.append(str(e))
        return e

    te.compute((4,), body, name="Y")
    assert seen == ["(X[i] * 2.0f32)"]


# ---------------------------------------------------------------- the example, scheduled

def test_matmul_scheduled_split_reorder_vectorize_parallel_cache_write(ctx):
    m, n, k = 64, 48, 32
    f, s, C, (i, j, r) = matmul_schedule(m, n, k)
    i0, i1 = s.split(i, [None, 8])
    j0, j1 = s.split(j, [None, 16])
    s.reorder(i0, j0, r, i1, j1)
    s.vectorize(j1)
    s.parallel(i0)
    CC = s.cache_write(C, 0, "local")
    s.reverse_compute_at(CC, j0)
    text = str(s.func)
    assert "for i_0 in 0:8 parallel {" in text
    assert "for j_1 in 0:16 vectorized {" in text
    assert "block C_local(" in text
    assert re.search(r"alloc C_local: f32\[[0-9, ]+\] local", text)
    # The loops nest in the order asked for: i_0, j_0, k, i_1, j_1.
    order = [text.index(f"for {v} in") for v in ("i_0", "j_0", "k", "i_1", "j_1")]
    assert order == sorted(order)
    assert str(f).count("for ") == 3  # the function itself is unchanged
    run_matmul(loom.build(s), m, n, k)

    # The trace replays to the identical program on a fresh schedule.
    trace = s.trace
    assert "split(" in trace and "cache_write(" in trace and "parallel(" in trace
    s2 = loom.Schedule(f)
    s2.apply_trace(trace)
    assert str(s2.func) == text
    assert s2.trace == trace


def test_tile_fuse_unroll_cache_read_compute_at_decompose(ctx):
    m, n, k = 32, 32, 16
    f, s, C, (i, j, r) = matmul_schedule(m, n, k)
    ti = s.sample_perfect_tile(i, 2, max_innermost_factor=8)
    tj = s.sample_perfect_tile(j, 2, max_innermost_factor=16)
    assert ti == [4, 8] and tj == [2, 16]  # seed 0: the largest innermost allowed
    i0, j0, i1, j1 = s.tile([i, j], [ti, tj])
    ij = s.fuse(i0, j0)
    s.parallel(ij)
    r0, r1 = s.split(r, [None, 4])
    s.reorder(r0, i1, r1)
    s.unroll(r1)
    AL = s.cache_read(C, 0, "local")
    s.compute_at(AL, r0)
    init = s.decompose_reduction(C, r0)
    text = str(s.func)
    assert "for i_0_j_0_fused in 0:8 parallel {" in text
    assert "unroll {" in text
    assert "block A_local(" in text and "block C_init(" in text
    assert repr(init).startswith("BlockRV(b")
    run_matmul(loom.build(s), m, n, k, seed=2)


def test_sample_categorical_and_random_seeds(ctx):
    f = matmul(16, 16, 16)
    s = loom.Schedule(f)
    assert s.sample_categorical([4, 8, 16], [0.2, 0.5, 0.3]) == 8  # seed 0: most probable
    assert "sample_categorical(" in s.trace
    picks = {loom.Schedule(f, seed=sd).sample_categorical([1, 2, 3]) for sd in range(1, 40)}
    assert picks == {1, 2, 3}
    # A seeded schedule is reproducible.
    s1, s2 = loom.Schedule(f, seed=7), loom.Schedule(f, seed=7)
    l1 = s1.get_loops(s1.get_block("C"))[0]
    l2 = s2.get_loops(s2.get_block("C"))[0]
    t1 = s1.sample_perfect_tile(l1, 3)
    assert t1 == s2.sample_perfect_tile(l2, 3) and int(np.prod(t1)) == 16


def conv2d(n, c, h, w, f, kh, kw):
    """A 'same' conv (stride 1, zero padding) with a separate pad stage."""
    ph, pw = kh // 2, kw // 2
    data = te.placeholder((n, c, h, w), "float32", name="data")
    weight = te.placeholder((f, c, kh, kw), "float32", name="weight")

    def pad_body(b, ci, y, x):
        inside = te.all(y >= ph, y < h + ph, x >= pw, x < w + pw)
        # Clamped indices: both branches of a select are evaluated.
        yy = te.min(te.max(y - ph, 0), h - 1)
        xx = te.min(te.max(x - pw, 0), w - 1)
        return te.if_then_else(inside, data[b, ci, yy, xx], 0.0)

    pad = te.compute((n, c, h + 2 * ph, w + 2 * pw), pad_body, name="pad")
    rc, ry, rx = te.reduce_axis(c, "rc"), te.reduce_axis(kh, "ry"), te.reduce_axis(kw, "rx")
    out = te.compute((n, f, h, w), lambda b, o, y, x: te.sum(
        pad[b, rc, y + ry, x + rx] * weight[o, rc, ry, rx], axis=[rc, ry, rx]), name="conv")
    return te.create_func([data, weight, out], name="conv2d")


def conv2d_ref(d, wt):
    n, c, h, w = d.shape
    f, _, kh, kw = wt.shape
    p = np.pad(d, ((0, 0), (0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2)))
    out = np.zeros((n, f, h, w), np.float64)
    for y in range(kh):
        for x in range(kw):
            out += np.einsum("nchw,fc->nfhw", p[:, :, y:y + h, x:x + w], wt[:, :, y, x])
    return out


@pytest.mark.parametrize("how", ["inline", "compute_at"])
def test_conv2d_against_numpy(ctx, how):
    shape = (1, 3, 10, 12, 4, 3, 3)
    f = conv2d(*shape)
    s = loom.Schedule(f)
    conv = s.get_block("conv")
    b, o, y, x, rc, ry, rx = s.get_loops(conv)
    if how == "inline":
        s.compute_inline(s.get_block("pad"))
        assert "block pad(" not in str(s.func)
    else:
        pad = s.get_block("pad")
        s.storage_align(pad, 0, 2, 16, 1)
        assert "storage_align(2, 16, 1)" in str(s.func)
        s.compute_at(pad, o)
    x0, x1 = s.split(x, [None, 4])
    s.reorder(rc, ry, rx, x1)
    s.vectorize(x1)
    k = loom.build(s)
    rng = np.random.default_rng(3)
    d, wt = rand(rng, shape[:4]), rand(rng, (shape[4], shape[1], shape[5], shape[6]))
    out = np.empty((1, 4, 10, 12), np.float32)
    k(d, wt, out)
    np.testing.assert_allclose(out, conv2d_ref(d, wt), rtol=1e-5, atol=1e-5)


def softmax(rows, cols):
    X = te.placeholder((rows, cols), "float32", name="X")
    k1, k2 = te.reduce_axis(cols, "k1"), te.reduce_axis(cols, "k2")
    mx = te.compute((rows,), lambda i: te.max(X[i, k1], axis=k1), name="mx")
    e = te.compute((rows, cols), lambda i, j: te.exp(X[i, j] - mx[i]), name="e")
    sm = te.compute((rows,), lambda i: te.sum(e[i, k2], axis=k2), name="sm")
    Y = te.compute((rows, cols), lambda i, j: e[i, j] / sm[i], name="Y")
    return te.create_func([X, Y], name="softmax")


def test_softmax_rfactor_and_compute_at(ctx):
    rows, cols = 8, 64
    f = softmax(rows, cols)
    s = loom.Schedule(f)
    i, k2 = s.get_loops(s.get_block("sm"))
    _, k2i = s.split(k2, [None, 16])
    rf = s.rfactor(k2i)
    assert repr(rf).startswith("BlockRV(") and "block sm_rf(" in str(s.func)
    yi, _ = s.get_loops(s.get_block("Y"))
    s.parallel(yi)
    k = loom.build(s)
    x = rand(np.random.default_rng(4), (rows, cols)) * 5
    y = np.empty_like(x)
    k(x, y)
    ref = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, ref / ref.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_reductions_with_where_and_offset_axes(ctx):
    n = 10
    X = te.placeholder((n, n), "float32", name="X")
    k = te.reduce_axis((2, 7), name="k")
    S = te.compute((n,), lambda i: te.sum(X[i, k], axis=k, where=X[i, k] > 0.0), name="S")
    k2 = te.reduce_axis(n, name="k2")
    Mn = te.compute((n,), lambda i: te.min(X[i, k2] * 2.0, axis=k2), name="Mn")
    f = loom.build(te.create_func([X, S, Mn], name="reds"))
    x = rand(np.random.default_rng(5), (n, n))
    s, mn = np.empty(n, np.float32), np.empty(n, np.float32)
    f(x, s, mn)
    part = x[:, 2:7]
    np.testing.assert_allclose(s, np.where(part > 0, part, 0).sum(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mn, (x * 2).min(axis=1), rtol=1e-6)


def test_inline_chain_reverse_compute_inline(ctx):
    n = 32
    X = te.placeholder((n,), "float32", name="X")
    A = te.compute((n,), lambda i: X[i] * 2.0, name="A")
    B = te.compute((n,), lambda i: A[i] + 1.0, name="B")
    Y = te.compute((n,), lambda i: te.max(B[i], 0.0), name="Y")
    f = te.create_func([X, Y], name="chain")
    s = loom.Schedule(f)
    s.compute_inline(s.get_block("A"))
    s.reverse_compute_inline(s.get_block("Y"))
    text = str(s.func)
    assert "block A(" not in text and "block Y(" not in text and "block B(" in text
    k = loom.build(s)
    x = rand(np.random.default_rng(6), n)
    y = np.empty(n, np.float32)
    k(x, y)
    np.testing.assert_allclose(y, np.maximum(x * 2 + 1, 0), rtol=1e-6)


# ---------------------------------------------------------------- refused schedules

def refused(s, fn, *args, match):
    before, trace = str(s.func), s.trace
    with pytest.raises(ScheduleError, match=match) as e:
        fn(*args)
    assert isinstance(e.value, LoomError) and e.value.status == 3
    assert str(s.func) == before and s.trace == trace  # nothing changed


def test_refused_schedules_raise_schedule_error_and_change_nothing(ctx):
    f, s, C, (i, j, k) = matmul_schedule(64, 48, 32)
    refused(s, s.parallel, k, match="carries reduction iterator vk")
    refused(s, s.vectorize, k, match="reduction")
    refused(s, s.fuse, i, k, match="fuse")
    refused(s, s.split, i, [2, 2], match="split")
    refused(s, s.compute_inline, C, match="compute_inline")
    refused(s, s.get_block, "nope", match="nope")
    refused(s, s.reverse_compute_at, C, k, match="reverse_compute_at")
    i0, i1 = s.split(i, [None, 8])
    refused(s, s.split, i, [None, 2], match="no longer exists")  # i was split away
    s.parallel(i0)
    refused(s, s.parallel, i1, match="parallel")
    refused(s, s.fuse, i0, i1, match="parallel")
    run_matmul(loom.build(s), 64, 48, 32)  # still a correct program


# ---------------------------------------------------------------- wrong arguments

def test_wrong_definition_arguments(ctx):
    with pytest.raises(TypeError, match="shape"):
        te.placeholder((2.5, 3))
    with pytest.raises(InputError, match="dimension 0 is 0"):
        te.placeholder((0, 3), name="Z")
    with pytest.raises(TypeError, match="float16"):
        te.placeholder((2,), "float16")
    with pytest.raises(TypeError, match="dom"):
        te.reduce_axis("k")
    A = te.placeholder((4, 4), "float32", name="A")
    I = te.placeholder((4,), "int32", name="I")
    with pytest.raises(InputError, match="rank 2, got 1"):
        te.compute((4,), lambda i: A[i], name="bad1")
    with pytest.raises(TypeError, match="slices"):
        te.compute((4,), lambda i: A[i, 0:2], name="bad2")
    with pytest.raises(InputError, match="dtypes differ: f32 and i32"):
        te.compute((4,), lambda i: A[i, 0] + I[i], name="bad3")
    with pytest.raises(TypeError, match="converts nothing implicitly"):
        te.compute((4,), lambda i: I[i] * 2.5, name="bad4")
    with pytest.raises(TypeError, match="use //"):
        te.compute((4,), lambda i: I[i] / 2, name="bad5")
    with pytest.raises(InputError, match="out of range"):
        te.compute((4,), lambda i: A[i, 4], name="bad6")
    with pytest.raises(TypeError, match="takes 1 arguments but the shape has 2"):
        te.compute((4, 4), lambda i: A[i, i], name="bad7")
    with pytest.raises(TypeError, match="returned str"):
        te.compute((4,), lambda i: "x", name="bad8")
    k = te.reduce_axis(4)
    with pytest.raises(InputError, match="bare reduce axis"):
        te.compute((4,), lambda i: k, name="bad9")
    nested = te.compute((4,), lambda i: te.sum(A[i, k], axis=k) * 2.0, name="nested")
    with pytest.raises(InputError, match="a reduction may only be the top of the body"):
        te.create_func([A, nested], name="f")
    with pytest.raises(TypeError, match="axis"):
        te.sum(A[0, 0], axis=3)

    class Oops(Exception):
        pass

    def raises(i):
        raise Oops("from the body")

    with pytest.raises(Oops, match="from the body"):  # the body's own exception, unchanged
        te.compute((4,), raises, name="bad10")
    # The context still works after every failure above.
    B = te.compute((4,), lambda i: A[i, i] * 2.0, name="B")
    with pytest.raises(InputError, match="placeholder \"A\" is used but not listed"):
        te.create_func([B], name="f")
    with pytest.raises(InputError, match="C identifier"):
        te.create_func([A, B], name="not an identifier")
    with pytest.raises(TypeError, match=r"args\[1\]"):
        te.create_func([A, "B"], name="f")
    assert "B[vi] = (A[vi, vi] * 2.0f32)" in str(te.create_func([A, B], name="f"))


def test_contexts_do_not_mix():
    with te.Context():
        A = te.placeholder((4,), name="A")
    with te.Context():
        with pytest.raises(ValueError, match="another Context"):
            te.compute((4,), lambda i: A[i] * 2.0, name="B")
        X = te.placeholder((4,), name="X")
    with pytest.raises(ValueError, match="another Context"):
        te.create_func([A, X])
    # Objects keep their context alive after the with block.
    B = None
    with te.Context():
        X = te.placeholder((4,), name="X")
        B = te.compute((4,), lambda i: X[i] + 1.0, name="B")
    assert "X[vi] + 1.0f32" in str(te.create_func([X, B], name="g"))


def test_wrong_schedule_arguments(ctx):
    f, s, C, (i, j, k) = matmul_schedule(16, 16, 16)
    with pytest.raises(TypeError, match="split: loop: expected a LoopRV, got BlockRV"):
        s.split(C, [None, 4])
    with pytest.raises(TypeError, match="element 1"):
        s.split(i, [None, 2.5])
    with pytest.raises(InputError, match="factor 0 is -2"):
        s.split(i, [-2, 8])
    with pytest.raises(TypeError, match="BlockRV"):
        s.compute_inline(i)
    with pytest.raises(ValueError, match="storage_scope 'texture'"):
        s.cache_read(C, 0, "texture")
    with pytest.raises(ScheduleError):
        s.cache_read(C, 5, "local")
    with pytest.raises(TypeError, match="Func"):
        loom.Schedule("matmul")
    other = loom.Schedule(f)
    with pytest.raises(ValueError, match="another Schedule"):
        other.parallel(i)
    with pytest.raises(LoomError, match="trace"):
        s.apply_trace("this is not a trace")
    s.close()
    s.close()  # a second close does nothing
    with pytest.raises(ClosedError):
        s.get_block("C")
    assert "closed" in repr(s)


# ---------------------------------------------------------------- calling kernels

@pytest.fixture
def scaled(ctx):
    X = te.placeholder((6, 8), "float32", name="X")
    Y = te.compute((6, 8), lambda i, j: X[i, j] * 3.0 + 1.0, name="Y")
    return loom.build(te.create_func([X, Y], name="scale"))


def test_kernel_argument_checks(scaled):
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    y = np.zeros((6, 8), np.float32)
    with pytest.raises(TypeError, match="takes 2 arrays"):
        scaled(x)
    with pytest.raises(TypeError, match=r"argument 1 \(Y\): the kernel writes it: expected a numpy"):
        scaled(x, y.tolist())
    with pytest.raises(InputError, match=r"argument 0 \(X\): dtype float64, expected float32"):
        scaled(x.astype(np.float64), y)
    with pytest.raises(InputError, match=r"argument 1 \(Y\): shape \[8, 6\], expected \[6, 8\]"):
        scaled(x, y.reshape(8, 6))
    ro = y.copy()
    ro.flags.writeable = False
    with pytest.raises(InputError, match="read-only"):
        scaled(x, ro)
    with pytest.raises(InputError, match="shares memory"):
        scaled(y, y)
    assert not y.any()  # nothing ran
    scaled(x.tolist(), y)  # an input may be a list (converted to float32)
    np.testing.assert_array_equal(y, x * 3 + 1)


def test_kernel_non_contiguous_and_misaligned_arrays(scaled):
    base = np.arange(96, dtype=np.float32).reshape(12, 8)
    x = base[::2]  # every other row: not contiguous, copied in
    buf = np.zeros(6 * 8 * 4 + 1, np.uint8)
    y = buf[1:].view(np.float32).reshape(6, 8)  # one byte off: misaligned
    assert not x.flags.c_contiguous and not y.flags.aligned
    scaled(x, y)  # y is written through an aligned copy
    np.testing.assert_array_equal(y, x * 3 + 1)
    out_t = np.zeros((8, 6), np.float32).T  # a transposed output
    scaled(x, out_t)
    np.testing.assert_array_equal(out_t, x * 3 + 1)
    y2 = np.zeros((6, 8), np.float32)
    ptr = y2.ctypes.data
    scaled(np.ascontiguousarray(x), y2)  # contiguous: written in place
    assert y2.ctypes.data == ptr
    np.testing.assert_array_equal(y2, x * 3 + 1)


def test_kernel_from_dlpack_tensors(scaled):
    torch = pytest.importorskip("torch")
    x = torch.arange(48, dtype=torch.float32).reshape(6, 8)
    y = torch.zeros(6, 8)
    scaled(x, y)  # y is written in place through DLPack
    assert torch.equal(y, x * 3 + 1)


def test_module_with_two_kernels_and_close(ctx):
    f = matmul(8, 8, 8, name="mm")
    X = te.placeholder((4,), "int32", name="X")
    Y = te.compute((4,), lambda i: X[i] * 2 + 1, name="Y")
    g = te.create_func([X, Y], name="affine")
    m = loom.build([loom.Schedule(f), g])
    assert sorted(m.names) == ["affine", "mm"]
    assert "affine(" in m.source
    with pytest.raises(TypeError, match="2 kernels"):
        m(np.zeros(4, np.int32), np.zeros(4, np.int32))
    with pytest.raises(KeyError, match="nope"):
        m["nope"]
    y = np.zeros(4, np.int32)
    m["affine"](np.arange(4, dtype=np.int32), y)
    np.testing.assert_array_equal(y, [1, 3, 5, 7])
    run_matmul(m["mm"], 8, 8, 8)
    m.close()
    m.close()
    with pytest.raises(ClosedError):
        m["affine"](np.arange(4, dtype=np.int32), y)
    with pytest.raises(LoomError, match="affine"):
        loom.build([g, g])


def in_threads(work, args):
    """work(a) for each a, each in its own thread, all at once; re-raises
    the first failure (a thread's exception would otherwise vanish)."""
    errors = []

    def guarded(a):
        try:
            work(a)
        except BaseException as e:  # re-raised below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(a,)) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_kernels_from_several_threads(scaled):
    """Calls of one module from several threads are serialized, not mixed."""
    x = np.arange(48, dtype=np.float32).reshape(6, 8)
    outs = [np.zeros((6, 8), np.float32) for _ in range(8)]

    def work(y):
        for _ in range(20):
            scaled(x, y)

    in_threads(work, outs)
    for y in outs:
        np.testing.assert_array_equal(y, x * 3 + 1)


def test_definitions_in_several_threads():
    """Each thread defines, schedules and builds in its own default context."""
    def work(seed):
        f = matmul(16, 16, 8)
        s = loom.Schedule(f)
        i, _, _ = s.get_loops(s.get_block("C"))
        s.split(i, [None, 4])
        run_matmul(loom.build(s), 16, 16, 8, seed=seed)

    in_threads(work, range(3))


def test_objects_keep_their_context_alive_and_release_it():
    def make():
        with te.Context() as c:
            f = matmul(8, 8, 8)
            s = loom.Schedule(f)
            g = s.func
            s.close()  # a function taken from a schedule outlives it
            return loom.build(g), weakref.ref(c)

    m, ctx_ref = make()
    gc.collect()
    assert ctx_ref() is not None  # the module holds its context
    run_matmul(m, 8, 8, 8)
    del m
    gc.collect()
    assert ctx_ref() is None  # and the last object gone lets it go

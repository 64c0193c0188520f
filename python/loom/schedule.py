"""Schedules: say how a loom.te function runs, TVM TensorIR style, over
Loom's C API (loom_sched_*; semantics and refusals in docs/schedule.md).

    s = loom.Schedule(f)
    i, j, k = s.get_loops(s.get_block("C"))
    i0, i1 = s.split(i, [None, 8])
    s.reorder(i0, j, k, i1)
    s.parallel(i0)
    print(s.func)                 # the transformed loop IR
    print(s.trace)                # the primitives applied, replayable

A primitive that would change what is computed is refused: it raises
loom.errors.ScheduleError with Loom's message and leaves the program as it
was. Handles (BlockRV, LoopRV) belong to the schedule that made them."""

from __future__ import annotations

import ctypes
import numbers
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _context
from .errors import ClosedError
from .te import Func

__all__ = ["Schedule", "BlockRV", "LoopRV"]

_SCOPES = {"global": 0, "local": 1, "shared": 2}  # loom_scope
_MAX_LOOPS = 16


class _RV:
    __slots__ = ("_sched", "_id")
    _prefix = "?"

    def __init__(self, sched: "Schedule", rv: int) -> None:
        self._sched = sched
        self._id = rv

    def __repr__(self) -> str:
        # The trace's own names (b0, l3): a handle can be found in s.trace.
        return f"{type(self).__name__}({self._prefix}{self._id})"


class BlockRV(_RV):
    """A block of a schedule (from get_block, cache_read/write,
    decompose_reduction, rfactor)."""
    __slots__ = ()
    _prefix = "b"


class LoopRV(_RV):
    """A loop of a schedule (from get_loops, split, fuse, tile). A loop that
    split or fuse replaced is stale: using it is refused."""
    __slots__ = ()
    _prefix = "l"


def _ints(values: Sequence[Any], what: str, none_as: Optional[int] = None) -> List[int]:
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{what}: expected a list of ints, got {type(values).__name__}")
    out = []
    for i, v in enumerate(values):
        if v is None and none_as is not None:
            out.append(none_as)
        elif isinstance(v, numbers.Integral) and not isinstance(v, bool):
            out.append(int(v))
        else:
            raise TypeError(f"{what}: element {i} is {v!r}, expected an int"
                            f"{' or None' if none_as is not None else ''}")
    return out


def _int(v: Any, what: str) -> int:
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        return int(v)
    raise TypeError(f"{what}: expected an int, got {v!r}")


class Schedule:
    """A schedule of a function: a copy of it being transformed, plus the
    trace of primitives applied (the function itself is not changed).

    seed 0: sampling primitives take Loom's deterministic default decisions;
    any other seed: random valid decisions from a generator seeded with it.
    close() releases it early (otherwise garbage collection does); functions
    taken from it (s.func) stay valid."""

    def __init__(self, func: Func, seed: int = 0) -> None:
        if not isinstance(func, Func):
            raise TypeError(f"Schedule: func must be a loom.te.Func (loom.te.create_func), got "
                            f"{type(func).__name__}")
        seed = _int(seed, "Schedule: seed")
        if not 0 <= seed < 2 ** 64:
            raise ValueError(f"Schedule: seed {seed} is outside [0, 2**64)")
        ctx = func._ctx
        self._ctx = ctx
        self._h = ctx.call(ctx.lib.loom_sched_create, ctx.h, func._h, seed)
        self._release = ctx.release_later(self, ctx.lib.loom_sched_free, self._h)

    def close(self) -> None:
        """Releases the schedule now; using it afterwards raises ClosedError.
        Calling close again does nothing."""
        self._release()

    def _live(self) -> int:
        if not self._release.alive:
            raise ClosedError("the schedule was closed")
        return self._h

    def _call(self, name: str, *args: Any) -> Any:
        h = self._live()
        return self._ctx.call(getattr(self._ctx.lib, name), h, *args)

    def _status(self, name: str, *args: Any) -> None:
        h = self._live()
        self._ctx.call_status(getattr(self._ctx.lib, name), h, *args)

    def _rv(self, rv: Any, kind: type, what: str) -> int:
        if not isinstance(rv, kind):
            got = repr(rv) if isinstance(rv, _RV) else type(rv).__name__
            raise TypeError(f"{what}: expected a {kind.__name__}, got {got}")
        if rv._sched is not self:
            raise ValueError(f"{what}: {rv!r} belongs to another Schedule")
        return rv._id

    def _loops(self, loops: Sequence[Any], what: str) -> Tuple[ctypes.Array, int]:
        if len(loops) == 1 and isinstance(loops[0], (list, tuple)):
            loops = loops[0]
        ids = [self._rv(l, LoopRV, f"{what}: loops[{i}]") for i, l in enumerate(loops)]
        return (ctypes.c_int32 * max(len(ids), 1))(*ids), len(ids)

    # ---- the program ----

    @property
    def func(self) -> Func:
        """The current program (a snapshot: later primitives do not change
        it). print(s.func) shows the IR text."""
        return Func(self._ctx, self._call("loom_sched_func"))

    @property
    def trace(self) -> str:
        """The primitives applied so far, one per line, with sampled
        decisions (e.g. ``l4, l5 = split(l1, [8, 8])``)."""
        return self._call("loom_sched_trace").decode()

    def apply_trace(self, trace: str) -> None:
        """Replays a trace (text as s.trace prints it) on this schedule: all
        of it or, when a line is refused, none of it."""
        self._status("loom_sched_apply_trace", _context.encode(trace, "trace"))

    # ---- handles ----

    def get_block(self, name: str) -> BlockRV:
        """The block named name (each compute tensor's block is named after
        it)."""
        if not isinstance(name, str):
            raise TypeError(f"get_block: name must be a str, got {type(name).__name__}")
        return BlockRV(self, self._call("loom_sched_get_block", _context.encode(name, "name")))

    def get_loops(self, block: BlockRV) -> List[LoopRV]:
        """The loops around block, outermost first."""
        b = self._rv(block, BlockRV, "get_loops: block")
        cap = _MAX_LOOPS
        while True:
            out = (ctypes.c_int32 * cap)()
            n = self._call("loom_sched_get_loops", b, out, cap)
            if n <= cap:
                return [LoopRV(self, out[i]) for i in range(n)]
            cap = n

    # ---- loop transformations ----

    def split(self, loop: LoopRV, factors: Sequence[Optional[int]]) -> List[LoopRV]:
        """Splits loop into len(factors) nested loops (outermost first); one
        factor may be None (inferred). A product beyond the extent guards
        the body."""
        lp = self._rv(loop, LoopRV, "split: loop")
        fs = _ints(factors, "split: factors", none_as=-1)
        out = (ctypes.c_int32 * max(len(fs), 1))()
        self._status("loom_sched_split", lp, (ctypes.c_int64 * max(len(fs), 1))(*fs), len(fs),
                     out)
        return [LoopRV(self, out[i]) for i in range(len(fs))]

    def fuse(self, *loops: Union[LoopRV, Sequence[LoopRV]]) -> LoopRV:
        """Fuses directly nested loops (outermost first) into one."""
        arr, n = self._loops(loops, "fuse")
        return LoopRV(self, self._call("loom_sched_fuse", arr, n))

    def reorder(self, *loops: Union[LoopRV, Sequence[LoopRV]]) -> None:
        """Puts loops of one nest into the given order."""
        arr, n = self._loops(loops, "reorder")
        self._status("loom_sched_reorder", arr, n)

    def tile(self, loops: Sequence[LoopRV], factors: Sequence[Sequence[Optional[int]]]
             ) -> List[LoopRV]:
        """Splits each loop by its row of factors (all rows one length,
        depth) and orders all outer pieces first: returns the len(loops) x
        depth loops in their new order."""
        if not isinstance(loops, (list, tuple)):
            raise TypeError(f"tile: loops must be a list of LoopRVs, got {type(loops).__name__}")
        arr, n = self._loops([loops], "tile")
        if not isinstance(factors, (list, tuple)) or len(factors) != n:
            raise TypeError(f"tile: factors must be a list of {n} rows (one per loop)")
        rows = [_ints(r, f"tile: factors[{i}]", none_as=-1) for i, r in enumerate(factors)]
        depth = len(rows[0]) if rows else 0
        if any(len(r) != depth for r in rows):
            raise ValueError("tile: every row of factors must have the same length")
        flat = [f for r in rows for f in r]
        out = (ctypes.c_int32 * max(n * depth, 1))()
        self._status("loom_sched_tile", arr, n, (ctypes.c_int64 * max(len(flat), 1))(*flat),
                     depth, out)
        return [LoopRV(self, out[i]) for i in range(n * depth)]

    # ---- annotations ----

    def vectorize(self, loop: LoopRV) -> None:
        """Marks loop vectorized (refused for a loop carrying a reduction)."""
        self._status("loom_sched_vectorize", self._rv(loop, LoopRV, "vectorize: loop"))

    def parallel(self, loop: LoopRV) -> None:
        """Marks loop parallel (refused for a loop carrying a reduction, or
        inside another parallel loop)."""
        self._status("loom_sched_parallel", self._rv(loop, LoopRV, "parallel: loop"))

    def unroll(self, loop: LoopRV) -> None:
        """Asks the lowering to unroll loop (as far as its code-size budget
        allows)."""
        self._status("loom_sched_unroll", self._rv(loop, LoopRV, "unroll: loop"))

    # ---- moving blocks ----

    def compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Moves producer block under loop of its consumers, computing there
        only the region they need."""
        self._status("loom_sched_compute_at", self._rv(block, BlockRV, "compute_at: block"),
                     self._rv(loop, LoopRV, "compute_at: loop"))

    def reverse_compute_at(self, block: BlockRV, loop: LoopRV) -> None:
        """Moves consumer block under loop of its producers."""
        self._status("loom_sched_reverse_compute_at",
                     self._rv(block, BlockRV, "reverse_compute_at: block"),
                     self._rv(loop, LoopRV, "reverse_compute_at: loop"))

    def compute_inline(self, block: BlockRV) -> None:
        """Inlines an elementwise producer into its consumers; the block and
        its buffer disappear."""
        self._status("loom_sched_compute_inline", self._rv(block, BlockRV, "compute_inline: block"))

    def reverse_compute_inline(self, block: BlockRV) -> None:
        """Inlines an elementwise consumer into its producer."""
        self._status("loom_sched_reverse_compute_inline",
                     self._rv(block, BlockRV, "reverse_compute_inline: block"))

    # ---- caches and buffers ----

    @staticmethod
    def _scope(scope: Any, what: str) -> int:
        if scope not in _SCOPES:
            raise ValueError(f"{what}: storage_scope {scope!r}, expected one of "
                             f"{', '.join(_SCOPES)}")
        return _SCOPES[scope]

    def cache_read(self, block: BlockRV, read_buffer_index: int,
                   storage_scope: str = "global") -> BlockRV:
        """A new block copying the read_buffer_index-th buffer block reads
        into a cache that block then reads; returns the copy block."""
        b = self._rv(block, BlockRV, "cache_read: block")
        i = _int(read_buffer_index, "cache_read: read_buffer_index")
        return BlockRV(self, self._call("loom_sched_cache_read", b, i,
                                        self._scope(storage_scope, "cache_read")))

    def cache_write(self, block: BlockRV, write_buffer_index: int,
                    storage_scope: str = "global") -> BlockRV:
        """Makes block write into a cache copied out to the original buffer
        by a new block, which it returns."""
        b = self._rv(block, BlockRV, "cache_write: block")
        i = _int(write_buffer_index, "cache_write: write_buffer_index")
        return BlockRV(self, self._call("loom_sched_cache_write", b, i,
                                        self._scope(storage_scope, "cache_write")))

    def storage_align(self, block: BlockRV, buffer_index: int, axis: int, factor: int,
                      offset: int) -> None:
        """Pads dimension axis of the buffer block writes (an intermediate)
        so its stride is a multiple of factor plus offset."""
        self._status("loom_sched_storage_align", self._rv(block, BlockRV, "storage_align: block"),
                     _int(buffer_index, "storage_align: buffer_index"),
                     _int(axis, "storage_align: axis"), _int(factor, "storage_align: factor"),
                     _int(offset, "storage_align: offset"))

    def decompose_reduction(self, block: BlockRV, loop: LoopRV) -> BlockRV:
        """Moves the init of reduction block into its own block before loop;
        returns the init block."""
        return BlockRV(self, self._call(
            "loom_sched_decompose_reduction", self._rv(block, BlockRV, "decompose_reduction: block"),
            self._rv(loop, LoopRV, "decompose_reduction: loop")))

    def rfactor(self, loop: LoopRV) -> BlockRV:
        """Makes reduction loop the spatial axis of a partial-result block
        "<block>_rf", which it returns (docs/schedule.md)."""
        return BlockRV(self, self._call("loom_sched_rfactor", self._rv(loop, LoopRV,
                                                                       "rfactor: loop")))

    # ---- sampling (decisions recorded in the trace) ----

    def sample_perfect_tile(self, loop: LoopRV, n: int, max_innermost_factor: int = 0
                            ) -> List[int]:
        """n factors whose product is loop's extent, the innermost at most
        max_innermost_factor (0: no limit)."""
        lp = self._rv(loop, LoopRV, "sample_perfect_tile: loop")
        n = _int(n, "sample_perfect_tile: n")
        out = (ctypes.c_int64 * max(n, 1))()
        self._status("loom_sched_sample_perfect_tile", lp, n,
                     _int(max_innermost_factor, "sample_perfect_tile: max_innermost_factor"), out)
        return list(out[:n])

    def sample_categorical(self, candidates: Sequence[int],
                           probs: Optional[Sequence[float]] = None) -> int:
        """One of candidates, by the weights probs (None: uniform)."""
        cs = _ints(candidates, "sample_categorical: candidates")
        c_probs = None
        if probs is not None:
            if not isinstance(probs, (list, tuple)) or len(probs) != len(cs):
                raise ValueError(f"sample_categorical: probs must be a list of {len(cs)} "
                                 "weights (one per candidate)")
            if not all(isinstance(p, numbers.Real) and not isinstance(p, bool) for p in probs):
                raise TypeError("sample_categorical: probs must be numbers")
            c_probs = (ctypes.c_double * len(cs))(*[float(p) for p in probs])
        out = ctypes.c_int64()
        self._status("loom_sched_sample_categorical", (ctypes.c_int64 * max(len(cs), 1))(*cs),
                     c_probs, len(cs), ctypes.byref(out))
        return out.value

    def __repr__(self) -> str:
        if not self._release.alive:
            return "<loom.Schedule (closed)>"
        return f"<loom.Schedule of {self.func.name}>"

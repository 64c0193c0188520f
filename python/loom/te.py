"""Tensor expressions: define what a kernel computes, TVM style, over Loom's
C API (include/loom/loom.h; docs/te.md "From Python").

    A = loom.te.placeholder((M, K), "float32", name="A")
    B = loom.te.placeholder((K, N), "float32", name="B")
    k = loom.te.reduce_axis(K, name="k")
    C = loom.te.compute((M, N), lambda i, j: loom.te.sum(A[i, k] * B[k, j], axis=k), name="C")
    f = loom.te.create_func([A, B, C], name="matmul")
    print(f)                      # the loop IR (TIR) text

Every operation is one C call; Python holds handles and the context (see
loom.te.Context) owns the IR. Operands of an operator must have one dtype
(Loom converts nothing implicitly: use ``cast``); a Python number next to
an expression takes the expression's dtype. Index expressions are int64.
Failures the C API reports raise loom.errors subclasses with its message
(``InputError``, a ValueError, for a malformed definition); wrong Python
types raise TypeError."""

from __future__ import annotations

import ctypes
import inspect
import numbers
from typing import Any, Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _context
from ._context import BOOL, DTYPE_NAMES, FLOATS, I32, INTS, Context, current_context
from ._lib import COMPUTE_FN

__all__ = [
    "Context", "current_context", "Expr", "ReduceAxis", "Tensor", "Func", "Param", "placeholder",
    "compute", "reduce_axis", "create_func", "const", "cast", "if_then_else", "sum", "max", "min",
    "all", "any", "truncdiv", "truncmod", "exp", "log", "sqrt", "tanh", "erf", "fabs", "floor",
    "ceil", "round", "sin", "cos", "power",
]

ExprLike = Union["Expr", int, float, bool]
_builtin_min, _builtin_max, _builtin_all, _builtin_any = min, max, all, any


def _ptrs(handles: Sequence[int]) -> ctypes.Array:
    return (ctypes.c_void_p * _builtin_max(len(handles), 1))(*handles)


# ---------------------------------------------------------------- expressions

class Expr:
    """An element expression (loom_expr) of one dtype, made in one Context.

    Operators: ``+ - * /`` (``/`` on floats; integers use ``//`` and ``%``,
    which round toward -infinity, or truncdiv/truncmod), ``< <= > >= == !=``
    (bool results), ``& | ~`` on bools, unary ``-`` and ``abs``. An
    expression has no truth value (``if e:`` raises), except that ``==`` and
    ``!=`` between expressions answer identity in a boolean context, so
    expressions can sit in lists and dicts."""

    __slots__ = ("_ctx", "_h", "_code")

    def __init__(self, ctx: Context, h: int) -> None:
        self._ctx = ctx
        self._h = h
        self._code = ctx.lib.loom_expr_dtype(h)

    @property
    def dtype(self) -> str:
        """The element type: "float32", "int64", "bool"..."""
        return DTYPE_NAMES[self._code]

    @property
    def context(self) -> Context:
        return self._ctx

    def astype(self, dtype: Any) -> "Expr":
        """This expression converted to dtype."""
        return cast(self, dtype)

    def __str__(self) -> str:
        return self._ctx.text(self._ctx.lib.loom_expr_text, self._ctx.h, self._h)

    def __repr__(self) -> str:
        return f"<loom.te.Expr {self}: {self.dtype}>"

    def __bool__(self) -> bool:
        raise TypeError(f"the expression {self} has no truth value in Python; build conditions "
                        "with loom.te.if_then_else / all / any, or the operators & | ~")

    __hash__ = object.__hash__

    # arithmetic
    def __add__(self, o: Any) -> "Expr": return _binary("add", self, o)
    def __radd__(self, o: Any) -> "Expr": return _binary("add", o, self)
    def __sub__(self, o: Any) -> "Expr": return _binary("sub", self, o)
    def __rsub__(self, o: Any) -> "Expr": return _binary("sub", o, self)
    def __mul__(self, o: Any) -> "Expr": return _binary("mul", self, o)
    def __rmul__(self, o: Any) -> "Expr": return _binary("mul", o, self)
    def __truediv__(self, o: Any) -> "Expr": return _true_div(self, o)
    def __rtruediv__(self, o: Any) -> "Expr": return _true_div(o, self)
    def __floordiv__(self, o: Any) -> "Expr": return _binary("floordiv", self, o)
    def __rfloordiv__(self, o: Any) -> "Expr": return _binary("floordiv", o, self)
    def __mod__(self, o: Any) -> "Expr": return _binary("floormod", self, o)
    def __rmod__(self, o: Any) -> "Expr": return _binary("floormod", o, self)
    def __pow__(self, o: Any) -> "Expr": return power(self, o)
    def __rpow__(self, o: Any) -> "Expr": return power(o, self)
    def __neg__(self) -> "Expr": return _binary("sub", 0, self)
    def __pos__(self) -> "Expr": return self

    def __abs__(self) -> "Expr":
        if self._code in FLOATS:
            return fabs(self)
        return max(self, -self)

    # comparisons (bool results)
    def __lt__(self, o: Any) -> "Expr": return _binary("lt", self, o)
    def __le__(self, o: Any) -> "Expr": return _binary("le", self, o)
    def __gt__(self, o: Any) -> "Expr": return _binary("gt", self, o)
    def __ge__(self, o: Any) -> "Expr": return _binary("ge", self, o)

    def __eq__(self, o: Any) -> Any:  # type: ignore[override]
        r = _binary("eq", self, o)
        return r if r is NotImplemented else _Identity(r, self, o, True)

    def __ne__(self, o: Any) -> Any:  # type: ignore[override]
        r = _binary("ne", self, o)
        return r if r is NotImplemented else _Identity(r, self, o, False)

    # logic on bools
    def __and__(self, o: Any) -> "Expr": return _binary("and", self, o)
    def __rand__(self, o: Any) -> "Expr": return _binary("and", o, self)
    def __or__(self, o: Any) -> "Expr": return _binary("or", self, o)
    def __ror__(self, o: Any) -> "Expr": return _binary("or", o, self)

    def __invert__(self) -> "Expr":
        return _expr_call(self._ctx, self._ctx.lib.loom_not, self)


class _Identity(Expr):
    """The result of == / != : an expression, whose truth value in Python is
    whether the operands are the same object (as for TVM's EqualOp)."""

    __slots__ = ("_same",)

    def __init__(self, e: Expr, a: Any, b: Any, eq: bool) -> None:
        super().__init__(e._ctx, e._h)
        self._same = (a is b) == eq

    def __bool__(self) -> bool:
        return self._same


class ReduceAxis(Expr):
    """A reduction axis over [lo, hi) (loom_reduce_axis): index tensors with
    it and name it in sum/max/min(axis=...). As an expression it is the
    index itself (the C axis runs over [0, hi - lo), plus lo)."""

    __slots__ = ("_axis_h", "name", "dom")

    def __init__(self, ctx: Context, index_h: int, axis_h: int, name: str,
                 dom: Tuple[int, int]) -> None:
        super().__init__(ctx, index_h)
        self._axis_h = axis_h
        self.name = name
        self.dom = dom

    def __repr__(self) -> str:
        return f"<loom.te.ReduceAxis {self.name} in [{self.dom[0]}, {self.dom[1]})>"


def _expr_call(ctx: Context, fn: Callable[..., Any], *args: Any) -> Expr:
    """A C expression builder on (ctx, args...) where Expr arguments pass
    their handles."""
    h = ctx.call(fn, ctx.h, *[a._h if isinstance(a, Expr) else a for a in args])
    return Expr(ctx, h)


def _is_bool(v: Any) -> bool:
    """A Python or numpy bool scalar."""
    if isinstance(v, bool):
        return True
    return getattr(getattr(v, "dtype", None), "kind", None) == "b" and getattr(v, "shape", 0) == ()


def _is_number(v: Any) -> bool:
    return not isinstance(v, Expr) and (isinstance(v, numbers.Number) or _is_bool(v))


def _scalar(ctx: Context, v: Any, code: int, what: str) -> Expr:
    """The Python number v as a constant of loom_dtype code."""
    lib = ctx.lib
    if _is_bool(v):
        if code == BOOL:
            return _expr_call(ctx, lib.loom_int, BOOL, int(v))
        v = int(v)
    if isinstance(v, numbers.Integral):
        if not -2 ** 63 <= int(v) < 2 ** 63:
            raise ValueError(f"{what}: the integer {v} does not fit 64 bits")
        if code in FLOATS:
            return _expr_call(ctx, lib.loom_float, code, float(v))
        if code in INTS:
            return _expr_call(ctx, lib.loom_int, code, int(v))
    elif isinstance(v, numbers.Real):
        if code in FLOATS:
            return _expr_call(ctx, lib.loom_float, code, float(v))
        raise TypeError(f"{what}: the number {v!r} next to a {DTYPE_NAMES[code]} expression; "
                        f"Loom converts nothing implicitly (use loom.te.cast or an integer)")
    raise TypeError(f"{what}: {v!r} ({type(v).__name__}) cannot be a {DTYPE_NAMES[code]} operand")


def _operands(a: Any, b: Any, what: str) -> Optional[Tuple[Context, Expr, Expr]]:
    """Both operands as expressions of one context (numbers take the other
    side's dtype); None when neither is an expression or one is not a
    number (the operator then returns NotImplemented)."""
    if isinstance(a, Expr) and isinstance(b, Expr):
        if a._ctx is not b._ctx:
            raise ValueError(f"{what}: the operands belong to different loom.te.Contexts")
        return a._ctx, a, b
    if isinstance(a, Expr) and _is_number(b):
        return a._ctx, a, _scalar(a._ctx, b, a._code, what)
    if isinstance(b, Expr) and _is_number(a):
        return b._ctx, _scalar(b._ctx, a, b._code, what), b
    return None


def _binary(op: str, a: Any, b: Any) -> Any:
    pair = _operands(a, b, op)
    if pair is None:
        return NotImplemented
    ctx, x, y = pair
    return _expr_call(ctx, getattr(ctx.lib, f"loom_{op}"), x, y)


def _true_div(a: Any, b: Any) -> Any:
    pair = _operands(a, b, "/")
    if pair is None:
        return NotImplemented
    ctx, x, y = pair
    if x._code not in FLOATS:
        raise TypeError(f"/ on {x.dtype} expressions: use // or % (rounding toward -infinity) "
                        "or loom.te.truncdiv / truncmod (C's truncation)")
    return _expr_call(ctx, ctx.lib.loom_div, x, y)


def _need_expr(v: Any, what: str) -> Expr:
    if not isinstance(v, Expr):
        raise TypeError(f"{what}: expected a loom.te expression, got {type(v).__name__}")
    return v


def _pair(fn_name: str, a: Any, b: Any) -> Expr:
    pair = _operands(a, b, fn_name)
    if pair is None:
        bad = a if not isinstance(a, Expr) else b
        raise TypeError(f"{fn_name}: expected loom.te expressions or numbers (at least one "
                        f"expression), got {type(bad).__name__}")
    ctx, x, y = pair
    return _expr_call(ctx, getattr(ctx.lib, f"loom_{fn_name}"), x, y)


def truncdiv(a: ExprLike, b: ExprLike) -> Expr:
    """a / b rounded toward zero (C's integer division)."""
    return _pair("div", a, b)


def truncmod(a: ExprLike, b: ExprLike) -> Expr:
    """The remainder of truncdiv (C's %): takes a's sign."""
    return _pair("mod", a, b)


def const(value: Union[int, float, bool], dtype: Any = None,
          ctx: Optional[Context] = None) -> Expr:
    """A constant; dtype defaults to bool / int32 / float32 by the value's
    Python type."""
    ctx = ctx or current_context()
    if dtype is None:
        if isinstance(value, bool):
            code = BOOL
        elif isinstance(value, numbers.Integral):
            code = I32
        elif isinstance(value, numbers.Real):
            code = FLOATS[0]
        else:
            raise TypeError(f"const: value must be a number, got {type(value).__name__}")
    else:
        code = _context.dtype_code(dtype)
    return _scalar(ctx, value, code, "const")


def cast(x: Expr, dtype: Any) -> Expr:
    """x converted to dtype (C conversion rules)."""
    x = _need_expr(x, "cast")
    return _expr_call(x._ctx, x._ctx.lib.loom_cast, _context.dtype_code(dtype), x)


def if_then_else(cond: ExprLike, t: ExprLike, f: ExprLike) -> Expr:
    """t where cond holds, else f (both evaluated: a select)."""
    if not isinstance(cond, Expr):
        anchor = t if isinstance(t, Expr) else f
        if not isinstance(anchor, Expr) or not isinstance(cond, bool):
            raise TypeError("if_then_else: cond must be a bool expression (a Python bool "
                            "needs an expression in t or f)")
        cond = _scalar(anchor._ctx, cond, BOOL, "if_then_else")
    pair = _operands(t, f, "if_then_else")
    if pair is None:
        raise TypeError("if_then_else: t and f must be expressions or numbers, at least one "
                        "an expression")
    ctx, x, y = pair
    if cond._ctx is not ctx:
        raise ValueError("if_then_else: cond and the values belong to different Contexts")
    return _expr_call(ctx, ctx.lib.loom_select, cond, x, y)


def all(*conds: Expr) -> Expr:
    """The conjunction of bool expressions."""
    if not conds:
        raise TypeError("all: expected at least one condition")
    r = _need_expr(conds[0], "all")
    for c in conds[1:]:
        r = _pair("and", r, c)
    return r


def any(*conds: Expr) -> Expr:
    """The disjunction of bool expressions."""
    if not conds:
        raise TypeError("any: expected at least one condition")
    r = _need_expr(conds[0], "any")
    for c in conds[1:]:
        r = _pair("or", r, c)
    return r


def _math(name: str, *args: ExprLike) -> Expr:
    anchor = next((a for a in args if isinstance(a, Expr)), None)
    if anchor is None:
        raise TypeError(f"{name}: expected a loom.te expression, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    ctx = anchor._ctx
    xs = [a if isinstance(a, Expr) else _scalar(ctx, a, anchor._code, name) for a in args]
    for x in xs:
        if x._ctx is not ctx:
            raise ValueError(f"{name}: the arguments belong to different Contexts")
    h = ctx.call(ctx.lib.loom_call, ctx.h, name.encode(), _ptrs([x._h for x in xs]), len(xs))
    return Expr(ctx, h)


def exp(x: Expr) -> Expr:
    """e ** x (float)."""
    return _math("exp", x)


def log(x: Expr) -> Expr:
    """The natural logarithm (float)."""
    return _math("log", x)


def sqrt(x: Expr) -> Expr:
    return _math("sqrt", x)


def tanh(x: Expr) -> Expr:
    return _math("tanh", x)


def erf(x: Expr) -> Expr:
    return _math("erf", x)


def fabs(x: Expr) -> Expr:
    """|x| of a float; abs(e) works for any numeric expression."""
    return _math("fabs", x)


def floor(x: Expr) -> Expr:
    return _math("floor", x)


def ceil(x: Expr) -> Expr:
    return _math("ceil", x)


def round(x: Expr) -> Expr:
    """Rounds half away from zero (C's round)."""
    return _math("round", x)


def sin(x: Expr) -> Expr:
    return _math("sin", x)


def cos(x: Expr) -> Expr:
    return _math("cos", x)


def power(x: ExprLike, y: ExprLike) -> Expr:
    """x ** y (floats)."""
    return _math("pow", x, y)


# ---------------------------------------------------------------- reductions

_REDUCE = {"sum": ("loom_sum", 0), "max": ("loom_max_reduce", 1), "min": ("loom_min_reduce", 2)}


def _reduce(kind: str, src: ExprLike, axis: Union[ReduceAxis, Sequence[ReduceAxis]],
            where: Optional[Expr]) -> Expr:
    src = _need_expr(src, kind)
    axes = [axis] if isinstance(axis, ReduceAxis) else list(axis) if isinstance(
        axis, (list, tuple)) else None
    if not axes or not _builtin_all(isinstance(a, ReduceAxis) for a in axes):
        raise TypeError(f"{kind}: axis must be a reduce axis (loom.te.reduce_axis) or a list of "
                        f"them, got {axis!r}")
    ctx = src._ctx
    for x in axes + ([where] if where is not None else []):
        if not isinstance(x, Expr):
            raise TypeError(f"{kind}: where must be a bool expression, got {type(x).__name__}")
        if x._ctx is not ctx:
            raise ValueError(f"{kind}: the source, axes and condition belong to different "
                             "Contexts")
    fn_name, op = _REDUCE[kind]
    arr = _ptrs([a._axis_h for a in axes])
    if where is None:
        h = ctx.call(getattr(ctx.lib, fn_name), ctx.h, src._h, arr, len(axes))
    else:
        h = ctx.call(ctx.lib.loom_reduce_where, ctx.h, op, src._h, arr, len(axes), where._h)
    return Expr(ctx, h)


def sum(expr: Expr, axis: Union[ReduceAxis, Sequence[ReduceAxis]],
        where: Optional[Expr] = None) -> Expr:
    """The sum of expr over the reduce axes (only where the bool `where`
    holds); must be the whole body of a compute."""
    return _reduce("sum", expr, axis, where)


def max(a: ExprLike, b: Optional[ExprLike] = None, *,
        axis: Union[ReduceAxis, Sequence[ReduceAxis], None] = None,
        where: Optional[Expr] = None) -> Expr:
    """max(a, b) elementwise, or with axis= the maximum of a over the reduce
    axes (-inf / the type's minimum where nothing is reduced)."""
    if axis is not None:
        if b is not None:
            raise TypeError("max: give either b (elementwise) or axis= (a reduction), not both")
        return _reduce("max", a, axis, where)
    if where is not None:
        raise TypeError("max: where= needs axis=")
    return _pair("max", a, b)


def min(a: ExprLike, b: Optional[ExprLike] = None, *,
        axis: Union[ReduceAxis, Sequence[ReduceAxis], None] = None,
        where: Optional[Expr] = None) -> Expr:
    """min(a, b) elementwise, or with axis= the minimum of a over the reduce
    axes (+inf / the type's maximum where nothing is reduced)."""
    if axis is not None:
        if b is not None:
            raise TypeError("min: give either b (elementwise) or axis= (a reduction), not both")
        return _reduce("min", a, axis, where)
    if where is not None:
        raise TypeError("min: where= needs axis=")
    return _pair("min", a, b)


# ---------------------------------------------------------------- tensors

def _shape(shape: Any, what: str) -> Tuple[int, ...]:
    if isinstance(shape, numbers.Integral) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not _builtin_all(
            isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in shape):
        raise TypeError(f"{what}: shape must be an int or a tuple of ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def _name(name: Any, what: str) -> bytes:
    if not isinstance(name, str):
        raise TypeError(f"{what}: name must be a str, got {type(name).__name__}")
    return _context.encode(name, "name")


class Tensor:
    """A placeholder (an input) or a computed tensor; ``T[i, j]`` is the
    load of one element inside a compute body."""

    __slots__ = ("_ctx", "_h", "name", "shape", "dtype", "__weakref__")

    def __init__(self, ctx: Context, h: int) -> None:
        lib = ctx.lib
        self._ctx = ctx
        self._h = h
        self.name: str = lib.loom_tensor_name(h).decode()
        self.shape: Tuple[int, ...] = tuple(
            ctx.call(lib.loom_tensor_dim, ctx.h, h, d) for d in range(lib.loom_tensor_ndim(h)))
        self.dtype: str = DTYPE_NAMES[lib.loom_tensor_dtype(h)]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def context(self) -> Context:
        return self._ctx

    def __getitem__(self, index: Any) -> Expr:
        idx = index if isinstance(index, tuple) else (index,)
        ctx = self._ctx
        hs = []
        for d, i in enumerate(idx):
            if isinstance(i, Expr):
                if i._ctx is not ctx:
                    raise ValueError(f"{self.name}[...]: index {d} belongs to another Context")
                hs.append(i._h)
            elif isinstance(i, numbers.Integral) and not isinstance(i, bool):
                hs.append(ctx.call(ctx.lib.loom_index, ctx.h, int(i)))
            else:
                raise TypeError(f"{self.name}[...]: index {d} is {i!r}; expected an int64 "
                                "expression or an int (no slices)")
        return Expr(ctx, ctx.call(ctx.lib.loom_load, ctx.h, self._h, _ptrs(hs), len(hs)))

    def __repr__(self) -> str:
        return f"<loom.te.Tensor {self.name}: {self.dtype}{list(self.shape)}>"


def placeholder(shape: Union[int, Sequence[int]], dtype: Any = "float32",
                name: Optional[str] = None) -> Tensor:
    """An input tensor of a fixed shape (every dimension >= 1)."""
    ctx = current_context()
    shape = _shape(shape, "placeholder")
    code = _context.dtype_code(dtype)
    nm = _name(name if name is not None else ctx.default_name("placeholder"), "placeholder")
    arr = (ctypes.c_int64 * _builtin_max(len(shape), 1))(*shape)
    return Tensor(ctx, ctx.call(ctx.lib.loom_placeholder, ctx.h, nm, code, len(shape), arr))


def reduce_axis(dom: Union[int, Tuple[int, int]], name: str = "k") -> ReduceAxis:
    """A reduction axis over range(dom) or range(lo, hi) for dom = (lo, hi)."""
    ctx = current_context()
    if isinstance(dom, numbers.Integral) and not isinstance(dom, bool):
        lo, hi = 0, int(dom)
    elif (isinstance(dom, (tuple, list)) and len(dom) == 2 and _builtin_all(
            isinstance(x, numbers.Integral) and not isinstance(x, bool) for x in dom)):
        lo, hi = int(dom[0]), int(dom[1])
    else:
        raise TypeError(f"reduce_axis: dom must be an extent or a (lo, hi) pair of ints, "
                        f"got {dom!r}")
    nm = _name(name, "reduce_axis")
    axis = ctx.call(ctx.lib.loom_reduce_axis, ctx.h, nm, hi - lo)
    index = axis
    if lo != 0:
        index = ctx.call(ctx.lib.loom_add, ctx.h, axis, ctx.call(ctx.lib.loom_index, ctx.h, lo))
    return ReduceAxis(ctx, index, axis, name, (lo, hi))


def _arity_ok(fcompute: Callable[..., Any], n: int) -> Optional[int]:
    """The number of positional parameters fcompute takes when it cannot take
    n, else None."""
    try:
        sig = inspect.signature(fcompute)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*range(n))
        return None
    except TypeError:
        return len([p for p in sig.parameters.values()
                    if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


def compute(shape: Union[int, Sequence[int]], fcompute: Callable[..., ExprLike],
            name: Optional[str] = None, dtype: Any = None) -> Tensor:
    """A tensor whose element (i, j, ...) is fcompute(i, j, ...) (one int64
    axis expression per dimension). fcompute runs once, now; its result may
    be a reduction (sum/max/min over reduce axes) only as the whole body.
    dtype only types a body that is a plain Python number."""
    ctx = current_context()
    shape = _shape(shape, "compute")
    if not callable(fcompute):
        raise TypeError(f"compute: fcompute must be callable, got {type(fcompute).__name__}")
    takes = _arity_ok(fcompute, len(shape))
    if takes is not None:
        raise TypeError(f"compute: fcompute takes {takes} arguments but the shape has "
                        f"{len(shape)} dimensions (one axis argument each)")
    nm = _name(name if name is not None else ctx.default_name("compute"), "compute")
    raised: List[BaseException] = []

    def body(_ctx_h: int, axes: Any, _user: Any) -> Optional[int]:
        # Exceptions must not cross the C frame: keep it, return NULL, raise
        # it again once loom_compute has returned.
        try:
            r = fcompute(*[Expr(ctx, axes[d]) for d in range(len(shape))])
            if _is_number(r):
                r = const(r, dtype, ctx)
            if not isinstance(r, Expr):
                raise TypeError(f"compute {nm.decode()}: fcompute returned {type(r).__name__}, "
                                "expected a loom.te expression")
            if r._ctx is not ctx:
                raise ValueError(f"compute {nm.decode()}: the body belongs to another Context "
                                 "(make placeholders, axes and computes in one Context)")
            return r._h
        except BaseException as e:  # noqa: B036 (re-raised below)
            raised.append(e)
            return None

    cb = COMPUTE_FN(body)
    arr = (ctypes.c_int64 * _builtin_max(len(shape), 1))(*shape)
    with ctx.lock:
        h = ctx.lib.loom_compute(ctx.h, nm, len(shape), arr, cb, None)
        if not h:
            if raised:
                ctx.lib.loom_ctx_clear_error(ctx.h)
                raise raised[0]
            raise ctx.error()
    return Tensor(ctx, h)


# ---------------------------------------------------------------- functions

class Param(NamedTuple):
    """A parameter of a Func: the tensor a kernel call passes there."""
    name: str
    shape: Tuple[int, ...]
    dtype: str
    align: int  # bytes its data must be aligned to
    written: bool  # an output


class Func:
    """A function of blocks (loom_func): the loop IR of a compute definition,
    a schedule's current program or parsed text. ``str(f)`` is the IR text."""

    __slots__ = ("_ctx", "_h", "_params", "__weakref__")

    def __init__(self, ctx: Context, h: int) -> None:
        self._ctx = ctx
        self._h = h
        self._params: Optional[Tuple[Param, ...]] = None

    @staticmethod
    def parse(text: str, ctx: Optional[Context] = None) -> "Func":
        """The function in IR text (the format str(f) prints; docs/tir.md)."""
        ctx = ctx or current_context()
        return Func(ctx, ctx.call(ctx.lib.loom_func_parse, ctx.h, _context.encode(text, "text")))

    @property
    def name(self) -> str:
        return self._ctx.lib.loom_func_name(self._h).decode()

    @property
    def context(self) -> Context:
        return self._ctx

    @property
    def params(self) -> Tuple[Param, ...]:
        """The parameters in call order (inputs, then outputs)."""
        if self._params is None:
            ctx, lib = self._ctx, self._ctx.lib
            out = []
            for i in range(lib.loom_func_num_params(self._h)):
                p = _context._Param()
                ctx.call_status(lib.loom_func_param, ctx.h, self._h, i, ctypes.byref(p))
                out.append(Param(p.name.decode(), tuple(p.shape[d] for d in range(p.ndim)),
                                 DTYPE_NAMES[p.dtype], p.align, bool(p.written)))
            self._params = tuple(out)
        return self._params

    @property
    def c_source(self) -> str:
        """The C that loom.build generates for this function alone."""
        return self._ctx.text(self._ctx.lib.loom_func_c_source, self._ctx.h, self._h)

    def __str__(self) -> str:
        return self._ctx.text(self._ctx.lib.loom_func_text, self._ctx.h, self._h)

    def __repr__(self) -> str:
        ps = ", ".join(f"{p.name}: {p.dtype}{list(p.shape)}" for p in self.params)
        return f"<loom.te.Func {self.name}({ps})>"


def create_func(args: Sequence[Tensor], name: str = "main") -> Func:
    """The function computing every compute tensor reachable from args; args
    are its parameters in call order (inputs, then outputs). name becomes
    the kernel's C symbol, so it must be a C identifier."""
    if not isinstance(args, (list, tuple)) or not args:
        raise TypeError("create_func: args must be a non-empty list of tensors")
    for i, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise TypeError(f"create_func: args[{i}] is {type(t).__name__}, expected a "
                            "loom.te.Tensor")
    ctx = args[0]._ctx
    for i, t in enumerate(args):
        if t._ctx is not ctx:
            raise ValueError(f"create_func: args[{i}] ({t.name}) belongs to another Context")
    nm = _name(name, "create_func")
    return Func(ctx, ctx.call(ctx.lib.loom_func_create, ctx.h, nm, _ptrs([t._h for t in args]),
                              len(args)))

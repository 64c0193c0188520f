"""Loom's exceptions: one class per C ``loom_status``, all under
:class:`LoomError`, each carrying Loom's own message (naming the file, node,
input or argument at fault and what was expected).

Where a Python builtin means the same thing the class also derives from it
(``InputError`` is a ``ValueError``, ``FileError`` an ``OSError``...), so
``except ValueError`` keeps working for code that does not know Loom."""

from __future__ import annotations

from typing import Dict, Optional, Type

# The C enum loom_status (include/loom/loom_status.h), by value; tests/python/test_abi.py
# checks this copy against the header.
OK = 0
ERR_INVALID_ARG = 1
ERR_PARSE = 2
ERR_SCHEDULE = 3
ERR_UNSUPPORTED = 4
ERR_IO = 5
ERR_BUILD = 6
ERR_RUNTIME = 7
ERR_INTERNAL = 8
ERR_OUT_OF_MEMORY = 9


class LoomError(Exception):
    """Any failure Loom reports. ``status`` is the C ``loom_status`` value
    (0 for failures found in Python before any C call)."""

    status: int = 0

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class InputError(LoomError, ValueError):
    """A malformed argument: wrong dtype, shape, rank or name of a tensor, an
    option out of range (``LOOM_ERR_INVALID_ARG``)."""

    status = ERR_INVALID_ARG


class ParseError(LoomError, ValueError):
    """Text, an ONNX file or an artifact did not parse or is damaged
    (``LOOM_ERR_PARSE``; the message names the line, node or section)."""

    status = ERR_PARSE


class ScheduleError(LoomError):
    """A schedule primitive refused the request; the schedule is unchanged
    (``LOOM_ERR_SCHEDULE``)."""

    status = ERR_SCHEDULE


class UnsupportedError(LoomError):
    """Valid, but not supported (an operator, dtype or target; an artifact of
    another Loom version or for a CPU feature this machine lacks)
    (``LOOM_ERR_UNSUPPORTED``)."""

    status = ERR_UNSUPPORTED


class FileError(LoomError, OSError):
    """A missing, unreadable or unwritable file (``LOOM_ERR_IO``)."""

    status = ERR_IO

    def __str__(self) -> str:  # OSError's own __str__ would show args as a tuple
        return LoomError.__str__(self)


class CompileError(LoomError):
    """The system C compiler failed on generated code; its output is in the
    message (``LOOM_ERR_BUILD``)."""

    status = ERR_BUILD


class CompilerNotFoundError(CompileError):
    """Compiling needs a C compiler (``$LOOM_CC``, else ``clang``, else
    ``cc``) and none is on ``PATH``. Loading and running a compiled ``.loom``
    file does not."""


class RunError(LoomError):
    """A kernel or the artifact failed at run time (``LOOM_ERR_RUNTIME``)."""

    status = ERR_RUNTIME


class InternalError(LoomError):
    """A bug in Loom (``LOOM_ERR_INTERNAL``): please report it with the message."""

    status = ERR_INTERNAL


class OutOfMemoryError(LoomError, MemoryError):
    """An allocation failed; the message names what was being allocated
    (``LOOM_ERR_OUT_OF_MEMORY``)."""

    status = ERR_OUT_OF_MEMORY


class ClosedError(LoomError, ValueError):
    """The object was closed (``Module.close``) and cannot be used any more."""


_BY_STATUS: Dict[int, Type[LoomError]] = {
    ERR_INVALID_ARG: InputError,
    ERR_PARSE: ParseError,
    ERR_SCHEDULE: ScheduleError,
    ERR_UNSUPPORTED: UnsupportedError,
    ERR_IO: FileError,
    ERR_BUILD: CompileError,
    ERR_RUNTIME: RunError,
    ERR_INTERNAL: InternalError,
    ERR_OUT_OF_MEMORY: OutOfMemoryError,
}


def error_class(status: int) -> Type[LoomError]:
    """The exception class for a non-zero ``loom_status``."""
    return _BY_STATUS.get(status, LoomError)


def make_error(status: int, message: str) -> LoomError:
    """An exception of the class matching ``status`` with ``message``."""
    return error_class(status)(message, status)


__all__ = [
    "LoomError", "InputError", "ParseError", "ScheduleError", "UnsupportedError", "FileError",
    "CompileError", "CompilerNotFoundError", "RunError", "InternalError", "OutOfMemoryError",
    "ClosedError", "error_class", "make_error",
]

"""The ctypes mirrors of the public C structs (python/loom/_lib.py) against
the C compiler's sizeof and offsetof: a field the C side gained and Python
lacks makes the library write past the Python object (memory corruption far
from the cause). Needs a C compiler, as compiling models does."""
import ctypes
import os
import subprocess

import pytest

import loom
from loom import _lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# ctypes class -> (C type, header)
STRUCTS = {
    _lib.DLTensor: ("DLTensor", "dlpack/dlpack.h"),
    _lib.ModelOptions: ("loom_model_options", "loom/loom_runtime.h"),
    _lib.TensorInfo: ("loom_tensor_info", "loom/loom_runtime.h"),
    _lib.ProfileEntry: ("loom_profile_entry", "loom/loom_runtime.h"),
    _lib.InputValue: ("loom_input_value", "loom/loom_compile.h"),
    _lib.CompileOptions: ("loom_compile_options", "loom/loom_compile.h"),
    _lib.PassInfo: ("loom_pass_info", "loom/loom_compile.h"),
}


def test_ctypes_structs_match_the_headers(tmp_path):
    cc = loom.find_c_compiler()
    if not cc:
        pytest.skip("no C compiler")
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += sorted({f"#include \"{h}\"" for _, h in STRUCTS.values()})
    lines.append("int main(void) {")
    for cls, (ctype, _) in STRUCTS.items():
        lines.append(f'  printf("{ctype} %zu\\n", sizeof({ctype}));')
        for name, _t in cls._fields_:
            lines.append(f'  printf("{ctype}.{name} %zu\\n", offsetof({ctype}, {name}));')
    lines.append("  return 0;\n}")
    src = tmp_path / "sizes.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "sizes"
    inc = [f"-I{os.path.join(ROOT, 'include')}"]
    subprocess.run([cc, *inc, "-o", str(exe), str(src)], check=True, capture_output=True, text=True)
    c = dict(line.rsplit(" ", 1) for line in subprocess.run([str(exe)], check=True, capture_output=True,
                                                             text=True).stdout.splitlines())
    for cls, (ctype, _) in STRUCTS.items():
        assert ctypes.sizeof(cls) == int(c[ctype]), f"{cls.__name__}: ctypes {ctypes.sizeof(cls)} bytes, C {ctype} {c[ctype]}"
        for name, _t in cls._fields_:
            assert getattr(cls, name).offset == int(c[f"{ctype}.{name}"]), f"{cls.__name__}.{name}"


def test_status_numbers_match_loom_status_h():
    # python/loom/errors.py copies the C enum by hand: every value of
    # include/loom/loom_status.h is there under the same name (LOOM_ dropped),
    # nothing else is, and every error value has its exception class.
    import re

    from loom import errors

    with open(os.path.join(ROOT, "include", "loom", "loom_status.h")) as f:
        enum = re.search(r"typedef enum loom_status \{(.*?)\} loom_status;", f.read(), re.S).group(1)
    enum = re.sub(r"/\*.*?\*/", "", enum, flags=re.S)
    in_c = {m.group(1): int(m.group(2)) for m in re.finditer(r"\bLOOM_(\w+)\s*=\s*(\d+)", enum)}
    assert len(in_c) == len(re.findall(r"\bLOOM_\w+", enum)), "an enumerator without a value in loom_status.h"
    in_python = {n: v for n, v in vars(errors).items() if n == "OK" or n.startswith("ERR_")}
    assert in_python == in_c
    for name, value in in_c.items():
        if value:
            cls = errors.error_class(value)
            assert cls is not errors.LoomError and cls.status == value, name

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

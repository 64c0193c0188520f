#!/usr/bin/env python3
"""No machine constants in src/topi (issue 13): every register count, cache
size and vector width a default schedule uses comes from the Target
(schedule_common.c's topi_vector_registers, topi_registers_per_vector,
topi_register_tile_fits; target->l1d_bytes, l2_bytes, vector_bits).

Fails, naming file and line, on code (comments and strings stripped) that
  - spells a cache size: N * 1024, or 16384 ... 2097152;
  - names a cache or register constant with a number (L1_BYTES = ...,
    N_REGISTERS = ...);
  - discards the target ((void)target) in a schedule.
The patterns are checked first against lines of the schedules as they were
before the target decided (a lint that cannot fail proves nothing)."""
import pathlib
import re
import sys

PATTERNS = [
    (re.compile(r"\b\d+\s*\*\s*1024\b"), "a cache size in bytes"),
    (re.compile(r"\b(?:16384|32768|49152|65536|131072|262144|524288|1048576|2097152)\b"), "a cache size in bytes"),
    (re.compile(r"\b\w*(?:L1|L2|L3|CACHE|REGISTERS|REGS)\w*\s*=\s*\d+"), "a cache or register constant"),
    (re.compile(r"\(\s*void\s*\)\s*target\b"), "a schedule that ignores the target"),
]

MUST_CATCH = [
    "enum { MAX_OWB = 16, N_KT = 4, L1_BYTES = 32 * 1024 };",
    "enum { CHUNK_BYTES = 16 * 1024 };",
    "enum { L2_HALF_BYTES = 512 * 1024 };",
    "enum { DW_MAX_OWB = 16, DW_PAD_TILE_BYTES = 48 * 1024 };",
    "  (void)target;",
    "enum { NUM_REGISTERS = 32 };",
]


def strip_comments_and_strings(src):
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", src[i:j]))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src[i] in "\"'":
            q, j = src[i], i + 1
            while j < n and src[j] != q:
                j += 2 if src[j] == "\\" else 1
            out.append(q + " " * (min(j, n) - i - 1) + q)
            i = j + 1
        else:
            out.append(src[i])
            i += 1
    return "".join(out)


def violations(text):
    code = strip_comments_and_strings(text)
    for lineno, line in enumerate(code.split("\n"), 1):
        for pat, what in PATTERNS:
            if pat.search(line):
                yield lineno, what


def main():
    for sample in MUST_CATCH:
        if not any(True for _ in violations(sample)):
            print(f"topi_target_constants: the lint misses {sample!r}", file=sys.stderr)
            return 1
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2])
    files = sorted((root / "src" / "topi").glob("*.[ch]"))
    if not files:
        print(f"topi_target_constants: no sources under {root / 'src' / 'topi'}", file=sys.stderr)
        return 1
    bad = 0
    for f in files:
        lines = f.read_text().split("\n")
        for lineno, what in violations(f.read_text()):
            print(f"{f.relative_to(root)}:{lineno}: {what} (derive it from the Target): {lines[lineno - 1].strip()}")
            bad += 1
    if bad:
        print(f"topi_target_constants: {bad} machine constant(s) in src/topi", file=sys.stderr)
        return 1
    print(f"topi_target_constants: {len(files)} files clean")
    return 0


if __name__ == "__main__":
    sys.exit(main())

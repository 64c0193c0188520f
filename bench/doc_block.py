"""Replaces a generated block of a markdown doc: the text between a begin
and an end marker line (bench/matmul_table.py, bench/models_table.py)."""
import sys


def replace_block(path, begin, end, text):
    """Puts text between the lines `begin` and `end` of the file at path;
    exits with a message when the file lacks them."""
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        sys.exit(f"{path}: no '{begin}' ... '{end}' block to replace")
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(path, "w") as f:
        f.write(head + begin + "\n" + text + end + tail)

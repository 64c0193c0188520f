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


def main(argv, name, tables, usage):
    """A table script's command line: `FILE ...` prints tables(FILES);
    `--update DOC [--block NAME] FILE ...` writes them into DOC between
    `<!-- {name} begin -->` and `<!-- {name} end -->` (with a block name:
    `<!-- {name} NAME begin -->`, a second block of the same doc)."""
    update, block = None, None
    if argv[:1] == ["--update"]:
        if len(argv) < 3:
            sys.exit(usage)
        update, argv = argv[1], argv[2:]
        if argv[:1] == ["--block"]:
            if len(argv) < 3:
                sys.exit(usage)
            block, argv = argv[1], argv[2:]
    if not argv:
        sys.exit(usage)
    text = tables(argv)
    if not update:
        sys.stdout.write(text)
        return
    tag = f"{name} {block}" if block else name
    replace_block(update, f"<!-- {tag} begin -->", f"<!-- {tag} end -->", text)

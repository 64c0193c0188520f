#!/usr/bin/env python3
"""docs/bench.md's GEMV and BERT matmul tables, generated from the raw
results bench/matmul writes with --out (bench/results/matmul-*.jsonl: one
JSON line per run header, then one per shape and thread count).

usage: bench/matmul_table.py FILE.jsonl ...               # prints the tables
       bench/matmul_table.py --update docs/bench.md [--block NAME] FILE.jsonl ...
--update replaces the text between the lines `<!-- matmul-tables begin -->`
and `<!-- matmul-tables end -->` of the given file (--block NAME after it:
`<!-- matmul-tables NAME begin -->`); the tables are never typed by hand.

Per file: the run's header (date, CPU, Loom's target, OpenBLAS's core,
load), a grid of GEMV ratios (rows N, columns K, then each row's lowest
and median ratio) per thread count, and a
table of the other shapes. ratio = OpenBLAS median time / Loom median
time (> 1: Loom faster); for M = 1 OpenBLAS is the faster of its two
sgemv layouts."""
import json
import statistics
import sys

import doc_block

def load(path):
    header, rows = None, []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            if "run" in r:
                header = r if header is None else header
            else:
                rows.append(r)
    return header, rows


def tables(path):
    header, rows = load(path)
    out = [f"`{path}`: {header['run']}, {header['cpu']}, Loom `{header['target']}`, "
           f"OpenBLAS core {header['openblas_core']}, load {header['load']:.2f} at the start; "
           f"medians of {rows[0]['repeat'] if rows else 0} rounds.", ""]
    gemv = [r for r in rows if r["M"] == 1]
    threads = sorted({r["threads"] for r in rows})
    if gemv:
        ns, ks = sorted({r["N"] for r in gemv}), sorted({r["K"] for r in gemv})
        by = {(r["N"], r["K"], r["threads"]): r for r in gemv}
        for t in threads:
            out.append(f"GEMV 1 x N x K, {t} thread{'s' if t > 1 else ''}: OpenBLAS sgemv time / Loom time "
                       f"(Loom GFLOP/s)")
            out.append("")
            out.append("| N \\ K | " + " | ".join(str(k) for k in ks) + " | min | median |")
            out.append("|---:|" + "---:|" * (len(ks) + 2))
            for n in ns:
                cells, ratios = [], []
                for k in ks:
                    r = by.get((n, k, t))
                    cells.append("-" if not r else
                                 f"{r['openblas_over_loom']:.2f} ({2e-6 * n * k / r['loom_ms']:.1f})")
                    if r:
                        ratios.append(r["openblas_over_loom"])
                cells += [f"{min(ratios):.2f}", f"{statistics.median(ratios):.2f}"] if ratios else ["-", "-"]
                out.append(f"| {n} | " + " | ".join(cells) + " |")
            out.append("")
    other = [r for r in rows if r["M"] > 1]
    if other:
        out.append("| M | N | K | threads | Loom ms | Loom GFLOP/s | OpenBLAS sgemm ms | GFLOP/s | ratio |")
        out.append("|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in other:
            flop = 2e-6 * r["M"] * r["N"] * r["K"]
            out.append(f"| {r['M']} | {r['N']} | {r['K']} | {r['threads']} | {r['loom_ms']:.4f} | "
                       f"{flop / r['loom_ms']:.1f} | {r['openblas_ms']:.4f} | {flop / r['openblas_ms']:.1f} | "
                       f"{r['openblas_over_loom']:.2f} |")
        out.append("")
    worst = {}
    for r in rows:
        key = ("GEMV" if r["M"] == 1 else "other", r["threads"])
        worst[key] = min(worst.get(key, 99), r["openblas_over_loom"])
    out.append("Lowest ratio: " + "; ".join(f"{k[0]} at {k[1]} thread{'s' if k[1] > 1 else ''} {v:.2f}"
                                           for k, v in sorted(worst.items())) + ".")
    out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    doc_block.main(sys.argv[1:], "matmul-tables", lambda paths: "\n".join(tables(p) for p in paths), __doc__)

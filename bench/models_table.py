#!/usr/bin/env python3
"""Docs tables of model latency, Loom against ONNX Runtime, generated from
the raw results bench/models writes (bench/results/models-*.json), one
column per run, so that a table shows how much separate runs agree.

usage: bench/models_table.py FILE.json ...                     # prints the tables
       bench/models_table.py --update docs/models.md FILE.json ...
--update replaces the text between the lines `<!-- models-tables begin -->`
and `<!-- models-tables end -->` of the given file (with --block NAME:
`<!-- models-tables NAME begin -->` and `... NAME end -->`); the tables are
never typed by hand.

Tables: Loom / ORT per run (the median of the per-round ratios Loom block
median / ORT block median: < 1 means Loom is faster), each run's lowest and
highest round, and the medians in ms. Files are shown in the order given, headed by their --label
(else their start time)."""
import json
import statistics
import sys

import doc_block

def load(path):
    with open(path) as f:
        return json.load(f)


def run_name(doc):
    return doc.get("label") or doc["started"]


def ratios(doc, model, threads, variant_index):
    """Loom/ORT of each round (the inverse of the per-round ORT/Loom)."""
    for b in doc["blocks"]:
        if b["model"] == model and b["threads"] == threads and b.get("loom_blocks_ms"):
            return [lo / o for o, lo in zip(b["ort_blocks_ms"], b["loom_blocks_ms"][variant_index])]
    return []


def native_row(doc, model, threads):
    return next((r for r in doc["rows"] if r["model"] == model and r["threads"] == threads and
                 r["variant"] == "native"), None)


def tables(paths):
    docs = [load(p) for p in paths]
    keys = []
    for d in docs:
        for r in d["rows"]:
            if r["variant"] == "native" and (r["model"], r["threads"]) not in keys:
                keys.append((r["model"], r["threads"]))
    cond = sorted({f"{d['cpu']}, {d['cpus']} CPUs, onnxruntime {d['onnxruntime']}" for d in docs})
    out = ["Runs: " + "; ".join(f"`{p}` ({run_name(d)}: {d['started']}, commit {d.get('commit')}, runtime "
                                   f"`{d.get('loom_rt')}`, {d.get('sched_policy', '?')}, {d['repeat']} timed runs "
                                   f"a side, load average at the end {(d.get('load_average_at_end') or ['?'])[0]})"
                                   for p, d in zip(paths, docs)),
           "", "Conditions: " + "; ".join(cond), "",
           ]
    head = ["| model | threads | " + " | ".join(run_name(d) for d in docs) + " |", "|---|---|" + "---|" * len(docs)]
    medians, spreads = list(head), list(head)
    for m, t in keys:
        med, spread = [], []
        for d in docs:
            row, rs = native_row(d, m, t), ratios(d, m, t, 0)
            ok = rs and row and row["loom_ms"]
            med.append(f"{statistics.median(rs):.2f}" if ok else "-")
            spread.append(f"{min(rs):.2f}-{max(rs):.2f}; {row['ort_ms']:.2f} / {row['loom_ms']:.2f}" if ok else "-")
        medians.append(f"| {m} | {t} | " + " | ".join(med) + " |")
        spreads.append(f"| {m} | {t} | " + " | ".join(spread) + " |")
    out += ["Loom / ORT latency (median of the per-round ratios; < 1: Loom is faster), per run:", "", *medians, "",
            "Each run's rounds (lowest-highest Loom / ORT of one round) and medians (ORT ms / Loom ms):", "",
            *spreads]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    doc_block.main(sys.argv[1:], "models-tables", tables,
                   "usage: bench/models_table.py [--update DOC.md [--block NAME]] FILE.json ...")

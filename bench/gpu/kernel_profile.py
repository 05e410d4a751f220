#!/usr/bin/env python3
"""Kernel time by kernel name for one command on a GPU, from Nsight Compute (ncu) with the clocks
left alone: every launch's gpu__time_duration, summed per kernel name, as a markdown table of the
largest (name, launches, total ms, share). Answers where a training step's device time goes.

  python3 bench/gpu/kernel_profile.py --label "FlexGraph GCN RMAT-20" --out profile.md -- \\
      flexgraph train --device cuda --dataset rmat:scale=20 --model gcn --hidden 256 --epochs 3
  python3 bench/gpu/kernel_profile.py --parse ncu.csv     # summarise a CSV ncu wrote earlier

Appends to --out (several commands compare in one file). Exits with the command's status.
"""
import argparse
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile

UNITS = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3, "ns": 1e-6, "us": 1e-3, "ms": 1.0}


def kernel_times(text):
    """{kernel name: [launches, total ms]} from ncu's --csv output (one row per launch and metric)."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if '"Kernel Name"' in l and '"Metric Value"' in l), None)
    if start is None:
        raise ValueError("no ncu CSV header (\"Kernel Name\", \"Metric Value\") in the output")
    out = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        ms = value * UNITS.get(row.get("Metric Unit", "nsecond"), 1e-6)
        name = row["Kernel Name"]
        entry = out.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += ms
    return out


def markdown(label, times, top):
    total = sum(t for _, t in times.values()) or 1.0
    rows = sorted(times.items(), key=lambda kv: -kv[1][1])
    lines = [f"### {label}: {sum(n for n, _ in times.values())} launches, {total:.2f} ms of kernels", "",
             "| kernel | launches | total ms | share |", "|---|---|---|---|"]
    for name, (n, ms) in rows[:top]:
        short = name if len(name) <= 90 else name[:87] + "..."
        lines.append(f"| `{short.replace('|', '/')}` | {n} | {ms:.2f} | {100 * ms / total:.1f}% |")
    rest = sum(ms for _, (_, ms) in rows[top:])
    if rest > 0:
        lines.append(f"| (the other {len(rows) - top}) | | {rest:.2f} | {100 * rest / total:.1f}% |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--label", default="command")
    p.add_argument("--out", default=None, help="markdown file to append to (default: stdout only)")
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    p.add_argument("--parse", default=None, help="summarise this ncu CSV file instead of running a command")
    p.add_argument("command", nargs=argparse.REMAINDER)
    a = p.parse_args()
    rc = 0
    if a.parse:
        text = open(a.parse).read()
    else:
        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        if not cmd:
            p.error("give a command after --, or --parse FILE")
        if not os.access(a.ncu, os.X_OK):
            sys.exit(f"kernel_profile: ncu not found at {a.ncu} (--ncu)")
        with tempfile.NamedTemporaryFile("r", suffix=".csv") as log:
            rc = subprocess.run([a.ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv",
                                 "--log-file", log.name, *cmd]).returncode
            text = open(log.name).read()
    report = markdown(a.label, kernel_times(text), a.top)
    print(report)
    if a.out:
        with open(a.out, "a") as f:
            f.write(report + "\n")
    sys.exit(rc)


if __name__ == "__main__":
    main()

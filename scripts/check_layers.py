#!/usr/bin/env python3
"""Checks the project's layering: every quoted include of a project header must point to the
including file's own unit or to one the unit may use (directly or through the units it uses),
and the libraries of the outside world may be included only where LIBRARIES says.

    scripts/check_layers.py [--root DIR]    # exit 0: clean; 1: violations (each named); 2: usage

A unit is a folder: flexgraph/<part>, runtime/<subsystem>, or one of the other top folders. The
allowed order is written once, here, lowest first; subsystem READMEs describe it in words.
"""
import argparse
import os
import re
import sys

# unit: the units it may include directly (what those may include is allowed too).
LAYERS = """
proto:
flexgraph/base:
flexgraph/tensor:        flexgraph/base
flexgraph/ops:           flexgraph/tensor
flexgraph/graph:         flexgraph/tensor
flexgraph/autograd:      flexgraph/ops
flexgraph/nn:            flexgraph/autograd
hdg:                     flexgraph/graph
nau:                     hdg flexgraph/nn
sampling:                hdg flexgraph/ops
partition:               nau proto
udf_examples:            nau
runtime/comm:            flexgraph/base proto
runtime/tasks:           nau proto
runtime/distributed:     runtime/comm runtime/grid nau sampling partition
runtime/grid:            runtime/comm flexgraph/autograd
runtime/train:           runtime/distributed runtime/tasks runtime/plan
runtime/cluster:         runtime/train
runtime/plan:            flexgraph/tensor
runtime/cli:             runtime/cluster runtime/plan
python:                  runtime/cli
"""

# Outside libraries: an include matching the pattern is allowed only in the listed units.
LIBRARIES = {
    "gRPC": (re.compile(r'^<grpc(pp)?/|"proto/flexgraph\.grpc\.pb\.h"'), {"runtime/comm", "runtime/cluster"}),
    "MPI": (re.compile(r'^<mpi\.h>'), {"runtime/comm"}),
    "NCCL": (re.compile(r'^<nccl\.h>'), {"runtime/comm"}),
    "OpenSSL": (re.compile(r'^<openssl/'), {"runtime/comm"}),
    "pybind11": (re.compile(r'^<pybind11/|^<Python\.h>'), {"python"}),
}

CHECKED_TOPS = ("proto", "flexgraph", "hdg", "nau", "sampling", "partition", "udf_examples", "runtime", "python")
SOURCE = re.compile(r"\.(h|cc|cu|cuh)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+([<"][^>"]+[>"])')


def parse_layers(text):
    uses = {}
    for n, line in enumerate(text.strip().splitlines(), 1):
        unit, _, deps = line.partition(":")
        uses[unit.strip()] = deps.split()
    for unit, deps in uses.items():
        for d in deps:
            if d not in uses:
                raise SystemExit(f"check_layers: LAYERS: {unit} uses {d}, which is not declared")
    closure = {}

    def reach(unit, path=()):
        if unit in path:
            raise SystemExit(f"check_layers: LAYERS has a cycle: {' -> '.join(path + (unit,))}")
        if unit not in closure:
            r = {unit}
            for d in uses[unit]:
                r |= reach(d, path + (unit,))
            closure[unit] = r
        return closure[unit]

    for unit in uses:
        reach(unit)
    return closure


def unit_of(path):
    """The unit of a repository-relative path, or None outside the checked folders."""
    parts = path.split("/")
    if parts[0] not in CHECKED_TOPS:
        return None
    if parts[0] in ("flexgraph", "runtime"):
        return "/".join(parts[:2]) if len(parts) > 2 else parts[0]
    return parts[0]


def check(root):
    allowed = parse_layers(LAYERS)
    problems = []
    for top in CHECKED_TOPS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not SOURCE.search(name):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                unit = unit_of(rel)
                if unit not in allowed:
                    problems.append(f"{rel}: in no declared unit ({unit}); add its folder to LAYERS "
                                    "in scripts/check_layers.py")
                    continue
                with open(full, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        for lib, (pattern, units) in LIBRARIES.items():
                            if pattern.search(target) and unit not in units:
                                problems.append(f"{rel}:{lineno}: {unit} includes {target} ({lib}), which "
                                                f"only {', '.join(sorted(units))} may use")
                        if not target.startswith('"'):
                            continue
                        header = target.strip('"')
                        to = unit_of(header)
                        if to is None or to in allowed.get(unit, ()):
                            continue
                        if to not in allowed:
                            problems.append(f"{rel}:{lineno}: includes {header}, in no declared unit")
                        else:
                            problems.append(f"{rel}:{lineno}: {unit} includes {header} of {to}, "
                                            f"which {unit} may not use (it may use: "
                                            f"{', '.join(sorted(allowed[unit] - {unit}))})")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = parser.parse_args()
    problems = check(os.path.abspath(args.root))
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} include(s) break the layering")
        return 1
    print("check_layers: every include follows the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""scripts/check_layers.py fails on includes against the layering: each case copies the checked
folders of the tree, adds one include, and expects exit 1 with the offending file and line named;
the unmodified copy must pass.

    check_layers_test.py SOURCE_DIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

src = os.path.abspath(sys.argv[1])
checker = os.path.join(src, "scripts", "check_layers.py")
TOPS = ("proto", "flexgraph", "hdg", "nau", "sampling", "partition", "udf_examples", "runtime")

# (file to add the include to, the include, text the report must hold)
CASES = [
    ("runtime/comm/communicator.h", '#include "runtime/train/trainer.h"', "runtime/comm may not use"),
    ("runtime/tasks/task.h", '#include "runtime/comm/communicator.h"', "runtime/tasks may not use"),
    ("runtime/tasks/task.cc", "#include <grpcpp/grpcpp.h>", "(gRPC)"),
    ("runtime/distributed/exchange.h", '#include "runtime/train/summary.h"', "runtime/distributed may not use"),
    ("flexgraph/tensor/tensor.h", '#include "flexgraph/autograd/var.h"', "flexgraph/tensor may not use"),
    ("nau/model.h", '#include "sampling/sampler.h"', "nau may not use"),
    ("runtime/train/trainer.h", '#include "runtime/cluster/worker.h"', "runtime/train may not use"),
]


def run(root):
    return subprocess.run([sys.executable, checker, "--root", root], capture_output=True, text=True)


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="check-layers-") as tmp:
        for top in TOPS:
            shutil.copytree(os.path.join(src, top), os.path.join(tmp, top),
                            ignore=shutil.ignore_patterns("*.npy", "*.gz", "corpus"))
        clean = run(tmp)
        if clean.returncode != 0:
            print("FAIL: the unmodified tree does not pass:\n" + clean.stdout + clean.stderr)
            return 1
        for path, include, expected in CASES:
            full = os.path.join(tmp, path)
            with open(full) as f:
                original = f.read()
            lines = original.splitlines(keepends=True)
            at = next(i for i, l in enumerate(lines) if l.startswith("#include")) + 1
            with open(full, "w") as f:
                f.write("".join(lines[:at] + [include + "\n"] + lines[at:]))
            got = run(tmp)
            where = f"{path}:{at + 1}:"
            if got.returncode != 1 or where not in got.stdout or expected not in got.stdout:
                print(f"FAIL: {include} in {path}: exit {got.returncode}, expected 1 naming '{where}' "
                      f"and '{expected}'; output:\n{got.stdout}{got.stderr}")
                failures += 1
            else:
                print(f"ok: {include} in {path} refused: {got.stdout.splitlines()[0]}")
            with open(full, "w") as f:
                f.write(original)
        # A source file in runtime/ outside a subsystem folder is in no declared unit.
        with open(os.path.join(tmp, "runtime", "stray.cc"), "w") as f:
            f.write('#include "runtime/comm/communicator.h"\n')
        got = run(tmp)
        if got.returncode != 1 or "runtime/stray.cc: in no declared unit" not in got.stdout:
            print(f"FAIL: runtime/stray.cc not refused: exit {got.returncode}\n{got.stdout}")
            failures += 1
        else:
            print("ok: a file outside the subsystem folders refused")
    print(f"check_layers_test: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# `pip install .` from a clean clone: clones this repository's HEAD into a temporary directory,
# installs it with its report extra into a fresh virtual environment (scikit-build-core builds the
# module and the flexgraph binary from scratch: about 45 minutes on a shared 2-core machine, so CI
# does not run it), then, from a neutral directory, trains and embeds README's example, builds a
# heterogeneous dataset, trains with workers=2 and writes a report through the installed binary.
#   scripts/check_pip_install.sh [--keep]     (--keep leaves the clone and the venv, printed)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/flexgraph-pip-XXXXXX)
[ "${1:-}" = "--keep" ] || trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/clone"
python3 -m venv "$work/venv"
# Relative paths in ccache's hashes: a second check reuses the first one's objects.
export CCACHE_BASEDIR="$work/clone" CCACHE_NOHASHDIR=1
start=$(date +%s)
"$work/venv/bin/pip" install -q "$work/clone[report]"
echo "check_pip_install: installed $(git -C "$work/clone" rev-parse --short HEAD) in $(( $(date +%s) - start )) s"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import json, os, subprocess, sys
import numpy as np, flexgraph
assert "site-packages" in flexgraph.__file__, flexgraph.__file__
edges = np.array([[0, 1, 2, 3], [1, 2, 3, 0]])
ds = flexgraph.Dataset.from_arrays(edges, features=np.eye(4, dtype=np.float32), labels=[0, 1, 0, 1], train=[0, 1], test=[2, 3])
run = flexgraph.train(ds, model="gcn", epochs=5, seed=1)
h = run.model.embed(ds)
assert h.shape[0] == 4 and h.dtype == np.float32 and len(run.history) == 5
het = flexgraph.Dataset.from_arrays({("a", "r", "b"): np.array([[0, 1], [1, 0]])},
                                    features={"a": np.ones((2, 3), np.float32)}, labels={"a": [0, 1]})
assert het.node_types == ["a", "b"], het.node_types
sbm = flexgraph.Dataset.load("sbm:nodes=600,classes=4,features=8")
two = flexgraph.train(sbm, model="gcn", epochs=3, seed=1, workers=2)
one = flexgraph.train(sbm, model="gcn", epochs=3, seed=1)
assert np.allclose(two.losses, one.losses, rtol=1e-4), (two.losses, one.losses)
exe = os.path.join(os.path.dirname(flexgraph.__file__), "bin", "flexgraph")
with open("summary.json", "w") as f:
    json.dump(one.summary, f)
env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
subprocess.run([exe, "report", "summary.json", "-o", "report.html"], check=True, env=env)
assert os.path.getsize("report.html") > 1_000_000
print("check_pip_install: example, heterogeneous arrays, workers=2 and flexgraph report ran from the installed package")
PY
[ "${1:-}" = "--keep" ] && echo "check_pip_install: kept $work"
exit 0

#!/usr/bin/env bash
# Prints ptxas resource usage per CUDA kernel and architecture: registers, spill stores/loads, shared
# memory, stack frame and constant memory. Recompiles each .cu of a configured CUDA build with its
# exact flags (from compile_commands.json) plus -Xptxas -v, into a temporary directory; the build
# itself is not touched. No GPU is needed.
#
#   scripts/ptxas_report.sh [build_dir] [--fail-on-spill]
#   (build_dir defaults to build/cuda; configure it with -DFLEXGRAPH_CUDA=ON first)
set -euo pipefail

build_dir="build/cuda"
fail_on_spill=0
for arg in "$@"; do
  case "$arg" in
    --fail-on-spill) fail_on_spill=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) build_dir="$arg" ;;
  esac
done
db="$build_dir/compile_commands.json"
if [[ ! -f "$db" ]]; then
  echo "ptxas_report: $db not found; configure a CUDA build first:" >&2
  echo "  cmake -S . -B $build_dir -G Ninja -DFLEXGRAPH_CUDA=ON" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

python3 - "$db" "$tmp" "$fail_on_spill" <<'PY'
import json, os, re, shlex, subprocess, sys

db, tmp, fail_on_spill = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
entries = [e for e in json.load(open(db)) if e["file"].endswith(".cu")]
if not entries:
    sys.exit("ptxas_report: no .cu files in " + db + " (is FLEXGRAPH_CUDA on?)")

def demangle(names):
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                             check=True).stdout.splitlines()
        return dict(zip(names, out))
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}

def short(name):
    # "void fg::ops::cuda::(anonymous namespace)::UnaryKernel<(fg::ops::UnaryOp)0>(float, ...)"
    # -> "UnaryKernel<(UnaryOp)0>": drop the return type, namespaces and the parameter list.
    name = name.replace("(anonymous namespace)::", "")
    if name.startswith("void "):
        name = name[len("void "):]
    if name.endswith(")"):
        depth = 0
        for i in range(len(name) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(name[i], 0)
            if depth == 0:
                name = name[:i]
                break
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        if ch == "<": depth += 1
        elif ch == ">": depth -= 1
        elif ch == ":" and depth == 0: cut = i + 1
    name = name[cut:].replace("fg::ops::", "")
    ops = ["kRelu", "kLeakyRelu", "kElu", "kTanh", "kSigmoid", "kExp"]
    return re.sub(r"\(UnaryOp\)(\d)", lambda m: ops[int(m.group(1))], name)

rows = []
for n, e in enumerate(entries):
    args = shlex.split(e["command"])
    if os.path.basename(args[0]) == "ccache":
        args = args[1:]
    cleaned, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MT", "-MF"):
            skip = True
            continue
        if a == "-MD":
            continue
        cleaned.append(a)
    cleaned += ["-Xptxas=-v", "-o", os.path.join(tmp, f"{n}.o")]
    proc = subprocess.run(cleaned, cwd=e["directory"], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"ptxas_report: compiling {e['file']} failed")
    current = None
    for line in proc.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for '(sm_\d+)'", line)
        if m:
            current = {"file": os.path.basename(e["file"]), "mangled": m.group(1), "arch": m.group(2),
                       "regs": 0, "spill_st": 0, "spill_ld": 0, "smem": 0, "stack": 0, "cmem": 0}
            rows.append(current)
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            current["stack"], current["spill_st"], current["spill_ld"] = map(int, m.groups())
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["regs"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            current["smem"] = int(s.group(1)) if s else 0
            c = re.search(r"(\d+) bytes cmem\[0\]", line)
            current["cmem"] = int(c.group(1)) if c else 0

names = demangle([r["mangled"] for r in rows])
for r in rows:
    r["kernel"] = short(names[r["mangled"]])
rows.sort(key=lambda r: (r["file"], r["kernel"], r["arch"]))
width = max(len(r["kernel"]) for r in rows)
header = f"{'file':<24} {'kernel':<{width}} {'arch':<6} {'regs':>4} {'spill st':>8} {'spill ld':>8} {'smem':>6} {'stack':>5} {'cmem':>5}"
print(header)
print("-" * len(header))
for r in rows:
    print(f"{r['file']:<24} {r['kernel']:<{width}} {r['arch']:<6} {r['regs']:>4} {r['spill_st']:>8} "
          f"{r['spill_ld']:>8} {r['smem']:>6} {r['stack']:>5} {r['cmem']:>5}")
worst = max(rows, key=lambda r: r["regs"])
spilling = [r for r in rows if r["spill_st"] or r["spill_ld"]]
print(f"\n{len(rows)} kernel builds ({len({r['kernel'] for r in rows})} kernels x "
      f"{len({r['arch'] for r in rows})} architectures); max registers {worst['regs']} "
      f"({worst['kernel']}, {worst['arch']}); spilling: "
      + (", ".join(sorted({r['kernel'] for r in spilling})) if spilling else "none")
      + f"; max shared memory {max(r['smem'] for r in rows)} bytes")
if spilling and fail_on_spill:
    sys.exit(1)
PY

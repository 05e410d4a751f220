#!/usr/bin/env python3
"""The reading half of scripts/gpu_check.sh: it counts test cases in gtest's JSON reports, compares
GPU runs' losses with the CPU's, tables bulk sampling and writes summary.json. Standard library only.

  count REPORT --gpus N [--allow_skip PATTERN]... [--require PATTERN]... [--out COUNTS.json]
      Counts the test cases of one gtest report (--gtest_output=json:REPORT): passed, failed,
      skipped, disabled. Exits 1 when the report is missing or unreadable, when no test ran, when a
      test failed, when a test that --require names (fnmatch on Suite.Test) did not pass, or, on a
      machine with a GPU (N >= 1), when a test skipped that no --allow_skip pattern names.
  losses RUNS_DIR [--tolerance T] [--batch_tolerance T]
      Pairs each run summary NAME-cuda[-VARIANT].json with NAME-cpu.json and prints a Markdown table
      of epoch times and the largest relative loss difference; exits 1 when a difference is above
      the tolerance (1e-4; runs in mini-batches, with "batches" in their name, 1e-3), when the loss
      counts differ, or when a GPU run has no CPU run to compare with.
  sampling RUNS_DIR
      Prints the table of minibatch_bench summaries sampling-SAMPLER-WHERE-THREADS.json.
  summary STEPS.tsv --out summary.json [--meta KEY=VALUE]... [--gpu NAME]... [--final]
      Writes summary.json: the meta values, the GPUs, each step (name, status, exit code, seconds,
      timeout, log, test counts) and the test totals. STEPS.tsv holds one step a line: name, status,
      exit code, seconds, timeout, log, counts file (or -), tab-separated.
"""
import argparse
import fnmatch
import glob
import json
import os
import re
import sys


def read_report(path):
    """The test cases of one gtest JSON report: a list of (Suite.Test, outcome, failure messages)."""
    with open(path) as f:
        report = json.load(f)
    cases = []
    for suite in report.get("testsuites", []):
        for case in suite.get("testsuite", []):
            # A failure outside any test (an environment's SetUp) comes as the suite
            # "NonTestSuiteFailure" with one case of an empty name.
            name = f"{suite.get('name', '?')}.{case.get('name', '')}"
            failures = [f.get("failure", "") for f in case.get("failures", [])]
            status, result = case.get("status", "RUN"), case.get("result", "COMPLETED")
            if failures:
                outcome = "failed"
            elif status == "NOTRUN" or result == "SUPPRESSED":
                outcome = "disabled"
            elif result == "SKIPPED" or case.get("skipped"):
                outcome = "skipped"
            elif result == "COMPLETED":
                outcome = "passed"
            else:
                outcome = "failed"
                failures = [f"unknown result {result!r} (status {status!r})"]
            cases.append((name, outcome, failures))
    return cases


def count(args):
    counts = {"report": os.path.basename(args.report), "gpus": args.gpus, "total": 0, "passed": 0,
              "failed": 0, "skipped": 0, "skipped_expected": 0, "skipped_unexpected": 0, "disabled": 0,
              "failed_names": [], "skipped_expected_names": [], "skipped_unexpected_names": [],
              "required_missing": [], "errors": []}
    try:
        cases = read_report(args.report)
    except FileNotFoundError:
        cases = []
        counts["errors"].append("no report: the binary ended before writing it (a crash, a timeout) "
                                "or was not run")
    except (OSError, ValueError) as e:
        cases = []
        counts["errors"].append(f"unreadable report: {e}")
    for name, outcome, failures in cases:
        counts["total"] += 1
        counts[outcome] += 1
        if outcome == "failed":
            counts["failed_names"].append(name)
        elif outcome == "skipped":
            expected = args.gpus == 0 or any(fnmatch.fnmatchcase(name, p) for p in args.allow_skip)
            key = "expected" if expected else "unexpected"
            counts[f"skipped_{key}"] += 1
            counts[f"skipped_{key}_names"].append(name)
    ran = counts["passed"] + counts["failed"] + counts["skipped"]
    if not counts["errors"] and ran == 0:
        counts["errors"].append("no test ran (a filter that matches nothing?)")
    passed = [name for name, outcome, _ in cases if outcome == "passed"]
    for pattern in args.require:
        if not any(fnmatch.fnmatchcase(name, pattern) for name in passed):
            counts["required_missing"].append(pattern)
    problems = list(counts["errors"])
    if counts["failed"]:
        problems.append(f"failed: {', '.join(counts['failed_names'])}")
    if counts["skipped_unexpected"]:
        problems.append(f"skipped on a machine with {args.gpus} GPU(s): "
                        f"{', '.join(counts['skipped_unexpected_names'])}")
    if counts["required_missing"]:
        problems.append(f"did not pass (required): {', '.join(counts['required_missing'])}")
    counts["ok"] = not problems
    counts["problems"] = problems
    line = (f"{counts['total']} tests: {counts['passed']} passed, {counts['failed']} failed, "
            f"{counts['skipped']} skipped ({counts['skipped_expected']} expected), "
            f"{counts['disabled']} disabled")
    counts["line"] = line
    if args.out:
        with open(args.out, "w") as f:
            json.dump(counts, f, indent=1)
    print(line)
    for name in counts["skipped_expected_names"]:
        print(f"  skipped, expected here: {name}")
    for p in problems:
        print(f"  PROBLEM: {p}")
    return 0 if counts["ok"] else 1


def losses(args):
    rows, status = [], 0
    for gpu in sorted(glob.glob(os.path.join(args.runs, "*-cuda*.json"))):
        m = re.fullmatch(r"(.*)-cuda(-[A-Za-z0-9_]+)?\.json", os.path.basename(gpu))
        if not m:
            continue
        name, variant = m.group(1), (m.group(2) or "")[1:]
        label = f"{name} ({variant.replace('_', ' ')})" if variant else name
        cpu = os.path.join(args.runs, f"{name}-cpu.json")
        tolerance = args.batch_tolerance if "batches" in name else args.tolerance
        if not os.path.exists(cpu):
            rows.append(f"| {label} | | | no CPU run | | FAILED |")
            status = 1
            continue
        g, c = json.load(open(gpu)), json.load(open(cpu))
        gl, cl = g.get("losses", []), c.get("losses", [])
        if len(gl) != len(cl) or not cl:
            rows.append(f"| {label} | | | {len(gl)} GPU losses, {len(cl)} CPU | | FAILED |")
            status = 1
            continue
        rel = max(abs(a - b) / max(abs(b), 1e-30) for a, b in zip(gl, cl))
        ok = rel <= tolerance
        status |= 0 if ok else 1
        waits = sorted(g.get("epoch_host_syncs", [])[1:]) or [float("nan")]
        rows.append(f"| {label} | {g['epoch_seconds_median']:.4f} | {c['epoch_seconds_median']:.4f} | "
                    f"{rel:.2e} | {waits[len(waits) // 2]:.0f} | "
                    f"{'ok (≤' if ok else 'FAILED (>'} {tolerance:.0e}) |")
    print("\n| run | GPU s/epoch | CPU s/epoch | max loss rel. diff | GPU host waits/step | verdict |\n"
          "|---|---|---|---|---|---|")
    print("\n".join(rows) if rows else "| (no run trained on both devices) | | | | | |")
    return status


def sampling(args):
    print("\n| sampler | rows drawn on | threads | bulk 1 s | bulk 8 s | bulk 32 s | bulk 32 ÷ bulk 1 |\n"
          "|---|---|---|---|---|---|---|")
    runs = [(os.path.basename(p)[:-5].split("-")[1:], p)
            for p in glob.glob(os.path.join(args.runs, "sampling-*.json"))]
    for (sampler, where, t), path in sorted(runs, key=lambda r: (r[0][0], r[0][1], int(r[0][2]))):
        s = {int(b["bulk"]): b for b in json.load(open(path))["bulks"]}
        print(f"| {sampler} | {where} | {t} | {s[1]['epoch_seconds']:.3f} | "
              f"{s[8]['epoch_seconds']:.3f} | {s[32]['epoch_seconds']:.3f} | {s[32]['speedup_over_bulk_1']:.2f}× |")
    return 0


def summary(args):
    steps = []
    totals = {k: 0 for k in ("total", "passed", "failed", "skipped", "skipped_expected", "skipped_unexpected",
                             "disabled")}
    with open(args.steps) as f:
        for line in f:
            if not line.strip():
                continue
            name, status, rc, seconds, timeout, log, counts = line.rstrip("\n").split("\t")
            step = {"name": name, "status": status, "rc": None if rc == "-" else int(rc),
                    "seconds": int(seconds), "timeout_s": int(timeout), "log": log, "tests": None}
            if counts != "-":
                try:
                    with open(counts) as c:
                        step["tests"] = json.load(c)
                except (OSError, ValueError) as e:
                    step["tests"] = {"errors": [f"no counts: {e}"]}
                for k in totals:
                    totals[k] += step["tests"].get(k, 0)
            steps.append(step)
    out = {}
    for kv in args.meta:
        k, _, v = kv.partition("=")
        numeric = k in ("budget_s", "elapsed_s", "exit_status", "omp_threads") and re.fullmatch(r"-?\d+", v)
        out[k] = int(v) if numeric else v
    out["gpu"] = {"count": len(args.gpu), "names": args.gpu}
    out["steps"] = steps
    out["tests"] = totals
    failed = [s["name"] for s in steps if s["status"] != "ok"]
    out["failed_steps"] = failed
    out["status"] = ("failed" if failed or out.get("exit_status", 0) else "passed") if args.final else "running"
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, args.out)
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    c = sub.add_parser("count")
    c.add_argument("report")
    c.add_argument("--gpus", type=int, required=True)
    c.add_argument("--allow_skip", action="append", default=[])
    c.add_argument("--require", action="append", default=[])
    c.add_argument("--out")
    c.set_defaults(run=count)
    l = sub.add_parser("losses")
    l.add_argument("runs")
    l.add_argument("--tolerance", type=float, default=1e-4)
    l.add_argument("--batch_tolerance", type=float, default=1e-3)
    l.set_defaults(run=losses)
    s = sub.add_parser("sampling")
    s.add_argument("runs")
    s.set_defaults(run=sampling)
    m = sub.add_parser("summary")
    m.add_argument("steps")
    m.add_argument("--out", required=True)
    m.add_argument("--meta", action="append", default=[])
    m.add_argument("--gpu", action="append", default=[])
    m.add_argument("--final", action="store_true")
    m.set_defaults(run=summary)
    args = p.parse_args()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Fails a test run in which a test skipped that may not: only tests carrying the ctest label `gpu`
(those whose running depends on a CUDA device or NCCL, marked by GPU_TESTS in tests/CMakeLists.txt)
may skip. Every other skip (MPI, TLS certificates, a missing tool) hides a test that did not run.

    ctest --preset release                          # writes build/release/junit.xml (the preset)
    ctest --test-dir build/release --show-only=json-v1 > build/release/tests.json  # not --preset:
                                                    # the preset would rewrite junit.xml, empty
    scripts/check_skips.py --junit build/release/junit.xml --tests build/release/tests.json

Exit 0: every skipped test is a GPU test; 1: a test skipped that may not (each named, with the
reason gtest gave), a run with no tests, or a skipped test the test list does not know; 2: usage or
unreadable files (named).
"""
import argparse
import json
import re
import sys
import xml.etree.ElementTree as ET

ALLOWED_LABEL = "gpu"


def base_name(name):
    """A test's name without the '  # GetParam() = ...' that CMake keeps on parametrized tests."""
    return name.split("  #", 1)[0]


def skipped_tests(junit_path):
    """(tests run, [(name, reason)] of the skipped ones) of ctest's JUnit file."""
    root = ET.parse(junit_path).getroot()
    cases = root.iter("testcase")
    total = 0
    skipped = []
    for case in cases:
        total += 1
        status = case.get("status", "")
        if status in ("notrun", "disabled") or case.find("skipped") is not None:
            out = case.findtext("system-out") or ""
            m = re.search(r": Skipped\n(.*)", out)
            reason = m.group(1).strip() if m else (case.find("skipped").get("message", "")
                                                   if case.find("skipped") is not None else status)
            skipped.append((base_name(case.get("name", "?")), reason))
    return total, skipped


def labels_by_test(tests_path):
    """{test name: set of labels} from `ctest --show-only=json-v1`."""
    with open(tests_path) as f:
        data = json.load(f)
    labels = {}
    for test in data.get("tests", []):
        names = set()
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                names.update(prop.get("value", []))
        labels[base_name(test["name"])] = names
    return labels


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--junit", required=True, help="ctest's JUnit file (--output-junit)")
    parser.add_argument("--tests", required=True, help="ctest --show-only=json-v1 output")
    args = parser.parse_args(argv)
    try:
        total, skipped = skipped_tests(args.junit)
    except (OSError, ET.ParseError) as e:
        print(f"check_skips: cannot read the JUnit file {args.junit}: {e}", file=sys.stderr)
        return 2
    try:
        labels = labels_by_test(args.tests)
    except (OSError, ValueError, KeyError) as e:
        print(f"check_skips: cannot read the test list {args.tests}: {e}", file=sys.stderr)
        return 2
    if total == 0:
        print(f"check_skips: {args.junit} holds no test: nothing ran")
        return 1
    gpu = [(n, r) for n, r in skipped if ALLOWED_LABEL in labels.get(n, set())]
    bad = [(n, r) for n, r in skipped if ALLOWED_LABEL not in labels.get(n, set())]
    print(f"check_skips: {total} tests, {len(skipped)} skipped: {len(gpu)} GPU tests (label "
          f"'{ALLOWED_LABEL}'), {len(bad)} others")
    for name, reason in gpu:
        print(f"  skipped (GPU): {name}: {reason}")
    for name, reason in bad:
        why = "" if name in labels else " (not in the test list)"
        print(f"  SKIPPED, NOT ALLOWED{why}: {name}: {reason}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

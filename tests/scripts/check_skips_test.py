#!/usr/bin/env python3
"""scripts/check_skips.py passes a run whose only skips are GPU tests and fails one with any other
skip, naming it; and the build's ctest labels mark the GPU tests (and only them) with `gpu`.

    check_skips_test.py SOURCE_DIR CTEST BUILD_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

src, ctest, build = os.path.abspath(sys.argv[1]), sys.argv[2], os.path.abspath(sys.argv[3])
checker = os.path.join(src, "scripts", "check_skips.py")


def case(name, status, reason=None):
    """One <testcase> as ctest writes it; a skip carries gtest's 'Skipped' lines."""
    if status == "run":
        return f'<testcase name="{name}" classname="{name}" time="0.1" status="run"><system-out>ok</system-out></testcase>'
    return (f'<testcase name="{name}" classname="{name}" time="0.1" status="notrun">'
            f'<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>[ RUN      ] {name}\n'
            f'/src/t.cc:10: Skipped\n{reason}\n[  SKIPPED ] {name} (0 ms)\n</system-out></testcase>')


def junit(cases):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="x" tests="%d">\n%s\n</testsuite>\n'
            % (len(cases), "\n".join(cases)))


def tests_json(labels):
    return json.dumps({"kind": "ctestInfo", "tests": [
        {"name": n, "properties": ([{"name": "LABELS", "value": ls}] if ls else []) + [{"name": "TIMEOUT", "value": 300}]}
        for n, ls in labels.items()]})


def check(tmp, junit_text, json_text):
    with open(os.path.join(tmp, "junit.xml"), "w") as f:
        f.write(junit_text)
    with open(os.path.join(tmp, "tests.json"), "w") as f:
        f.write(json_text)
    return subprocess.run([sys.executable, checker, "--junit", os.path.join(tmp, "junit.xml"), "--tests",
                           os.path.join(tmp, "tests.json")], capture_output=True, text=True)


failures = 0


def expect(what, result, rc, *texts):
    global failures
    out = result.stdout + result.stderr
    if result.returncode != rc or any(t not in out for t in texts):
        failures += 1
        print(f"FAIL {what}: exit {result.returncode} (want {rc}), output must hold {texts}:\n{out}")
    else:
        print(f"ok   {what}")


LABELS = {"Cuda.Op": ["gpu"], "Nccl.AllReduce": ["gpu", "slow"], "Mpi.Ranks": [], "Launch.Tls": ["cluster"],
          "Core.Add": []}
with tempfile.TemporaryDirectory(prefix="check-skips-") as tmp:
    expect("only GPU tests skipped: passes",
           check(tmp, junit([case("Core.Add", "run"), case("Cuda.Op", "skip", "no CUDA device"),
                             case("Nccl.AllReduce", "skip", "built without NCCL")]), tests_json(LABELS)),
           0, "3 tests, 2 skipped: 2 GPU tests", "Cuda.Op: no CUDA device")
    expect("an MPI test skipped: fails naming it and why",
           check(tmp, junit([case("Core.Add", "run"), case("Cuda.Op", "skip", "no CUDA device"),
                             case("Mpi.Ranks", "skip", "built without MPI")]), tests_json(LABELS)),
           1, "1 others", "NOT ALLOWED: Mpi.Ranks: built without MPI")
    expect("a test with another label skipped: fails",
           check(tmp, junit([case("Launch.Tls", "skip", "openssl is needed")]), tests_json(LABELS)),
           1, "NOT ALLOWED: Launch.Tls")
    expect("a skipped test the list does not know: fails",
           check(tmp, junit([case("New.Test", "skip", "why")]), tests_json(LABELS)),
           1, "NOT ALLOWED (not in the test list): New.Test")
    expect("a run with no tests: fails", check(tmp, junit([]), tests_json(LABELS)), 1, "nothing ran")
    expect("nothing skipped: passes", check(tmp, junit([case("Core.Add", "run")]), tests_json(LABELS)),
           0, "1 tests, 0 skipped")
    expect("an unreadable JUnit file: usage error naming it", check(tmp, "<testsuite", tests_json(LABELS)),
           2, "junit.xml")

    # The build's own labels: the CUDA allocator's tests and the device op tests are GPU tests, the
    # availability check (which runs everywhere) is not, and no CPU instance of the op tests exists.
    listed = subprocess.run([ctest, "--test-dir", build, "--show-only=json-v1"], capture_output=True, text=True)
    if listed.returncode != 0:
        print(f"FAIL ctest --show-only=json-v1 in {build}: {listed.stderr}")
        sys.exit(1)
    real = {t["name"].split("  #")[0]: {l for p in t.get("properties", []) if p["name"] == "LABELS" for l in p["value"]}
            for t in json.loads(listed.stdout)["tests"]}
    for name, gpu in [("CudaAllocator.ExhaustedMemoryNamesTheTensor", True),
                      ("Devices/DeviceOpsTest.GemmAllTransposes/cuda", True),
                      ("DeviceSampler.SameBatchesAsTheHost", True),
                      ("CudaAvailability.IsStableAndExplained", False),
                      ("DeviceSampler.CreateNamesWhatItCannotDo", False),
                      ("Mpi.RanksMatchSingleProcess", False)]:
        if name not in real or ("gpu" in real[name]) != gpu:
            failures += 1
            print(f"FAIL {name}: labels {real.get(name)} (want gpu: {gpu})")
        else:
            print(f"ok   {name}: gpu {gpu}")
    cpu_instances = [n for n in real if n.startswith("Devices/DeviceOpsTest.") and n.endswith("/cpu")]
    if cpu_instances:
        failures += 1
        print(f"FAIL CPU instances of the device op tests: {cpu_instances[:3]}")
    # A real GPU test's skip passes the checker with the build's labels; a real MPI test's fails.
    real_json = listed.stdout
    expect("the build's GPU test skipped: passes",
           check(tmp, junit([case("CudaAllocator.ExhaustedMemoryNamesTheTensor", "skip", "no CUDA device")]), real_json),
           0, "1 GPU tests")
    expect("the build's MPI test skipped: fails",
           check(tmp, junit([case("Mpi.RanksMatchSingleProcess", "skip", "built without MPI")]), real_json),
           1, "NOT ALLOWED: Mpi.RanksMatchSingleProcess")

print("check_skips_test:", "FAILED" if failures else "passed")
sys.exit(1 if failures else 0)

"""The run report (flexgraph.report): pages written from small summaries mirroring the C++ format,
opened in a real headless Chromium (no console errors; every plot present and drawn), and malformed
inputs refused naming the file and the field."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]
try:
    from flexgraph import report
except ImportError:  # run from the source tree without PYTHONPATH=python
    sys.path.insert(0, str(PYTHON_DIR))
    from flexgraph import report

# A launch's --summary_json as runtime/train/summary.cc and runtime/cluster/leader.cc write it today: a mini-batch
# run over two workers.
LAUNCH_SUMMARY = {
    "model": "gcn", "dataset": "sbm:nodes=2000,classes=4,features=16", "seed": 1, "epochs": 6,
    "best_epoch": 5, "final_loss": 0.41, "epoch0_loss": None, "train_accuracy": 0.93,
    "valid_accuracy": 0.81, "valid_macro_f1": 0.8, "test_accuracy": 0.8, "test_macro_f1": 0.79,
    "test_micro_f1": 0.8, "epoch_seconds_median": 0.021, "hdg_bytes": 245760, "peak_rss_bytes": 61865984,
    "peak_tensor_bytes": 1048576, "host_fresh_bytes": 0, "peak_device_bytes": 0, "num_vertices": 2000,
    "num_edges": 39844,
    "stage_seconds": {"selection": 0.004, "message": 0.01, "aggregation": 0.03, "update": 0.02, "loss": 0.001,
                      "backward": 0.04, "optimizer": 0.003, "evaluation": 0.012},
    "stage_seconds_median_epoch": {"selection": 0.0006, "message": 0.0015, "aggregation": 0.005,
                                   "update": 0.003, "loss": 0.0002, "backward": 0.006, "optimizer": 0.0005},
    "minibatch": {"batches_per_epoch": 4, "bulk": 1, "sampled_edges_per_epoch": 18000,
                  "sampling_wait_seconds": 0.004},
    "losses": [1.38, 1.2, 0.95, 0.7, 0.52, 0.41],
    "epoch_seconds": [0.03, 0.021, 0.02, 0.022, 0.021, 0.02],
    "epoch_host_syncs": [0, 0, 0, 0, 0, 0],
    "world_size": 2, "coordinator_peak_rss_bytes": 30000000, "bytes_total": 2400000,
    "workers": [
        {"rank": r, "bytes_features_per_epoch": 100000 + r, "bytes_partials_per_epoch": 80000,
         "bytes_gradients_per_epoch": 60000, "bytes_allreduce_per_epoch": 9000, "bytes_control_per_epoch": 300,
         "peak_rss_bytes": 60000000, "peak_tensor_bytes": 1048576, "compute_seconds": 0.09 + 0.02 * r,
         "wait_seconds": 0.03 - 0.01 * r, "overlap": 0.4,
         "vectors_per_pass": {"chosen": 500, "rows_only": 600, "partial_only": 550, "naive": 900}}
        for r in range(2)
    ],
}

# flexgraph partition --summary_json (partition/plan.cc).
PARTITION_SUMMARY = {
    "dataset": "sbm", "model": "gcn", "method": "metis", "parts": 2, "num_vertices": 2000, "edge_cut": 812,
    "ghosts_total": 640, "imbalance": 1.021, "max_cost_seconds": 0.0051, "mean_cost_seconds": 0.005,
    "seconds": 0.02,
    "per_part": [
        {"owned_vertices": 1004, "edges": 20000, "ghosts_per_peer": [0, 330], "compute_seconds": 0.004,
         "comm_seconds": 0.0011},
        {"owned_vertices": 996, "edges": 19844, "ghosts_per_peer": [310, 0], "compute_seconds": 0.0039,
         "comm_seconds": 0.001},
    ],
}

PLOTS_TODAY = ["plot-loss", "plot-metrics", "plot-epoch-time", "plot-stages", "plot-workers", "plot-worker-bytes",
               "plot-partition-cost", "plot-partition-balance", "plot-partition-ghosts", "plot-sampling-rate",
               "plot-batch-rate"]


def full_summary() -> dict:
    """The launch summary with every per-epoch field the report can read (see report.py's docstring)."""
    s = copy.deepcopy(LAUNCH_SUMMARY)
    n = len(s["losses"])
    s["history"] = [{"epoch": e + 1, "loss": s["losses"][e], "seconds": s["epoch_seconds"][e],
                     "train_accuracy": 0.5 + 0.07 * e, "valid_accuracy": 0.45 + 0.06 * e,
                     "valid_loss": 1.4 - 0.15 * e, "test_accuracy": 0.44 + 0.06 * e} for e in range(n)]
    s["epoch_stage_seconds"] = {k: [v] * n for k, v in s["stage_seconds_median_epoch"].items()}
    for w in s["workers"]:
        w["epoch_compute_seconds"] = [0.015] * n
        w["epoch_wait_seconds"] = [0.004, None, 0.003, 0.004, 0.005, 0.004]  # null: not finite
        w["bytes_per_peer_per_epoch"] = [0, 250000] if w["rank"] == 0 else [240000, 0]
    s["partition"] = PARTITION_SUMMARY
    s["minibatch"]["epoch_sampled_edges"] = [17000, 18100, 17900, 18000, 18050, 18000]
    s["minibatch"]["epoch_sampling_wait_seconds"] = [0.001, 0.0005, 0.0007, 0.0006, 0.0006, 0.0006]
    return s


PLOTS_FULL = PLOTS_TODAY + ["plot-stages-epoch", "plot-worker-epochs", "plot-peer-bytes", "plot-sampling-wait"]

COORDINATOR_LOG = """coordinator: metis partition into 2 parts, imbalance 1.021, edge cut 812
coordinator: worker 0 registered from 127.0.0.1:40001 (pid 100)
coordinator: worker 1 registered from 127.0.0.1:40002 (pid 101)
"""


def worker_log(rank: int) -> str:
    lines = [f"worker {rank} of 2 at 127.0.0.1:4000{rank}"]
    for e in range(1, 7):
        if e % 2 == 0:
            lines.append(f"epoch {e:4d}  loss {1.5 - 0.2 * e:.4f}  train {0.5 + 0.06 * e:.4f}  "
                         f"valid {0.45 + 0.05 * e:.4f}  test {0.44 + 0.05 * e:.4f}  {0.02 + 0.001 * rank:.3f}s")
        else:
            lines.append(f"epoch {e:4d}  loss {1.5 - 0.2 * e:.4f}  {0.02 + 0.001 * rank:.3f}s")
    lines.append("summary: model gcn  dataset sbm  epochs 6  best epoch 6  valid 0.7500 (macro-F1 0.7400)  ...")
    return "\n".join(lines) + "\n"


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj, indent=2))
    return path


# ---------------------------------------------------------------------------------------------
# The browser: Debian's chromium and chromium-driver through Selenium.


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if not chromium or not driver_path:
        message = "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        if os.environ.get("FG_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1200,900", "--no-first-run", "--disable-extensions"):
        options.add_argument(a)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(120)
    # Uncaught errors and console.error calls, from before the page's first script.
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": """
        window.__errors = [];
        window.addEventListener('error', e => window.__errors.push('error: ' + e.message));
        window.addEventListener('unhandledrejection', e => window.__errors.push('rejection: ' + e.reason));
        const origError = console.error;
        console.error = function(...a) { window.__errors.push('console.error: ' + a.join(' ')); origError.apply(console, a); };
    """})
    yield driver
    driver.quit()


# Per plot div: whether plotly rendered it, its traces and data points, and the marks drawn (scatter
# points and lines, bars, heatmap images) with a visible size.
PLOT_STATE_JS = """
return Array.from(document.querySelectorAll('div[id^="plot-"]')).map(el => {
  const data = el.data || [];
  const points = data.reduce((n, t) => n + Math.max((t.x || []).length, (t.y || []).length,
                                                    (t.z || []).length), 0);
  const marks = Array.from(el.querySelectorAll('.point, path.js-line, .hm image, .heatmaplayer image'))
      .filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 || r.height > 0; }).length;
  const box = el.getBoundingClientRect();
  return {id: el.id, rendered: el.classList.contains('js-plotly-plot'), traces: data.length, points: points,
          marks: marks, width: box.width, height: box.height};
});
"""


def open_page(driver, page: Path) -> dict:
    driver.get(page.resolve().as_uri())
    state = {p["id"]: p for p in driver.execute_script(PLOT_STATE_JS)}
    errors = list(driver.execute_script("return window.__errors || [];"))
    errors += [f"{e['level']}: {e['message']}" for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    return {"plots": state, "errors": errors}


def check_page(driver, page: Path, expected: list[str]) -> dict:
    html = page.read_text()
    assert "<script src=" not in html, "the page loads a script from elsewhere: it must be self-contained"
    got = open_page(driver, page)
    assert got["errors"] == [], f"console errors in {page}: {got['errors']}"
    missing = [p for p in expected if p not in got["plots"]]
    assert not missing, f"plots missing from {page}: {missing}; present: {sorted(got['plots'])}"
    for pid, p in got["plots"].items():
        assert p["rendered"], f"{pid}: plotly did not render it"
        assert p["traces"] > 0 and p["points"] > 0, f"{pid}: no data ({p})"
        assert p["marks"] > 0, f"{pid}: nothing drawn ({p})"
        assert p["width"] > 100 and p["height"] > 100, f"{pid}: no visible size ({p})"
    return got


def test_launch_summary_of_today_with_partition(tmp_path, browser):
    run = write_json(tmp_path / "run.json", LAUNCH_SUMMARY)
    part = write_json(tmp_path / "partition.json", PARTITION_SUMMARY)
    out = tmp_path / "report.html"
    plots = report.write_report(run, out, partition=part)
    assert sorted(plots) == sorted(PLOTS_TODAY)
    check_page(browser, out, PLOTS_TODAY)
    text = out.read_text()
    # What the summary lacks is said, not crashed on.
    assert "history[].valid_accuracy" in text
    assert "epoch_stage_seconds" in text


def test_summary_with_every_per_epoch_field(tmp_path, browser):
    out = tmp_path / "report.html"
    plots = report.write_report(write_json(tmp_path / "run.json", full_summary()), out)
    assert sorted(plots) == sorted(PLOTS_FULL)
    check_page(browser, out, PLOTS_FULL)
    text = out.read_text()
    assert "history[].valid_accuracy" not in text and "epoch_stage_seconds&quot;)" not in text


def test_launch_log_directory(tmp_path, browser):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "coordinator.log").write_text(COORDINATOR_LOG)
    for r in range(2):
        (logs / f"worker-{r}.log").write_text(worker_log(r))
    (logs / "coordinator.port").write_text("40000\n")
    out = tmp_path / "report.html"
    plots = report.write_report(logs, out)
    # From the logs alone: loss and metrics (validation included) per epoch, both workers' epoch
    # times; the partition's one-line description.
    assert sorted(plots) == sorted(["plot-loss", "plot-metrics", "plot-epoch-time"])
    got = check_page(browser, out, plots)
    run = report.load_run(logs)
    assert run.partition.imbalance == pytest.approx(1.021) and run.partition.parts == 2
    assert run.history[2]["valid_accuracy"] == pytest.approx(0.55)
    assert sorted(run.workers[1].log_epoch_seconds) == [1, 2, 3, 4, 5, 6]
    assert got["plots"]["plot-metrics"]["traces"] == 3  # train, valid, test

    # With the launch's summary JSON in the directory too, its per-worker numbers join in.
    write_json(logs / "summary.json", LAUNCH_SUMMARY)
    plots = report.write_report(logs, out)
    assert {"plot-workers", "plot-worker-bytes", "plot-stages", "plot-sampling-rate"} <= set(plots)
    check_page(browser, out, plots)


def test_single_process_summary_omits_sections_with_notes(tmp_path, browser):
    s = {k: v for k, v in LAUNCH_SUMMARY.items() if k not in ("workers", "world_size", "minibatch",
                                                             "bytes_total", "coordinator_peak_rss_bytes")}
    out = tmp_path / "report.html"
    plots = report.write_report(write_json(tmp_path / "run.json", s), out)
    assert sorted(plots) == sorted(["plot-loss", "plot-metrics", "plot-epoch-time", "plot-stages"])
    check_page(browser, out, plots)
    text = out.read_text()
    assert "A single-process run" in text and "Whole-graph training" in text


def test_nearly_empty_summary_does_not_crash(tmp_path, browser):
    out = tmp_path / "report.html"
    plots = report.write_report(write_json(tmp_path / "run.json", {"losses": [], "epoch_seconds": []}), out)
    assert plots == []
    got = check_page(browser, out, [])
    assert got["plots"] == {}
    assert "No per-epoch data" in out.read_text()


def test_partition_summary_alone(tmp_path, browser):
    out = tmp_path / "report.html"
    plots = report.write_report(write_json(tmp_path / "partition.json", PARTITION_SUMMARY), out)
    assert sorted(plots) == ["plot-partition-balance", "plot-partition-cost", "plot-partition-ghosts"]
    check_page(browser, out, plots)
    assert "no training run" in out.read_text()


def test_partitioned_dataset_description_in_coordinator_log(tmp_path, browser):
    logs = tmp_path / "logs"
    logs.mkdir()
    # DescribePartitioned (partition/partitioned_dataset.cc) as the coordinator prints it.
    (logs / "coordinator.log").write_text(
        "coordinator: cora: partitioned dataset, 2 parts (method balanced, model gcn), from data/cora\n"
        "  node type node         2708 vertices\n"
        "  relation node___edge___node: 10556 edges\n"
        "  part       vertices     in-edges   cut in-edges  file\n"
        "  0              1350         5778            286  part-0.fgc\n"
        "  1              1358         4778            286  part-1.fgc\n"
        "  edge cut: 572 of 10556 in-edges (5.4%); estimated imbalance 1.000\n"
        "coordinator: listening on 127.0.0.1:38435 for 2 workers\n")
    (logs / "worker-0.log").write_text(worker_log(0))
    run = report.load_run(logs)
    p = run.partition
    assert (p.method, p.parts, p.edge_cut, p.imbalance) == ("balanced", 2, 572, 1.0)
    assert p.owned_vertices == [1350, 1358] and p.edges == [5778, 4778] and p.cut_edges == [286, 286]
    out = tmp_path / "report.html"
    plots = report.write_report(logs, out)
    assert "plot-partition-balance" in plots
    check_page(browser, out, plots)


def test_epoch_line_parser():
    assert report.parse_epoch_line("epoch    3  loss 1.2345  0.123s") == (3, {"loss": 1.2345, "seconds": 0.123})
    assert report.parse_epoch_line(
        "epoch   10  loss 0.6931  valid AUC 0.8123  test AUC 0.8001  hits@10 0.2100  0.050s") == (
        10, {"loss": 0.6931, "valid_auc": 0.8123, "test_auc": 0.8001, "test_hits_at_10": 0.21, "seconds": 0.05})
    assert report.parse_epoch_line("epoch 3, layer 1, phase 14") is None
    assert report.parse_epoch_line("early stop: no validation improvement in 3 evaluations") is None


# ---------------------------------------------------------------------------------------------
# Malformed inputs: exit status 2, one message naming the file and the field, no traceback.


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "flexgraph.report", *args], capture_output=True, text=True,
                          env=env, timeout=120)


def bad(summary_change):
    s = copy.deepcopy(LAUNCH_SUMMARY)
    summary_change(s)
    return s


MALFORMED = {
    "not_json": ('{"losses": [1, 2', "not JSON"),
    "array": ("[1, 2, 3]", "expected a JSON object"),
    "not_a_run_summary": ('{"num_vertices": 10}', 'not a run summary: it has no field "losses"'),
    "losses_a_string": (bad(lambda s: s.update(losses="1.2")), 'field "losses": expected a list of numbers'),
    "loss_a_string": (bad(lambda s: s["losses"].__setitem__(2, "x")), 'field "losses[2]": expected a number'),
    "worker_field": (bad(lambda s: s["workers"][1].update(compute_seconds="fast")),
                     'field "workers[1].compute_seconds": expected a number or null, got "fast"'),
    "workers_not_objects": (bad(lambda s: s.update(workers=[1, 2])), 'field "workers[0]": expected an object'),
    "stage_seconds": (bad(lambda s: s["stage_seconds"].update(update=[1])),
                      'field "stage_seconds.update": expected a number or null'),
    "minibatch": (bad(lambda s: s.update(minibatch=3)), 'field "minibatch": expected an object'),
    "history_without_epoch": (bad(lambda s: s.update(history=[{"loss": 1}])), 'field "history[0].epoch": missing'),
    "model_a_number": (bad(lambda s: s.update(model=3)), 'field "model": expected a string'),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_summary_fails_clearly(tmp_path, name):
    content, message = MALFORMED[name]
    path = tmp_path / f"{name}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    out = tmp_path / "report.html"
    r = run_cli(str(path), "-o", str(out))
    assert r.returncode == 2, r
    assert str(path) in r.stderr and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()


def test_missing_and_empty_inputs_fail_clearly(tmp_path):
    r = run_cli(str(tmp_path / "nope.json"), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and "nope.json: no such file or directory" in r.stderr, r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run_cli(str(empty), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and f"{empty}: no worker-R.log" in r.stderr, r.stderr
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "worker-0.log").write_text(worker_log(0))
    (logs / "summary.json").write_text(json.dumps(bad(lambda s: s.update(epoch_seconds={"a": 1}))))
    r = run_cli(str(logs), "-o", str(tmp_path / "r.html"))
    assert r.returncode == 2 and 'summary.json: field "epoch_seconds": expected a list' in r.stderr, r.stderr
    good = write_json(tmp_path / "run.json", LAUNCH_SUMMARY)
    r = run_cli(str(good), "-o", str(tmp_path / "r.html"), "--partition", str(good))
    assert r.returncode == 2 and 'not a partition summary: it has no field "per_part"' in r.stderr, r.stderr
    bad_part = copy.deepcopy(PARTITION_SUMMARY)
    bad_part["per_part"][1]["ghosts_per_peer"] = "many"
    part = write_json(tmp_path / "part.json", bad_part)
    r = run_cli(str(good), "-o", str(tmp_path / "r.html"), "--partition", str(part))
    assert r.returncode == 2 and 'field "per_part[1].ghosts_per_peer": expected a list' in r.stderr, r.stderr
    r = run_cli(str(good), "-o", str(tmp_path / "no-such-dir" / "r.html"))
    assert r.returncode == 2 and "cannot write" in r.stderr, r.stderr


def test_cli_writes_the_page(tmp_path):
    out = tmp_path / "r.html"
    r = run_cli(str(write_json(tmp_path / "run.json", LAUNCH_SUMMARY)), "-o", str(out))
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stderr and out.stat().st_size > 1_000_000  # plotly.js inline


# ---------------------------------------------------------------------------------------------
# Real runs, when the command line is built (FLEXGRAPH_BIN, else build/release/runtime/flexgraph):
# the report reads what the C++ side writes today.


def flexgraph_bin() -> str:
    path = os.environ.get("FLEXGRAPH_BIN") or str(PYTHON_DIR.parent / "build" / "release" / "runtime" / "flexgraph")
    assert os.access(path, os.X_OK), f"no flexgraph binary at {path} (build it, or set FLEXGRAPH_BIN)"
    return path


SMALL = ["--dataset", "sbm:nodes=600,classes=4,features=8", "--model", "gcn", "--epochs", "4", "--hidden", "8",
         "--threads", "1"]


def test_report_of_real_runs(tmp_path, browser):
    exe = flexgraph_bin()
    single = tmp_path / "single.json"
    r = subprocess.run([exe, "train", *SMALL, "--batch_size", "128", "--summary_json", str(single)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "single.html"
    plots = report.write_report(single, out)
    assert {"plot-loss", "plot-epoch-time", "plot-stages", "plot-stages-epoch", "plot-sampling-rate"} <= set(plots)
    check_page(browser, out, plots)

    logs = tmp_path / "logs"
    logs.mkdir()
    r = subprocess.run([exe, "launch", "--workers", "2", "--log_dir", str(logs), "--", "train", *SMALL,
                        "--summary_json", str(logs / "summary.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "launch.html"
    plots = report.write_report(logs, out)
    assert {"plot-loss", "plot-metrics", "plot-epoch-time", "plot-stages", "plot-workers",
            "plot-worker-bytes"} <= set(plots)
    check_page(browser, out, plots)
    run = report.load_run(logs)
    assert run.world_size == 2 and run.partition is not None and run.partition.parts == 2
    assert any(k.startswith("valid") for e in run.history.values() for k in e)  # from the epoch lines


def test_report_of_a_track_summary(tmp_path, browser):
    """`flexgraph track --summary_json` of a real (tiny) tracking run: the metrics and the two
    efficiency plots; bins that disagree in length fail naming the field."""
    exe = flexgraph_bin()
    events, model, summary = tmp_path / "events.fgc", tmp_path / "model", tmp_path / "track.json"
    for args in (["generate", "trackml:events=10,particles=20,seed=3", "--format", "fgc", "--out", str(events)],
                 ["train", "--model", "interaction", "--dataset", str(events), "--hidden", "8", "--layers", "2",
                  "--epochs", "2", "--batch_size", "4", "--threads", "1", "--quiet", "--save_model", str(model)],
                 ["track", "--model_dir", str(model), "--split", "all", "--threads", "1",
                  "--summary_json", str(summary)]):
        r = subprocess.run([exe, *args], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
    out = tmp_path / "track.html"
    plots = report.write_report(summary, out)
    assert sorted(plots) == ["plot-track-efficiency-eta", "plot-track-efficiency-pt"]
    check_page(browser, out, plots)
    page = out.read_text()
    assert "track_efficiency" in page and "fake_rate" in page and "FlexGraph track report" in page
    broken = json.loads(summary.read_text())
    broken["efficiency_vs_pt"]["matched"].append(1)
    with pytest.raises(report.ReportError, match='efficiency_vs_pt'):
        report.load_run(write_json(tmp_path / "broken.json", broken))


def test_flexgraph_report_command(tmp_path):
    """`flexgraph report` hands over to this package's report; a missing interpreter, package or
    plotly fails with exit status 1 and a message naming it."""
    exe = flexgraph_bin()
    run_json = write_json(tmp_path / "run.json", LAUNCH_SUMMARY)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["FLEXGRAPH_PYTHON"] = sys.executable  # has plotly; the package comes from the source tree

    out = tmp_path / "r.html"
    r = subprocess.run([exe, "report", str(run_json), "-o", str(out), "--title", "T"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    expected = report.write_report(run_json, tmp_path / "direct.html", title="T")
    page = out.read_text()
    assert expected and [p for p in expected if f'<div id="{p}"' not in page] == []

    r = subprocess.run([exe, "report", str(run_json)], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "-o/--out" in r.stderr, r.stderr  # Python's argument errors come through

    missing = dict(env, FLEXGRAPH_PYTHON=str(tmp_path / "no-python3"))
    r = subprocess.run([exe, "report", str(run_json), "-o", str(out)], env=missing, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 1 and f"cannot run the Python interpreter '{tmp_path / 'no-python3'}'" in r.stderr

    no_site = tmp_path / "python-no-site"  # the interpreter without its site-packages: no plotly
    no_site.write_text(f'#!/bin/sh\nexec "{sys.executable}" -S "$@"\n')
    no_site.chmod(0o755)
    r = subprocess.run([exe, "report", str(run_json), "-o", str(out)], env=dict(env, FLEXGRAPH_PYTHON=str(no_site)),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot import plotly: pip install plotly" in r.stderr, r.stderr

    outside = tmp_path / "bin" / "flexgraph"  # outside the build tree: the source tree's package is not used
    outside.parent.mkdir()
    shutil.copy(exe, outside)
    r = subprocess.run([str(outside), "report", str(run_json), "-o", str(out)], env=env, cwd=PYTHON_DIR.parent,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "cannot import flexgraph: pip install '.[report]'" in r.stderr, r.stderr

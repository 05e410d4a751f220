"""A run report: one self-contained HTML page of plots from a FlexGraph training run.

    python -m flexgraph.report RUN -o FILE.html [--partition PARTITION.json] [--title TEXT]

RUN is either

* a summary JSON written by ``flexgraph train ... --summary_json FILE`` or by
  ``flexgraph launch ... -- train ... --summary_json FILE`` (the launch's adds ``world_size`` and
  one entry per worker under ``workers``), or
* a launch's log directory (``flexgraph launch --log_dir DIR``): ``coordinator.log`` and
  ``worker-R.log`` (restarts as ``worker-R.restartN.log``); the epoch lines of the workers' logs
  give the per-epoch curves, the coordinator's log the partition's imbalance and edge cut. A
  summary JSON (``losses`` at its top level) or a partition summary (``flexgraph partition
  --summary_json``, ``per_part`` at its top level) in the directory is read too.

``--partition`` adds a partition summary written by ``flexgraph partition --summary_json``.

The page holds plotly.js inline, so it opens without network access. Sections whose data the
run does not hold are replaced by a one-line note naming the missing summary field. A malformed
input ends the program with exit status 2 and a message naming the file and the field.

Summary fields read beyond those the C++ summary writes today (each optional; the section falls
back to what exists when absent):

* ``history``: one object per epoch, ``{"epoch": 1, "loss": .., "seconds": .., "stage_seconds":
  {stage: seconds}, and when the epoch was evaluated "train_accuracy", "valid_accuracy",
  "valid_macro_f1", "test_accuracy", "valid_loss", task metrics such as "valid_auc"}`` (the C++
  summary writes it, without "valid_loss");
* ``epoch_stage_seconds``: stage name to a list of seconds per epoch;
* ``workers[r].epoch_compute_seconds``, ``workers[r].epoch_wait_seconds``: per epoch;
* ``workers[r].bytes_per_peer_per_epoch``: bytes this worker sent to each rank per epoch;
* ``partition``: the object ``flexgraph partition --summary_json`` writes;
* ``minibatch.epoch_sampled_edges``, ``minibatch.epoch_sampling_wait_seconds``: per epoch.
"""

from __future__ import annotations

import argparse
import html
import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

__all__ = ["ReportError", "Run", "load_run", "build_report", "write_report", "main"]

# The training step's stages, in the order ExecStats::Named() lists them.
STAGES = ["selection", "message", "aggregation", "update", "loss", "backward", "optimizer", "evaluation"]
BYTE_KINDS = ["features", "partials", "gradients", "allreduce", "control"]


class ReportError(Exception):
    """An input the report cannot read: the message names the file and the field."""


# --------------------------------------------------------------------------------------------
# Typed access to the JSON, with errors that name the file and the field.


class _Doc:
    """A JSON object read from `source`, with typed accessors for its fields."""

    def __init__(self, obj: dict, source: str, path: str = ""):
        self.obj = obj
        self.source = source
        self.path = path

    def _where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def _fail(self, key: str, expected: str, value: Any) -> ReportError:
        shown = json.dumps(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return ReportError(f'{self.source}: field "{self._where(key)}": expected {expected}, got {shown}')

    def has(self, key: str) -> bool:
        return key in self.obj and self.obj[key] is not None

    def number(self, key: str) -> float | None:
        """A number, or None when absent or null (the summary writes non-finite numbers as null)."""
        v = self.obj.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self._fail(key, "a number or null", v)
        return float(v)

    def string(self, key: str) -> str | None:
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise self._fail(key, "a string", v)
        return v

    def numbers(self, key: str) -> list[float | None] | None:
        """A list of numbers (nulls kept as None), or None when absent."""
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, list):
            raise self._fail(key, "a list of numbers", v)
        out: list[float | None] = []
        for i, x in enumerate(v):
            if x is None:
                out.append(None)
            elif isinstance(x, bool) or not isinstance(x, (int, float)):
                raise ReportError(f'{self.source}: field "{self._where(key)}[{i}]": expected a number or null, '
                                  f"got {json.dumps(x)[:60]}")
            else:
                out.append(float(x))
        return out

    def object(self, key: str) -> "_Doc | None":
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise self._fail(key, "an object", v)
        return _Doc(v, self.source, self._where(key))

    def objects(self, key: str) -> "list[_Doc] | None":
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, list):
            raise self._fail(key, "a list of objects", v)
        out = []
        for i, x in enumerate(v):
            if not isinstance(x, dict):
                raise ReportError(f'{self.source}: field "{self._where(key)}[{i}]": expected an object, '
                                  f"got {json.dumps(x)[:60]}")
            out.append(_Doc(x, self.source, f"{self._where(key)}[{i}]"))
        return out

    def number_map(self, key: str) -> dict[str, float | None] | None:
        """An object of numbers (e.g. stage_seconds)."""
        d = self.object(key)
        if d is None:
            return None
        return {k: d.number(k) for k in d.obj}

    def list_map(self, key: str) -> dict[str, list[float | None]] | None:
        """An object of lists of numbers (e.g. epoch_stage_seconds)."""
        d = self.object(key)
        if d is None:
            return None
        return {k: d.numbers(k) or [] for k in d.obj}


def _read_json(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ReportError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportError(f"{path}: not JSON: {e.msg} at line {e.lineno}, column {e.colno}") from None
    if not isinstance(obj, dict):
        raise ReportError(f"{path}: expected a JSON object (a run summary), got {type(obj).__name__}")
    return obj


# --------------------------------------------------------------------------------------------
# The run: what the inputs hold, read and checked.


@dataclass
class Partition:
    method: str | None = None
    parts: int | None = None
    imbalance: float | None = None
    edge_cut: float | None = None
    # Per part (may be empty when only the coordinator's one-line description is known).
    owned_vertices: list[float | None] = field(default_factory=list)
    edges: list[float | None] = field(default_factory=list)
    compute_seconds: list[float | None] = field(default_factory=list)
    comm_seconds: list[float | None] = field(default_factory=list)
    ghosts_per_peer: list[list[float | None]] = field(default_factory=list)
    cut_edges: list[float | None] = field(default_factory=list)  # a partitioned dataset's cut in-edges
    source: str = ""


@dataclass
class Worker:
    rank: int
    compute_seconds: float | None = None
    wait_seconds: float | None = None
    overlap: float | None = None
    bytes_per_epoch: dict[str, float | None] = field(default_factory=dict)
    peak_rss_bytes: float | None = None
    epoch_compute_seconds: list[float | None] | None = None
    epoch_wait_seconds: list[float | None] | None = None
    bytes_per_peer_per_epoch: list[float | None] | None = None
    # From the worker's log: seconds per epoch, by epoch number.
    log_epoch_seconds: dict[int, float] = field(default_factory=dict)


@dataclass
class Run:
    sources: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # model, dataset, epochs, test accuracy, ...
    # Per epoch (1-based epoch numbers), merged from the summary and the logs.
    history: dict[int, dict[str, float | None]] = field(default_factory=dict)
    history_source: str = ""
    best_epoch: int | None = None
    best_valid: dict[str, float] = field(default_factory=dict)
    stage_seconds: dict[str, float | None] | None = None
    stage_seconds_median_epoch: dict[str, float | None] | None = None
    epoch_stage_seconds: dict[str, list[float | None]] | None = None
    world_size: int = 1
    workers: list[Worker] = field(default_factory=list)
    partition: Partition | None = None
    minibatch: dict[str, Any] | None = None
    has_summary: bool = False


def _is_train_summary(obj: dict) -> bool:
    return "losses" in obj or "epoch_seconds" in obj or "history" in obj


def _is_partition_summary(obj: dict) -> bool:
    return "per_part" in obj


def _read_partition(d: _Doc) -> Partition:
    p = Partition(source=d.source)
    p.method = d.string("method")
    parts = d.number("parts")
    p.parts = int(parts) if parts is not None else None
    p.imbalance = d.number("imbalance")
    p.edge_cut = d.number("edge_cut")
    for part in d.objects("per_part") or []:
        p.owned_vertices.append(part.number("owned_vertices"))
        p.edges.append(part.number("edges"))
        p.compute_seconds.append(part.number("compute_seconds"))
        p.comm_seconds.append(part.number("comm_seconds"))
        p.ghosts_per_peer.append(part.numbers("ghosts_per_peer") or [])
    if p.parts is None and p.owned_vertices:
        p.parts = len(p.owned_vertices)
    return p


_INFO_KEYS = ["model", "dataset", "seed", "epochs", "best_epoch", "final_loss", "epoch0_loss", "train_accuracy",
              "valid_accuracy", "valid_macro_f1", "test_accuracy", "test_macro_f1", "test_micro_f1",
              "epoch_seconds_median", "num_vertices", "num_edges", "hdg_bytes", "peak_rss_bytes",
              "peak_tensor_bytes", "peak_device_bytes", "world_size", "bytes_total", "coordinator_peak_rss_bytes"]


def _read_summary(run: Run, d: _Doc) -> None:
    run.has_summary = True
    run.sources.append(d.source)
    for k in _INFO_KEYS:
        v = d.obj.get(k)
        if v is None:
            continue
        run.info[k] = d.string(k) if k in ("model", "dataset") else d.number(k)
    # Task metrics at the top level (test_auc, test_hits_at_10, ...): numbers not read elsewhere.
    for k, v in d.obj.items():
        if k not in run.info and isinstance(v, (int, float)) and not isinstance(v, bool) and (
                k.startswith("test_") or k.startswith("valid_")):
            run.info[k] = float(v)
    be = d.number("best_epoch")
    run.best_epoch = int(be) if be else None
    for k in ("valid_accuracy", "valid_macro_f1"):
        if d.number(k) is not None:
            run.best_valid[k] = d.number(k)
    for k, v in run.info.items():
        if k.startswith("valid_") and k not in run.best_valid and isinstance(v, float):
            run.best_valid[k] = v

    losses = d.numbers("losses") or []
    seconds = d.numbers("epoch_seconds") or []
    for i, x in enumerate(losses):
        run.history.setdefault(i + 1, {})["loss"] = x
    for i, x in enumerate(seconds):
        run.history.setdefault(i + 1, {})["seconds"] = x
    if losses or seconds:
        run.history_source = d.source
    history_stages: dict[str, list[float | None]] = {}
    for i, h in enumerate(d.objects("history") or []):
        e = h.number("epoch")
        if e is None:
            raise ReportError(f'{d.source}: field "{h.path}.epoch": missing')
        row = run.history.setdefault(int(e), {})
        for k in h.obj:
            if k == "stage_seconds":  # this epoch's stages: the per-epoch stage plot
                for name, v in (h.number_map(k) or {}).items():
                    history_stages.setdefault(name, [None] * i).append(v)
            elif k != "epoch":
                row[k] = h.number(k)
        for v in history_stages.values():
            v.extend([None] * (i + 1 - len(v)))
        run.history_source = d.source

    run.stage_seconds = d.number_map("stage_seconds")
    run.stage_seconds_median_epoch = d.number_map("stage_seconds_median_epoch")
    run.epoch_stage_seconds = d.list_map("epoch_stage_seconds") or history_stages or None

    ws = d.number("world_size")
    if ws is not None:
        run.world_size = int(ws)
    for w in d.objects("workers") or []:
        rank = w.number("rank")
        worker = Worker(rank=int(rank) if rank is not None else len(run.workers))
        worker.compute_seconds = w.number("compute_seconds")
        worker.wait_seconds = w.number("wait_seconds")
        worker.overlap = w.number("overlap")
        worker.peak_rss_bytes = w.number("peak_rss_bytes")
        for kind in BYTE_KINDS:
            worker.bytes_per_epoch[kind] = w.number(f"bytes_{kind}_per_epoch")
        worker.epoch_compute_seconds = w.numbers("epoch_compute_seconds")
        worker.epoch_wait_seconds = w.numbers("epoch_wait_seconds")
        worker.bytes_per_peer_per_epoch = w.numbers("bytes_per_peer_per_epoch")
        run.workers.append(worker)
    if run.workers:
        run.world_size = max(run.world_size, len(run.workers))

    part = d.object("partition")
    if part is not None:
        run.partition = _read_partition(part)

    mb = d.object("minibatch")
    if mb is not None:
        run.minibatch = {k: mb.number(k) for k in mb.obj if not isinstance(mb.obj[k], list)}
        for k in ("epoch_sampled_edges", "epoch_sampling_wait_seconds", "epoch_batches"):
            if mb.has(k):
                run.minibatch[k] = mb.numbers(k)


# Epoch lines of a worker's log: "epoch    3  loss 1.2345  train 0.5  valid 0.4  test 0.4  0.123s",
# "epoch    3  loss 1.2345  0.123s", "epoch    3  loss 0.69  valid AUC 0.8  test AUC 0.8  hits@10 0.2  0.1s".
_EPOCH_LINE = re.compile(r"^epoch\s+(\d+)\s{2}(.*\S)\s*$")
_NUMBER = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf)"
_ITEM = re.compile(rf"^(.*?)\s+({_NUMBER})$")
_SECONDS = re.compile(rf"^({_NUMBER})s$")
_LOG_NAMES = {"loss": "loss", "train": "train_accuracy", "valid": "valid_accuracy", "test": "test_accuracy",
              "valid AUC": "valid_auc", "test AUC": "test_auc", "hits@10": "test_hits_at_10"}
_PARTITION_LINE = re.compile(
    r"coordinator: (\S+) partition into (\d+) parts, imbalance ([\d.]+), edge cut (\d+)")
# A partitioned dataset's description (partition/partitioned_dataset.cc, DescribePartitioned).
_PARTITIONED_LINE = re.compile(r"coordinator: .*: partitioned dataset, (\d+) parts \(method (\S+), model")
_PARTITIONED_ROW = re.compile(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\S.*$")
_PARTITIONED_CUT = re.compile(r"^\s+edge cut: (\d+) of \d+ in-edges .*; estimated imbalance ([\d.]+)")
_WORKER_LOG = re.compile(r"^worker-(\d+)(?:\.restart(\d+))?\.log$")


def parse_epoch_line(line: str) -> tuple[int, dict[str, float]] | None:
    """(epoch, {name: value}) of a trainer's epoch line, or None when `line` is not one."""
    m = _EPOCH_LINE.match(line)
    if not m:
        return None
    values: dict[str, float] = {}
    for item in re.split(r"\s{2,}", m.group(2)):
        s = _SECONDS.match(item)
        if s:
            values["seconds"] = float(s.group(1))
            continue
        it = _ITEM.match(item)
        if not it:
            return None
        name = _LOG_NAMES.get(it.group(1), it.group(1).replace(" ", "_"))
        values[name] = float(it.group(2))
    return int(m.group(1)), values


def parse_coordinator_log(text: str, source: str) -> Partition | None:
    """The partition a coordinator's log describes (the last one, after restarts), or None."""
    found = None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _PARTITION_LINE.search(line)
        if m:
            found = Partition(method=m.group(1), parts=int(m.group(2)), imbalance=float(m.group(3)),
                              edge_cut=float(m.group(4)), source=source)
            continue
        m = _PARTITIONED_LINE.search(line)
        if not m:
            continue
        found = Partition(method=m.group(2), parts=int(m.group(1)), source=source)
        in_table = False
        for row in lines[i + 1:]:
            if row.startswith("coordinator:"):
                break
            if re.match(r"^\s+part\s+vertices", row):
                in_table = True
                continue
            r = _PARTITIONED_ROW.match(row) if in_table else None
            if r:
                found.owned_vertices.append(float(r.group(2)))
                found.edges.append(float(r.group(3)))
                found.cut_edges.append(float(r.group(4)))
                continue
            in_table = False
            c = _PARTITIONED_CUT.match(row)
            if c:
                found.edge_cut = float(c.group(1))
                found.imbalance = float(c.group(2))
    return found


def _read_log_dir(run: Run, d: Path) -> None:
    if not d.is_dir():
        raise ReportError(f"{d}: not a directory")
    logs: dict[int, list[tuple[int, Path]]] = {}
    for f in d.iterdir():
        m = _WORKER_LOG.match(f.name)
        if m:
            logs.setdefault(int(m.group(1)), []).append((int(m.group(2) or 0), f))
    summaries: list[Path] = []
    partitions: list[Path] = []
    for f in sorted(d.glob("*.json")):
        obj = _read_json(f)
        if _is_partition_summary(obj):
            partitions.append(f)
        elif _is_train_summary(obj):
            summaries.append(f)
    coordinator = sorted(d.glob("coordinator*.log"))
    if not logs and not summaries and not coordinator:
        raise ReportError(f"{d}: no worker-R.log, coordinator.log or run summary JSON in the directory "
                          "(is it a launch's --log_dir?)")
    # A launch's summary (with per-worker entries) first.
    summaries.sort(key=lambda f: ("workers" not in _read_json(f), f.name))
    if summaries:
        _read_summary(run, _Doc(_read_json(summaries[0]), str(summaries[0])))
    if partitions and run.partition is None:
        run.partition = _read_partition(_Doc(_read_json(partitions[0]), str(partitions[0])))
    for f in coordinator:
        run.sources.append(str(f))
        described = parse_coordinator_log(f.read_text(encoding="utf-8", errors="replace"), str(f))
        if described is not None and run.partition is None:
            run.partition = described
    by_rank: dict[int, Worker] = {w.rank: w for w in run.workers}
    for rank in sorted(logs):
        worker = by_rank.get(rank)
        if worker is None:
            worker = by_rank[rank] = Worker(rank=rank)
            run.workers.append(worker)
        for _, f in sorted(logs[rank]):  # attempts in order: a restart's epochs replace the earlier ones
            run.sources.append(str(f))
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                parsed = parse_epoch_line(line)
                if parsed is None:
                    continue
                epoch, values = parsed
                if "seconds" in values:
                    worker.log_epoch_seconds[epoch] = values["seconds"]
                if rank == 0:  # every worker prints the same losses and metrics
                    row = run.history.setdefault(epoch, {})
                    for k, v in values.items():
                        if k in ("loss", "seconds"):
                            row.setdefault(k, v)  # the summary's full-precision numbers win
                        else:
                            row[k] = v
                    run.history_source = run.history_source or str(f)
    run.workers.sort(key=lambda w: w.rank)
    run.world_size = max(run.world_size, len(run.workers))


def load_run(path: str | os.PathLike, partition: str | os.PathLike | None = None) -> Run:
    """Reads RUN (a summary JSON or a launch's log directory) and an optional partition summary."""
    p = Path(path)
    run = Run()
    if not p.exists():
        raise ReportError(f"{p}: no such file or directory")
    if p.is_dir():
        _read_log_dir(run, p)
    else:
        obj = _read_json(p)
        if _is_partition_summary(obj):
            run.sources.append(str(p))
            run.partition = _read_partition(_Doc(obj, str(p)))
        elif _is_train_summary(obj):
            _read_summary(run, _Doc(obj, str(p)))
        else:
            raise ReportError(f'{p}: not a run summary: it has no field "losses", "epoch_seconds" or "history" '
                              "(write one with flexgraph train ... --summary_json FILE)")
    if partition is not None:
        pp = Path(partition)
        obj = _read_json(pp)
        if not _is_partition_summary(obj):
            raise ReportError(f'{pp}: not a partition summary: it has no field "per_part" '
                              "(write one with flexgraph partition ... --summary_json FILE)")
        run.partition = _read_partition(_Doc(obj, str(pp)))
        run.sources.append(str(pp))
    return run


# --------------------------------------------------------------------------------------------
# The page.


@dataclass
class Section:
    id: str
    title: str
    figures: list[tuple[str, Any]] = field(default_factory=list)  # (div id, plotly Figure)
    notes: list[str] = field(default_factory=list)
    table: list[tuple[str, str]] = field(default_factory=list)


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _layout(fig, title: str, x: str, y: str, **kw) -> None:
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, template="plotly_white", height=380,
                      margin=dict(l=60, r=20, t=50, b=50), legend=dict(orientation="h", y=-0.2), **kw)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        return f"{v:.4g}"
    return str(v)


def _section_overview(run: Run) -> Section:
    s = Section("overview", "Run")
    for k in _INFO_KEYS:
        if k in run.info and run.info[k] is not None:
            v = run.info[k]
            if k.endswith("_bytes") and isinstance(v, float):
                v = f"{v / 1048576:.1f} MiB"
            s.table.append((k, _fmt(v)))
    for k, v in run.info.items():
        if k not in _INFO_KEYS and v is not None:
            s.table.append((k, _fmt(v)))
    s.table.append(("read from", ", ".join(run.sources)))
    return s


def _section_curves(run: Run, go) -> Section:
    s = Section("curves", "Training and validation curves")
    epochs = sorted(run.history)
    if not epochs:
        s.notes.append('No per-epoch data: the summary has no "losses" and no log holds epoch lines.')
        return s
    loss_keys = [k for k in ("loss", "valid_loss") if any(_finite(run.history[e].get(k)) for e in epochs)]
    if loss_keys:
        fig = go.Figure()
        for k in loss_keys:
            xs = [e for e in epochs if run.history[e].get(k) is not None]
            fig.add_trace(go.Scatter(x=xs, y=[run.history[e][k] for e in xs], mode="lines+markers",
                                     name={"loss": "training loss", "valid_loss": "validation loss"}[k]))
        _layout(fig, "Loss per epoch", "epoch", "loss")
        s.figures.append(("plot-loss", fig))
        if "valid_loss" not in loss_keys:
            s.notes.append('No validation loss per epoch (the summary field "history[].valid_loss" is absent).')
    else:
        s.notes.append("No training loss per epoch.")
    metric_keys = sorted({k for e in epochs for k in run.history[e]
                          if k not in ("loss", "valid_loss", "seconds") and _finite(run.history[e][k])},
                         key=lambda k: (not k.startswith("train"), not k.startswith("valid"), k))
    fig = go.Figure()
    for k in metric_keys:
        xs = [e for e in epochs if _finite(run.history[e].get(k))]
        fig.add_trace(go.Scatter(x=xs, y=[run.history[e][k] for e in xs], mode="lines+markers",
                                 name=k.replace("_", " ")))
    has_valid_curve = any(k.startswith("valid") for k in metric_keys)
    if not has_valid_curve:
        s.notes.append('No validation metrics per epoch: the summary holds only the best epoch\'s '
                       '(field "history[].valid_accuracy" absent; a launch\'s log directory has them in the '
                       'epoch lines); the best epoch is marked.')
        if run.best_epoch and run.best_valid:
            for k, v in run.best_valid.items():
                if _finite(v):
                    fig.add_trace(go.Scatter(x=[run.best_epoch], y=[v], mode="markers+text",
                                             marker=dict(size=12, symbol="star"),
                                             text=[f"best {k.replace('_', ' ')} {v:.4f}"],
                                             textposition="top center", name=f"{k.replace('_', ' ')} (best epoch)"))
    if fig.data:
        _layout(fig, "Metrics per epoch", "epoch", "metric")
        s.figures.append(("plot-metrics", fig))
    return s


def _section_epoch_time(run: Run, go) -> Section:
    s = Section("epoch-time", "Time per epoch")
    epochs = sorted(run.history)
    fig = go.Figure()
    xs = [e for e in epochs if _finite(run.history[e].get("seconds"))]
    if xs:
        fig.add_trace(go.Scatter(x=xs, y=[run.history[e]["seconds"] for e in xs], mode="lines+markers",
                                 name="training step" + (" (worker 0)" if run.world_size > 1 else "")))
    for w in run.workers:
        if w.rank == 0 and xs:
            continue
        if w.log_epoch_seconds:
            es = sorted(w.log_epoch_seconds)
            fig.add_trace(go.Scatter(x=es, y=[w.log_epoch_seconds[e] for e in es], mode="lines+markers",
                                     name=f"worker {w.rank}"))
    if not fig.data:
        s.notes.append('No epoch times (summary field "epoch_seconds").')
        return s
    _layout(fig, "Seconds per epoch (training step)", "epoch", "seconds")
    s.figures.append(("plot-epoch-time", fig))
    return s


def _section_stages(run: Run, go) -> Section:
    s = Section("stages", "Time per stage")
    if run.epoch_stage_seconds:
        fig = go.Figure()
        for name in [n for n in STAGES if n in run.epoch_stage_seconds] + \
                [n for n in run.epoch_stage_seconds if n not in STAGES]:
            ys = run.epoch_stage_seconds[name]
            fig.add_trace(go.Bar(x=list(range(1, len(ys) + 1)), y=ys, name=name))
        _layout(fig, "Seconds per stage, per epoch", "epoch", "seconds", barmode="stack")
        s.figures.append(("plot-stages-epoch", fig))
    if run.stage_seconds or run.stage_seconds_median_epoch:
        fig = go.Figure()
        for label, m in (("whole run", run.stage_seconds), ("median epoch", run.stage_seconds_median_epoch)):
            if not m:
                continue
            names = [n for n in STAGES if n in m] + [n for n in m if n not in STAGES]
            fig.add_trace(go.Bar(x=names, y=[m[n] for n in names], name=label))
        _layout(fig, "Seconds per stage", "stage", "seconds", barmode="group")
        s.figures.append(("plot-stages", fig))
    if not s.figures:
        s.notes.append('No stage times (summary fields "stage_seconds", "stage_seconds_median_epoch").')
    elif not run.epoch_stage_seconds:
        s.notes.append('Stage times per epoch are not in the summary (field "epoch_stage_seconds"): '
                       "the run's totals and the median epoch are shown.")
    return s


def _section_workers(run: Run, go) -> Section:
    s = Section("workers", "Workers: compute against waiting, traffic")
    timed = [w for w in run.workers if _finite(w.compute_seconds) or _finite(w.wait_seconds)]
    if run.world_size <= 1 and not timed:
        s.notes.append("A single-process run: no workers to compare.")
        return s
    per_epoch = [w for w in run.workers if w.epoch_compute_seconds or w.epoch_wait_seconds]
    if per_epoch:
        fig = go.Figure()
        for w in per_epoch:
            for kind, ys in (("compute", w.epoch_compute_seconds), ("waiting", w.epoch_wait_seconds)):
                if ys:
                    fig.add_trace(go.Scatter(x=list(range(1, len(ys) + 1)), y=ys, mode="lines+markers",
                                             name=f"worker {w.rank} {kind}"))
        _layout(fig, "Compute and waiting per worker, per epoch", "epoch", "seconds")
        s.figures.append(("plot-worker-epochs", fig))
    if timed:
        epochs = run.info.get("epochs") or len(run.history) or 1
        names = [f"worker {w.rank}" for w in timed]
        fig = go.Figure()
        fig.add_trace(go.Bar(y=names, x=[(w.compute_seconds or 0) / epochs for w in timed], name="compute",
                             orientation="h"))
        fig.add_trace(go.Bar(y=names, x=[(w.wait_seconds or 0) / epochs for w in timed], name="waiting",
                             orientation="h"))
        _layout(fig, f"Compute against waiting in a mean epoch (run totals / {_fmt(float(epochs))} epochs)",
                "seconds", "", barmode="stack")
        s.figures.append(("plot-workers", fig))
        if not per_epoch:
            s.notes.append('Per-epoch compute and waiting per worker are not in the summary (fields '
                           '"workers[].epoch_compute_seconds", "workers[].epoch_wait_seconds"): the mean epoch '
                           "is shown.")
    elif run.world_size > 1:
        s.notes.append('No per-worker compute and waiting times (summary field "workers", written by a '
                       "launch's --summary_json).")
    traffic = [w for w in run.workers if any(_finite(v) for v in w.bytes_per_epoch.values())]
    if traffic:
        fig = go.Figure()
        for kind in BYTE_KINDS:
            ys = [w.bytes_per_epoch.get(kind) for w in traffic]
            if any(_finite(v) and v > 0 for v in ys):
                fig.add_trace(go.Bar(x=[f"worker {w.rank}" for w in traffic], y=ys, name=kind))
        if fig.data:
            _layout(fig, "Bytes sent per epoch, by kind", "", "bytes", barmode="stack")
            s.figures.append(("plot-worker-bytes", fig))
    return s


def _section_partition(run: Run, go) -> Section:
    s = Section("partition", "Partition: balance and traffic per peer")
    p = run.partition
    peers = [w for w in run.workers if w.bytes_per_peer_per_epoch]
    if p is None and not peers:
        if run.world_size > 1:
            s.notes.append('No partition data: the summary has no "partition" field (pass --partition with '
                           "flexgraph partition's --summary_json, or the launch's log directory).")
        else:
            s.notes.append("A single-process run: one partition.")
        return s
    if p is not None:
        for k, v in (("method", p.method), ("parts", p.parts), ("imbalance (max/mean cost)", p.imbalance),
                     ("edge cut", p.edge_cut), ("read from", p.source)):
            if v is not None:
                s.table.append((k, _fmt(v)))
        if p.owned_vertices:
            names = [f"part {i}" for i in range(len(p.owned_vertices))]
            if p.compute_seconds:
                fig = go.Figure()
                fig.add_trace(go.Bar(x=names, y=[(c or 0) * 1e3 for c in p.compute_seconds], name="compute (est.)"))
                fig.add_trace(go.Bar(x=names, y=[(c or 0) * 1e3 for c in p.comm_seconds],
                                     name="communication (est.)"))
                _layout(fig, "Estimated cost per epoch, per part", "", "milliseconds", barmode="stack")
                s.figures.append(("plot-partition-cost", fig))
            fig = go.Figure()
            costs = [(a or 0) + (b or 0) for a, b in zip(p.compute_seconds, p.comm_seconds)]
            for label, ys in (("owned vertices", p.owned_vertices), ("edges", p.edges),
                              ("cut in-edges", p.cut_edges), ("estimated cost", costs)):
                known = [y for y in ys if _finite(y)]
                mean = sum(known) / len(known) if known else 0
                if mean > 0:
                    fig.add_trace(go.Bar(x=names, y=[y / mean if _finite(y) else None for y in ys], name=label,
                                         customdata=ys, hovertemplate="%{customdata:,} (%{y:.3f} of the mean)"))
            if fig.data:
                fig.add_hline(y=1, line_dash="dot", line_color="#888")
                _layout(fig, "Balance: each part against the mean part", "", "share of the mean", barmode="group")
                s.figures.append(("plot-partition-balance", fig))
            if any(p.ghosts_per_peer):
                n = len(p.ghosts_per_peer)
                fig = go.Figure(go.Heatmap(z=p.ghosts_per_peer, x=[f"peer {q}" for q in range(n)],
                                           y=[f"part {i}" for i in range(n)], colorscale="Blues",
                                           colorbar=dict(title="vertices")))
                _layout(fig, "Ghost vertices each part needs from each peer", "", "")
                s.figures.append(("plot-partition-ghosts", fig))
        else:
            s.notes.append("Only the coordinator's one-line description of the partition is known; per-part "
                           'numbers need the summary field "partition" (or --partition FILE).')
    if peers:
        n = max(len(w.bytes_per_peer_per_epoch) for w in peers)
        z = [[(w.bytes_per_peer_per_epoch[q] if q < len(w.bytes_per_peer_per_epoch) else None)
              for q in range(n)] for w in peers]
        fig = go.Figure(go.Heatmap(z=z, x=[f"to {q}" for q in range(n)], y=[f"worker {w.rank}" for w in peers],
                                   colorscale="Oranges", colorbar=dict(title="bytes")))
        _layout(fig, "Bytes sent per epoch, per peer", "", "")
        s.figures.append(("plot-peer-bytes", fig))
    elif run.world_size > 1:
        s.notes.append('Measured bytes per peer are not in the summary (field "workers[].bytes_per_peer_per_epoch"); '
                       "the partition's ghost vertices per peer estimate them.")
    return s


def _section_sampling(run: Run, go) -> Section:
    s = Section("sampling", "Mini-batch sampling")
    mb = run.minibatch
    if not mb:
        s.notes.append('Whole-graph training: no mini-batches (summary field "minibatch").')
        return s
    for k in ("batches_per_epoch", "bulk", "sampled_edges_per_epoch", "sampling_wait_seconds"):
        if _finite(mb.get(k)):
            s.table.append((k, _fmt(mb[k])))
    epochs = sorted(e for e in run.history if _finite(run.history[e].get("seconds")) and run.history[e]["seconds"] > 0)
    per_epoch = mb.get("epoch_sampled_edges")
    fig = go.Figure()
    if per_epoch:
        xs = [e for e in epochs if e - 1 < len(per_epoch) and _finite(per_epoch[e - 1])]
        fig.add_trace(go.Scatter(x=xs, y=[per_epoch[e - 1] / run.history[e]["seconds"] for e in xs],
                                 mode="lines+markers", name="sampled HDG entries per second"))
    elif _finite(mb.get("sampled_edges_per_epoch")) and epochs:
        n = mb["sampled_edges_per_epoch"]
        fig.add_trace(go.Scatter(x=epochs, y=[n / run.history[e]["seconds"] for e in epochs], mode="lines+markers",
                                 name="sampled HDG entries per second"))
        s.notes.append('The summary has the last epoch\'s sampled entries only ("minibatch.sampled_edges_per_epoch"); '
                       'the rate assumes every epoch samples as many (per epoch: "minibatch.epoch_sampled_edges").')
    if fig.data:
        _layout(fig, "Sampling rate per epoch", "epoch", "HDG entries / s")
        s.figures.append(("plot-sampling-rate", fig))
    if _finite(mb.get("batches_per_epoch")) and epochs:
        fig = go.Figure(go.Scatter(x=epochs, y=[mb["batches_per_epoch"] / run.history[e]["seconds"] for e in epochs],
                                   mode="lines+markers", name="batches per second"))
        _layout(fig, "Batches per second", "epoch", "batches / s")
        s.figures.append(("plot-batch-rate", fig))
    waits = mb.get("epoch_sampling_wait_seconds")
    if waits:
        xs = [e for e in epochs if e - 1 < len(waits) and _finite(waits[e - 1])]
        if xs:
            fig = go.Figure()
            fig.add_trace(go.Bar(x=xs, y=[waits[e - 1] for e in xs], name="waiting for samples"))
            fig.add_trace(go.Bar(x=xs, y=[max(0.0, run.history[e]["seconds"] - waits[e - 1]) for e in xs],
                                 name="rest of the training step"))
            _layout(fig, "Waiting for samples per epoch", "epoch", "seconds", barmode="stack")
            s.figures.append(("plot-sampling-wait", fig))
    if not s.figures:
        s.notes.append("No epoch times to compute a sampling rate from.")
    return s


SECTIONS: list[Callable] = [_section_curves, _section_epoch_time, _section_stages, _section_workers,
                            _section_partition, _section_sampling]


def build_sections(run: Run) -> list[Section]:
    import plotly.graph_objects as go

    if not run.has_summary and not run.history and not run.workers:  # a partition summary alone
        overview = _section_overview(run)
        overview.notes.append("The input holds a partition, no training run: only the partition is shown.")
        return [overview, _section_partition(run, go)]
    return [_section_overview(run)] + [f(run, go) for f in SECTIONS]


_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
div.facts { columns: 3 16em; font-size: 0.9em; line-height: 1.5; } div.facts > div { break-inside: avoid; }
span.k { color: #666; } p.note { color: #666; font-size: 0.9em; margin: 0.3em 0; }
div.plot { margin: 1em 0; }
"""


def render_html(sections: list[Section], title: str) -> str:
    import plotly.io as pio

    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(title)}</title>", f"<style>{_CSS}</style>", "</head><body>",
           f"<h1>{html.escape(title)}</h1>"]
    first = True
    for s in sections:
        out.append(f'<section id="section-{s.id}"><h2>{html.escape(s.title)}</h2>')
        if s.table:
            out.append('<div class="facts">')
            for k, v in s.table:
                out.append(f'<div><span class="k">{html.escape(k)}</span> {html.escape(v)}</div>')
            out.append("</div>")
        for note in s.notes:
            out.append(f'<p class="note">{html.escape(note)}</p>')
        for div_id, fig in s.figures:
            # plotly.js once, inline, before the first plot: the page needs no network.
            out.append('<div class="plot">' + pio.to_html(fig, include_plotlyjs=first, full_html=False,
                                                          div_id=div_id, config={"displaylogo": False})
                       + "</div>")
            first = False
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out)


def build_report(run: Run, title: str | None = None) -> str:
    if title is None:
        what = " ".join(str(run.info[k]) for k in ("model", "dataset") if run.info.get(k))
        title = f"FlexGraph run report{': ' + what if what else ''}"
    return render_html(build_sections(run), title)


def write_report(run_path: str | os.PathLike, out: str | os.PathLike, partition: str | os.PathLike | None = None,
                 title: str | None = None) -> list[str]:
    """Writes the report of `run_path` to `out`; returns the ids of the plots written."""
    run = load_run(run_path, partition)
    page = build_report(run, title)
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(page, encoding="utf-8")
        os.replace(tmp, out)
    except OSError as e:
        raise ReportError(f"{out}: cannot write: {e.strerror or e}") from None
    return re.findall(r'<div id="(plot-[a-z-]+)"', page)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="flexgraph report",
        description="Writes one self-contained HTML page of plots from a training run: a summary JSON "
                    "(--summary_json of train or launch) or a launch's log directory.")
    parser.add_argument("run", help="summary JSON or a launch's log directory")
    parser.add_argument("-o", "--out", required=True, help="the HTML file to write")
    parser.add_argument("--partition", help="a partition summary (flexgraph partition --summary_json)")
    parser.add_argument("--title", help="the page's title")
    args = parser.parse_args(argv)
    try:
        plots = write_report(args.run, args.out, args.partition, args.title)
    except ReportError as e:
        print(f"flexgraph report: {e}", file=sys.stderr)
        return 2
    print(f"flexgraph report: wrote {args.out} ({len(plots)} plots)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

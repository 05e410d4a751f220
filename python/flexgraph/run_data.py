"""Reading a FlexGraph training run for the report (report.py): a summary JSON, a launch's log
directory or a partition summary, into a `Run` with typed access whose errors name the file and the
field (`ReportError`). The inputs and the fields read are described in report.py's docstring.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ReportError", "Run", "Worker", "Partition", "Tracking", "load_run", "parse_epoch_line", "parse_coordinator_log",
           "STAGES", "BYTE_KINDS", "INFO_KEYS"]

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
class Tracking:
    """A summary of `flexgraph track --summary_json`: the metrics and the efficiency per bin."""
    source: str = ""
    metrics: dict[str, float | None] = field(default_factory=dict)
    # "pt" and "eta": {"edges": [...], "particles": [...], "matched": [...]}
    bins: dict[str, dict[str, list[float | None]]] = field(default_factory=dict)


TRACK_METRICS = ["edge_efficiency", "edge_purity", "track_efficiency", "fake_rate", "duplicate_rate",
                 "candidates", "reconstructable_particles", "matched_particles", "graphs", "cut", "pt_min"]


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
    tracking: Tracking | None = None
    has_summary: bool = False


def _is_train_summary(obj: dict) -> bool:
    return "losses" in obj or "epoch_seconds" in obj or "history" in obj


def _is_partition_summary(obj: dict) -> bool:
    return "per_part" in obj


def _is_track_summary(obj: dict) -> bool:
    return "track_efficiency" in obj and "efficiency_vs_pt" in obj


def _read_tracking(d: _Doc) -> Tracking:
    t = Tracking(source=d.source)
    for key in TRACK_METRICS:
        t.metrics[key] = d.number(key)
    for name in ("pt", "eta"):
        b = d.object(f"efficiency_vs_{name}")
        if b is None:
            continue
        edges, particles, matched = b.numbers("bin_edges") or [], b.numbers("particles") or [], b.numbers("matched") or []
        if len(particles) != len(matched) or (particles and len(edges) != len(particles) + 1):
            raise ReportError(f'{d.source}: field "efficiency_vs_{name}": {len(edges)} bin edges, '
                              f"{len(particles)} particle counts and {len(matched)} matched counts do not agree")
        t.bins[name] = {"edges": edges, "particles": particles, "matched": matched}
    return t


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


INFO_KEYS = ["model", "dataset", "seed", "epochs", "best_epoch", "final_loss", "epoch0_loss", "train_accuracy",
              "valid_accuracy", "valid_macro_f1", "test_accuracy", "test_macro_f1", "test_micro_f1",
              "epoch_seconds_median", "num_vertices", "num_edges", "hdg_bytes", "peak_rss_bytes",
              "peak_tensor_bytes", "peak_device_bytes", "world_size", "bytes_total", "coordinator_peak_rss_bytes"]


def _read_summary(run: Run, d: _Doc) -> None:
    run.has_summary = True
    run.sources.append(d.source)
    for k in INFO_KEYS:
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
        elif _is_track_summary(obj):
            run.sources.append(str(p))
            run.tracking = _read_tracking(_Doc(obj, str(p)))
        else:
            raise ReportError(f'{p}: not a run summary: it has no field "losses", "epoch_seconds" or "history" '
                              "(write one with flexgraph train ... --summary_json FILE), nor is it a "
                              'track summary ("track_efficiency", flexgraph track --summary_json FILE)')
    if partition is not None:
        pp = Path(partition)
        obj = _read_json(pp)
        if not _is_partition_summary(obj):
            raise ReportError(f'{pp}: not a partition summary: it has no field "per_part" '
                              "(write one with flexgraph partition ... --summary_json FILE)")
        run.partition = _read_partition(_Doc(obj, str(pp)))
        run.sources.append(str(pp))
    return run

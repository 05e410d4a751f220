"""A run report: one self-contained HTML page of plots from a FlexGraph training run.

    python -m flexgraph.report RUN -o FILE.html [--partition PARTITION.json] [--title TEXT]

RUN is either

* a summary JSON written by ``flexgraph train ... --summary_json FILE`` or by
  ``flexgraph launch ... -- train ... --summary_json FILE`` (the launch's adds ``world_size`` and
  one entry per worker under ``workers``), or
* a track summary written by ``flexgraph track ... --summary_json FILE``: the tracking metrics and
  plots of the track efficiency against pT and eta, or
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
import math
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from flexgraph.run_data import (BYTE_KINDS, INFO_KEYS, STAGES, Partition, ReportError, Run, load_run,  # noqa: F401
                                parse_coordinator_log, parse_epoch_line)

__all__ = ["ReportError", "Run", "load_run", "build_report", "write_report", "main"]


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
    for k in INFO_KEYS:
        if k in run.info and run.info[k] is not None:
            v = run.info[k]
            if k.endswith("_bytes") and isinstance(v, float):
                v = f"{v / 1048576:.1f} MiB"
            s.table.append((k, _fmt(v)))
    for k, v in run.info.items():
        if k not in INFO_KEYS and v is not None:
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


def _section_tracking(run: Run, go) -> Section:
    t = run.tracking
    s = Section("tracking", "Particle tracking")
    for k, v in t.metrics.items():
        if v is not None:
            s.table.append((k, _fmt(v)))
    for name, label, unit in (("pt", "pT", "GeV"), ("eta", "eta", "")):
        b = t.bins.get(name)
        xs, ys, errs, counts = [], [], [], []
        for i, (n, m) in enumerate(zip(b["particles"], b["matched"]) if b else []):
            lo, hi = b["edges"][i], b["edges"][i + 1]
            if not n or lo is None or hi is None or m is None:
                continue
            e = m / n
            xs.append(f"[{_fmt(lo)}, {_fmt(hi)})")
            ys.append(e)
            errs.append(math.sqrt(max(e * (1 - e), 0.0) / n))  # binomial standard error
            counts.append(int(n))
        if not xs:
            s.notes.append(f'No particles in any {label} bin (summary field "efficiency_vs_{name}").')
            continue
        fig = go.Figure(go.Scatter(x=xs, y=ys, error_y={"type": "data", "array": errs}, mode="lines+markers",
                                   name="track efficiency", customdata=counts,
                                   hovertemplate="%{x}: %{y:.4f} of %{customdata} particles"))
        _layout(fig, f"Track efficiency against {label}", f"{label} {unit}".strip(), "efficiency")
        s.figures.append((f"plot-track-efficiency-{name}", fig))
    return s


SECTIONS: list[Callable] = [_section_curves, _section_epoch_time, _section_stages, _section_workers,
                            _section_partition, _section_sampling]


def build_sections(run: Run) -> list[Section]:
    import plotly.graph_objects as go

    if run.tracking is not None and not run.has_summary:  # a track summary alone
        return [_section_tracking(run, go)]
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
    if title is None and run.tracking is not None and not run.has_summary:
        title = "FlexGraph track report"
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

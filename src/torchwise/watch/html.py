"""``--html report.html``: one self-contained page of a watched run, made from its event logs.

The page holds, over optimizer steps: the loss of each objective (each ``backward()`` site), the
gradient norm of each layer, each layer's update/weight ratio per step (with the healthy band
around 1e-3 shaded), the share of step time spent waiting for batches and the step time, the
learning rates and the memory held; every finding is a dashed line at the step it was first
seen, on every chart, and a row of the findings table. Under torchrun the charts are rank 0's
and the loss of every rank is drawn together. Plain SVG and CSS: no script, nothing fetched.
"""

from __future__ import annotations

import time
from html import escape
from pathlib import Path
from typing import Any

from torchwise.watch.events import number, read_events
from torchwise.watch.svg import line_chart

SEVERITY_COLOUR = {"error": "#c0392b", "warning": "#d68910", "hint": "#2874a6"}
MAX_LAYERS = 12
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1280px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:22px 0 6px} .sub{color:#555}
.charts{display:flex;flex-wrap:wrap;gap:10px}
.chart{background:#fff;border:1px solid #ddd;border-radius:4px}
.plot{fill:#fafafa;stroke:#ccc} .grid{stroke:#e6e6e6} .band{fill:#e8f5e9}
.line{fill:none;stroke-width:1.6} .marker{stroke-dasharray:4 3;stroke-width:1.2}
.ctitle{font-weight:600;font-size:13px} .ytick{font-size:10px;text-anchor:end;fill:#555}
.xtick{font-size:10px;text-anchor:middle;fill:#555} .xlabel,.ylabel{font-size:11px;fill:#555;text-anchor:middle}
.legend{font-size:10px;fill:#333} .mlabel{font-size:10px;font-weight:600} .empty{fill:#999}
table{border-collapse:collapse;width:100%;font-size:13px} td,th{border:1px solid #ddd;padding:4px 6px;vertical-align:top;text-align:left}
th{background:#f3f3f3} .error{color:#c0392b;font-weight:600} .warning{color:#b9770e;font-weight:600} .hint{color:#2874a6}
"""


def _layers(names: list[str]) -> list[str]:
    """At most MAX_LAYERS layers, spread over the depth (first and last kept)."""
    if len(names) <= MAX_LAYERS:
        return names
    idx = sorted({round(i * (len(names) - 1) / (MAX_LAYERS - 1)) for i in range(MAX_LAYERS)})
    return [names[i] for i in idx]


def _per_key(samples: list[dict[str, Any]], field: str) -> dict[str, tuple[list[float], list[float]]]:
    out: dict[str, tuple[list[float], list[float]]] = {}
    for s in samples:
        for k, v in (s.get(field) or {}).items():
            xs, ys = out.setdefault(k, ([], []))
            xs.append(s["step"])
            ys.append(number(v))
    return out


def _short_site(site: str) -> str:
    return Path(site).name if "/" in site else site


def charts(samples: list[dict[str, Any]], markers: list[tuple[float, str, str]], rank_losses: dict[str, Any]) -> list[str]:
    """The page's charts from one rank's sample records."""
    losses = {f"loss at {_short_site(k)}": v for k, v in _per_key(samples, "loss").items()}
    losses.update(rank_losses)
    grads = _per_key(samples, "grad_norm")
    update = _per_key(samples, "update_ratio")
    steps = [s["step"] for s in samples]
    lrs: dict[str, tuple[list[float], list[float]]] = {}
    for s in samples:
        for i, v in enumerate(s.get("lr") or []):
            xs, ys = lrs.setdefault(f"group {i}", ([], []))
            xs.append(s["step"])
            ys.append(number(v))
    return [
        line_chart("Loss per objective", losses, markers=markers, y_label="loss"),
        line_chart("Gradient norm per layer", {k: grads[k] for k in _layers(list(grads))}, log_y=True, markers=markers, y_label="‖grad‖"),
        line_chart("Update / weight ratio per layer (healthy near 1e-3)", {k: update[k] for k in _layers(list(update))}, log_y=True,
                   markers=markers, band=(1e-4, 1e-2), y_label="‖Δw‖ / ‖w‖"),
        line_chart("Share of step time waiting for batches", {"loader wait": (steps, [number(s.get("loader_wait")) for s in samples])},
                   log_y=False, markers=markers, y_label="share"),
        line_chart("Step time (median of plain steps)", {"step ms": (steps, [number(s.get("step_ms")) for s in samples])},
                   markers=markers, y_label="ms"),
        line_chart("Learning rate", lrs, markers=markers, y_label="lr"),
        line_chart("Memory held", {"MB": (steps, [number(s.get("memory_mb")) for s in samples])}, log_y=False, markers=markers, y_label="MB"),
    ]


def page(logs: list[Path], subject: str, line: str, report: Any = None) -> str:
    """The HTML page of a run from its logs (rank 0 first)."""
    per_rank = [read_events(p) if p.exists() else [] for p in logs]
    events = per_rank[0] if per_rank else []
    samples = [e for e in events if e["event"] == "sample" and isinstance(e.get("step"), int)]
    findings = []
    seen = set()
    for r, ev in enumerate(per_rank):
        for e in ev:
            if e["event"] == "finding" and (e["code"], e.get("where")) not in seen:
                seen.add((e["code"], e.get("where")))
                findings.append({**e, "rank": e.get("rank", r)})
    findings.sort(key=lambda f: f.get("step") or 0)
    markers = [(f["step"], f["code"], SEVERITY_COLOUR.get(f["severity"], "#555")) for f in findings if isinstance(f.get("step"), int)]
    rank_losses: dict[str, Any] = {}
    if len(per_rank) > 1:
        for r, ev in enumerate(per_rank[1:], start=1):
            for k, v in _per_key([e for e in ev if e["event"] == "sample"], "loss").items():
                rank_losses[f"rank {r}: {_short_site(k)}"] = v
    start = next((e for e in events if e["event"] == "start"), {})
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(start.get("time", time.time())))
    rows = "".join(
        f'<tr><td>{f.get("step", "")}</td><td class="{escape(f["severity"])}">{escape(f["code"])} {escape(f["severity"])}</td>'
        + (f'<td>{escape(str(f.get("rank", 0)))}</td>' if len(logs) > 1 else "")
        + f'<td>{escape(f["message"])}<br><i>{escape(f.get("where", ""))}</i></td><td>{escape(f.get("fix", ""))}</td></tr>' for f in findings)
    rank_head = "<th>rank</th>" if len(logs) > 1 else ""
    table = (f"<table><tr><th>step</th><th>finding</th>{rank_head}<th>what and where</th><th>fix</th></tr>" + rows + "</table>"
             if findings else "<p>No findings.</p>")
    measured = ""
    if report is not None and report.measured:
        measured = "<p class='sub'>" + escape(", ".join(f"{k}={v}" for k, v in report.measured.items() if k != "exit")) + "</p>"
    body = "".join(charts(samples, markers, rank_losses))
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>torchwise watch: {escape(subject)}</title>"
            f"<style>{CSS}</style></head><body><h1>torchwise watch: {escape(subject)}</h1>"
            f"<p class='sub'>started {stamp}; {escape(line)}; {len(samples)} samples"
            f"{f', {len(logs)} ranks (charts: rank 0)' if len(logs) > 1 else ''}</p>{measured}"
            f"<h2>Findings</h2>{table}<h2>The run</h2><div class='charts'>{body}</div></body></html>")


def write_page(outcome: Any, path: str | Path) -> Path:
    """Write the page of a finished run (an :class:`~torchwise.watch.report.Outcome`)."""
    out = Path(path)
    if out.parent and not out.parent.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page(outcome.logs, outcome.report.subject, outcome.line, outcome.report), encoding="utf-8")
    return out


__all__ = ["page", "write_page", "charts"]

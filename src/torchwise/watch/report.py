"""The end of a watched run: its report (the doctor's form) and one line saying how it ended.

The report is assembled from the event logs alone — the ``end`` record each process writes holds
its whole-run report; a process that never wrote one (killed with SIGKILL, ``os._exit``) still
has its findings, samples and last step in its log. The exit status of ``torchwise watch``:

====  ==========================================================================================
0     the script ran to its end; no error finding
1     an error finding (or the run was stopped by ``--stop-on``)
2     bad arguments (torchwise's own), a script that cannot be found
3     the script failed (an exception, a non-zero ``sys.exit``)
4     the script ended without training (no optimizer step)
5     the script's process ended abruptly (``os._exit``, a crash of the interpreter)
6     the script trained in processes it started itself, which are not watched
128+N killed or ended by signal N (130: Ctrl-C, 137: SIGKILL, 143: SIGTERM)
====  ==========================================================================================
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwise.doctor.report import DoctorReport, Finding, Skipped
from torchwise.watch.events import read_events

EXIT = {"ok": 0, "findings": 1, "usage": 2, "failed": 3, "untrained": 4, "abrupt": 5, "spawned": 6}


@dataclass
class Outcome:
    """A watched run as it ended."""

    report: DoctorReport
    code: int
    line: str
    logs: list[Path] = field(default_factory=list)


def _last_step(events: list[dict[str, Any]]) -> int:
    return max((e["step"] for e in events if isinstance(e.get("step"), int)), default=0)


def assemble(logs: list[Path], subject: str, returncode: int) -> Outcome:
    """The run's report and outcome from its logs (one per rank) and the launcher's exit status."""
    per_rank = [read_events(p) if p.exists() else [] for p in logs]
    ends = [next((e for e in reversed(ev) if e["event"] == "end"), None) for ev in per_rank]
    findings: dict[tuple[str, str], Finding] = {}
    base: DoctorReport | None = None
    for ev, end in zip(per_rank, ends):
        data = end.get("report") if end else None
        if data:
            rep = DoctorReport(data["subject"], [Finding(**f) for f in data["findings"]],
                               [Skipped(tuple(s["codes"]), s["reason"]) for s in data["skipped"]], data["measured"], data["failure"])
            base = base or rep
            items = rep.findings
        else:
            from torchwise.watch.alerts import Findings

            known = Findings()
            for e in ev:
                if e["event"] == "finding":
                    known.known(e)
            items = known.as_findings()
        for f in items:
            findings.setdefault((f.code, f.where), f)
    steps = max((_last_step(ev) for ev in per_rank), default=0)
    measured = dict(base.measured) if base else {"mode": "watch", "steps_run": steps}
    measured["steps_run"] = max(steps, int(measured.get("steps_run") or 0))
    if len(logs) > 1:
        measured["ranks"] = len(logs)
    measured["log"] = str(logs[0]) if len(logs) == 1 else str(logs[0].parent)
    failure = next((e["report"]["failure"] for e in ends if e and e.get("report") and e["report"].get("failure")), None)
    report = DoctorReport(subject, list(findings.values()), list(base.skipped) if base else [], measured, failure)
    code, line = _ending(ends, per_rank, report, returncode)
    report.measured["exit"] = line
    return Outcome(report, code, line, logs)


def _ending(ends: list[dict[str, Any] | None], per_rank: list[list[dict[str, Any]]], report: DoctorReport,
            returncode: int) -> tuple[int, str]:
    step = report.measured.get("steps_run", 0)
    statuses = [e.get("status") if e else None for e in ends]
    if not any(per_rank):
        return EXIT["abrupt"], f"the script's process ended (exit status {returncode}) before the watch could start; is it a Python training script?"
    if "failed" in statuses:
        r = statuses.index("failed")
        end = ends[r] or {}
        who = f"rank {r} of the script" if len(ends) > 1 else "the script"
        why = f": {report.failure}" if report.failure else ""
        return EXIT["failed"], f"{who} failed at step {end.get('steps', step):,} (exit status {end.get('exit_code')}){why}"
    if "stopped" in statuses:
        stop = next((e for ev in per_rank for e in ev if e["event"] == "stop"), {})
        return EXIT["findings"], f"stopped at step {stop.get('step', step):,} on {stop.get('code', 'a finding')} (--stop-on), by {stop.get('by', 'the watch')}"
    for status, sig in (("interrupted", signal.SIGINT), ("terminated", signal.SIGTERM)):
        if status in statuses:
            return 128 + sig, f"the script was {status} ({sig.name}) at step {step:,}"
    if None in statuses:
        r = statuses.index(None)
        who = f"rank {r} of the script" if len(ends) > 1 else "the script"
        if returncode < 0 or returncode >= 128:
            sig = -returncode if returncode < 0 else returncode - 128
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else f"signal {sig}"
            return 128 + sig, f"{who} was killed by {name} at step {step:,}; the log holds everything up to its last event"
        return EXIT["abrupt"], (f"{who} ended abruptly at step {step:,} (exit status {returncode}) without Python's normal exit "
                                "(os._exit() or a crash of the interpreter); the log holds everything up to its last event")
    if all(s == "spawned" for s in statuses):
        procs = next((e.get("processes") for e in ends if e and e.get("processes")), [])
        return EXIT["spawned"], (f"the script started {len(procs)} process(es) (at {', '.join(procs[:3])}) and took no optimizer "
                                 "step in its own: those workers are not watched; start them with torchrun instead, each is "
                                 "watched then: torchwise watch -- torchrun --nproc_per_node=N train.py")
    if any(s in ("untrained", "spawned") for s in statuses):
        backward = max((e.get("backward_calls", 0) for e in ends if e), default=0)
        return EXIT["untrained"], (f"the script ended without a single optimizer step ({backward} backward passes): nothing was "
                                   "trained, so nothing was watched; is this the training script, with its training loop reached?")
    if not report.ok:
        return EXIT["findings"], f"the script ran to its end ({step:,} steps) with error findings"
    return EXIT["ok"], f"the script ran to its end ({step:,} steps)"


__all__ = ["assemble", "Outcome", "EXIT"]

"""Resuming a watch after a restart (``--resume``): the run's log goes on where it stopped.

A restarted script (a requeued job, a crash, a pre-emption) is watched as the same run when its
log is given again with ``--resume``: the findings already alerted are not alerted again, the
windows before the restart are kept to compare the loss after it with the loss before it, and
steps go on being numbered from the step the run resumed at: the step count in the optimizer's
state when the script restored one (``state["step"]`` of Adam-like optimizers, exact), else the
last step the log saw (the script may have resumed from an earlier checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwise.watch.events import read_events


@dataclass
class EarlierRun:
    """What the log of the earlier segments holds."""

    segments: int
    last_step: int
    findings: list[dict[str, Any]] = field(default_factory=list)
    windows: list[dict[str, Any]] = field(default_factory=list)

    def apply(self, session: Any) -> None:
        for record in self.findings:
            session.findings.known(record)
        session.resume = self


def earlier_run(path: str | Path) -> EarlierRun | None:
    """The earlier segments of a log (None when there is no log yet: a first start)."""
    p = Path(path)
    if not p.exists() or p.stat().st_size == 0:
        return None
    events = read_events(p)
    if not events:
        return None
    steps = [e["step"] for e in events if isinstance(e.get("step"), int)]
    steps += [e["steps"] for e in events if e["event"] == "end" and isinstance(e.get("steps"), int)]
    return EarlierRun(
        segments=sum(e["event"] == "start" for e in events),
        last_step=max(steps, default=0),
        findings=[e for e in events if e["event"] == "finding"],
        windows=[e for e in events if e["event"] == "window"],
    )


def optimizer_step(optimizer: Any) -> int | None:
    """The step count an optimizer's state holds (Adam, AdamW, RMSprop...: ``state[p]["step"]``)."""
    best = None
    for state in getattr(optimizer, "state", {}).values():
        step = state.get("step") if isinstance(state, dict) else None
        if step is None:
            continue
        try:
            value = int(float(step))
        except (TypeError, ValueError):
            continue
        best = value if best is None else max(best, value)
    return best


def resolve_base(session: Any, optimizer: Any) -> None:
    """At the first step of a resumed run: the step it resumed from, and the restart marker."""
    earlier = getattr(session, "resume", None)
    if earlier is None:
        return
    restored = optimizer_step(optimizer)
    if restored:
        session.base, source = restored, "optimizer state"
    else:
        session.base, source = earlier.last_step, "previous log"
    session.log.write("resume", step=session.base, source=source, segment=earlier.segments)
    session.longrun.restarted(session.base, earlier.windows)
    session.resume = None


__all__ = ["EarlierRun", "earlier_run", "optimizer_step", "resolve_base"]

"""Script mode: the first non-finite step, and where it came from (the evidence of TW105/TW112),
as a mixin of :class:`~torchwise.doctor.script_evidence.ScriptEvidence`."""

from __future__ import annotations

from typing import Any

import torch

from torchwise.doctor.record import LogCall

__all__ = ["NonFiniteEvidence"]


class NonFiniteEvidence:
    """Checks the loss and gradients at each optimizer step; on the first bad one, replays the
    step's forward passes to find the first module that went non-finite."""

    watch: Any
    step_passes: list[Any]
    grad_roots: dict[int, Any]
    names: dict[int, str]
    nonfinite_step: int | None
    nonfinite: Any
    log_calls: list[LogCall]
    _last_loss: torch.Tensor | None

    def _check_finite(self) -> None:
        if self.nonfinite_step is not None or self._last_loss is None:
            return
        finite = torch.isfinite(self._last_loss.detach()).all()
        norms = self.watch._pending_norms[-1] if self.watch._pending_norms else None
        if norms is not None:
            finite = finite & torch.isfinite(norms).all()
        if bool(finite):  # one host read a step (the loss is on the host in most loops anyway)
            self.watch.log_flags = []
            return
        self.nonfinite_step = self.watch.step_index
        flags, self.watch.log_flags = self.watch.log_flags or [], None
        for func, module, zeros, negatives, total, line in flags:
            z, n = int(zeros), int(negatives)
            if z or n:
                self.log_calls.append(LogCall(func, module, z, n, total, line))
        self.nonfinite = self._replay()

    def _replay(self) -> Any:
        """The step's forward passes replayed in order on the same inputs: the first module whose
        output went non-finite (or the first pass's non-finite input: bad data)."""
        from torchwise.utils.nonfinite import NonFiniteReport, find_nonfinite

        if not self.step_passes:
            return None
        several = len({id(p.root) for p in self.step_passes}) > 1 or len(self.grad_roots) > 1
        self.watch.paused = True
        try:
            for i, p in enumerate(self.step_passes):
                try:
                    with torch.no_grad():
                        report = find_nonfinite(p.root, lambda p=p: p.root(*p.args), check_grads=False)
                except Exception:
                    continue
                if report is None or (report.kind == "input" and i > 0):
                    continue  # finite, or fed by an earlier pass that went bad
                name = self.names.get(id(p.root), "")
                if several and name:
                    report = NonFiniteReport(f"{name}.{report.module}" if report.module else name,
                                             report.module_type, report.kind, report.detail)
                return report
        finally:
            self.watch.paused = False
        where = f" at {self.watch.result.backward_line}" if self.watch.result.backward_line else ""
        root = self.step_passes[-1].root
        return NonFiniteReport("", type(root).__name__, "loss",
                               f"the model's outputs were finite; the loss computed from them (or its gradients) was not{where}")


"""Watching training in this process: cheap counters on every step, the doctor's recorder on samples.

A :class:`Session` installs a few light hooks that run on every step:

- optimizer step hooks (global, or on the given optimizers): the step count and its wall time;
- ``Tensor.backward``: the number of backward passes and the time they take (under DDP, the
  gradient sync waits there);
- the DataLoader iterators' ``__next__``: batches taken and the time spent waiting for them.

Every N-th step (``every``; automatic by default, see :class:`~torchwise.watch.options.WatchOptions`)
is *sampled*: the doctor's recorder (:class:`~torchwise.watch.window.Window`) is switched on for
that one step, and the update/weight ratios, learning rates and memory are measured. Samples are
grouped into windows; when a window is full the doctor's checks run on it and the long-run
checks (:mod:`torchwise.watch.longrun`) compare it with the earlier windows. New findings go to
the event log and, as one line each, to stderr. Device values are read once per window.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from typing import Any, Callable

from torchwise.watch.alerts import Findings, alert_line
from torchwise.watch.events import EventLog
from torchwise.watch.measure import UpdateRatio, learning_rates, memory_mb
from torchwise.watch.samples import write_samples
from torchwise.watch.options import DIST_EVERY, MAX_EVERY, MIN_EVERY, WatchOptions, rank_and_world
from torchwise.watch.series import median
from torchwise.watch.wrappers import quiet, torch_optimizer, wrap_backward, wrap_grad, wrap_iter, wrap_next


class Session:
    """The watch of one process. ``model``/``optimizers`` given: only those are watched (the
    integrations); else every optimizer that steps (a script run by ``torchwise watch``)."""

    def __init__(self, options: WatchOptions | None = None, *, subject: str = "training", log: EventLog | None = None,
                 model: Any = None, optimizers: list[Any] | None = None, stop: Callable[[dict[str, Any]], None] | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        self.options = options or WatchOptions()
        self.subject = subject
        self.log = log if log is not None else EventLog(None)
        self.model, self.given_optimizers = model, list(optimizers) if optimizers is not None else None
        self.rank, self.world_size = rank_and_world()
        self.stop_callback = stop
        self.say = say if say is not None else (lambda line: print(line, file=sys.stderr, flush=True))
        self.findings = Findings(self._new_finding)
        self.active = False
        self.step = 0  # optimizer steps of the first optimizer, this process
        self.base = 0  # the step the run resumed from (a restarted run)
        self.backwards = 0
        self.batches = 0
        self.wait_s = 0.0
        self.backward_s = 0.0
        self.optimizers: list[Any] = []
        self.first: Any = None
        self.every = self.options.every or MIN_EVERY
        self.window: Any = None
        self.windows = 0
        self.samples = 0
        self.sampling = False
        self.first_report: Any = None  # the first window's doctor report (its skipped checks)
        self.stop_request: dict[str, Any] | None = None
        self.resume: Any = None  # torchwise.watch.resume.EarlierRun of a resumed log
        self.last_progress = time.monotonic()
        self.started = time.perf_counter()
        self.overhead_s = 0.0
        self._mark = time.perf_counter()
        self._plain: deque[float] = deque(maxlen=256)
        self._sampled: deque[float] = deque(maxlen=64)
        self._after: deque[float] = deque(maxlen=4 * AFTER)  # the plain steps just after a sample (caches refilling)
        self._after_left = 0
        self._loaders: deque[tuple[Any, Any]] = deque(maxlen=4)
        self._handles: list[Any] = []
        self._patches: list[tuple[Any, str, Any]] = []
        self._in_backward = False
        self._update = UpdateRatio()
        self._rows: list[dict[str, Any]] = []  # this window's samples (host values, device refs)
        self._losses: list[tuple[int, str, Any]] = []  # (sample, backward site, loss on the device)
        self._since = (time.perf_counter(), 0.0)  # (time, loader wait) at the last sample
        self._next_sample = 0
        self._nonfinite_seen = False
        self._row_norms = self._row_ratios = 0
        self._last_loss: Any = None
        from torchwise.watch.longrun import LongRun

        self.longrun = LongRun()
        self.extras: list[Any] = []  # per-process add-ons: DDP instrumentation, cross-rank checks, stall watchdog
        self._pre_extras: list[Any] = []
        self._post_extras: list[Any] = []

    # -- installing --------------------------------------------------------------------------------
    def attach(self) -> "Session":
        import torch
        from torch.utils.data import DataLoader
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        if self.given_optimizers is None:
            from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

            self._handles = [register_optimizer_step_pre_hook(self._pre_step), register_optimizer_step_post_hook(self._post_step)]
        else:
            for opt in self.given_optimizers:
                inner = torch_optimizer(opt)
                self._handles += [inner.register_step_pre_hook(self._pre_step), inner.register_step_post_hook(self._post_step)]
        self._patch(torch.Tensor, "backward", wrap_backward(self, torch.Tensor.backward))
        self._patch(torch.autograd, "grad", wrap_grad(self, torch.autograd.grad))
        self._patch(DataLoader, "__iter__", wrap_iter(self, DataLoader.__iter__))
        self._patch(_BaseDataLoaderIter, "__next__", wrap_next(self, _BaseDataLoaderIter.__next__))
        from torchwise.watch.addons import AddOn, install_extras

        self.extras = install_extras(self)
        # only the add-ons that do something on every step are called on every step
        self._pre_extras = [e for e in self.extras if type(e).pre_step is not AddOn.pre_step]
        self._post_extras = [e for e in self.extras if type(e).post_step is not AddOn.post_step]
        self.active = True
        self._open_window(0)
        self._begin_sample()
        self._mark = time.perf_counter()
        return self

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patches.append((owner, name, owner.__dict__.get(name)))
        setattr(owner, name, value)

    def close(self) -> None:
        """Remove every hook (the run goes on unwatched)."""
        self.active = False
        if self.window is not None:
            self.window.end()
        for h in self._handles:
            h.remove()
        self._handles = []
        for owner, name, original in reversed(self._patches):
            if original is None:
                try:
                    delattr(owner, name)
                except AttributeError:
                    pass
            else:
                setattr(owner, name, original)
        self._patches = []
        for extra in self.extras:
            extra.close()

    def forked(self) -> None:
        """In a forked child (a DataLoader worker, a user's fork): this process is not watched."""
        self.active = False
        self.log.detach()

    # -- optimizer steps -------------------------------------------------------------------------------
    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> Any:
        if not self.active:
            return None
        if optimizer is not self.first:
            if self.first is None:
                self.first = optimizer
                if self.resume is not None:
                    from torchwise.watch.resume import resolve_base

                    resolve_base(self, optimizer)
            if all(o is not optimizer for o in self.optimizers):
                self.optimizers.append(optimizer)
        closure = kwargs.get("closure") if kwargs else None
        if closure is None and args and callable(args[0]):
            closure = args[0]
        if closure is None:
            self._before_update(optimizer)
            return None
        # a closure (Lightning, LBFGS): forward and backward run inside step(); look after they ran
        done: list[bool] = []

        def watched_closure(*a: Any, **k: Any) -> Any:
            result = closure(*a, **k)
            if not done:
                done.append(True)
                self._before_update(optimizer)
            return result

        if kwargs and kwargs.get("closure") is closure:
            return args, {**kwargs, "closure": watched_closure}
        return (watched_closure, *args[1:]), kwargs

    def _before_update(self, optimizer: Any) -> None:
        """The gradients are ready, the weights not yet updated."""
        if self.sampling:
            with quiet():
                self.window.pre_step(optimizer)
                if optimizer is self.first:
                    self._update.before(list(self.window.watch._params or []))
        for extra in self._pre_extras:
            extra.pre_step(optimizer, optimizer is self.first)

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if not self.active:
            return
        if self.sampling:
            with quiet():
                self.window.post_step(optimizer)
        if optimizer is not self.first:
            return
        t0 = time.perf_counter()
        duration = t0 - self._mark
        self.step += 1
        self.last_progress = time.monotonic()
        if self.sampling:
            with quiet():
                self._update.after()
                self._end_sample(duration)
            w = self.window  # (a window fills, or sees its first non-finite value, only on a sampled step)
            if w.samples >= (self.options.dense if w.index == 0 else self.options.window) or (w.went_nonfinite and not self._nonfinite_seen):
                self._close_window()
        elif self._after_left:
            self._after_left -= 1
            self._after.append(duration)
        else:
            self._plain.append(duration)
        for extra in self._post_extras:
            extra.post_step()
        if self.step >= self._next_sample:
            self._begin_sample()
        self._mark = time.perf_counter()
        self.overhead_s += self._mark - t0
        if self.stop_request is not None and self.stop_callback is not None:
            self.stop_callback(self.stop_request)  # (called on every later step: it decides when)

    # -- samples -------------------------------------------------------------------------------------
    def _begin_sample(self) -> None:
        self.sampling = True
        self.window.begin(self.step - self.window.start_step)
        self._row_norms = len(self.window.watch._pending_norms)
        self._row_ratios = len(self._update.pending)

    def _sampled_backward(self, loss: Any) -> None:
        from torchwise.doctor.watch import user_frame

        self.window.after_backward(loss)
        if getattr(loss, "numel", lambda: 0)() == 1 and len(self._losses) < 4096:
            self._losses.append((self.samples, user_frame() or "loss", loss.detach().float().reshape(())))

    def _end_sample(self, duration: float) -> None:
        now = time.perf_counter()
        w = self.window
        w.end()
        self.sampling = False
        since_t, since_wait = self._since
        span = max(1e-9, now - since_t)
        row = {
            "step": self.base + self.step, "sample": self.samples,
            "norms": len(w.watch._pending_norms) > self._row_norms,  # this sample added a row of gradient norms
            "ratios": len(self._update.pending) > self._row_ratios,  # ... and one of update ratios
            "lr": learning_rates(self.optimizers), "memory_mb": memory_mb(_device_of(w)),
            "loader_wait": (self.wait_s - since_wait) / span,
            "step_ms": median(self._plain) * 1e3 if self._plain else duration * 1e3,
            "sampled_ms": duration * 1e3,
        }
        self._rows.append(row)
        self._since = (now, self.wait_s)
        self.samples += 1
        if self.step > 1:  # the first step (lazy initialisation, warm-up) costs the same watched or not
            self._sampled.append(duration)
        self._after_left = AFTER
        if self.world_size > 1:  # every rank samples the same steps (a sampled step on one rank would stall the others)
            self.every = self.options.every or DIST_EVERY
            self._next_sample = self.step if w.index == 0 else (self.step // self.every + 1) * self.every - 1
            return
        if self.options.every is None:
            self.every = self._auto_every()
        self._next_sample = self.step + (1 if w.index == 0 else self.every) - 1  # begin at that step's start

    def _auto_every(self) -> int:
        """Sample so that the sampled steps add about ``budget`` of the plain step time."""
        if not self._plain:
            return MIN_EVERY
        plain = median(self._plain)
        extra = self._sample_cost(plain) + self.overhead_s / max(1, self.samples)
        if not (plain > 0 and math.isfinite(extra)) or extra <= 0:
            return MIN_EVERY
        return int(min(MAX_EVERY, max(MIN_EVERY, math.ceil(extra / (self.options.budget * plain)))))

    def _sample_cost(self, plain: float) -> float:
        """What one sampled step adds to the run besides the watch's own bookkeeping: its extra time
        (the mean: a few samples cost far more than the others) and the slower plain steps just
        after it (caches and allocator refilling after the recorder ran; on millisecond steps
        about a fifth of the sample's cost)."""
        sampled = sum(self._sampled) / len(self._sampled) if self._sampled else plain
        after = AFTER * (sum(self._after) / len(self._after) - plain) if self._after else 0.0
        return sampled - plain + max(0.0, after)

    # -- windows -------------------------------------------------------------------------------------
    def _open_window(self, index: int) -> None:
        from torchwise.watch.window import Window

        self.window = Window(index, self.step, self.every, list(self._loaders))
        self.windows = index + 1

    def _close_window(self, failure: str | None = None) -> Any:
        w = self.window
        t0 = time.perf_counter()
        report = w.judge(self.subject, self.step - w.start_step, failure)
        if self.first_report is None:
            self.first_report = report
        step = self.base + self.step
        wanted = self.options.dense if w.index == 0 else self.options.window
        found = report.findings
        if w.samples < wanted:  # a short last window: too few samples for the dynamics checks to judge
            found = [f for f in found if f.code not in _dynamics_codes()]
        if self._nonfinite_seen:  # after the first NaN everything is NaN: the first report names the cause
            found = [f for f in found if f.code not in ("TW105", "TW112") and f.code not in _dynamics_codes()]
        if w.index > 1:  # the loss-curve checks judge early training; later, the long-run checks compare windows
            found = [f for f in found if f.code not in EARLY_ONLY]
        self._nonfinite_seen = self._nonfinite_seen or w.went_nonfinite
        agg = write_samples(self, w)
        agg["samples"] = w.samples
        longrun = self.longrun.add(step, self.base + w.start_step, agg)
        if self.longrun.annealed():  # a schedule near its end (or collapsed: the long-run check says) moves weights little
            found = [f for f in found if f.code != "TW133"]
        self.findings.add(found, step, rank=self.rank, world_size=self.world_size)
        self.findings.add(longrun, step, rank=self.rank, world_size=self.world_size)
        self.log.write("window", index=w.index, step=step, start=self.base + w.start_step, samples=w.samples,
                       every=self.every, loss=agg.get("loss"), wait=agg.get("wait"), step_ms=agg.get("step_ms"),
                       memory_mb=agg.get("memory_mb"), lrs=agg.get("lrs"), overhead=round(self.overhead_share(), 4))
        self._open_window(w.index + 1)
        self.overhead_s += time.perf_counter() - t0
        return report

    # -- findings and the end ----------------------------------------------------------------------------
    def _new_finding(self, record: dict[str, Any]) -> None:
        self.log.write("finding", **record)
        if self.options.alerts:
            self.say(alert_line(record))
        if self.options.stops_on(record["severity"]) and self.stop_request is None:
            self.stop_request = record

    def report_finding(self, finding: Any, step: int | None = None) -> None:
        """A finding from an add-on (cross-rank checks, DDP, the stall watchdog)."""
        self.findings.add([finding], self.base + self.step if step is None else step, rank=self.rank, world_size=self.world_size)

    def overhead_share(self) -> float:
        """The estimated share of this run's time that the watch added (sampled steps, checks, hooks)."""
        wall = time.perf_counter() - self.started
        if not self._plain:
            return self.overhead_s / max(1e-9, wall)
        per_sample = max(0.0, self._sample_cost(median(self._plain)))
        return (per_sample * max(0, self.samples - 1) + self.overhead_s) / max(1e-9, wall)

    def finish(self, failure: str | None = None) -> Any:
        """Judge the last window and return the run's report (the doctor's form, whole run)."""
        from torchwise.doctor.report import DoctorReport

        last = None
        if self.window is not None and (self.window.samples or self.sampling):
            last = self._close_window(failure)
        self.close()
        base = self.first_report or last
        skipped = list(base.skipped) if base is not None else []
        measured = {
            "mode": "watch", "steps_run": self.base + self.step, "seconds": round(time.perf_counter() - self.started, 3),
            "samples": self.samples, "windows": self.windows, "every": self.every, "optimizers": len(self.optimizers),
            "backward_calls": self.backwards, "batches": self.batches,
            "overhead_estimate": round(self.overhead_share(), 4),
        }
        if self.base:
            measured["resumed_from_step"] = self.base
        wall = time.perf_counter() - self.started
        if self.batches:
            measured["loader_wait_share"] = round(self.wait_s / max(1e-9, wall), 4)
        if base is not None:
            for k in ("backward_at", "models"):
                if k in base.measured:
                    measured[k] = base.measured[k]
        return DoctorReport(self.subject, self.findings.as_findings(), skipped, measured, failure)


AFTER = 4  # plain steps after a sample whose extra time is counted as the sample's
EARLY_ONLY = ("TW134", "TW135", "TW136")  # the doctor's loss-curve checks: calibrated on the first steps of training


def _dynamics_codes() -> set[str]:
    from torchwise.doctor import available_checks

    return {code for c in available_checks() if getattr(c, "DYNAMICS", False) for code in c.CODES}


def _device_of(w: Any) -> Any:
    params = w.watch._params
    return params[0].device if params else None


__all__ = ["Session"]

"""The search: greedy, coordinate-wise, pruned, and never started past the budget.

From the default configuration (fp32, torch defaults, the task's batch, no workers), each knob in
turn tries its candidates on top of the best configuration so far and keeps one only when it is
faster by more than the measurement noise (and more than ``min_gain``). Candidates that can change
the numbers are checked against the fp32 baseline's loss after a few steps. Knobs that cannot
apply are skipped with the reason; candidates that would not fit in the remaining time are
skipped and reported; monotone knobs (threads, workers) stop after consecutive non-improvements.

Everything that touches the hardware goes through the injected ``measure`` function and every
time read through the injected ``clock``, so the logic is tested with scripted fakes.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Iterable

from torchwise.core.errors import TorchwiseError, TrainingError
from torchwise.tune.knobs import Plan, label, select_knobs
from torchwise.tune.measure import Measurement, Measurer, OutOfMemory, TrialSpec

# statuses of a trial
BASELINE = "baseline"
FASTER = "faster"
NOT_FASTER = "not faster"
REJECTED = "rejected (numerics)"
FAILED = "failed"
OOM = "out of memory"
FITS = "fits"

# kinds of skip
NOT_APPLICABLE = "not applicable"
NO_TIME = "no time"
PRUNED = "pruned"

# fields a knob measures (so a measured knob is "decided" in tune.json)
STEP_DEFAULTS: dict[str, Any] = {
    "precision": "32",
    "channels_last": False,
    "cudnn_benchmark": False,
    "compile": False,
    "matmul_precision": "highest",
}
LOADER_DEFAULTS: dict[str, Any] = {"num_workers": 0, "pin_memory": False, "persistent_workers": False}

COMPILE_ESTIMATE_S = {"cpu": 40.0, "cuda": 60.0}
WORKER_START_S = 0.3


def default_config(ctx: Any) -> dict[str, Any]:
    """The configuration a plain PyTorch loop gets: the reference of every speed-up."""
    return {**STEP_DEFAULTS, "threads": ctx.threads, "batch_size": ctx.batch_size, **LOADER_DEFAULTS}


@dataclass
class Trial:
    """One measured (or attempted) configuration."""

    knob: str
    label: str
    config: dict[str, Any]
    mode: str
    status: str
    measurement: Measurement | None = None
    detail: str = ""
    speedup: float | None = None  # samples/s against the default configuration, same mode
    wall_s: float = 0.0
    chosen: bool = False
    repeats: list[float] = field(default_factory=list)  # samples/s of later, alternated measurements

    @property
    def samples_per_s(self) -> float | None:
        """Median samples/s over the first measurement and its repeats."""
        if self.measurement is None:
            return None
        return statistics.median([self.measurement.samples_per_s, *self.repeats])

    @property
    def remeasured(self) -> int:
        return len(self.repeats)


@dataclass
class Skip:
    """A setting that was not measured, and why."""

    knob: str
    setting: str
    reason: str
    kind: str  # NOT_APPLICABLE | NO_TIME | PRUNED


@dataclass
class SearchResult:
    config: dict[str, Any]  # the best full configuration
    decided: set[str]  # the fields that were measured (the rest stay undecided in tune.json)
    trials: list[Trial]
    skipped: list[Skip]
    default_samples_per_s: float
    tuned_samples_per_s: float
    basis: str  # "loader" (end to end) or "step" (the step alone)
    elapsed_s: float
    budget_s: float
    speedup: float  # tuned over default: the median of alternated pairs when there was time for them
    pairs: int = 1  # how many alternated default/tuned pairs the speed-up rests on


@dataclass
class _Costs:
    setup: dict[str, float] = field(default_factory=dict)  # mode -> largest setup seen (s)
    compile: float | None = None  # first compilation seen (s)
    compile_again: float | None = None  # largest warm-up of a later compiled trial (s)


class Search:
    """One tuning run. ``Search(ctx, measure, budget_s=...).run()`` -> :class:`SearchResult`."""

    def __init__(
        self,
        ctx: Any,
        measure: Measurer,
        *,
        budget_s: float,
        knobs: "Iterable[str] | str | None" = None,
        clock: Callable[[], float] = time.perf_counter,
        loss_rtol: float = 0.05,
        loss_atol: float = 1e-3,
        min_gain: float = 0.03,
        trial_s: float | None = None,
        compile_estimate_s: float | None = None,
        progress: Callable[[str], None] | None = None,
        started_at: float | None = None,
        recheck: bool = True,
        duel_rounds: int = 2,
    ) -> None:
        self.ctx = ctx
        self.measure = measure
        self.budget_s = float(budget_s)
        self.knobs = select_knobs(list(knobs) if knobs is not None and not isinstance(knobs, str) else knobs)
        self.clock = clock
        self.loss_rtol = loss_rtol
        self.loss_atol = loss_atol
        self.min_gain = min_gain
        self.trial_s = trial_s if trial_s is not None else min(10.0, max(0.2, self.budget_s / 15))
        self.compile_estimate_s = compile_estimate_s if compile_estimate_s is not None else COMPILE_ESTIMATE_S.get(ctx.device_type, 60.0)
        self.progress = progress or (lambda msg: None)
        self.recheck = recheck
        self.duel_rounds = duel_rounds
        self.trials: list[Trial] = []
        self.skipped: list[Skip] = []
        self.decided: set[str] = set()
        self.reference: dict[str, Trial] = {}  # mode -> default configuration's trial
        self.best: dict[str, Trial] = {}  # mode -> best trial so far
        self._seen: dict[tuple[str, tuple], Trial] = {}
        self._costs = _Costs()
        self._t0 = started_at

    # ------------------------------------------------------------------ time
    def elapsed(self) -> float:
        return self.clock() - self._t0

    def remaining(self) -> float:
        return self.budget_s - self.elapsed()

    def estimate(self, config: dict[str, Any], mode: str, cap: float | None = None) -> float:
        """Seconds a trial of ``config`` is expected to take, from what was measured so far."""
        ref = self.best.get("step") or self.reference.get("step")
        step_s = 0.0
        if ref is not None and ref.measurement is not None:
            m = ref.measurement
            step_s = m.step_s * (int(config.get("batch_size") or m.batch_size) / max(1, m.batch_size))
        setup = self._costs.setup.get(mode, self._costs.setup.get("step", 0.0))
        if mode == "loader" and config.get("num_workers"):
            setup += WORKER_START_S * int(config["num_workers"])  # spawning workers, once at least
        if config.get("compile"):
            if self._costs.compile is None:
                setup += self.compile_estimate_s
            elif self._costs.compile_again is not None:  # the compiled module is cached: guards, recompiles
                setup += self._costs.compile_again
            else:
                setup += 0.5 * self._costs.compile
        return setup + (self.trial_s if cap is None else cap) + 5 * step_s

    def _affordable(self, knob: str, setting: str, config: dict[str, Any], mode: str) -> bool:
        need, left = self.estimate(config, mode), self.remaining()
        if need <= left:
            return True
        self.skipped.append(Skip(knob, setting, f"not enough time left: needs about {need:.1f} s, {max(0.0, left):.1f} s left", NO_TIME))
        self.progress(f"skip {setting}: needs about {need:.1f} s, {max(0.0, left):.1f} s left")
        return False

    # ---------------------------------------------------------------- trials
    def _run_trial(self, knob: str, setting: str, config: dict[str, Any], mode: str, numerics: bool, cap: float | None = None) -> Trial:
        key = (mode, tuple(sorted(config.items())))
        if key in self._seen:
            return self._seen[key]
        cap = self.trial_s if cap is None else cap
        spec = TrialSpec(config=dict(config), mode=mode, numerics=numerics, time_cap_s=cap)
        start = self.clock()
        measurement: Measurement | None = None
        detail = ""
        try:
            measurement = self.measure(spec)
            status = NOT_FASTER
        except OutOfMemory as exc:
            status, detail = OOM, str(exc)
        except TorchwiseError:
            raise
        except Exception as exc:  # a candidate that does not run (compile failure, unsupported op...)
            text = str(exc).strip().splitlines()
            status, detail = FAILED, f"{type(exc).__name__}: {text[0] if text else ''}"
        wall = self.clock() - start
        trial = Trial(knob, setting, dict(config), mode, status, measurement, detail, wall_s=wall)
        if measurement is not None:
            timed = measurement.step_s * measurement.steps
            setup = max(0.0, wall - timed - (measurement.excluded_s if config.get("compile") else 0.0))
            self._costs.setup[mode] = max(self._costs.setup.get(mode, 0.0), setup)
            if config.get("compile"):
                if self._costs.compile is None:
                    self._costs.compile = measurement.excluded_s
                else:
                    self._costs.compile_again = max(self._costs.compile_again or 0.0, measurement.excluded_s)
            ref = self.reference.get(mode)
            if ref is not None and ref.measurement and ref.measurement.samples_per_s > 0:
                trial.speedup = measurement.samples_per_s / ref.measurement.samples_per_s
        self.trials.append(trial)
        self._seen[key] = trial
        return trial

    def _numerics(self, trial: Trial) -> str | None:
        """Why a trial's loss departs from the fp32 baseline, or None when it does not."""
        base = self.reference["step"].measurement
        m = trial.measurement
        if m is None or m.loss is None or base is None or base.loss is None or not math.isfinite(base.loss):
            return None
        if not math.isfinite(m.loss):
            return f"loss after the check steps is {m.loss} (fp32 baseline {base.loss:.4g})"
        tol = self.loss_rtol * abs(base.loss) + self.loss_atol
        if abs(m.loss - base.loss) > tol:
            return f"loss {m.loss:.4g} against fp32 baseline {base.loss:.4g} (tolerance {tol:.2g})"
        return None

    def _faster(self, cand: Measurement, best: Measurement) -> bool:
        gain = cand.samples_per_s / best.samples_per_s - 1.0 if best.samples_per_s > 0 else math.inf
        noise = math.sqrt(cand.rel_se**2 + best.rel_se**2)
        return gain > max(self.min_gain, 2.0 * noise)

    def _why_not(self, cand: Measurement, best: Trial) -> str:
        """Why ``cand`` did not replace ``best``, in words the report shows beside its speed-up."""
        b = best.measurement
        gain = cand.samples_per_s / b.samples_per_s - 1.0 if b is not None and b.samples_per_s > 0 else 0.0
        against = f"{gain:+.0%} against {best.label}, the best so far"
        if gain <= 0:
            return f"{against}: not faster"
        noise = 2.0 * math.sqrt(cand.rel_se**2 + (b.rel_se if b is not None else 0.0) ** 2)
        if noise >= self.min_gain:
            return f"{against}: within the measurement noise (±{noise:.0%})"
        return f"{against}: under the {self.min_gain:.0%} minimum gain"

    def _judge(self, trial: Trial, mode: str, numerics: bool) -> bool:
        """Set the trial's verdict; True when it becomes the best of its mode."""
        if trial.measurement is None:
            return False
        if numerics:
            why = self._numerics(trial)
            if why:
                trial.status, trial.detail = REJECTED, why
                self.progress(f"{trial.label}: rejected, {why}")
                return False
        best = self.best[mode]
        if best is not trial and self._faster(trial.measurement, best.measurement):
            if self.recheck:
                # a shared machine drifts: before switching, measure incumbent and candidate again,
                # alternately, and decide on the median of the paired ratios
                first = trial.measurement.samples_per_s / best.measurement.samples_per_s
                ratio, pairs = self._duel(best, trial, mode)
                if pairs > 1 and not ratio > 1.0 + self.min_gain:
                    trial.status = NOT_FASTER
                    trial.detail = f"{first:.2f}x {best.label}, the best so far, at first; {ratio:.2f}x over {pairs} alternated pairs"
                    self.progress(f"{trial.label}: not faster when measured alternately ({trial.detail})")
                    return False
                if pairs > 1:
                    trial.detail = f"{ratio:.2f}x over {pairs} alternated pairs"
            trial.status = FASTER
            self.best[mode] = trial
            self.progress(f"{trial.label}: {trial.samples_per_s:.1f} samples/s, faster")
            return True
        trial.status = NOT_FASTER
        if best is not trial:
            trial.detail = self._why_not(trial.measurement, best)
        self.progress(f"{trial.label}: {trial.measurement.samples_per_s:.1f} samples/s, not faster")
        return False

    def _again(self, trial: Trial, mode: str, cap: float) -> float | None:
        """Measure ``trial``'s configuration once more; its samples/s (also kept in ``repeats``)."""
        start = self.clock()
        try:
            m = self.measure(TrialSpec(config=dict(trial.config), mode=mode, numerics=False, time_cap_s=cap))
        except TorchwiseError:
            raise
        except Exception:
            return None
        finally:
            trial.wall_s += self.clock() - start
        trial.repeats.append(m.samples_per_s)
        return m.samples_per_s

    def _duel(self, incumbent: Trial, challenger: Trial, mode: str) -> tuple[float, int]:
        """Median of challenger/incumbent samples/s over alternated measurements (the first pair
        included) and the number of pairs; fewer pairs when time runs short."""
        ratios = [challenger.measurement.samples_per_s / incumbent.measurement.samples_per_s]
        cap = max(0.05, self.trial_s / 3)
        for _ in range(self.duel_rounds):
            need = self.estimate(incumbent.config, mode, cap) + self.estimate(challenger.config, mode, cap)
            if need > self.remaining():
                break
            a = self._again(incumbent, mode, cap)
            b = self._again(challenger, mode, cap) if a else None
            if not a or b is None:
                break
            ratios.append(b / a)
        return statistics.median(ratios), len(ratios)

    # ---------------------------------------------------------------- stages
    def _stage(self, knob: ModuleType, plan: Plan, mode: str) -> None:
        for setting, reason in plan.skipped:
            self.skipped.append(Skip(knob.NAME, setting, reason, NOT_APPLICABLE))
        worse = 0
        for i, cand in enumerate(plan.candidates):
            setting = label(cand)
            config = {**self.best[mode].config, **cand}
            if (mode, tuple(sorted(config.items()))) in self._seen:
                continue  # measured already (and judged then)
            if not self._affordable(knob.NAME, setting, config, mode):
                continue
            trial = self._run_trial(knob.NAME, setting, config, mode, numerics=knob.NUMERICS)
            self.decided.update(cand)
            if self._judge(trial, mode, knob.NUMERICS):
                worse = 0
            else:
                worse += 1
            rest = plan.candidates[i + 1 :]
            if plan.stop_after_worse and worse >= plan.stop_after_worse and rest:
                for c in rest:
                    self.skipped.append(Skip(knob.NAME, label(c), f"pruned: {worse} candidates in a row were not faster", PRUNED))
                break

    def _batch_stage(self, knob: ModuleType) -> None:
        plan = knob.plan(self.ctx, self.best["step"].config)
        for setting, reason in plan.skipped:
            self.skipped.append(Skip(knob.NAME, setting, reason, NOT_APPLICABLE))
        if plan.skipped:
            return
        base = self.best["step"].config
        probe_cap = max(0.05, self.trial_s / 4)

        def fits(n: int) -> bool | None:
            if n == base.get("batch_size"):
                return True  # the current best already ran with it
            config = {**base, "batch_size": n}
            if not self._affordable(knob.NAME, f"batch_size={n}", config, "step"):
                return None
            trial = self._run_trial(knob.NAME, f"batch_size={n}", config, "step", numerics=False, cap=probe_cap)
            if trial.status == OOM:
                return False
            if trial.measurement is None:  # failed for another reason: treat as the limit
                return False
            if trial.knob == knob.NAME and trial.status == NOT_FASTER:
                trial.status = FITS
            return True

        largest, history, complete = knob.largest_fitting(fits, int(base.get("batch_size") or self.ctx.batch_size), int(self.ctx.max_batch))
        if history:
            self.decided.add("batch_size")
        if not complete:
            self.skipped.append(Skip(knob.NAME, "batch_size search", f"stopped for lack of time; largest size seen to fit: {largest}", NO_TIME))
        if not largest:
            return
        chosen = knob.with_margin(largest)
        config = {**base, "batch_size": chosen}
        setting = f"batch_size={chosen} ({int(knob.MARGIN * 100)}% below {largest}, the largest that fits)"
        if chosen <= int(base.get("batch_size") or 0):
            return  # the task's batch is already (about) the largest that fits
        key = ("step", tuple(sorted(config.items())))
        if key in self._seen:
            self._seen.pop(key)  # a short probe: measure it properly
        if not self._affordable(knob.NAME, setting, config, "step"):
            return
        trial = self._run_trial(knob.NAME, setting, config, "step", numerics=False)
        if trial.status == OOM:
            self.progress(f"{setting}: out of memory at full length; keeping batch_size={base.get('batch_size')}")
            return
        self._judge(trial, "step", numerics=False)

    # ------------------------------------------------------------------- run
    def run(self) -> SearchResult:
        if self._t0 is None:
            self._t0 = self.clock()
        default = default_config(self.ctx)
        cap = min(self.trial_s, max(0.05, self.budget_s / 2))
        self.progress(f"baseline: default configuration on {self.ctx.describe()}")
        base = self._run_trial("default", "default (fp32, torch defaults)", default, "step", numerics=True, cap=cap)
        if base.measurement is None:
            raise TrainingError(f"the default configuration cannot run a training step ({base.status}: {base.detail})")
        base.status, base.speedup = BASELINE, 1.0
        self.reference["step"] = self.best["step"] = base

        for knob in self.knobs:
            if knob.MODE != "step":
                continue
            if knob.NAME == "batch_size":
                self._batch_stage(knob)
                continue
            for plan_fn in knob.PLANS:
                self._stage(knob, plan_fn(self.ctx, self.best["step"].config), "step")

        basis = "step"
        loader = next((k for k in self.knobs if k.NAME == "loader"), None)
        if loader is not None:
            basis = self._loader_phase(loader, default)

        best = self.best[basis]
        ref = self.reference[basis]
        speedup, pairs = best.samples_per_s / ref.samples_per_s, 1
        if best is not ref and self.recheck:
            # the headline: default and tuned measured alternately, median of the paired ratios
            speedup, pairs = self._duel(ref, best, basis)
            if pairs > 1 and speedup < 1.0:
                self.progress(f"measured alternately, the tuned settings were {speedup:.2f}x the default: keeping the default")
                best, speedup = ref, 1.0
                self.best[basis] = ref
        for trial in self.trials:  # speed-ups against the reference's median, repeats included
            r = self.reference.get(trial.mode)
            if trial.measurement is not None and r is not None and r.samples_per_s:
                trial.speedup = trial.samples_per_s / r.samples_per_s
        best.chosen = True
        if basis == "loader" and best is not ref and self.best["step"] is not best:
            self.best["step"].chosen = True
        return SearchResult(
            config=dict(best.config),
            decided=set(self.decided),
            trials=self.trials,
            skipped=self.skipped,
            default_samples_per_s=ref.samples_per_s,
            tuned_samples_per_s=best.samples_per_s,
            basis=basis,
            elapsed_s=self.elapsed(),
            budget_s=self.budget_s,
            speedup=speedup if best is not ref else 1.0,
            pairs=pairs if best is not ref else 1,
        )

    def _loader_phase(self, knob: ModuleType, default: dict[str, Any]) -> str:
        first = knob.PLANS[0](self.ctx, self.best["step"].config)
        if first.skipped and not first.candidates:
            self._stage(knob, first, "step")  # records why, measures nothing
            for plan_fn in knob.PLANS[1:]:
                for setting, reason in plan_fn(self.ctx, self.best["step"].config).skipped:
                    if not any(s.setting == setting and s.reason == reason for s in self.skipped):
                        self.skipped.append(Skip(knob.NAME, setting, reason, NOT_APPLICABLE))
            return "step"
        label_default = "default, through the loader"
        if not self._affordable(knob.NAME, label_default, default, "loader"):
            self._skip_loader_rest(knob, f"not enough time left for the loader phase ({max(0.0, self.remaining()):.1f} s left)")
            return "step"
        ref = self._run_trial("default", label_default, default, "loader", numerics=False)
        if ref.measurement is None:
            self._skip_loader_rest(knob, f"the default loader does not run ({ref.status}: {ref.detail})")
            return "step"
        ref.status, ref.speedup = BASELINE, 1.0
        self.reference["loader"] = self.best["loader"] = ref
        tuned_step = self.best["step"].config
        if tuned_step != default:
            setting = "tuned step settings, default loader"
            if not self._affordable(knob.NAME, setting, tuned_step, "loader"):
                # no time to compare them end to end: the step settings stand as measured on the
                # step alone, rather than being dropped for a loader search on the defaults
                self._skip_loader_rest(knob, "not enough time left to measure the tuned step settings through the loader")
                return "step"
            trial = self._run_trial("tuned", setting, tuned_step, "loader", numerics=False)
            if trial.measurement is not None:
                # the step settings were chosen on the step alone: keep them unless the default
                # is clearly faster end to end (on alternated pairs too, when there is time)
                default_wins = self._faster(ref.measurement, trial.measurement)
                if default_wins and self.recheck:
                    ratio, pairs = self._duel(trial, ref, "loader")
                    default_wins = pairs == 1 or ratio > 1.0 + self.min_gain
                if default_wins:
                    trial.status, trial.detail = NOT_FASTER, "slower end to end than the default settings"
                    self.progress(f"{setting}: slower than the default end to end; loader search starts from the default")
                else:
                    trial.status = FASTER
                    self.best["loader"] = trial
        for plan_fn in knob.PLANS:
            self._stage(knob, plan_fn(self.ctx, self.best["loader"].config), "loader")
        return "loader"

    def _skip_loader_rest(self, knob: ModuleType, reason: str) -> None:
        for plan_fn in knob.PLANS:
            plan = plan_fn(self.ctx, self.best["step"].config)
            for setting, why in plan.skipped:
                self.skipped.append(Skip(knob.NAME, setting, why, NOT_APPLICABLE))
            for cand in plan.candidates:
                self.skipped.append(Skip(knob.NAME, label(cand), reason, NO_TIME))

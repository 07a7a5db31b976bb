"""The doctor on an unmodified training script: ``torchwise doctor -- python train.py ARGS``.

The parent (:func:`doctor_script`) starts the script in a child Python process through
``python -m torchwise.doctor.script``; the child attaches a :class:`~torchwise.doctor.watch.Watch`
before the script runs:

- global module forward hooks (module stack, BatchNorm batches, each model's forward passes,
  the first step's module calls) and a ``TorchFunctionMode`` (ReLU/sigmoid/tanh outputs on every
  other step, class labels at every loss call, the first step's loss calls, ``log`` calls);
- ``Tensor.backward`` wrapped to note each loss, and where it was called (file:line);
- ``DataLoader.__iter__`` and the loader iterators' ``__next__`` wrapped: which loader feeds the
  steps, and how long each step waited for its batch;
- global optimizer step hooks: gradients seen and gradient norms before each step, the step
  count after it; after ``steps`` optimizer steps (or ``budget`` seconds) the script is stopped
  by raising :class:`StopScript` (a ``BaseException``, so the script's ``except Exception`` does
  not swallow it) from the step hook; with ``full=True`` it runs to its end.

:mod:`torchwise.doctor.script_evidence` turns what was seen into the same ``Context`` a Task run
fills; the child runs the checks marked ``SCRIPT = True`` on it and writes the report as JSON to
a temporary file the parent reads back. Nothing of the script is changed on disk.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

from torchwise.doctor.report import DoctorReport, Finding, Skipped
from torchwise.doctor.script_hooks import Attached, StopScript
from torchwise.core.errors import UsageError

_Attached = Attached  # the name the tests and the watch helper know

__all__ = ["doctor_script", "is_script_command", "StopScript"]


def is_script_command(first: str) -> bool:
    """True for ``python``/``python3.11``/a path to a Python executable, or a ``.py`` file."""
    name = os.path.basename(first)
    return (first.endswith(".py") and ":" not in first) or name.startswith("python") or first == sys.executable


def doctor_script(
    command: Sequence[str], *, steps: int = 200, budget: float | None = None, full: bool = False,
    stdout: Any = None, timeout: float | None = None,
) -> DoctorReport:
    """Run a training script with the doctor attached and return its report.

    ``command``: ``["python", "train.py", *args]``, ``["python", "-m", "pkg.train", *args]`` or
    ``["train.py", *args]`` (run with this interpreter). The child is stopped cleanly after
    ``steps`` optimizer steps (or ``budget`` seconds), or runs to its end with ``full=True``.
    The script's own output goes to ``stdout`` (default: this process's stderr, so that a JSON
    report on stdout stays clean).
    """
    command = list(command)
    if not command:
        raise UsageError("no script given: use `torchwise doctor -- python train.py ARGS`")
    python = sys.executable
    if not command[0].endswith(".py") and os.path.basename(command[0]).startswith("python"):
        python = command[0] if command[0] != "python" else sys.executable
        command = command[1:]
    if not command:
        raise UsageError("no script given after the Python executable: expected `python train.py ARGS`")
    if command[0] == "-m":
        if len(command) < 2:
            raise UsageError("`python -m` needs a module name")
        target = ["--module", command[1], "--", *command[2:]]
    else:
        path = Path(command[0])
        if not path.is_file():
            raise UsageError(f"training script not found: {command[0]} (expected `python path/to/train.py ARGS`)")
        target = ["--", str(path), *command[1:]]
    if steps < 1:
        raise UsageError(f"steps must be >= 1, got {steps}")
    src = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with tempfile.TemporaryDirectory(prefix="torchwise-doctor-") as tmp:
        out = Path(tmp) / "report.json"
        child = [python, "-m", "torchwise.doctor.script", "--steps", str(steps), "--out", str(out)]
        if budget is not None:
            child += ["--budget", str(budget)]
        if full:
            child.append("--full")
        proc = subprocess.run(child + target, env=env, stdout=stdout if stdout is not None else sys.stderr, timeout=timeout)
        if not out.exists():
            raise UsageError(f"the doctored script ended (exit status {proc.returncode}) before the doctor could report; "
                             "is it a Python training script?")
        data = json.loads(out.read_text(encoding="utf-8"))
    data["measured"]["exit_status"] = proc.returncode
    return _report_from(data)


def _report_from(data: dict[str, Any]) -> DoctorReport:
    findings = [Finding(**f) for f in data["findings"]]
    skipped = [Skipped(tuple(s["codes"]), s["reason"]) for s in data["skipped"]]
    return DoctorReport(data["subject"], findings, skipped, data["measured"], data["failure"])


# ----------------------------------------------------------------------------- the child


def _child(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchwise.doctor.script")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--budget", type=float, default=None)
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--out", required=True)
    parser.add_argument("--module", default=None)
    parser.add_argument("script", nargs="*")
    args = parser.parse_args(argv)
    import runpy

    if args.module:
        subject, script_dir, run_argv = args.module, os.getcwd(), [args.module, *args.script]
    else:
        subject = args.script[0]
        script_dir = str(Path(subject).resolve().parent)
        run_argv = list(args.script)
    attached = _Attached(args.steps, args.budget, args.full)
    sys.argv = run_argv
    if not args.module:
        sys.path.insert(0, script_dir)
    attached.attach()
    failure, exit_status = None, 0
    try:
        if args.module:
            runpy.run_module(args.module, run_name="__main__", alter_sys=True)
        else:
            runpy.run_path(subject, run_name="__main__")
    except StopScript:
        pass
    except SystemExit as exc:
        exit_status = _exit_code(exc.code)
        if exit_status:
            failure = f"the script exited with status {exit_status}" + (f": {exc.code}" if isinstance(exc.code, str) else "")
    except BaseException as exc:  # the script's own error: reported, after the findings that explain it
        if not (attached.draining and _ended_by_drain(exc)):
            failure, exit_status = _describe_failure(exc), 1
    finally:
        attached.close()
    report = _check(subject, attached, failure, args)
    report.measured["script_exit"] = exit_status
    Path(args.out).write_text(report.to_json(), encoding="utf-8")
    return exit_status


def _exit_code(code: Any) -> int:
    """What Python's own exit status would be for ``sys.exit(code)``."""
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def _ended_by_drain(exc: BaseException) -> bool:
    """The StopIteration the doctor raised to end the epoch, escaping a script's ``next(it)``."""
    return isinstance(exc, StopIteration) or (isinstance(exc, RuntimeError) and isinstance(exc.__cause__, StopIteration))


def _describe_failure(exc: BaseException) -> str:
    """``KeyError: 'x' (at train.py:41)``, in plain text (torch colours some messages)."""
    from torchwise.doctor.frames import plain, user_frame_of

    text = plain(str(exc)).strip()
    first = text.splitlines()[0] if text else ""
    at = user_frame_of(exc.__traceback__)
    return f"{type(exc).__name__}: {first}"[:300] + (f" (at {at})" if at else "")


def _check(subject: str, attached: _Attached, failure: str | None, args: argparse.Namespace) -> DoctorReport:
    from torchwise.doctor import available_checks
    from torchwise.doctor.explain import run_checks

    hand = attached.hand and not attached.optimizers
    attached.watch.result.not_cleared = attached.watch.cleared.never_cleared(hand=hand)
    result = attached.watch.finish()
    result.backward_line = attached.backward_line
    attached.evidence.finish()
    ctx = attached.evidence.context(subject, attached.optimizers, args.steps, failure, attached.names, attached.opt_names)
    attached.evidence.name_objectives(result, attached.optimizers)
    checks = [c for c in available_checks() if getattr(c, "SCRIPT", False)]
    not_observable = [code for c in available_checks() if not getattr(c, "SCRIPT", False) for code in c.CODES]
    findings, skipped = run_checks(ctx, checks)
    if not_observable:
        skipped.append(Skipped(tuple(not_observable), "not observable in script mode (see docs/doctor.md)"))
    measured: dict[str, Any] = {
        "mode": "script", "steps_run": result.steps, "steps_requested": None if args.full else args.steps,
        "stopped_by_doctor": attached.stopped or attached.draining, "seconds": round(time.perf_counter() - attached.started, 3),
        "optimizers": len(attached.optimizers), "weights_updated_by": "hand" if hand else "optimizer" if attached.optimizers else "none",
        "backward_at": attached.backward_line,
    }
    if len(result.objectives) > 1:
        measured["objectives"] = [o.to_dict() for o in result.objectives]
    if attached.draining:
        measured["evaluation_passes_after_steps"] = attached.evidence.evaluated_after_steps
    measured["models"] = [attached.names.get(id(m)) or type(m).__name__ for m in attached.evidence.models()]
    waited = ctx.loader_wait()
    if waited is not None:
        measured["loader_wait_share"] = round(waited[2], 4)
    return DoctorReport(subject, findings, skipped, measured, failure)


if __name__ == "__main__":
    raise SystemExit(_child(sys.argv[1:]))

"""The doctor's checks: one module per check, named ``twNNN_<name>.py``.

Each module has a docstring (what it detects, why it matters, an example, the fix), a literal
``CODES = ("TWNNN", ...)`` that ``torchwise rule`` reads without importing the module, an optional
``before(ctx)`` run before the steps, and ``check(ctx)`` returning a list of
:class:`~torchwise.doctor.report.Finding` (empty when all is well) or a
:class:`~torchwise.doctor.report.Skipped` saying why it could not run.
"""

from __future__ import annotations

from typing import Iterable


def listing(names: Iterable[str], limit: int = 5) -> str:
    """``a, b, c and 4 more`` (names quoted as given)."""
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def for_device_hint(ctx, check_for: str = "one") -> str:
    """Why a GPU check did not run, and how to ask for it (the CLI flag and the Python argument)."""
    if getattr(ctx, "script", False):
        return f"(the script trains on {ctx.device.type})"
    return f"(to check for {check_for}: --for-device cuda on the command line, for_device='cuda' from Python)"

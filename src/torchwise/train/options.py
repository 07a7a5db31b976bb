"""Checking the Trainer's options up front: one line naming the option, the value and what is expected.

Switches take ``True``, ``False`` and, where there is an automatic choice, ``"auto"``; anything
else ("maybe", "yes", 1) is refused instead of quietly acting as "on". Counts are positive
integers (``bool`` is not a count). Folders must not be existing files. Imports nothing heavy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from torchwise.errors import UsageError


def check_switch(name: str, value: Any, auto: bool = True) -> None:
    """``value`` must be True or False (or "auto" when ``auto``)."""
    if isinstance(value, bool) or (auto and value == "auto"):
        return
    expected = "True, False or 'auto'" if auto else "True or False"
    raise UsageError(f"{name} must be {expected}, got {value!r}")


def check_count(name: str, value: Any, minimum: int = 1, optional: bool = False) -> None:
    """``value`` must be an integer >= ``minimum`` (or None when ``optional``)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        expected = f"an integer >= {minimum}" + (" or None" if optional else "")
        raise UsageError(f"{name} must be {expected}, got {value!r}")


def check_folder(name: str, value: Any) -> None:
    """``value`` (a path, or None/False for none) must not name an existing file."""
    if value is None or value is False:
        return
    if not isinstance(value, (str, Path)) or str(value) == "":
        raise UsageError(f"{name} must be a folder path or None, got {value!r}")
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{name} {path} is a file, not a folder; give a folder path (it is created when missing)")


def check_trainer_options(options: dict[str, Any]) -> None:
    """Validate the Trainer keywords this module knows; others are checked where they are used."""
    for name in ("channels_last", "cudnn_benchmark"):
        check_switch(name, options[name])
    for name in ("compile", "deterministic", "progress", "check_labels", "oom_recovery"):
        check_switch(name, options[name], auto=False)
    check_count("checkpoint_every", options["checkpoint_every"], optional=True)
    check_count("keep_checkpoints", options["keep_checkpoints"], minimum=0)  # 0 keeps every checkpoint
    check_count("nonfinite_patience", options["nonfinite_patience"], minimum=0)
    if options["seed"] is not None:
        check_count("seed", options["seed"], minimum=0)
    for name in ("checkpoint_dir", "log_dir"):
        check_folder(name, options[name])

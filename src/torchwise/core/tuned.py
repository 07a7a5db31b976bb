"""The tuned configuration: what ``torchwise tune`` chose, as the Trainer applies it.

Written by ``tune`` as ``tune.json``; read by ``Trainer(..., tuned="tune.json")`` and
``torchwise train TASK --tuned tune.json``. A field left ``None`` was not decided by the tuner and
keeps the Trainer's own default. Imports nothing heavy.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError

FORMAT_VERSION = 1

# TunedConfig field -> Trainer keyword
_TRAINER_FIELDS = ("precision", "channels_last", "cudnn_benchmark", "compile")
# TunedConfig field -> DataLoader keyword
_LOADER_FIELDS = ("batch_size", "num_workers", "pin_memory", "persistent_workers")


@dataclass
class TunedConfig:
    """Settings chosen by measurement. ``None`` means "not decided: keep the default"."""

    precision: str | None = None
    channels_last: bool | None = None
    cudnn_benchmark: bool | None = None
    compile: bool | None = None
    matmul_precision: str | None = None  # torch.set_float32_matmul_precision: "highest" | "high" | "medium"
    threads: int | None = None
    batch_size: int | None = None
    num_workers: int | None = None
    pin_memory: bool | None = None
    persistent_workers: bool | None = None
    # provenance: device, task name, measured speed-up... (free-form, not applied)
    meta: dict[str, Any] = field(default_factory=dict)

    def trainer_overrides(self) -> dict[str, Any]:
        """Decided Trainer keywords (precision, channels_last, cudnn_benchmark, compile)."""
        return {k: getattr(self, k) for k in _TRAINER_FIELDS if getattr(self, k) is not None}

    def loader_overrides(self) -> dict[str, Any]:
        """Decided DataLoader keywords (batch_size, num_workers, pin_memory, persistent_workers)."""
        out = {k: getattr(self, k) for k in _LOADER_FIELDS if getattr(self, k) is not None}
        if not out.get("num_workers"):
            out.pop("persistent_workers", None)  # DataLoader refuses persistent workers without workers
        return out

    def apply_process_settings(self) -> None:
        """Apply the process-wide knobs: torch threads and float32 matmul precision."""
        import torch

        if self.threads:
            torch.set_num_threads(int(self.threads))
        if self.matmul_precision:
            torch.set_float32_matmul_precision(self.matmul_precision)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT_VERSION, **asdict(self)}

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, source: "str | Path | TunedConfig | dict[str, Any]") -> "TunedConfig":
        """Read a tune.json (or accept a dict / TunedConfig); clear error on anything else."""
        if isinstance(source, TunedConfig):
            return source
        if isinstance(source, dict):
            data = dict(source)
            where = "tuned configuration"
        else:
            path = Path(source)
            where = str(path)
            try:
                data = json.loads(path.read_text())
            except FileNotFoundError:
                raise UsageError(f"tuned configuration not found: {path} (run 'torchwise tune TASK --out {path}')") from None
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise UsageError(f"{path} is not a tune.json file: {exc}") from None
        if not isinstance(data, dict):
            raise UsageError(f"{where}: expected a JSON object, got {type(data).__name__}")
        version = data.pop("format", FORMAT_VERSION)
        if version != FORMAT_VERSION:
            raise UsageError(f"{where}: format {version!r} is not one this torchwise reads (format {FORMAT_VERSION}); run 'torchwise tune' again")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"{where}: unknown keys {unknown}; expected some of {sorted(known)}")
        for key, value in data.items():
            problem = _check_value(key, value)
            if problem:
                raise UsageError(f"{where}: {key!r} {problem}, got {value!r}")
        return cls(**data)

    def check_fits(self, model: Any, inputs: Any = None) -> list[str]:
        """Warn (and return the differences) when this configuration was tuned for another model:
        another class, parameter count or per-sample input shape than ``model``/``inputs``."""
        made_for = self.meta.get("model") if isinstance(self.meta, dict) else None
        if not isinstance(made_for, dict):
            return []  # written by hand or by an older torchwise: nothing to compare
        here = describe_model(model, inputs)
        differences = [
            f"{label} {made_for[key]} there, {here[key]} here"
            for key, label in (("class", "model"), ("parameters", "parameters"), ("input_shape", "input shape per sample"))
            if made_for.get(key) is not None and here.get(key) is not None and made_for[key] != here[key]
        ]
        if differences:
            import warnings

            task = self.meta.get("task", "another task")
            warnings.warn(f"this tune.json was made for {task!r}, not this model ({'; '.join(differences)}): "
                          "its settings may not suit it; run 'torchwise tune' for this task", UserWarning, stacklevel=3)
        return differences


# field -> (accepted Python types, allowed values or a minimum, what is expected)
_FIELD_RULES: dict[str, tuple[tuple[type, ...], Any, str]] = {
    "precision": ((str,), ("32", "32-true", "fp32", "float32", "bf16", "bf16-mixed", "bfloat16", "16", "16-mixed", "fp16", "float16", "auto"),
                  "must be a precision: '32', 'bf16-mixed', '16-mixed' or 'auto'"),
    "matmul_precision": ((str,), ("highest", "high", "medium"), "must be one of 'highest', 'high', 'medium'"),
    "channels_last": ((bool,), None, "must be true or false"),
    "cudnn_benchmark": ((bool,), None, "must be true or false"),
    "compile": ((bool,), None, "must be true or false"),
    "pin_memory": ((bool,), None, "must be true or false"),
    "persistent_workers": ((bool,), None, "must be true or false"),
    "threads": ((int,), 1, "must be an integer >= 1"),
    "batch_size": ((int,), 1, "must be an integer >= 1"),
    "num_workers": ((int,), 0, "must be an integer >= 0"),
    "meta": ((dict,), None, "must be a JSON object"),
}


def _check_value(key: str, value: Any) -> str | None:
    """What is wrong with ``value`` for field ``key`` (``None``: fine; null always is)."""
    if value is None:
        return None
    types, allowed, expected = _FIELD_RULES[key]
    if not isinstance(value, types) or (bool not in types and isinstance(value, bool)):
        return expected
    if isinstance(allowed, tuple) and value.strip().lower() not in allowed:
        return expected
    if isinstance(allowed, int) and value < allowed:
        return expected
    return None


def describe_model(model: Any, inputs: Any = None) -> dict[str, Any]:
    """What a tune.json remembers of the model it was tuned for: class name, parameter count and
    the per-sample input shape (without the batch dimension) when ``inputs`` is a tensor."""
    shape = getattr(inputs, "shape", None)
    cls = type(model)
    if cls.__name__.startswith("FSDP") and [b.__name__ for b in cls.__bases__[:1]] == ["FSDPModule"]:
        cls = cls.__bases__[-1]  # fully_shard's FSDP<Name> subclass: the class the user wrote
    return {
        "class": cls.__qualname__,
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "input_shape": list(shape[1:]) if shape is not None and len(shape) >= 1 else None,
    }


def check_output_path(path: "str | Path | None", option: str) -> None:
    """Refuse an output path that cannot be written (a folder, a missing folder) before any work."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"{option} {p} is a folder; give a file path such as {p / 'tune.json'}")
    if not p.parent.is_dir():
        raise UsageError(f"{option} {p}: the folder {p.parent} does not exist")

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

from torchwise.errors import UsageError

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
        data.pop("format", None)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise UsageError(f"{where}: unknown keys {unknown}; expected some of {sorted(known)}")
        return cls(**data)

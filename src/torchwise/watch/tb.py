"""TensorBoard scalars of a watched run (``--tensorboard DIR``): the samples as they are logged.

Each sample writes ``loss/<objective>``, ``grad_norm/<layer>``, ``update_ratio/<layer>``,
``lr/<group>``, ``loader_wait``, ``step_ms`` and ``memory_mb`` at its optimizer step, through
``torch.utils.tensorboard`` (the ``tensorboard`` extra). Under torchrun each rank writes its own
``rankN`` sub-folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError
from torchwise.watch.addons import AddOn


class Scalars(AddOn):
    def __init__(self, session: Any, folder: str | Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as exc:
            raise UsageError("--tensorboard needs the tensorboard package: pip install 'torchwise[tensorboard]'") from exc
        path = Path(folder) / f"rank{session.rank}" if session.world_size > 1 else Path(folder)
        self.writer = SummaryWriter(str(path))

    def sample(self, row: dict[str, Any], loss: dict[str, float], grads: dict[str, float], update: dict[str, float]) -> None:
        step = int(row["step"])
        values: dict[str, float] = {f"loss/{k}": v for k, v in loss.items()}
        values.update({f"grad_norm/{k}": v for k, v in grads.items()})
        values.update({f"update_ratio/{k}": v for k, v in update.items()})
        values.update({f"lr/group{i}": v for i, v in enumerate(row.get("lr") or [])})
        for k in ("loader_wait", "step_ms", "memory_mb"):
            if row.get(k) is not None:
                values[k] = row[k]
        for tag, v in values.items():
            if isinstance(v, (int, float)) and math.isfinite(v):
                self.writer.add_scalar(tag, v, step)

    def close(self) -> None:
        self.writer.flush()
        self.writer.close()


__all__ = ["Scalars"]

"""``torch.compile`` with a fallback: if compiling fails (at wrap time or at the first call), warn once and run eagerly."""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn


class CompileOnce(nn.Module):
    """The compiled model, or the eager one after a failure (said once through ``report``)."""

    def __init__(self, model: nn.Module, report: Callable[[str], None]) -> None:
        super().__init__()
        self.eager = model
        self.report = report
        try:
            self.compiled: Any = torch.compile(model)
        except Exception as exc:
            self._fail(exc)
        self.verified = False

    def _fail(self, exc: BaseException) -> None:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        self.report(f"warning: torch.compile failed ({type(exc).__name__}: {first}); running eagerly")
        self.compiled = None

    def no_sync(self) -> Any:
        return self.eager.no_sync()  # type: ignore[operator]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.compiled is None:
            return self.eager(*args, **kwargs)
        if self.verified:
            return self.compiled(*args, **kwargs)
        try:
            out = self.compiled(*args, **kwargs)
        except Exception as exc:  # compilation errors surface at the first call
            self._fail(exc)
            return self.eager(*args, **kwargs)
        self.verified = True
        return out

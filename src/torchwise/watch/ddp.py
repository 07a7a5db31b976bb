"""What a process does with DistributedDataParallel and collectives, seen from cheap wrappers.

- ``DistributedDataParallel.__init__``: each wrap is noted with the script's line. A DDP wrapped
  around a DDP, or a second DDP around a module already wrapped (a new wrapper every epoch or run),
  is reported at once (TW410): every wrap broadcasts rank 0's weights again and builds another
  reducer; nested wrappers synchronize each gradient once per level and save ``module.module.``
  keys. The wrapped parameters' dtype, device and storage are remembered.
- After a wrap, and at every cross-rank check, the wrapped parameters are compared with what DDP
  saw: a parameter moved to another dtype or device (or given new storage) after wrapping is no
  longer synchronized by DDP's gradient hooks, and the replicas drift apart (TW409).
- ``DistributedDataParallel.forward``: passes run with gradient sync on (not under ``no_sync``).
- ``torch.distributed`` collectives: calls and the time spent in them (a fast rank waits there
  for a slow one).
"""

from __future__ import annotations

import time
import weakref
from typing import Any

from torchwise.doctor.report import Finding
from torchwise.watch.addons import AddOn

COLLECTIVES = ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "barrier", "reduce")
CHECK_AFTER_WRAP = 3  # steps after a wrap on which the wrapped parameters are compared with the wrap's


class _Wrap:
    def __init__(self, ddp: Any, module: Any, line: str, step: int) -> None:
        self.ddp = weakref.ref(ddp)
        self.module = weakref.ref(module)
        self.line, self.step = line, step
        self.params = [(n, weakref.ref(p), p.data_ptr(), p.dtype, p.device) for n, p in module.named_parameters() if p.requires_grad]
        self.reported = False


class DDPWatch(AddOn):
    """Wrappers around DDP and the collectives of ``torch.distributed``."""

    @classmethod
    def install(cls, session: Any) -> "DDPWatch | None":
        import torch.distributed as dist

        if not dist.is_available():
            return None
        return cls(session)

    def __init__(self, session: Any) -> None:
        import torch
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        self.session = session
        self.wraps: list[_Wrap] = []
        self.synced = 0  # DDP forward passes with gradient sync on
        self.collectives: dict[str, int] = {}
        self.collective_s = 0.0
        self._check_left = 0
        self._patches: list[tuple[Any, str, Any]] = []
        addon = self
        init, forward = DDP.__init__, DDP.forward

        def ddp_init(ddp, *args, **kwargs):
            module = args[0] if args else kwargs.get("module")
            init(ddp, *args, **kwargs)
            if addon.session.active and module is not None:
                addon._wrapped(ddp, module)

        def ddp_forward(ddp, *args, **kwargs):
            if ddp.require_backward_grad_sync and torch.is_grad_enabled():
                addon.synced += 1
            return forward(ddp, *args, **kwargs)

        self._patch(DDP, "__init__", ddp_init)
        self._patch(DDP, "forward", ddp_forward)
        for name in COLLECTIVES:
            fn = getattr(dist, name, None)
            if fn is not None:
                self._patch(dist, name, self._timed(name, fn))

    def _patch(self, owner: Any, name: str, value: Any) -> None:
        self._patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    def _timed(self, name: str, fn: Any) -> Any:
        addon = self

        def collective(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                addon.collective_s += time.perf_counter() - t0
                addon.collectives[name] = addon.collectives.get(name, 0) + 1

        collective.__wrapped__ = fn  # type: ignore[attr-defined]
        collective.__name__ = name
        return collective

    def close(self) -> None:
        for owner, name, original in reversed(self._patches):
            setattr(owner, name, original)
        self._patches = []

    # -- wraps -----------------------------------------------------------------------------------
    def _wrapped(self, ddp: Any, module: Any) -> None:
        from torch.nn.parallel import DistributedDataParallel as DDP
        from torchwise.doctor.watch import user_frame

        line = user_frame()
        earlier = [w for w in self.wraps if w.module() is module or w.ddp() is module]
        self.wraps = [w for w in self.wraps if w.module() is not None][-16:]
        self.wraps.append(_Wrap(ddp, module.module if isinstance(module, DDP) else module, line, self.session.step))
        self._check_left = CHECK_AFTER_WRAP
        if isinstance(module, DDP):
            depth = 2
            inner = module.module
            while isinstance(inner, DDP):
                depth, inner = depth + 1, inner.module
            self.session.report_finding(Finding(
                "TW410", "warning",
                f"a DistributedDataParallel was wrapped around a DistributedDataParallel ({depth} levels, at {line or 'the script'}): "
                f"every gradient is synchronized once per level and the state dict gets 'module.module.' keys",
                line or "DistributedDataParallel", {"levels": depth, "wrapped_at": [w.line for w in earlier] + [line], "step": self.session.step},
                "wrap the model once, before training (model = DDP(model) outside the epoch/run loop); keep the bare "
                "module (ddp.module) to build a new wrapper only for a new model"))
        elif earlier:
            self.session.report_finding(Finding(
                "TW410", "warning",
                f"the same model was wrapped in a new DistributedDataParallel again ({len(earlier) + 1} wraps, at {line or 'the script'}; "
                f"first at {earlier[0].line or '?'}): each wrap broadcasts rank 0's weights over the others and builds another "
                f"gradient reducer", line or "DistributedDataParallel",
                {"wraps": len(earlier) + 1, "wrapped_at": [w.line for w in earlier] + [line], "step": self.session.step},
                "wrap the model once, before training, and reuse the wrapper for every epoch and run"))

    def current(self) -> _Wrap | None:
        """The latest wrap whose model is alive."""
        for w in reversed(self.wraps):
            if w.module() is not None:
                return w
        return None

    def post_step(self) -> None:
        if self._check_left > 0:
            self._check_left -= 1
            self.check_moved()

    def check_moved(self) -> None:
        """Wrapped parameters whose dtype, device or storage changed after the wrap (once per wrap)."""
        w = self.current()
        if w is None or w.reported:
            return
        moved = []
        for name, ref, ptr, dtype, device in w.params:
            p = ref()
            if p is None:
                continue
            if p.dtype != dtype or p.device != device or p.data_ptr() != ptr:
                moved.append((name, f"{dtype}->{p.dtype}" if p.dtype != dtype else f"{device}->{p.device}" if p.device != device else "new storage"))
        if not moved:
            return
        w.reported = True
        kinds = sorted({k for _, k in moved})
        names = [n for n, _ in moved]
        self.session.report_finding(Finding(
            "TW409", "error",
            f"{len(moved)} of {len(w.params)} parameter tensors changed ({', '.join(kinds)}) after DistributedDataParallel "
            f"wrapped the model at {w.line or 'the script'}: DDP's gradient hooks still point at the old tensors, so these "
            f"gradients are not averaged across ranks and the replicas drift apart",
            ", ".join(names[:5]) + (f" (+{len(names) - 5} more)" if len(names) > 5 else ""),
            {"parameters": names[:50], "changes": kinds, "wrapped_at": w.line},
            "move the model to its device and dtype (.to(device), .half(), channels_last) before wrapping it in "
            "DistributedDataParallel, never after"))


__all__ = ["DDPWatch"]

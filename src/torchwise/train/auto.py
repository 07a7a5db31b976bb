"""``channels_last="auto"`` and ``cudnn_benchmark="auto"`` decided from the observed inputs.

Both pay off for 4-D convolutional models whose input shapes stay fixed (TW212, TW213): cuDNN's
benchmark picks the fastest kernel once per shape, and channels_last lets tensor cores read
NHWC directly. When shapes vary from step to step, benchmarking re-runs on every new shape and
costs more than it saves, so both are switched off again. A smaller last batch of an epoch is
not counted as variation. "auto" only turns them on for CUDA; on other devices the tuner decides.
Under FSDP (``relayout_parameters=False``) only the inputs are converted: the sharded parameters
stay contiguous, and the convolution picks its NHWC kernel from the input's format alone.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

_CONV = (nn.Conv2d, nn.ConvTranspose2d)


def has_conv2d(model: nn.Module) -> bool:
    return any(isinstance(m, _CONV) for m in model.modules())


def decide(setting: Any, *, device_type: str, conv2d: bool, four_d: bool, shapes_fixed: bool) -> bool:
    """Resolve one "auto" setting (True/False pass through)."""
    if setting is not None and setting != "auto":
        return bool(setting)
    return device_type == "cuda" and conv2d and four_d and shapes_fixed


class AutoSettings:
    """Watches input shapes (host-side, no sync) and applies/undoes the two settings."""

    MAX_SHAPES = 2  # the regular batch plus one smaller last batch

    def __init__(self, channels_last: Any = "auto", cudnn_benchmark: Any = "auto", *, device_type: str, deterministic: bool = False,
                 relayout_parameters: bool = True) -> None:
        self.want_channels_last = channels_last
        self.relayout_parameters = relayout_parameters  # False (FSDP2): only the inputs change format; the kernels follow them
        self.want_benchmark = False if deterministic else cudnn_benchmark  # TW302: determinism wins
        self.device_type = device_type
        self.shapes: set[tuple[int, ...]] = set()
        self.trailing: set[tuple[int, ...]] = set()
        self.conv2d = False
        self.channels_last = False
        self.cudnn_benchmark = False
        self.varying = False
        self._model: nn.Module | None = None
        self._saved_benchmark = torch.backends.cudnn.benchmark
        self.events: list[str] = []
        self.watching = False  # whether observe() may still switch something off (read every step)


    def start(self, model: nn.Module, first_input: Any) -> None:
        """Decide from the model and the first input; convert the model if channels_last is on."""
        self._model = model
        self.conv2d = has_conv2d(model)
        four_d = isinstance(first_input, torch.Tensor) and first_input.dim() == 4
        if isinstance(first_input, torch.Tensor):
            self.shapes.add(tuple(first_input.shape))
            self.trailing.add(tuple(first_input.shape[1:]))
        kw = dict(device_type=self.device_type, conv2d=self.conv2d, four_d=four_d, shapes_fixed=True)
        self.channels_last = decide(self.want_channels_last, **kw)
        self.cudnn_benchmark = decide(self.want_benchmark, **kw)
        if self.channels_last and self.relayout_parameters:
            model.to(memory_format=torch.channels_last)
        if self.cudnn_benchmark:
            torch.backends.cudnn.benchmark = True
        self.watching = (self.channels_last and self.want_channels_last == "auto") or (self.cudnn_benchmark and self.want_benchmark == "auto")

    def observe(self, inputs: Any) -> None:
        """Record an input shape; switch "auto" settings off once shapes are seen to vary."""
        if not isinstance(inputs, torch.Tensor):
            return
        shape = tuple(inputs.shape)
        if shape in self.shapes:
            return
        self.shapes.add(shape)
        self.trailing.add(shape[1:])
        if len(self.trailing) > 1 or len(self.shapes) > self.MAX_SHAPES:
            self.varying = True
            self.watching = False
            if self.want_benchmark == "auto" and self.cudnn_benchmark:
                self.cudnn_benchmark = False
                torch.backends.cudnn.benchmark = self._saved_benchmark
                self.events.append("input shapes vary: cudnn.benchmark switched off")
            if self.want_channels_last == "auto" and self.channels_last and self._model is not None:
                self.channels_last = False
                if self.relayout_parameters:
                    self._model.to(memory_format=torch.contiguous_format)
                self.events.append("input shapes vary: channels_last switched off")

    def prepare_input(self, inputs: Any) -> Any:
        if self.channels_last and isinstance(inputs, torch.Tensor) and inputs.dim() == 4:
            return inputs.contiguous(memory_format=torch.channels_last)
        return inputs

    def finish(self) -> None:
        """Restore the process-wide cudnn.benchmark flag."""
        if self.cudnn_benchmark:
            torch.backends.cudnn.benchmark = self._saved_benchmark

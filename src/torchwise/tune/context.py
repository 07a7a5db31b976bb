"""What the tuner knows about the model, the data and the hardware before measuring anything.

Knobs decide from a :class:`Context` whether they apply (and why not). Tests build a Context by
hand to describe a GPU they do not have.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, IterableDataset

from torchwise.utils.batch import forward_names, model_call
from torchwise.core.errors import DataError, UsageError

MAX_BATCH_FACTOR = 32  # the batch-size search stops at this many times the task's batch


def usable_cores() -> int:
    """CPU cores this process may run on (affinity mask where the OS has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_device(spec: "str | torch.device" = "auto") -> torch.device:
    """``"auto"`` -> cuda if available, else cpu; anything else checked to be usable here."""
    if isinstance(spec, torch.device):
        device = spec
    else:
        text = str(spec).strip().lower()
        if text == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        try:
            device = torch.device(text)
        except RuntimeError:
            raise UsageError(f"unknown device {spec!r}; expected 'auto', 'cpu', 'cuda' or 'cuda:N'") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise UsageError(f"device {str(device)!r} requested but CUDA is not available here; use 'cpu' or 'auto'")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise UsageError(f"device {str(device)!r} does not exist: {torch.cuda.device_count()} CUDA device(s) here")
    elif device.type not in ("cpu", "mps"):
        raise UsageError(f"device {str(device)!r} is not supported by tune; expected 'auto', 'cpu' or 'cuda[:N]'")
    return device


def compile_problem(device_type: str) -> str | None:
    """Why ``torch.compile`` cannot be measured here, or None."""
    if not hasattr(torch, "compile"):
        return "this torch has no torch.compile"
    if sys.platform == "win32":
        return "torch.compile is not measured on Windows"
    try:
        from torch import _dynamo

        if not _dynamo.is_dynamo_supported():
            return f"torch.compile does not support Python {sys.version_info.major}.{sys.version_info.minor} in this torch"
    except Exception as exc:  # pragma: no cover - broken installs
        return f"torch.compile is unavailable: {exc}"
    if device_type == "cpu":
        cxx = os.environ.get("CXX") or "g++"
        if not any(shutil.which(c) for c in (cxx, "g++", "c++", "clang++")):
            return "no C++ compiler found (Inductor generates C++ kernels on cpu)"
    elif device_type == "cuda":
        if importlib.util.find_spec("triton") is None:
            return "Triton is not installed (Inductor generates Triton kernels on GPU)"
    else:
        return f"torch.compile is measured on cpu and cuda only, not {device_type}"
    return None


def cpu_bf16_native() -> bool:
    """Whether this CPU has bf16 instructions (AVX512-BF16/AMX) that oneDNN uses."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except Exception:
        return False


@dataclass
class Context:
    """Facts that decide which knobs apply. The defaults describe a plain CPU."""

    device_type: str = "cpu"
    device_name: str = "cpu"
    cuda_capability: tuple[int, int] | None = None
    bf16: bool = False
    has_conv: bool = False
    conv_4d: bool = False
    cores: int = 1
    threads: int = 1
    compile_problem: str | None = None
    loader_problem: str | None = None
    iterable_dataset: bool = False
    dataset_len: int | None = None
    batch_size: int = 64
    max_batch: int | None = None
    shapes_vary: bool = False
    total_memory: int | None = None

    @classmethod
    def from_task(cls, task: Any, device: torch.device, sample: list[Any] | None = None, max_batch_size: int | None = None) -> "Context":
        model: nn.Module = task.model
        convs = [m for m in model.modules() if isinstance(m, nn.modules.conv._ConvNd)]
        conv2d = any(isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)) for m in convs)
        shapes: list[tuple] = []
        names = forward_names(model)
        for batch in sample or []:
            try:
                args = model_call(batch, names)[0]
            except DataError:  # a layout only the task's step_fn reads
                args = ()
            shapes.append(tuple(getattr(args[0] if args else None, "shape", ())))
        input_4d = bool(shapes) and len(shapes[0]) == 4
        # the last batch of an epoch may be short: only the non-batch dimensions count
        shapes_vary = len({s[1:] for s in shapes}) > 1
        data = task.train_data
        loader_problem = None
        if isinstance(data, DataLoader):
            loader_problem = "the task passes a ready DataLoader: its batch size and workers are the task's (pass a Dataset to tune them)"
        try:
            dataset_len = len(data.dataset if isinstance(data, DataLoader) else data)
        except TypeError:
            dataset_len = None
        max_batch = None
        if dataset_len is not None:
            max_batch = min(dataset_len, max_batch_size or MAX_BATCH_FACTOR * task.batch_size)
        ctx = cls(
            device_type=device.type,
            has_conv=bool(convs),
            conv_4d=conv2d and input_4d,
            cores=usable_cores(),
            threads=torch.get_num_threads(),
            compile_problem=compile_problem(device.type),
            loader_problem=loader_problem,
            iterable_dataset=isinstance(data.dataset if isinstance(data, DataLoader) else data, IterableDataset),
            dataset_len=dataset_len,
            batch_size=task.batch_size,
            max_batch=max_batch,
            shapes_vary=shapes_vary,
        )
        if device.type == "cuda":
            index = device.index if device.index is not None else torch.cuda.current_device()
            props = torch.cuda.get_device_properties(index)
            ctx.device_name = props.name
            ctx.cuda_capability = (props.major, props.minor)
            ctx.bf16 = bool(torch.cuda.is_bf16_supported())
            ctx.total_memory = int(props.total_memory)
        elif device.type == "cpu":
            ctx.device_name = platform.processor() or platform.machine() or "cpu"
            ctx.bf16 = cpu_bf16_native()
        else:
            ctx.device_name = device.type
        return ctx

    def describe(self) -> str:
        if self.device_type == "cuda":
            cap = f", sm_{self.cuda_capability[0]}{self.cuda_capability[1]}" if self.cuda_capability else ""
            return f"cuda ({self.device_name}{cap})"
        if self.device_type == "cpu":
            return f"cpu ({self.cores} cores, {self.threads} torch threads)"
        return self.device_type

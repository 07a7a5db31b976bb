"""Devices and threads: pick a device by name or automatically, move nested batches, set threads.

* :func:`select_device` turns "auto" / "cpu" / "cuda" / "cuda:N" / "mps" into a concrete
  ``torch.device``; among several GPUs it picks the one with the most free memory (NVML, mapped
  through ``CUDA_VISIBLE_DEVICES`` to torch's logical numbering).
* :func:`to_device` moves every tensor inside dicts, lists, tuples, namedtuples and dataclasses.
* :func:`set_threads` sets torch's intra-op (and once per process, inter-op) thread counts.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from torchwise.core.errors import UsageError
from torchwise.utils.memory import system_memory

__all__ = [
    "select_device",
    "to_device",
    "set_threads",
    "parse_device_spec",
    "logical_gpus",
    "pick_gpu",
]

GiB = 1024**3
_SPEC = re.compile(r"^(cpu|cuda|mps)(?::(\d+))?$")
_FORMS = "'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'"


# --------------------------------------------------------------------------------------------
# probes of this machine (small functions so that tests can replace them)
# --------------------------------------------------------------------------------------------


def _cuda_count() -> int:
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def _nvml_gpus() -> list[dict] | None:
    """NVML's GPU list (physical order), or None when NVML cannot be used."""
    try:
        from torchwise.utils.env import nvml_gpus
    except ImportError:
        return None
    try:
        try:
            gpus, _note = nvml_gpus(processes=False)
        except TypeError:
            gpus, _note = nvml_gpus()
    except Exception:
        return None
    return list(gpus) or None


def _torch_uuids(count: int) -> list[str] | None:
    """The UUID torch reports for each logical CUDA device, or None if it cannot tell."""
    try:
        return [str(torch.cuda.get_device_properties(i).uuid) for i in range(count)]
    except Exception:
        return None


def _torch_free_memory(count: int) -> list[tuple[int, int]]:
    """(free, total) bytes per logical device via ``cudaMemGetInfo`` (creates a context on each)."""
    return [tuple(int(x) for x in torch.cuda.mem_get_info(i)) for i in range(count)]  # type: ignore[misc]


# --------------------------------------------------------------------------------------------
# pure logic
# --------------------------------------------------------------------------------------------


def _norm_uuid(text: str) -> str:
    text = text.strip().lower()
    return text[4:] if text.startswith("gpu-") else text


def logical_gpus(
    gpus: Sequence[dict],
    cuda_visible_devices: str | None,
    torch_uuids: Sequence[str] | None = None,
) -> list[dict] | None:
    """NVML GPU records in torch's logical order (item ``i`` is ``cuda:i``), or None if unsure.

    ``gpus`` are NVML records (``index`` = physical NVML index, ``uuid`` = "GPU-..."). When
    ``torch_uuids`` (torch's UUID per logical device) is given, devices are matched by UUID, which
    is exact whatever the ordering. Otherwise ``cuda_visible_devices`` is read as CUDA does: a
    comma-separated list of physical indices or (unique prefixes of) UUIDs, cut at the first
    invalid entry; unset means every GPU in NVML order. MIG entries cannot be mapped (None).
    """
    if torch_uuids is not None:
        by_uuid = {_norm_uuid(str(g.get("uuid") or "")): g for g in gpus}
        ordered = [by_uuid.get(_norm_uuid(u)) for u in torch_uuids]
        if all(g is not None for g in ordered):
            return ordered  # type: ignore[return-value]
        # fall through to the environment variable
    if cuda_visible_devices is None:
        return sorted(gpus, key=lambda g: g["index"])
    result: list[dict] = []
    for entry in (e.strip() for e in cuda_visible_devices.split(",")):
        if not entry:
            break
        if entry.upper().startswith("MIG-"):
            return None  # MIG instances have their own UUIDs and memory: not in this list
        if entry.lstrip("-").isdigit():
            n = int(entry)
            match = next((g for g in gpus if g["index"] == n), None) if n >= 0 else None
        else:
            key = _norm_uuid(entry)
            found = [g for g in gpus if _norm_uuid(str(g.get("uuid") or "")).startswith(key)]
            match = found[0] if len(found) == 1 else None
        if match is None or match in result:
            break  # CUDA ignores this entry and everything after it
        result.append(match)
    return result


def pick_gpu(free_bytes: Sequence[int | None], min_free_bytes: int | None = None) -> int | None:
    """Index of the device with the most free memory (ties: lowest index); None if below the minimum."""
    known = [(f, -i) for i, f in enumerate(free_bytes) if f is not None]
    if not known:
        return 0 if free_bytes else None  # nothing measurable: the first device, unchecked
    best_free, neg_index = max(known)
    if min_free_bytes is not None and best_free < min_free_bytes:
        return None
    return -neg_index


def parse_device_spec(spec: Any) -> tuple[str, int | None]:
    """``(kind, index)`` from a device spec, kind in auto/cpu/cuda/mps/other. Raises UsageError."""
    if spec is None:
        return "auto", None
    if isinstance(spec, torch.device):
        if spec.type in ("cpu", "cuda", "mps"):
            return spec.type, spec.index if spec.type != "cpu" else None
        return spec.type, spec.index
    if isinstance(spec, int) and not isinstance(spec, bool):
        spec = f"cuda:{spec}"
    if not isinstance(spec, str):
        raise UsageError(f"device must be a string such as {_FORMS} or a torch.device, got {type(spec).__name__}")
    text = spec.strip().lower()
    if text == "auto":
        return "auto", None
    match = _SPEC.match(text)
    if not match:
        raise UsageError(f"unknown device {spec!r}: use {_FORMS} ({_valid_here()})")
    kind, index = match.group(1), match.group(2)
    if kind == "cpu":
        if index not in (None, "0"):
            raise UsageError(f"unknown device {spec!r}: the CPU is just 'cpu'; use {_FORMS} ({_valid_here()})")
        return "cpu", None
    if kind == "mps" and index not in (None, "0"):
        raise UsageError(f"unknown device {spec!r}: there is one MPS device, 'mps'; use {_FORMS} ({_valid_here()})")
    return kind, int(index) if index is not None else None


def _valid_here() -> str:
    valid = ["auto", "cpu"]
    count = _cuda_count()
    if count == 1:
        valid += ["cuda", "cuda:0"]
    elif count > 1:
        valid += ["cuda", f"cuda:0..cuda:{count - 1}"]
    if _mps_available():
        valid.append("mps")
    return "valid on this machine: " + ", ".join(valid)


def _why_no_cuda() -> str:
    if torch.version.cuda is None:
        return f"this torch ({torch.__version__}) is built without CUDA"
    return "torch has CUDA support but finds no usable GPU (driver, CUDA_VISIBLE_DEVICES?)"


def _gb(n: int | None) -> str:
    return "?" if n is None else f"{n / GiB:.1f} GiB"


def _gpu_memory(count: int) -> list[tuple[int | None, int | None]]:
    """(free, total) bytes per logical CUDA device: NVML when it maps cleanly, else torch."""
    nvml = _nvml_gpus()
    if nvml:
        ordered = logical_gpus(nvml, os.environ.get("CUDA_VISIBLE_DEVICES"), _torch_uuids(count))
        if ordered is not None and len(ordered) == count:
            return [(g.get("memory_free"), g.get("memory_total")) for g in ordered]
    try:
        return _torch_free_memory(count)  # type: ignore[return-value]
    except Exception:
        return [(None, None)] * count


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def select_device(spec: str | torch.device | None = "auto", min_free_gb: float | None = None) -> torch.device:
    """A concrete ``torch.device`` for ``spec``: "auto", "cpu", "cuda", "cuda:N", "mps" or a torch.device.

    * "auto": CUDA if available, else MPS, else CPU.
    * "auto" and "cuda" with several GPUs: the GPU with the most free memory (NVML, respecting
      ``CUDA_VISIBLE_DEVICES``; ``torch.cuda.mem_get_info`` without NVML).
    * ``min_free_gb``: raise UsageError if the chosen device (for "auto"/"cuda": every GPU) has
      less free memory; for the CPU and MPS, system available memory is checked.

    Bad strings, or devices this machine lacks, raise one UsageError naming what is valid here.
    """
    if min_free_gb is not None:
        if isinstance(min_free_gb, bool) or not isinstance(min_free_gb, (int, float)) or min_free_gb < 0:
            raise UsageError(f"min_free_gb must be a number >= 0 (GiB), got {min_free_gb!r}")
    need = None if min_free_gb is None else int(min_free_gb * GiB)
    kind, index = parse_device_spec(spec)
    if kind not in ("auto", "cpu", "cuda", "mps"):
        return torch.device(kind, index) if index is not None else torch.device(kind)
    count = _cuda_count()
    if kind == "auto":
        kind = "cuda" if count else ("mps" if _mps_available() else "cpu")

    if kind == "cuda":
        if count == 0:
            raise UsageError(f"device {spec!r} asks for CUDA but {_why_no_cuda()} ({_valid_here()})")
        if index is not None:
            if index >= count:
                visible = os.environ.get("CUDA_VISIBLE_DEVICES")
                env = f", CUDA_VISIBLE_DEVICES={visible!r}" if visible is not None else ""
                names = "cuda:0" if count == 1 else f"cuda:0..cuda:{count - 1}"
                raise UsageError(f"device 'cuda:{index}' does not exist: {count} CUDA device(s) visible ({names}{env})")
            if need is not None:
                free, total = _gpu_memory(count)[index]
                if free is not None and free < need:
                    raise UsageError(
                        f"cuda:{index} has {_gb(free)} free of {_gb(total)}, less than min_free_gb={min_free_gb}; "
                        "free memory on it or pick another device"
                    )
            return torch.device("cuda", index)
        if count == 1 and need is None:
            return torch.device("cuda", 0)
        memory = _gpu_memory(count)
        chosen = pick_gpu([free for free, _ in memory], need)
        if chosen is None:
            listing = ", ".join(f"cuda:{i} {_gb(f)} free of {_gb(t)}" for i, (f, t) in enumerate(memory))
            raise UsageError(
                f"no CUDA device has {min_free_gb} GiB free ({listing}); free GPU memory, ask for less, or use 'cpu'"
            )
        return torch.device("cuda", chosen)

    if kind == "mps" and not _mps_available():
        raise UsageError(
            f"device {spec!r}: MPS is not available here (it needs Apple silicon, macOS 12.3+ and an MPS-enabled torch; "
            f"{_valid_here()})"
        )
    if need is not None:
        available, total = system_memory()
        if available is not None and available < need:
            raise UsageError(
                f"{kind} has {_gb(available)} of system memory available (of {_gb(total)}), less than min_free_gb={min_free_gb}"
            )
    return torch.device(kind)


def to_device(obj: Any, device: str | torch.device, non_blocking: bool = True) -> Any:
    """A copy of ``obj`` with every tensor moved to ``device``; the input is not changed.

    Recurses through dicts (keeping the type: OrderedDict, defaultdict ...), lists, tuples,
    namedtuples and dataclasses; other objects (strings, numbers, modules ...) are returned
    as they are. The same tensor appearing twice is moved once. ``non_blocking`` is passed to
    ``Tensor.to`` for non-CPU targets (it overlaps the copy only from pinned CPU memory to CUDA);
    copies *to* the CPU are always blocking, because a non-blocking device-to-host copy can be
    read before it has finished.
    """
    try:
        target = torch.device(device) if not isinstance(device, torch.device) else device
    except (RuntimeError, TypeError) as exc:
        raise UsageError(f"to_device: unknown device {device!r}; use e.g. 'cpu', 'cuda', 'cuda:0' or select_device('auto')") from exc
    nb = non_blocking and target.type != "cpu"
    memo: dict[int, Any] = {}

    def move(x: Any) -> Any:
        if isinstance(x, torch.Tensor):
            key = id(x)
            if key not in memo:
                memo[key] = x.to(target, non_blocking=nb)
            return memo[key]
        if isinstance(x, (str, bytes, int, float, bool, type(None), torch.nn.Module)):
            return x
        if isinstance(x, dict):
            new = copy.copy(x)  # keeps the class, default_factory, order and attributes
            for k, v in x.items():
                new[k] = move(v)
            return new
        if isinstance(x, tuple):
            items = [move(v) for v in x]
            if hasattr(x, "_fields"):  # namedtuple
                return type(x)(*items)
            if type(x) is tuple:
                return tuple(items)
            try:  # tuple subclasses such as torch.return_types
                return type(x)(items)
            except TypeError:
                return tuple(items)
        if isinstance(x, list):
            items = [move(v) for v in x]
            if type(x) is list:
                return items
            try:
                return type(x)(items)
            except TypeError:
                return items
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            new = copy.copy(x)
            for f in dataclasses.fields(x):
                if hasattr(x, f.name):
                    object.__setattr__(new, f.name, move(getattr(x, f.name)))  # works for frozen ones too
            return new
        return x

    return move(obj)


def set_threads(n: int, interop: int | None = None) -> tuple[int, int]:
    """Set torch's intra-op threads to ``n`` (and inter-op threads to ``interop``); return both now in use.

    The inter-op count can be set only once per process and before any inter-op parallel work
    starts; a later attempt raises UsageError saying so (set it at the top of the script or with
    ``torch.set_num_interop_threads`` first thing). Asking for the count already in use is fine.
    """
    for name, value in (("n", n), ("interop", interop)):
        if name == "interop" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"set_threads: {name} must be an integer >= 1, got {value!r}")
    cores = os.cpu_count() or 1
    if n > cores:
        warnings.warn(f"set_threads({n}) is more than the {cores} CPU cores here; threads will compete", stacklevel=2)
    torch.set_num_threads(n)
    if interop is not None and interop != torch.get_num_interop_threads():
        try:
            torch.set_num_interop_threads(interop)
        except RuntimeError as exc:
            raise UsageError(
                f"set_threads: cannot change inter-op threads to {interop} (now {torch.get_num_interop_threads()}): "
                "torch allows it only once per process and before any parallel work has started; "
                "set it first thing in the program"
            ) from exc
    return torch.get_num_threads(), torch.get_num_interop_threads()

"""Memory: measure what a block of code allocates, free what can be freed, print a report.

* :func:`track_memory` is a context manager and a decorator. On CUDA it records allocated and
  reserved memory before/after and the peak allocation inside the block; on the CPU the
  process's resident set size (RSS) before/after and how much the process's RSS high-water mark
  grew. Results are a :class:`MemoryStats` object, printable.
* :func:`free_memory` runs the garbage collector, returns cached CUDA blocks to the driver and
  freed heap pages to the OS, and says how many bytes that gave back.
* :func:`memory_report` is a short text: CUDA allocated/reserved/peak/free, or CPU RSS/peak/
  system available.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from torchwise.core.errors import UsageError

__all__ = ["track_memory", "MemoryTracker", "MemoryStats", "free_memory", "memory_report", "format_bytes"]

F = TypeVar("F", bound=Callable[..., Any])
_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def _unit(n: float) -> int:
    i, n = 0, abs(n)
    while n >= 1024 and i < len(_UNITS) - 1:
        n /= 1024
        i += 1
    return i


def format_bytes(n: int | float | None, signed: bool = False, unit: int | None = None) -> str:
    """``12.3 MiB`` (``+12.3 MiB`` with ``signed``); ``?`` for None."""
    if n is None:
        return "?"
    u = _unit(n) if unit is None else unit
    value = n / 1024**u
    sign = "+" if signed and n >= 0 else ""
    return f"{sign}{value:.0f} B" if u == 0 else f"{sign}{value:.1f} {_UNITS[u]}"


def _pair(a: int | None, b: int | None) -> str:
    """``100.0 → 112.0 MiB`` in one unit."""
    if a is None or b is None:
        return f"{format_bytes(a)} → {format_bytes(b)}"
    u = _unit(max(abs(a), abs(b)))
    return f"{format_bytes(a, unit=u).rsplit(' ', 1)[0]} → {format_bytes(b, unit=u)}"


# --------------------------------------------------------------------------------------------
# probes
# --------------------------------------------------------------------------------------------


def _page_size() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 4096


def process_rss() -> int | None:
    """Resident set size of this process in bytes (None where it cannot be read)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as fh:
            return int(fh.read().split()[1]) * _page_size()
    except (OSError, ValueError, IndexError):
        pass
    try:  # pragma: no cover - non-Linux
        import psutil  # type: ignore[import-not-found]

        return int(psutil.Process().memory_info().rss)
    except Exception:  # pragma: no cover
        return None


def process_peak_rss() -> int | None:
    """The process's RSS high-water mark in bytes (VmHWM, or ``ru_maxrss``)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:  # pragma: no cover - non-Linux
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)
    except Exception:  # pragma: no cover
        return None


def system_memory() -> tuple[int | None, int | None]:
    """(available, total) system memory in bytes, None where unknown."""
    available = total = None
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                key, _, rest = line.partition(":")
                if key == "MemAvailable":
                    available = int(rest.split()[0]) * 1024
                elif key == "MemTotal":
                    total = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            pass
    return available, total


def _cuda_counters(device: torch.device) -> tuple[int, int, int]:
    """(allocated, reserved, peak allocated) bytes on a CUDA device."""
    return (
        torch.cuda.memory_allocated(device),
        torch.cuda.memory_reserved(device),
        torch.cuda.max_memory_allocated(device),
    )


def _cuda_reset_peak(device: torch.device) -> None:
    torch.cuda.reset_peak_memory_stats(device)


def _mps_counters() -> tuple[int, int]:
    return int(torch.mps.current_allocated_memory()), int(torch.mps.driver_allocated_memory())


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def _resolve(device: str | torch.device | None) -> torch.device:
    if device is None:
        if _cuda_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")
    try:
        dev = torch.device(device) if not isinstance(device, torch.device) else device
    except (RuntimeError, TypeError) as exc:
        raise UsageError(f"unknown device {device!r}: use 'cpu', 'cuda', 'cuda:N', 'mps' or a torch.device") from exc
    if dev.type == "cuda":
        if not _cuda_available():
            raise UsageError(f"device {device!r} asks for CUDA memory figures but CUDA is not available here; use 'cpu'")
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
    return dev


# --------------------------------------------------------------------------------------------
# track_memory
# --------------------------------------------------------------------------------------------


@dataclass
class MemoryStats:
    """Memory used by one tracked block.

    ``before``/``after`` are CUDA (or MPS) allocated bytes on a GPU, RSS on the CPU.
    ``peak`` is the highest allocation inside the block on CUDA, the process's RSS high-water
    mark at the end on the CPU; ``peak_growth`` is how far that peak rose above ``before`` (CUDA)
    or above the previous high-water mark (CPU: process-wide, 0 if the block stayed below it).
    """

    label: str
    device: str
    before: int | None
    after: int | None
    peak: int | None = None
    peak_growth: int | None = None
    reserved_before: int | None = None
    reserved_after: int | None = None

    @property
    def kind(self) -> str:
        return "rss" if self.device == "cpu" else "allocated"

    @property
    def delta_bytes(self) -> int | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def delta_mib(self) -> float | None:
        d = self.delta_bytes
        return None if d is None else d / 2**20

    def __str__(self) -> str:
        head = f"{self.label}: " if self.label else ""
        parts = [f"{self.kind} {_pair(self.before, self.after)}"]
        if self.device == "cpu":
            if self.peak_growth is not None:
                parts.append(f"peak rss {format_bytes(self.peak_growth, signed=True)}")
        else:
            if self.peak is not None:
                growth = f" ({format_bytes(self.peak_growth, signed=True)})" if self.peak_growth is not None else ""
                parts.append(f"peak {format_bytes(self.peak)}{growth}")
            if self.reserved_before is not None:
                parts.append(f"reserved {_pair(self.reserved_before, self.reserved_after)}")
            parts.append(self.device)
        return f"{head}{format_bytes(self.delta_bytes, signed=True)} ({', '.join(parts)})"


class MemoryTracker:
    """What :func:`track_memory` returns: a context manager and a decorator.

    ``stats`` holds the :class:`MemoryStats` of the latest finished block or call, ``calls`` how
    many have finished. Nested and recursive use of one tracker is fine.
    """

    def __init__(self, label: str = "", device: str | torch.device | None = None, verbose: bool = False) -> None:
        self.label = label
        self.device = device
        self.verbose = verbose
        self.stats: MemoryStats | None = None
        self.calls = 0
        self._stack: list[tuple[torch.device, tuple]] = []

    # ---- context manager
    def __enter__(self) -> MemoryTracker:
        dev = _resolve(self.device)
        if dev.type == "cuda":
            _cuda_reset_peak(dev)
            start: tuple = _cuda_counters(dev)
        elif dev.type == "mps":
            start = _mps_counters()
        else:
            start = (process_rss(), process_peak_rss())
        self._stack.append((dev, start))
        return self

    def __exit__(self, *exc: object) -> None:
        dev, start = self._stack.pop()
        if dev.type == "cuda":
            allocated, reserved, peak = _cuda_counters(dev)
            stats = MemoryStats(
                self.label, str(dev), start[0], allocated, peak=peak, peak_growth=peak - start[0],
                reserved_before=start[1], reserved_after=reserved,
            )
        elif dev.type == "mps":
            allocated, driver = _mps_counters()
            stats = MemoryStats(self.label, "mps", start[0], allocated, reserved_before=start[1], reserved_after=driver)
        else:
            rss, hwm = process_rss(), process_peak_rss()
            growth = hwm - start[1] if hwm is not None and start[1] is not None else None
            stats = MemoryStats(self.label, "cpu", start[0], rss, peak=hwm, peak_growth=growth)
        self.stats = stats
        self.calls += 1
        if self.verbose:
            print(stats, file=sys.stderr)

    # ---- shortcuts to the latest stats
    @property
    def delta_bytes(self) -> int | None:
        return self.stats.delta_bytes if self.stats else None

    def __str__(self) -> str:
        return str(self.stats) if self.stats else f"{self.label or 'track_memory'}: (not run yet)"

    # ---- decorator
    def __call__(self, fn: F) -> F:
        if not self.label:
            self.label = getattr(fn, "__qualname__", getattr(fn, "__name__", "function"))

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        wrapper.memory = self  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]


def track_memory(
    label: str | Callable[..., Any] = "",
    device: str | torch.device | None = None,
    verbose: bool = False,
) -> Any:
    """Measure the memory a block or function uses; see :class:`MemoryStats` for the fields.

    >>> with track_memory("forward") as m:
    ...     out = model(x)
    >>> print(m.stats)          # forward: +12.3 MiB (rss 100.0 → 112.3 MiB, peak rss +12.3 MiB)

    >>> @track_memory("step", verbose=True)   # or bare @track_memory; stats on step.memory.stats
    ... def step(batch): ...

    ``device`` defaults to the current CUDA device when CUDA is available, else the CPU. On CUDA
    the peak counter is reset at entry (so nested trackers on one GPU see the inner reset). On the
    CPU, RSS is process-wide: other threads' allocations count too.
    """
    if callable(label):  # used as a bare decorator: @track_memory
        return MemoryTracker("", device, verbose)(label)
    return MemoryTracker(label, device, verbose)


# --------------------------------------------------------------------------------------------
# free_memory / memory_report
# --------------------------------------------------------------------------------------------


def _malloc_trim() -> None:
    """Ask glibc to give freed heap pages back to the OS (no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _cuda_reserved_total() -> int:
    if not (torch.cuda.is_available() and torch.cuda.is_initialized()):
        return 0
    return sum(torch.cuda.memory_reserved(i) for i in range(torch.cuda.device_count()))


def free_memory() -> int:
    """Collect garbage, empty the CUDA (and MPS) caching allocator, trim the C heap.

    Returns the bytes given back where measurable: the drop in CUDA reserved memory plus the
    drop in this process's RSS (0 if nothing was freed). Tensors still referenced stay.
    """
    rss_before = process_rss()
    cuda_before = _cuda_reserved_total()
    gc.collect()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    backend = getattr(torch.backends, "mps", None)
    if backend is not None and backend.is_available():
        try:
            torch.mps.empty_cache()
        except Exception:  # pragma: no cover
            pass
    _malloc_trim()
    rss_after = process_rss()
    freed = max(0, cuda_before - _cuda_reserved_total())
    if rss_before is not None and rss_after is not None:
        freed += max(0, rss_before - rss_after)
    return freed


def _cpu_line() -> str:
    available, total = system_memory()
    return (
        f"cpu: rss {format_bytes(process_rss())}, peak rss {format_bytes(process_peak_rss())}, "
        f"system available {format_bytes(available)} of {format_bytes(total)}"
    )


def _cuda_line(dev: torch.device) -> str:
    allocated, reserved, peak = _cuda_counters(dev)
    try:
        free, total = torch.cuda.mem_get_info(dev)
        device_part = f", device free {format_bytes(free)} of {format_bytes(total)}"
    except Exception:
        device_part = ""
    name = torch.cuda.get_device_name(dev)
    return (
        f"{dev} ({name}): allocated {format_bytes(allocated)}, reserved {format_bytes(reserved)}, "
        f"peak {format_bytes(peak)}{device_part}"
    )


def memory_report(device: str | torch.device | None = None) -> str:
    """A short memory report.

    For a CUDA device: allocated, reserved and peak memory of this process, and the device's free
    and total memory. For the CPU: RSS, peak RSS and system available memory. With
    ``device=None``: the CPU line, then one line per CUDA device when CUDA is available.
    """
    if device is None:
        lines = [_cpu_line()]
        if torch.cuda.is_available():
            lines += [_cuda_line(torch.device("cuda", i)) for i in range(torch.cuda.device_count())]
        return "\n".join(lines)
    dev = _resolve(device)
    if dev.type == "cuda":
        return _cuda_line(dev)
    if dev.type == "mps":
        allocated, driver = _mps_counters()
        return f"mps: allocated {format_bytes(allocated)}, driver {format_bytes(driver)}"
    return _cpu_line()

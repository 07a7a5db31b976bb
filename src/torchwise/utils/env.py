"""``torchwise env`` and :func:`collect_env`: what this machine and this PyTorch build are.

Versions (Python, torch, CUDA runtime, cuDNN, NCCL), CPU and thread settings, determinism and
TF32 flags, the environment variables that change how training behaves, and every NVIDIA GPU as
NVML sees it (the information of ``nvidia-smi`` and ``nvidia-smi -L``). Without NVML or without a
GPU, the report says so in one line and still prints everything else.

:func:`nvml_gpus` is the NVML part on its own; ``select_device`` reuses it for free memory per GPU.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from types import ModuleType
from typing import Any

# Environment variables always shown (``None`` when unset) ...
ENV_VARS: tuple[str, ...] = (
    "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTORCH_CUDA_ALLOC_CONF",
)
# ... and every set variable starting with one of these prefixes.
ENV_PREFIXES: tuple[str, ...] = ("NCCL_", "TORCH_")


# --------------------------------------------------------------------------------------------
# NVML
# --------------------------------------------------------------------------------------------


def _import_pynvml() -> ModuleType | None:
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    return pynvml


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _visible_positions(gpus: list[dict]) -> None:
    """Set ``visible_index``: the GPU's position in ``CUDA_VISIBLE_DEVICES`` (None if hidden).

    Entries may be NVML indices or (prefixes of) UUIDs, as CUDA accepts. With the variable unset
    every GPU is visible at its NVML index. CUDA numbers devices fastest-first unless
    ``CUDA_DEVICE_ORDER=PCI_BUS_ID``; NVML numbers them by PCI bus, so on mixed machines the two
    orders can differ.
    """
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        for gpu in gpus:
            gpu["visible_index"] = gpu["index"]
        return
    for gpu in gpus:
        gpu["visible_index"] = None
    position = 0
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            break
        match = None
        if entry.lstrip("-").isdigit():
            n = int(entry)
            if n < 0:
                break  # CUDA stops at the first invalid entry
            match = next((g for g in gpus if g["index"] == n), None)
        else:
            key = entry if entry.startswith(("GPU-", "MIG-")) else f"GPU-{entry}"
            found = [g for g in gpus if str(g.get("uuid") or "").startswith(key)]
            match = found[0] if len(found) == 1 else None
        if match is None:
            break
        if match["visible_index"] is None:
            match["visible_index"] = position
            position += 1


def _query(nvml: ModuleType, fn_name: str, *args: Any) -> Any:
    """Call ``nvml.fn_name(*args)``; None when the GPU or driver does not support the query."""
    fn = getattr(nvml, fn_name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except nvml.NVMLError:
        return None


def _process_name(nvml: ModuleType, pid: int) -> str | None:
    name = _query(nvml, "nvmlSystemGetProcessName", pid)
    if name:
        return os.path.basename(_text(name))
    try:  # same PID namespace only
        with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _gpu_processes(nvml: ModuleType, handle: Any) -> list[dict] | None:
    procs = _query(nvml, "nvmlDeviceGetComputeRunningProcesses", handle)
    if procs is None:
        return None
    out = []
    for p in procs:
        used = getattr(p, "usedGpuMemory", None)
        # NVML reports "not available" (e.g. inside containers) as None or a huge sentinel.
        if used is not None and (used < 0 or used >= 2**63):
            used = None
        out.append({"pid": int(p.pid), "name": _process_name(nvml, int(p.pid)), "used_memory": used})
    return out


def _one_gpu(nvml: ModuleType, index: int, processes: bool) -> dict:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    gpu: dict[str, Any] = {"index": index}
    name = _query(nvml, "nvmlDeviceGetName", handle)
    gpu["name"] = _text(name) if name is not None else None
    uuid = _query(nvml, "nvmlDeviceGetUUID", handle)
    gpu["uuid"] = _text(uuid) if uuid is not None else None
    pci = _query(nvml, "nvmlDeviceGetPciInfo", handle)
    gpu["pci_bus_id"] = (_text(getattr(pci, "busId", "")) or None) if pci is not None else None
    mem = _query(nvml, "nvmlDeviceGetMemoryInfo", handle)
    gpu["memory_used"] = int(mem.used) if mem is not None else None
    gpu["memory_total"] = int(mem.total) if mem is not None else None
    gpu["memory_free"] = int(mem.free) if mem is not None else None
    util = _query(nvml, "nvmlDeviceGetUtilizationRates", handle)
    gpu["utilization_gpu"] = int(util.gpu) if util is not None else None
    gpu["utilization_memory"] = int(util.memory) if util is not None else None
    temp = _query(nvml, "nvmlDeviceGetTemperature", handle, getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
    gpu["temperature_c"] = int(temp) if temp is not None else None
    power = _query(nvml, "nvmlDeviceGetPowerUsage", handle)  # milliwatts
    gpu["power_draw_w"] = power / 1000.0 if power is not None else None
    limit = _query(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    if limit is None:
        limit = _query(nvml, "nvmlDeviceGetPowerManagementLimit", handle)
    gpu["power_limit_w"] = limit / 1000.0 if limit is not None else None
    persistence = _query(nvml, "nvmlDeviceGetPersistenceMode", handle)
    gpu["persistence_mode"] = bool(persistence) if persistence is not None else None
    gpu["processes"] = _gpu_processes(nvml, handle) if processes else None
    return gpu


def _nvml_report(nvml: ModuleType | None = None, processes: bool = True) -> tuple[list[dict], str | None, dict]:
    """(gpus, note, system) where system holds the driver and CUDA-driver versions."""
    system: dict[str, Any] = {"driver_version": None, "cuda_driver_version": None}
    if nvml is None:
        nvml = _import_pynvml()
        if nvml is None:
            return [], "NVML library not found: the nvidia-ml-py package (pynvml) is not installed", system
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        if isinstance(exc, getattr(nvml, "NVMLError_LibraryNotFound", ())):
            return [], "NVML library not found: no libnvidia-ml (no NVIDIA driver installed on this machine)", system
        if isinstance(exc, getattr(nvml, "NVMLError_DriverNotLoaded", ())):
            return [], "no NVIDIA GPU/driver: NVML is present but the NVIDIA driver is not loaded", system
        return [], f"NVML could not start: {_text(exc)}", system
    try:
        version = _query(nvml, "nvmlSystemGetDriverVersion")
        system["driver_version"] = _text(version) if version is not None else None
        cuda = _query(nvml, "nvmlSystemGetCudaDriverVersion")
        if cuda:
            system["cuda_driver_version"] = f"{cuda // 1000}.{(cuda % 1000) // 10}"
        try:
            count = int(nvml.nvmlDeviceGetCount())
        except nvml.NVMLError as exc:
            return [], f"no NVIDIA GPU/driver: NVML could not count devices ({_text(exc)})", system
        if count == 0:
            return [], "no NVIDIA GPU: the driver is loaded but reports no devices", system
        gpus = []
        for i in range(count):
            try:
                gpus.append(_one_gpu(nvml, i, processes))
            except nvml.NVMLError as exc:  # no handle for this GPU (lost, no permission...)
                gpus.append({"index": i, "name": None, "uuid": None, "memory_used": None,
                             "memory_total": None, "memory_free": None, "error": _text(exc)})
        _visible_positions(gpus)
        return gpus, None, system
    finally:
        try:
            nvml.nvmlShutdown()
        except nvml.NVMLError:
            pass


def nvml_gpus(nvml: ModuleType | None = None, processes: bool = True) -> tuple[list[dict], str | None]:
    """Every NVIDIA GPU as NVML sees it, and a one-line note when there are none.

    Returns ``(gpus, note)``. ``note`` is None when NVML answered and found GPUs; otherwise it
    says why the list is empty ("NVML library not found ..." vs "no NVIDIA GPU/driver ...").
    Each GPU dict has ``index`` (NVML order), ``visible_index`` (position under
    ``CUDA_VISIBLE_DEVICES``, None if hidden), ``name``, ``uuid``, ``pci_bus_id``,
    ``memory_used``/``memory_total``/``memory_free`` (bytes), ``utilization_gpu``/
    ``utilization_memory`` (%), ``temperature_c``, ``power_draw_w``, ``power_limit_w``,
    ``persistence_mode`` and ``processes`` (list of ``{pid, name, used_memory}``). A value the
    GPU does not support is None. ``nvml`` replaces the ``pynvml`` module (for tests).

    >>> gpus, note = nvml_gpus()
    >>> best = max(gpus, key=lambda g: g["memory_free"] or 0) if gpus else None
    """
    gpus, note, _ = _nvml_report(nvml, processes)
    return gpus, note


# --------------------------------------------------------------------------------------------
# Everything else
# --------------------------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Model", "Processor", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        import subprocess

        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5)
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


def _safe(fn: Any, default: Any = None) -> Any:
    try:
        return fn()
    except Exception:  # a CPU-only or older build lacks the attribute: report "unknown"
        return default


def _torchwise_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchwise")
    except PackageNotFoundError:
        import torchwise

        return getattr(torchwise, "__version__", "0+unknown")


def _env_vars() -> dict[str, str | None]:
    out: dict[str, str | None] = {name: os.environ.get(name) for name in ENV_VARS}
    for name in sorted(os.environ):
        if name.startswith(ENV_PREFIXES):
            out[name] = os.environ[name]
    return out


def _no_torch_section() -> tuple[dict, dict, dict, dict]:
    """The torch sections when torch is not installed: every value None, the version says so."""
    info = dict.fromkeys(("cuda_runtime", "hip", "cudnn", "nccl", "cuda_available", "cuda_device_count",
                          "mps_built", "mps_available", "distributed_available"))
    info["version"] = None
    return info, {"intra_op": None, "inter_op": None}, {}, {}


def _torch_section() -> tuple[dict, dict, dict, dict]:
    try:
        import torch
    except ImportError:  # the base install (lint, rules): report what is there
        return _no_torch_section()

    def nccl() -> str | None:
        if not torch.distributed.is_available() or not torch.distributed.is_nccl_available():
            return None
        v = torch.cuda.nccl.version()
        return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)

    def cudnn() -> str | None:
        v = torch.backends.cudnn.version()
        if v is None:
            return None
        major, minor, patch = v // 10000, (v % 10000) // 100, v % 100  # cuDNN >= 9 encoding
        if v < 10000:  # cuDNN 8: major*1000 + minor*100 + patch
            major, minor, patch = v // 1000, (v % 1000) // 100, v % 100
        return f"{major}.{minor}.{patch}"

    cuda_ok = _safe(torch.cuda.is_available, False)
    info = {
        "version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": _safe(cudnn),
        "nccl": _safe(nccl),
        "cuda_available": bool(cuda_ok),
        "cuda_device_count": _safe(torch.cuda.device_count, 0) if cuda_ok else 0,
        "mps_built": bool(_safe(torch.backends.mps.is_built, False)),
        "mps_available": bool(_safe(torch.backends.mps.is_available, False)),
        "distributed_available": bool(_safe(torch.distributed.is_available, False)),
    }
    threads = {
        "intra_op": torch.get_num_threads(),
        "inter_op": torch.get_num_interop_threads(),
    }
    determinism = {
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "deterministic_warn_only": _safe(torch.is_deterministic_algorithms_warn_only_enabled, False),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
    }
    tf32 = {
        "cuda_matmul_allow_tf32": _safe(lambda: bool(torch.backends.cuda.matmul.allow_tf32)),
        "cudnn_allow_tf32": _safe(lambda: bool(torch.backends.cudnn.allow_tf32)),
        "float32_matmul_precision": _safe(torch.get_float32_matmul_precision),
    }
    return info, threads, determinism, tf32


def collect_env(gpus: bool = True) -> dict:
    """Everything ``torchwise env`` prints, as a JSON-serialisable dict.

    Sections: ``torchwise``, ``python``, ``platform``, ``cpu``, ``torch``, ``determinism``,
    ``tf32``, ``env_vars``, ``nvml`` (driver versions and a ``note`` when no GPU is listed) and
    ``gpus`` (see :func:`nvml_gpus`). ``gpus=False`` skips NVML.

    >>> env = collect_env()
    >>> env["torch"]["version"], env["cpu"]["logical_cores"]  # doctest: +SKIP
    """
    torch_info, threads, determinism, tf32 = _torch_section()
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    if gpus:
        gpu_list, note, system = _nvml_report()
    else:
        gpu_list, note, system = [], "NVML not queried", {"driver_version": None, "cuda_driver_version": None}
    return {
        "torchwise": {"version": _torchwise_version()},
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "platform": {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "platform": platform.platform(),
        },
        "cpu": {
            "model": _cpu_model(),
            "logical_cores": os.cpu_count(),
            "usable_cores": usable,
            "torch_intra_op_threads": threads["intra_op"],
            "torch_inter_op_threads": threads["inter_op"],
        },
        "torch": torch_info,
        "determinism": determinism,
        "tf32": tf32,
        "env_vars": _env_vars(),
        "nvml": {**system, "note": note},
        "gpus": gpu_list,
    }


# --------------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------------

NA = "n/a"


def _fmt(value: Any) -> str:
    if value is None:
        return NA
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _mib(n: int | None) -> str:
    return NA if n is None else f"{n / 2**20:.0f} MiB"


def gpu_rows(gpus: list[dict]) -> list[list[str]]:
    """The GPU table as text cells (one row per GPU); unsupported values read ``n/a``."""
    rows = []
    for g in gpus:
        mem = NA
        if g.get("memory_total") is not None:
            mem = f"{_mib(g.get('memory_used'))} / {_mib(g['memory_total'])}"
        util = NA if g.get("utilization_gpu") is None else f"{g['utilization_gpu']}%"
        temp = NA if g.get("temperature_c") is None else f"{g['temperature_c']}°C"
        draw, limit = g.get("power_draw_w"), g.get("power_limit_w")
        power = NA if draw is None and limit is None else (
            f"{NA if draw is None else f'{draw:.0f}W'} / {NA if limit is None else f'{limit:.0f}W'}")
        rows.append([
            str(g["index"]),
            _fmt(g.get("name")) if "error" not in g else f"{_fmt(g.get('name'))} ({g['error']})",
            _fmt(g.get("uuid")),
            mem,
            util,
            temp,
            power,
            _fmt(g.get("persistence_mode")),
        ])
    return rows


GPU_HEADERS = ["#", "name", "UUID", "memory used / total", "util", "temp", "power draw / limit", "persistence"]


def process_rows(gpus: list[dict]) -> list[list[str]]:
    rows = []
    for g in gpus:
        for p in g.get("processes") or []:
            rows.append([str(g["index"]), str(p["pid"]), _fmt(p.get("name")), _mib(p.get("used_memory"))])
    return rows


def _torch_rows(env: dict) -> list[tuple[str, str]]:
    from torchwise.core.extras import install_line

    t = env["torch"]
    driver = [("NVIDIA driver", _fmt(env["nvml"]["driver_version"])),
              ("driver CUDA version", _fmt(env["nvml"]["cuda_driver_version"]))]
    if t["version"] is None:
        return [("torch", f"not installed: {install_line('torch')}"), *driver]
    return [
        ("torch", t["version"]),
        ("CUDA runtime", _fmt(t["cuda_runtime"]) if t["cuda_runtime"] else "none (CPU build)"),
        ("cuDNN", _fmt(t["cudnn"])),
        ("NCCL", _fmt(t["nccl"])),
        ("CUDA available", f"{_fmt(t['cuda_available'])} ({_fmt(t['cuda_device_count'])} device(s))"),
        ("MPS available", f"{_fmt(t['mps_available'])} (built: {_fmt(t['mps_built'])})"),
        *driver,
    ]


def _sections(env: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    c = env["cpu"]
    sections = [
        ("System", [
            ("torchwise", env["torchwise"]["version"]),
            ("Python", f"{env['python']['version']} ({env['python']['implementation']})"),
            ("executable", env["python"]["executable"]),
            ("platform", env["platform"]["platform"]),
            ("CPU", c["model"]),
            ("logical cores", f"{_fmt(c['logical_cores'])} (usable: {_fmt(c['usable_cores'])})"),
            ("torch threads", f"intra-op {_fmt(c['torch_intra_op_threads'])}, inter-op {_fmt(c['torch_inter_op_threads'])}"),
        ]),
        ("PyTorch", _torch_rows(env)),
        ("Determinism and TF32", [
            *[(k, _fmt(v)) for k, v in env["determinism"].items()],
            *[(k, _fmt(v)) for k, v in env["tf32"].items()],
        ]),
        ("Environment variables", [(k, "unset" if v is None else v) for k, v in env["env_vars"].items()]),
    ]
    return [(title, items) for title, items in sections if items]  # no torch: no determinism section


def render_text(env: dict) -> str:
    """The report as plain text (used when stdout is not a terminal)."""
    lines: list[str] = []
    for title, items in _sections(env):
        lines.append(f"== {title}")
        width = max(len(k) for k, _ in items)
        lines += [f"  {k.ljust(width)}  {v}" for k, v in items]
        lines.append("")
    lines.append("== GPUs (NVML)")
    if env["nvml"]["note"]:
        lines.append(f"  {env['nvml']['note']}")
    else:
        rows = [GPU_HEADERS, *gpu_rows(env["gpus"])]
        widths = [max(len(r[i]) for r in rows) for i in range(len(GPU_HEADERS))]
        lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
        procs = process_rows(env["gpus"])
        if procs:
            lines += ["", "== GPU processes"]
            head = ["gpu", "pid", "name", "memory"]
            rows = [head, *procs]
            widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
            lines += ["  " + "  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)


def print_rich(env: dict, console: Any = None) -> None:
    """The report as rich tables, one per section."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    for title, items in _sections(env):
        table = Table(title=title, show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column()
        for k, v in items:
            table.add_row(k, v)
        console.print(table)
    if env["nvml"]["note"]:
        console.print(f"[bold]GPUs (NVML)[/bold]: {env['nvml']['note']}")
        return
    table = Table(title="GPUs (NVML)", title_justify="left")
    for h in GPU_HEADERS:
        table.add_column(h)
    for row in gpu_rows(env["gpus"]):
        table.add_row(*row)
    console.print(table)
    procs = process_rows(env["gpus"])
    if procs:
        table = Table(title="GPU processes", title_justify="left")
        for h in ("gpu", "pid", "name", "memory"):
            table.add_column(h)
        for row in procs:
            table.add_row(*row)
        console.print(table)


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--no-gpus", action="store_true", help="skip the NVML query")


def run(args: argparse.Namespace) -> int:
    from torchwise.core.output import emit

    env = collect_env(gpus=not getattr(args, "no_gpus", False))
    emit(env, as_json=args.json, rich=print_rich, text=render_text)
    return 0

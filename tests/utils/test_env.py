"""torchwise env / collect_env / nvml_gpus.

The no-GPU path is exercised for real (this machine has no NVIDIA driver); a fake ``pynvml``
module object stands in for NVML only to test the GPU table and its JSON content.
"""

from __future__ import annotations

import json
import os
import sys
from types import ModuleType, SimpleNamespace

import pytest
import torch

from torchwise import env as envmod
from torchwise.utils.env import collect_env, gpu_rows, nvml_gpus, print_rich, render_text

GiB = 2**30


# ------------------------------------------------------------------------------------------
# a fake pynvml
# ------------------------------------------------------------------------------------------


def fake_nvml(gpus: list[dict], init_error: str | None = None, count_error: bool = False) -> ModuleType:
    """A module object with the pynvml functions env.py calls.

    Each GPU spec maps a query name to its value; a value of ``"unsupported"`` makes the call
    raise ``NVMLError_NotSupported``, like NVML does on GPUs lacking a sensor.
    """
    m = ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    class NVMLError_NotSupported(NVMLError):
        pass

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    class NVMLError_DriverNotLoaded(NVMLError):
        pass

    m.NVMLError = NVMLError
    m.NVMLError_NotSupported = NVMLError_NotSupported
    m.NVMLError_LibraryNotFound = NVMLError_LibraryNotFound
    m.NVMLError_DriverNotLoaded = NVMLError_DriverNotLoaded
    m.NVML_TEMPERATURE_GPU = 0
    m.calls = []

    def init():
        m.calls.append("init")
        if init_error == "library":
            raise NVMLError_LibraryNotFound("NVML Shared Library Not Found")
        if init_error == "driver":
            raise NVMLError_DriverNotLoaded("Driver Not Loaded")

    def shutdown():
        m.calls.append("shutdown")

    def count():
        if count_error:
            raise NVMLError("Unknown Error")
        return len(gpus)

    def answer(key):
        def fn(handle, *args):
            value = gpus[handle].get(key)
            if value == "unsupported":
                raise NVMLError_NotSupported("Not Supported")
            return value

        return fn

    m.nvmlInit = init
    m.nvmlShutdown = shutdown
    m.nvmlDeviceGetCount = count
    m.nvmlDeviceGetHandleByIndex = lambda i: i
    m.nvmlSystemGetDriverVersion = lambda: "550.54.15"
    m.nvmlSystemGetCudaDriverVersion = lambda: 12040
    m.nvmlSystemGetProcessName = lambda pid: {4242: b"/usr/bin/python3"}.get(pid) or (_ for _ in ()).throw(NVMLError_NotSupported("x"))
    for key in ("Name", "UUID", "PciInfo", "MemoryInfo", "UtilizationRates", "Temperature", "PowerUsage",
                "EnforcedPowerLimit", "PowerManagementLimit", "PersistenceMode", "ComputeRunningProcesses"):
        setattr(m, f"nvmlDeviceGet{key}", answer(key))
    return m


FULL = {
    "Name": "NVIDIA H100 80GB HBM3",
    "UUID": "GPU-1111aaaa-0000-0000-0000-000000000000",
    "PciInfo": SimpleNamespace(busId="00000000:1B:00.0"),
    "MemoryInfo": SimpleNamespace(total=80 * GiB, used=20 * GiB, free=60 * GiB),
    "UtilizationRates": SimpleNamespace(gpu=87, memory=40),
    "Temperature": 61,
    "PowerUsage": 312_500,  # mW
    "EnforcedPowerLimit": 700_000,
    "PersistenceMode": 1,
    "ComputeRunningProcesses": [
        SimpleNamespace(pid=4242, usedGpuMemory=19 * GiB),
        SimpleNamespace(pid=999_999_999, usedGpuMemory=None),  # name and memory not resolvable
    ],
}
SPARSE = {  # an older/consumer board: most sensors unsupported
    "Name": b"NVIDIA GeForce GTX 1080",  # old pynvml returned bytes
    "UUID": b"GPU-2222bbbb-0000-0000-0000-000000000000",
    "PciInfo": "unsupported",
    "MemoryInfo": SimpleNamespace(total=8 * GiB, used=1 * GiB, free=7 * GiB),
    "UtilizationRates": "unsupported",
    "Temperature": "unsupported",
    "PowerUsage": "unsupported",
    "EnforcedPowerLimit": "unsupported",
    "PowerManagementLimit": "unsupported",
    "PersistenceMode": "unsupported",
    "ComputeRunningProcesses": "unsupported",
}


# ------------------------------------------------------------------------------------------
# the real machine: no GPU / no NVML here
# ------------------------------------------------------------------------------------------


def test_collect_env_reports_this_process():
    env = collect_env()
    assert env["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert env["python"]["executable"] == sys.executable
    assert env["torch"]["version"] == torch.__version__
    assert env["torch"]["cuda_runtime"] == torch.version.cuda
    assert env["torch"]["mps_available"] == torch.backends.mps.is_available()
    assert env["cpu"]["logical_cores"] == os.cpu_count()
    assert env["cpu"]["torch_intra_op_threads"] == torch.get_num_threads()
    assert env["cpu"]["torch_inter_op_threads"] == torch.get_num_interop_threads()
    assert env["cpu"]["model"]
    assert env["tf32"]["float32_matmul_precision"] == torch.get_float32_matmul_precision()
    json.dumps(env)  # serialisable as is
    # GPUs and the note are exclusive: either NVML listed GPUs or it says why not
    assert (env["nvml"]["note"] is None) == bool(env["gpus"])


def test_collect_env_reads_flags_live():
    old = torch.backends.cudnn.benchmark
    try:
        torch.backends.cudnn.benchmark = True
        assert collect_env(gpus=False)["determinism"]["cudnn_benchmark"] is True
        torch.backends.cudnn.benchmark = False
        assert collect_env(gpus=False)["determinism"]["cudnn_benchmark"] is False
    finally:
        torch.backends.cudnn.benchmark = old
    old_prec = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("medium")
        assert collect_env(gpus=False)["tf32"]["float32_matmul_precision"] == "medium"
    finally:
        torch.set_float32_matmul_precision(old_prec)


def test_env_vars_listed_and_prefixed(monkeypatch):
    monkeypatch.setenv("PYTHONHASHSEED", "7")
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setenv("NCCL_DEBUG", "INFO")
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    monkeypatch.setenv("UNRELATED_SECRET_THING", "x")
    ev = collect_env(gpus=False)["env_vars"]
    assert ev["PYTHONHASHSEED"] == "7"
    assert ev["CUBLAS_WORKSPACE_CONFIG"] is None and "CUDA_VISIBLE_DEVICES" in ev
    assert ev["NCCL_DEBUG"] == "INFO" and ev["TORCH_SHOW_CPP_STACKTRACES"] == "1"
    assert "UNRELATED_SECRET_THING" not in ev


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_no_gpu_note_for_real():
    gpus, note = nvml_gpus()
    assert gpus == []
    assert note.startswith(("NVML library not found", "no NVIDIA GPU"))


def test_nvml_package_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    gpus, note = nvml_gpus()
    assert gpus == [] and note.startswith("NVML library not found") and "nvidia-ml-py" in note


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU path")
def test_cli_env_without_gpu(run_cli):
    res = run_cli("env")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert torch.__version__ in out and "Determinism" in out and "PYTHONHASHSEED" in out
    gpu_part = out.split("GPUs (NVML)", 1)[1].strip().splitlines()
    assert len(gpu_part) == 1 and gpu_part[0].strip().startswith(("NVML library not found", "no NVIDIA GPU"))


def test_cli_env_json(run_cli):
    res = run_cli("env", "--json", env={"PYTHONHASHSEED": "123"})
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["torch"]["version"] == torch.__version__
    assert data["env_vars"]["PYTHONHASHSEED"] == "123"
    assert set(data) >= {"python", "platform", "cpu", "torch", "determinism", "tf32", "env_vars", "nvml", "gpus"}


# ------------------------------------------------------------------------------------------
# NVML errors told apart
# ------------------------------------------------------------------------------------------


def test_library_not_found_vs_driver_not_loaded():
    _, note = nvml_gpus(fake_nvml([], init_error="library"))
    assert note.startswith("NVML library not found")
    _, note = nvml_gpus(fake_nvml([], init_error="driver"))
    assert note.startswith("no NVIDIA GPU/driver")
    m = fake_nvml([])
    gpus, note = nvml_gpus(m)
    assert gpus == [] and note.startswith("no NVIDIA GPU") and m.calls == ["init", "shutdown"]
    _, note = nvml_gpus(fake_nvml([FULL], count_error=True))
    assert note.startswith("no NVIDIA GPU/driver")


# ------------------------------------------------------------------------------------------
# GPU table and JSON with a fake NVML
# ------------------------------------------------------------------------------------------


def test_nvml_gpus_content():
    m = fake_nvml([FULL, SPARSE])
    gpus, note = nvml_gpus(m)
    assert note is None and m.calls == ["init", "shutdown"]
    a, b = gpus
    assert a["index"] == 0 and a["name"] == "NVIDIA H100 80GB HBM3" and a["uuid"].startswith("GPU-1111")
    assert (a["memory_used"], a["memory_total"], a["memory_free"]) == (20 * GiB, 80 * GiB, 60 * GiB)
    assert a["utilization_gpu"] == 87 and a["utilization_memory"] == 40 and a["temperature_c"] == 61
    assert a["power_draw_w"] == pytest.approx(312.5) and a["power_limit_w"] == pytest.approx(700.0)
    assert a["persistence_mode"] is True and a["pci_bus_id"] == "00000000:1B:00.0"
    assert a["processes"] == [
        {"pid": 4242, "name": "python3", "used_memory": 19 * GiB},
        {"pid": 999_999_999, "name": None, "used_memory": None},
    ]
    # the sparse GPU: bytes decoded, unsupported queries become None, memory still there
    assert b["name"] == "NVIDIA GeForce GTX 1080" and b["uuid"].startswith("GPU-2222")
    assert b["memory_free"] == 7 * GiB
    for key in ("utilization_gpu", "temperature_c", "power_draw_w", "power_limit_w", "persistence_mode",
                "processes", "pci_bus_id"):
        assert b[key] is None, key


def test_gpu_table_shows_na_for_unsupported():
    gpus, _ = nvml_gpus(fake_nvml([FULL, SPARSE]))
    full, sparse = gpu_rows(gpus)
    assert full[1] == "NVIDIA H100 80GB HBM3"
    assert full[3] == "20480 MiB / 81920 MiB" and full[4] == "87%" and full[5] == "61°C"
    assert full[6] == "312W / 700W" and full[7] == "yes"
    assert sparse[3] == "1024 MiB / 8192 MiB"
    assert sparse[4:] == ["n/a"] * 4


def _env_with(gpus, note=None):
    env = collect_env(gpus=False)
    env["gpus"], env["nvml"] = gpus, {"driver_version": "550.54.15", "cuda_driver_version": "12.4", "note": note}
    return env


def test_rich_and_text_report_with_fake_gpus():
    from rich.console import Console

    gpus, _ = nvml_gpus(fake_nvml([FULL, SPARSE]))
    env = _env_with(gpus)
    console = Console(record=True, width=220, force_terminal=False)
    print_rich(env, console)
    out = console.export_text()
    assert "NVIDIA H100 80GB HBM3" in out and "GTX 1080" in out and "n/a" in out
    assert "GPU processes" in out and "4242" in out and "python3" in out and "550.54.15" in out
    text = render_text(env)
    assert "GPU-1111aaaa" in text and "19456 MiB" in text and "n/a" in text
    json.dumps(env)


def test_run_json_uses_nvml(monkeypatch, capsys):
    monkeypatch.setattr(envmod, "_import_pynvml", lambda: fake_nvml([FULL, SPARSE]))
    assert envmod.run(SimpleNamespace(json=True, no_gpus=False)) == 0
    data = json.loads(capsys.readouterr().out)
    assert [g["name"] for g in data["gpus"]] == ["NVIDIA H100 80GB HBM3", "NVIDIA GeForce GTX 1080"]
    assert data["gpus"][1]["temperature_c"] is None
    assert data["nvml"] == {"driver_version": "550.54.15", "cuda_driver_version": "12.4", "note": None}


def test_handle_error_keeps_other_gpus():
    m = fake_nvml([FULL, FULL])
    real = m.nvmlDeviceGetHandleByIndex

    def handle(i):
        if i == 1:
            raise m.NVMLError("GPU is lost")
        return real(i)

    m.nvmlDeviceGetHandleByIndex = handle
    gpus, note = nvml_gpus(m)
    assert note is None and gpus[0]["memory_free"] == 60 * GiB
    assert gpus[1]["error"] == "GPU is lost" and gpus[1]["memory_free"] is None
    assert "GPU is lost" in gpu_rows(gpus)[1][1]


@pytest.mark.parametrize(
    "visible, expected",
    [
        (None, [0, 1, 2]),
        ("2,0", [1, None, 0]),
        ("GPU-cccc", [None, None, 0]),
        ("1,7,0", [None, 0, None]),  # CUDA stops at the first invalid entry
        ("", [None, None, None]),
    ],
)
def test_visible_index(monkeypatch, visible, expected):
    specs = [dict(FULL, UUID=f"GPU-{c * 4}-0000") for c in "abc"]
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    gpus, _ = nvml_gpus(fake_nvml(specs))
    assert [g["visible_index"] for g in gpus] == expected


@pytest.mark.gpu
def test_real_gpus_listed_by_nvml():
    gpus, note = nvml_gpus()
    assert note is None, note
    visible = [g for g in gpus if g["visible_index"] is not None]
    assert len(visible) == torch.cuda.device_count()
    for g in gpus:
        assert g["name"] and g["uuid"].startswith(("GPU-", "MIG-"))
        assert 0 < g["memory_total"] and 0 <= g["memory_free"] <= g["memory_total"]
    name = torch.cuda.get_device_name(0)
    assert name in {g["name"] for g in visible}
    rows = gpu_rows(gpus)
    assert len(rows) == len(gpus)

"""track_memory (context manager and decorator), free_memory, memory_report; CUDA paths mocked or gpu-marked."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest
import torch

import torchwise.utils.memory as mem
from torchwise.core.errors import UsageError
from torchwise.utils.memory import MemoryStats, format_bytes, free_memory, memory_report, track_memory

MiB = 2**20
N_64MIB = 16 * MiB  # float32 elements in 64 MiB


def test_format_bytes():
    assert format_bytes(0) == "0 B"
    assert format_bytes(512) == "512 B"
    assert format_bytes(12.3 * MiB) == "12.3 MiB"
    assert format_bytes(3 * 2**30) == "3.0 GiB"
    assert format_bytes(5 * MiB, signed=True) == "+5.0 MiB"
    assert format_bytes(-5 * MiB, signed=True) == "-5.0 MiB"
    assert format_bytes(None) == "?"


def test_context_manager_sees_64_mib_tensor_on_cpu():
    with track_memory("alloc", device="cpu") as m:
        x = torch.ones(N_64MIB)  # 64 MiB, written, so resident
    assert m.stats is not None and m.stats.device == "cpu"
    assert m.delta_bytes >= 50 * MiB
    assert m.stats.delta_mib >= 50
    assert m.stats.before is not None and m.stats.after - m.stats.before == m.delta_bytes
    text = str(m.stats)
    assert text.startswith("alloc: +6") and "MiB (rss " in text and "→" in text
    del x


def test_small_block_shows_small_delta():
    with track_memory(device="cpu") as m:
        y = sum(range(100))
    assert y == 4950
    assert abs(m.delta_bytes) < 8 * MiB
    assert not str(m.stats).startswith(":")  # no label, no leading colon


def test_freed_inside_block_shows_no_delta_but_peak_grows():
    # in a fresh process, so that 64 MiB is surely above the earlier RSS high-water mark
    code = textwrap.dedent(
        """
        import torch
        from torchwise.utils.memory import track_memory
        with track_memory("temp", device="cpu") as m:
            t = torch.ones(16 * 2**20)
            del t
        print(m.stats.delta_bytes, m.stats.peak_growth)
        print(m.stats)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    numbers, text = out.stdout.strip().splitlines()
    delta, growth = map(int, numbers.split())
    assert abs(delta) < 16 * MiB
    assert growth >= 50 * MiB
    assert text.startswith("temp: ") and "peak rss +6" in text


def test_decorator_forms_record_stats():
    @track_memory("make", device="cpu")
    def make(n):
        return torch.ones(n)

    kept = make(N_64MIB)
    assert make.memory.calls == 1
    assert make.memory.stats.label == "make"
    assert make.memory.stats.delta_bytes >= 50 * MiB
    assert make.__name__ == "make"  # functools.wraps

    @track_memory
    def bare():
        return 1

    assert bare() == 1 and bare.memory.calls == 1 and bare.memory.stats.label.endswith("bare")

    tracker = track_memory("shared", device="cpu")

    @tracker
    def twice():
        return torch.zeros(4)

    twice()
    twice()
    assert tracker.calls == 2 and isinstance(tracker.stats, MemoryStats)
    del kept


def test_stats_recorded_when_block_raises():
    tm = track_memory("boom", device="cpu")
    with pytest.raises(ValueError):
        with tm:
            raise ValueError("x")
    assert tm.calls == 1 and tm.stats.label == "boom"


def test_nested_use_of_one_tracker():
    tm = track_memory("n", device="cpu")
    with tm:
        with tm:
            inner = torch.ones(N_64MIB)
        inner_delta = tm.delta_bytes
    assert tm.calls == 2 and inner_delta >= 50 * MiB
    del inner


def test_verbose_prints(capsys):
    with track_memory("loud", device="cpu", verbose=True):
        pass
    assert capsys.readouterr().err.startswith("loud: ")


# ---------------------------------------------------------------- CUDA logic with fake counters


class FakeCuda:
    def __init__(self) -> None:
        self.allocated, self.reserved, self.peak = 100 * MiB, 128 * MiB, 500 * MiB
        self.resets = 0

    def counters(self, device):
        return self.allocated, self.reserved, self.peak

    def reset(self, device):
        self.resets += 1
        self.peak = self.allocated

    def alloc(self, n):
        self.allocated += n
        self.peak = max(self.peak, self.allocated)
        self.reserved = max(self.reserved, self.allocated + 32 * MiB)

    def free(self, n):
        self.allocated -= n


def test_cuda_stats_logic(monkeypatch):
    fake = FakeCuda()
    monkeypatch.setattr(mem, "_cuda_counters", fake.counters)
    monkeypatch.setattr(mem, "_cuda_reset_peak", fake.reset)
    monkeypatch.setattr(mem, "_cuda_available", lambda: True)
    with track_memory("fwd", device=torch.device("cuda", 0)) as m:
        fake.alloc(300 * MiB)  # activations
        fake.free(288 * MiB)   # most freed again
    s = m.stats
    assert fake.resets == 1
    assert s.device == "cuda:0" and s.kind == "allocated"
    assert s.delta_bytes == 12 * MiB
    assert s.peak == 400 * MiB and s.peak_growth == 300 * MiB  # not the stale 500 MiB from before entry
    assert (s.reserved_before, s.reserved_after) == (128 * MiB, 432 * MiB)
    assert str(s) == (
        "fwd: +12.0 MiB (allocated 100.0 → 112.0 MiB, peak 400.0 MiB (+300.0 MiB), "
        "reserved 128.0 → 432.0 MiB, cuda:0)"
    )


# ---------------------------------------------------------------- free_memory / memory_report


class Cycle:
    def __init__(self, payload):
        self.payload = payload
        self.me = self


def test_free_memory_collects_cycles_and_reports_bytes():
    gc.collect()
    gc.disable()  # keep the cycle alive until free_memory collects it
    try:
        obj = Cycle(torch.ones(N_64MIB))
        del obj
        freed = free_memory()
    finally:
        gc.enable()
    assert freed >= 50 * MiB


def test_free_memory_with_nothing_to_free():
    gc.collect()
    assert 0 <= free_memory() < 32 * MiB


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests a CPU-only machine")
def test_bad_device_is_one_clear_error():
    with pytest.raises(UsageError, match="CUDA is not available"):
        with track_memory(device="cuda"):
            pass
    with pytest.raises(UsageError, match="unknown device 'gpu'"):
        memory_report("gpu")


def test_memory_report_cpu():
    report = memory_report("cpu")
    assert report.startswith("cpu: rss ") and "peak rss" in report and "system available" in report
    assert "?" not in report  # all three are readable on Linux
    default = memory_report()
    assert default.splitlines()[0].startswith("cpu: rss ")


@pytest.mark.gpu
def test_cuda_track_memory_real():
    device = torch.device("cuda", 0)
    with track_memory("gpu", device=device) as m:
        x = torch.ones(N_64MIB, device=device)
    assert m.delta_bytes >= 64 * MiB and m.stats.peak_growth >= 64 * MiB
    del x
    assert free_memory() >= 64 * MiB  # the cached block goes back to the driver
    report = memory_report(device)
    assert report.startswith("cuda:0") and "allocated" in report and "device free" in report

"""TW2xx/TW4xx checks: each fault planted, the finding and its key evidence asserted; clean twins quiet."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from torchwise.doctor import doctor
from torchwise.doctor.checks import tw221_threads
from torchwise.doctor.probe import usable_cores

from doctor_models import class_batch, mlp

CE = nn.CrossEntropyLoss()


def conv_net(bias: bool = False, channels: int = 8) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1, bias=bias), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 8),
    )


def image_batch(n: int = 8, size: int = 8):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 3, size, size, generator=g), torch.randint(0, 8, (n,), generator=g)


# --- TW202 / TW222 -----------------------------------------------------------------------------


class Slow(Dataset):
    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.x, self.y = class_batch(64)

    def __len__(self):
        return 64

    def __getitem__(self, i):
        time.sleep(self.delay)
        return self.x[i], self.y[i]


def test_tw202_loader_wait_share_in_main_process():
    report = doctor(mlp(), loader=DataLoader(Slow(0.005), batch_size=4), loss_fn=CE)
    [f] = report.by_code("TW202")
    assert f.evidence["num_workers"] == 0 and f.evidence["loader_wait_share"] >= 0.3
    assert f.evidence["wait_ms_per_step"] >= 15  # 4 samples x 5 ms
    assert "num_workers=0" in f.message and report.measured["loader_wait_share"] == pytest.approx(f.evidence["loader_wait_share"], abs=1e-3)


def test_tw222_workers_cannot_keep_up():
    # 0.2 s a batch in the worker: slower than a step even when a busy machine slows the steps down
    # tenfold (a worker progresses in wall time while the main process waits for a core)
    loader = DataLoader(Slow(0.05), batch_size=4, num_workers=1)
    [f] = doctor(mlp(), loader=loader, loss_fn=CE, steps=4).by_code("TW222")
    assert f.evidence["num_workers"] == 1 and f.evidence["loader_wait_share"] >= 0.3


def test_tw202_quiet_for_fast_loader_and_skipped_for_fixed_batch():
    data = TensorDataset(*class_batch(64))
    report = doctor(mlp(), loader=DataLoader(data, batch_size=16), loss_fn=CE)
    assert not report.by_code("TW202") and not report.by_code("TW222")
    assert 0 <= report.measured["loader_wait_share"] < 1
    report = doctor(mlp(), batch=class_batch(), loss_fn=CE)
    assert any(s.codes == ("TW202", "TW222") for s in report.skipped)


# --- TW207 -------------------------------------------------------------------------------------


class ItemInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        if x.abs().sum().item() > 0:  # a host-device sync every step
            x = x * 1.0
        return self.fc(x)


def test_tw207_skipped_without_cuda():
    report = doctor(ItemInForward(), batch=class_batch(), loss_fn=CE, device="cpu")
    [s] = [s for s in report.skipped if s.codes == ("TW207",)]
    assert "needs CUDA" in s.reason


@pytest.mark.gpu
def test_tw207_counts_syncs_on_cuda():
    report = doctor(ItemInForward(), batch=class_batch(), loss_fn=CE, device="cuda")
    [f] = report.by_code("TW207")
    assert f.evidence["syncs_per_step"] >= 1 and f.evidence["counted_steps"] == 2
    clean = doctor(mlp(), batch=class_batch(), loss_fn=CE, device="cuda", precision="32")
    assert not clean.by_code("TW207") and "TW207" not in {c for s in clean.skipped for c in s.codes}


# --- TW209 -------------------------------------------------------------------------------------


def test_tw209_conv_bias_into_batchnorm():
    [f] = doctor(conv_net(bias=True), batch=image_batch(), loss_fn=CE).by_code("TW209")
    assert f.evidence["pairs"] == [["0", "1"]] and f.evidence["wasted_bias_values"] == 8
    assert f.severity == "hint"


class NamedLikeConvBN(nn.Module):
    """A biased conv, then ReLU, then BatchNorm: the bias is not cancelled (not a finding)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8, 8)

    def forward(self, x):
        return self.head(self.bn(torch.relu(self.conv(x))).mean((2, 3)))


def test_tw209_uses_dataflow_not_names():
    assert not doctor(NamedLikeConvBN(), batch=image_batch(), loss_fn=CE).by_code("TW209")
    assert not doctor(conv_net(bias=False), batch=image_batch(), loss_fn=CE).by_code("TW209")


# --- TW210 -------------------------------------------------------------------------------------


def test_tw210_sizes_not_multiples_of_8_in_half_precision():
    model = nn.Sequential(nn.Linear(16, 30), nn.ReLU(), nn.Linear(30, 4))
    x, y = class_batch(12)
    [f] = doctor(model, batch=(x, y), loss_fn=CE, precision="bf16-mixed", for_device="cuda").by_code("TW210")
    sizes = {(s["module"], s["size"]): s["value"] for s in f.evidence["sizes"]}
    assert sizes == {("0", "out_features"): 30, ("2", "in_features"): 30, ("2", "out_features"): 4, ("batch", "batch_size"): 12}


def test_tw210_quiet_for_round_sizes_and_skipped_in_fp32_or_cpu():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    x, y = class_batch(16, classes=8)
    assert not doctor(model, batch=(x, y), loss_fn=CE, precision="bf16-mixed", for_device="cuda").by_code("TW210")
    report = doctor(model, batch=(x, y), loss_fn=CE, precision="32", for_device="cuda")
    assert any(s.codes == ("TW210",) and "fp32" in s.reason for s in report.skipped)
    report = doctor(model, batch=(x, y), loss_fn=CE, precision="bf16-mixed")
    assert any(s.codes == ("TW210",) and "CUDA" in s.reason for s in report.skipped)


# --- TW212 -------------------------------------------------------------------------------------


def test_tw212_conv_model_without_channels_last():
    [f] = doctor(conv_net(), batch=image_batch(), loss_fn=CE, for_device="cuda").by_code("TW212")
    assert f.severity == "hint" and f.evidence["example_input_shape"] == [8, 3, 8, 8] and f.where == "0"


def test_tw212_quiet_with_channels_last_and_skipped_on_cpu():
    model = conv_net().to(memory_format=torch.channels_last)
    x, y = image_batch()
    report = doctor(model, batch=(x.to(memory_format=torch.channels_last), y), loss_fn=CE, for_device="cuda")
    assert not report.by_code("TW212")
    assert not doctor(mlp(), batch=class_batch(), loss_fn=CE, for_device="cuda").by_code("TW212")
    report = doctor(conv_net(), batch=image_batch(), loss_fn=CE, device="cpu")
    assert any(s.codes == ("TW212",) for s in report.skipped)


# --- TW213 -------------------------------------------------------------------------------------


class Resolutions(Dataset):
    """Whole batches of a different image size each (batch_size=None loaders)."""

    def __init__(self, sizes):
        self.sizes = sizes

    def __len__(self):
        return len(self.sizes)

    def __getitem__(self, i):
        return image_batch(4, self.sizes[i])


def test_tw213_shapes_vary_with_cudnn_benchmark():
    loader = DataLoader(Resolutions([8, 10, 12, 14]), batch_size=None)
    report = doctor(conv_net(), loader=loader, loss_fn=CE, for_device="cuda", cudnn_benchmark=True)
    [f] = report.by_code("TW213")
    assert f.evidence["steps"] == 3 and len(f.evidence["distinct_batch_shapes"]) == 3
    assert f.evidence["distinct_batch_shapes"][0][0] == [4, 3, 8, 8]


def test_tw213_quiet_for_fixed_shapes_or_benchmark_off():
    fixed = DataLoader(Resolutions([8, 8, 8, 8]), batch_size=None)
    assert not doctor(conv_net(), loader=fixed, loss_fn=CE, for_device="cuda", cudnn_benchmark=True).by_code("TW213")
    varying = DataLoader(Resolutions([8, 10, 12, 14]), batch_size=None)
    assert not doctor(conv_net(), loader=varying, loss_fn=CE, for_device="cuda", cudnn_benchmark=False).by_code("TW213")


# --- TW218 -------------------------------------------------------------------------------------


def test_tw218_batchnorm_in_half_precision():
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4)).to(torch.bfloat16)
    x, y = class_batch()
    [f] = doctor(model, batch=(x.to(torch.bfloat16), y), loss_fn=CE, device="cpu").by_code("TW218")
    assert f.evidence["layers"] == ["1"] and f.evidence["dtypes"] == ["bfloat16"]


def test_tw218_quiet_under_autocast():
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 4))
    assert not doctor(model, batch=class_batch(), loss_fn=CE, precision="bf16-mixed").by_code("TW218")


# --- TW221 -------------------------------------------------------------------------------------


def test_tw221_more_threads_than_cores():
    cores = usable_cores()
    before = torch.get_num_threads()
    torch.set_num_threads(cores * 2)
    try:
        report = doctor(mlp(), batch=class_batch(), loss_fn=CE, steps=1, select=["TW221"])
    finally:
        torch.set_num_threads(before)
    [f] = report.by_code("TW221")
    assert f.evidence["torch_threads"] == cores * 2 and f.evidence["usable_cores"] == cores


def test_tw221_busy_peer_processes(monkeypatch):
    cores = usable_cores()
    if cores < 2:
        pytest.skip("needs 2 usable cores")
    monkeypatch.setattr(tw221_threads, "torch_processes", lambda: [4242])
    monkeypatch.setattr(tw221_threads, "_cpu_ticks", lambda pid: 100)
    monkeypatch.setattr(tw221_threads, "busy_peers", lambda pids, before, s: {4242: 1.0} if pids == [4242] else {})
    before = torch.get_num_threads()
    torch.set_num_threads(cores)
    try:
        report = doctor(mlp(), batch=class_batch(), loss_fn=CE, steps=1, select=["TW221"])
    finally:
        torch.set_num_threads(before)
    [f] = report.by_code("TW221")
    assert f.evidence["busy_torch_processes"] == 1 and f.evidence["peer_cores_used"] == {4242: 1.0}
    assert f"set_num_threads({max(1, cores // 2)})" in f.fix


def test_tw221_quiet_with_one_thread():
    assert torch.get_num_threads() == 1  # tests/conftest.py
    assert not doctor(mlp(), batch=class_batch(), loss_fn=CE, steps=1, select=["TW221"]).findings


@pytest.mark.slow
def test_tw221_measures_real_processes(monkeypatch):
    # busy_peers on this very process: the cores it reports match the CPU time we burnt
    monkeypatch.setattr(tw221_threads, "BUSY_CORES", 0.0)
    pid = os.getpid()
    start = {pid: tw221_threads._cpu_ticks(pid)}
    t0, c0 = time.perf_counter(), time.process_time()
    while time.process_time() - c0 < 0.3:
        pass
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    used = tw221_threads.busy_peers([pid], start, wall)
    assert used[pid] == pytest.approx(cpu / wall, abs=0.05 / wall + 0.01)
    # torch_processes finds a child that has torch loaded (and not ourselves)
    child = subprocess.Popen([sys.executable, "-c", "import torch, sys; print(1, flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        child.stdout.readline()
        found = tw221_threads.torch_processes()
        assert child.pid in found and pid not in found
    finally:
        child.stdin.close()
        child.wait(timeout=30)


# --- TW408 -------------------------------------------------------------------------------------


class SplitModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 4)
        self.stray = nn.Linear(4, 4, device="meta")  # left on another device

    def forward(self, x):
        return self.body(x)


def test_tw408_parameters_on_several_devices():
    report = doctor(SplitModel(), batch=class_batch(), loss_fn=CE)
    [f] = report.by_code("TW408")
    assert f.evidence["tensors_per_device"] == {"cpu": 2, "meta": 2} and f.severity == "warning"
    assert f.evidence["off_main_device"] in (["stray.weight", "stray.bias"], ["body.weight", "body.bias"])
    assert report.failure is None  # placement kept: the steps still ran


def test_tw408_quiet_on_one_device():
    assert not doctor(mlp(), batch=class_batch(), loss_fn=CE).by_code("TW408")


# --- clean models ------------------------------------------------------------------------------


def test_digits_task_is_clean():
    report = doctor("examples/digits.py:task")
    assert report.findings == [], [str(f) for f in report.findings]
    assert report.ok and report.measured["steps_run"] == 3 and report.subject == "digits"


def test_gpu_ready_conv_net_is_clean_for_cuda():
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 8),
    ).to(memory_format=torch.channels_last)
    x, y = image_batch(16)
    report = doctor(model, batch=(x.to(memory_format=torch.channels_last), y), loss_fn=CE,
                    optimizer=torch.optim.SGD(model.parameters(), lr=0.1), precision="bf16-mixed", for_device="cuda", cudnn_benchmark=True)
    assert report.findings == [], [str(f) for f in report.findings]

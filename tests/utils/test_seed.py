"""Reproducibility: same seed -> bitwise-equal training and loader batches; RNG state round trips."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

from torchwise.utils.checkpoint import load_checkpoint, save_checkpoint
from torchwise.core.errors import UsageError
from torchwise.utils.seed import MAX_SEED, get_rng_state, make_generator, seed_everything, seed_worker, set_rng_state


@pytest.fixture(autouse=True)
def _restore_global_settings(monkeypatch):
    """seed_everything changes process-wide settings: put them back after each test."""
    monkeypatch.setenv("PYTHONHASHSEED", os.environ.get("PYTHONHASHSEED", "0"))
    cudnn = (torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark)
    algos = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled())
    yield
    torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = cudnn
    torch.use_deterministic_algorithms(algos[0], warn_only=algos[1])


# ---------------------------------------------------------------- training loop


def train_once(seed: int) -> dict[str, torch.Tensor]:
    seed_everything(seed)
    x = torch.randn(64, 8)
    y = (x[:, 0] > 0).long()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(list(zip(x, y)), batch_size=16, shuffle=True)
    for _ in range(2):
        for xb, yb in loader:
            # noise from numpy and random too, so all three generators matter
            noise = torch.from_numpy(np.random.normal(0, 0.01, size=xb.shape).astype(np.float32)) * random.random()
            loss = nn.functional.cross_entropy(model(xb + noise), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_same_seed_gives_bitwise_equal_weights():
    a = train_once(1234)
    random.random(), np.random.rand(), torch.rand(3)  # disturb every generator in between
    b = train_once(1234)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = train_once(4321)
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_returns_seed_and_validates():
    assert seed_everything(7) == 7
    assert seed_everything(np.int64(8)) == 8
    assert seed_everything(MAX_SEED) == MAX_SEED
    for bad in (-1, MAX_SEED + 1, 1.5, "42", True, None):
        with pytest.raises(UsageError, match=r"0\.\.4294967295"):
            seed_everything(bad)  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        make_generator(-5)


def test_seeds_all_three_libraries():
    seed_everything(99)
    first = (random.random(), np.random.rand(), torch.rand(1).item())
    seed_everything(99)
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == first


def test_pythonhashseed_reaches_child_processes():
    def child_hash() -> str:
        out = subprocess.run([sys.executable, "-c", "print(hash('torchwise'))"], capture_output=True, text=True, check=True)
        return out.stdout.strip()

    seed_everything(11)
    assert os.environ["PYTHONHASHSEED"] == "11"
    first = child_hash()
    assert child_hash() == first
    seed_everything(12)
    assert child_hash() != first


def test_deterministic_flags(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.benchmark = True
    seed_everything(5, deterministic=True)
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.backends.cudnn.deterministic is True
    assert torch.backends.cudnn.benchmark is False
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    # an existing value is kept
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    seed_everything(5, deterministic=True)
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"


def test_non_deterministic_call_leaves_flags_alone(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    torch.use_deterministic_algorithms(False)
    seed_everything(5)
    assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


# ---------------------------------------------------------------- DataLoader workers


class NoisyDataset(Dataset):
    """Random augmentation in __getitem__ from torch, numpy and random."""

    def __len__(self) -> int:
        return 8

    def __getitem__(self, index: int) -> torch.Tensor:
        return torch.tensor([float(index), torch.rand(1).item(), float(np.random.rand()), random.random()], dtype=torch.float64)


def loader_batches(seed: int, epochs: int = 2) -> list[torch.Tensor]:
    seed_everything(seed)
    loader = DataLoader(
        NoisyDataset(),
        batch_size=2,
        shuffle=True,
        num_workers=2,
        worker_init_fn=seed_worker,
        generator=make_generator(seed),
    )
    return [batch for _ in range(epochs) for batch in loader]


@pytest.mark.slow
def test_dataloader_with_workers_reproduces_batches():
    a = loader_batches(2024)
    random.random(), np.random.rand(), torch.rand(3)
    b = loader_batches(2024)
    assert len(a) == len(b) == 8
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    c = loader_batches(7)
    assert not all(torch.equal(x, y) for x, y in zip(a, c))
    # each worker has its own numpy/random stream: batches 0 and 1 come from workers 0 and 1
    assert not torch.equal(a[0][:, 2], a[1][:, 2])
    assert not torch.equal(a[0][:, 3], a[1][:, 3])
    # and the second epoch draws new augmentations
    assert not torch.equal(a[0][:, 1:], a[4][:, 1:])


def test_seed_worker_derives_from_torch_initial_seed():
    torch.manual_seed(2**40 + 17)  # initial_seed can exceed numpy's range: reduced mod 2**32
    seed_worker(0)
    got = (np.random.rand(), random.random())
    np.random.seed(17)
    random.seed(17)
    assert got == (np.random.rand(), random.random())


def test_make_generator():
    g1, g2 = make_generator(3), make_generator(3)
    assert isinstance(g1, torch.Generator)
    assert torch.equal(torch.rand(4, generator=g1), torch.rand(4, generator=g2))
    assert not torch.equal(torch.rand(4, generator=make_generator(4)), torch.rand(4, generator=make_generator(3)))


# ---------------------------------------------------------------- RNG state


def draw() -> tuple:
    return (
        random.random(),
        random.gauss(0, 1),
        np.random.rand(3).tolist(),
        float(np.random.normal()),
        torch.rand(3).tolist(),
        torch.randn(2).tolist(),
    )


def test_rng_state_round_trip_through_checkpoint(tmp_path):
    seed_everything(31)
    random.gauss(0, 1)
    np.random.normal()  # leave a cached gaussian in both states
    state = get_rng_state()
    path = save_checkpoint(tmp_path / "rng.pt", rng=state)
    expected = draw()
    draw()  # move everything on
    restored = load_checkpoint(path, weights_only=True)["rng"]
    set_rng_state(restored)
    assert draw() == expected


def test_rng_state_is_plain_data():
    state = get_rng_state()

    def walk(obj):
        if isinstance(obj, dict):
            for v in obj.values():
                walk(v)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v)
        else:
            assert obj is None or isinstance(obj, (int, float, str, torch.Tensor)), type(obj)
            assert not isinstance(obj, np.generic)

    walk(state)
    assert {"python", "numpy", "torch"} <= set(state)


def test_set_rng_state_rejects_garbage():
    with pytest.raises(UsageError, match="get_rng_state"):
        set_rng_state({"foo": 1})
    with pytest.raises(UsageError, match="get_rng_state"):
        set_rng_state([1, 2])  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="not in get_rng_state"):
        set_rng_state({"numpy": {"algorithm": "MT19937"}})


def test_set_rng_state_tolerates_cuda_differences(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_rng_state", lambda s, device: calls.append(device))
    base = {k: v for k, v in get_rng_state().items() if k != "cuda"}
    fake = torch.zeros(16, dtype=torch.uint8)
    with pytest.warns(UserWarning, match="no CUDA generator states"):
        set_rng_state(base)
    assert calls == []
    with pytest.warns(UserWarning, match="3 CUDA device"):
        set_rng_state({**base, "cuda": [fake, fake, fake]})
    assert calls == [0, 1]
    calls.clear()
    set_rng_state({**base, "cuda": [fake, fake]})
    assert calls == [0, 1]


def test_set_rng_state_skips_cuda_on_cpu_machine(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    state = get_rng_state()
    state["cuda"] = [torch.zeros(16, dtype=torch.uint8)]
    with pytest.warns(UserWarning, match="CUDA is not available"):
        set_rng_state(state)


@pytest.mark.gpu
def test_cuda_rng_round_trip():
    seed_everything(3)
    state = get_rng_state()
    expected = torch.rand(4, device="cuda").cpu()
    set_rng_state(state)
    assert torch.equal(torch.rand(4, device="cuda").cpu(), expected)

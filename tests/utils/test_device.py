"""Device selection (multi-GPU and CUDA_VISIBLE_DEVICES logic mocked on CPU), to_device, set_threads."""

from __future__ import annotations

import collections
import dataclasses
import subprocess
import sys
import textwrap
from typing import NamedTuple

import pytest
import torch
from torch import nn

import torchwise.utils.device as dev
from torchwise.utils.device import logical_gpus, parse_device_spec, pick_gpu, select_device, set_threads, to_device
from torchwise.core.errors import UsageError

GiB = 1024**3


def nvml_record(index: int, free_gib: float, uuid: str) -> dict:
    return {
        "index": index,
        "name": "Fake GPU",
        "uuid": uuid,
        "memory_total": 80 * GiB,
        "memory_free": int(free_gib * GiB),
        "memory_used": int((80 - free_gib) * GiB),
    }


FOUR = [
    nvml_record(0, 10, "GPU-aaaa1111-0000-0000-0000-000000000000"),
    nvml_record(1, 70, "GPU-bbbb2222-0000-0000-0000-000000000000"),
    nvml_record(2, 40, "GPU-cccc3333-0000-0000-0000-000000000000"),
    nvml_record(3, 75, "GPU-cccc4444-0000-0000-0000-000000000000"),
]


# ---------------------------------------------------------------- pure mapping


def idx(gpus):
    return None if gpus is None else [g["index"] for g in gpus]


def test_logical_gpus_unset_means_all_in_nvml_order():
    assert idx(logical_gpus(list(reversed(FOUR)), None)) == [0, 1, 2, 3]


def test_logical_gpus_by_index_and_order():
    assert idx(logical_gpus(FOUR, "2,0")) == [2, 0]
    assert idx(logical_gpus(FOUR, " 3 , 1 ")) == [3, 1]
    assert idx(logical_gpus(FOUR, "")) == []


def test_logical_gpus_stops_at_first_invalid_entry_like_cuda():
    assert idx(logical_gpus(FOUR, "1,7,2")) == [1]
    assert idx(logical_gpus(FOUR, "2,-1,0")) == [2]
    assert idx(logical_gpus(FOUR, "0,0,1")) == [0]  # a repeated device ends the list
    assert idx(logical_gpus(FOUR, "3,,1")) == [3]


def test_logical_gpus_by_uuid_prefix():
    assert idx(logical_gpus(FOUR, "GPU-bbbb2222-0000-0000-0000-000000000000,0")) == [1, 0]
    assert idx(logical_gpus(FOUR, "GPU-bbbb,GPU-cccc4")) == [1, 3]
    assert idx(logical_gpus(FOUR, "bbbb")) == [1]  # CUDA accepts the UUID without "GPU-"
    # an ambiguous prefix (two GPUs start with cccc) is invalid and ends the list
    assert idx(logical_gpus(FOUR, "GPU-aaaa,GPU-cccc,1")) == [0]


def test_logical_gpus_mig_is_unknown():
    assert logical_gpus(FOUR, "MIG-12345678-aaaa") is None


def test_logical_gpus_prefers_torch_uuids():
    # torch reports UUIDs without "GPU-": they decide the order even if the env var disagrees
    uuids = ["cccc4444-0000-0000-0000-000000000000", "aaaa1111-0000-0000-0000-000000000000"]
    assert idx(logical_gpus(FOUR, "0,1", torch_uuids=uuids)) == [3, 0]
    # an unknown UUID falls back to the environment variable
    assert idx(logical_gpus(FOUR, "2", torch_uuids=["ffff"])) == [2]


def test_pick_gpu():
    assert pick_gpu([10 * GiB, 70 * GiB, 40 * GiB]) == 1
    assert pick_gpu([5, 5]) == 0  # ties: the lowest index
    assert pick_gpu([None, 3, None]) == 1
    assert pick_gpu([10 * GiB, 20 * GiB], min_free_bytes=30 * GiB) is None
    assert pick_gpu([10 * GiB, 20 * GiB], min_free_bytes=15 * GiB) == 1
    assert pick_gpu([None, None]) == 0  # nothing measurable: first device


def test_parse_device_spec():
    assert parse_device_spec("auto") == ("auto", None)
    assert parse_device_spec(None) == ("auto", None)
    assert parse_device_spec(" CUDA:1 ") == ("cuda", 1)
    assert parse_device_spec("cuda") == ("cuda", None)
    assert parse_device_spec(torch.device("cuda", 2)) == ("cuda", 2)
    assert parse_device_spec(torch.device("cpu")) == ("cpu", None)
    assert parse_device_spec("mps") == ("mps", None)
    for bad in ("gpu", "cuda:x", "cuda:", "cuda:-1", "cpu:1", "mps:1", "", "tpu"):
        with pytest.raises(UsageError) as info:
            parse_device_spec(bad)
        msg = str(info.value)
        assert "\n" not in msg and repr(bad) in msg
        assert "'auto', 'cpu', 'cuda', 'cuda:N' or 'mps'" in msg and "valid on this machine" in msg
    with pytest.raises(UsageError, match="torch.device"):
        parse_device_spec(3.5)


# ---------------------------------------------------------------- select_device with a fake machine


@pytest.fixture
def fake_gpus(monkeypatch):
    """A machine with the four NVML GPUs of FOUR; torch sees those allowed by CUDA_VISIBLE_DEVICES."""

    def install(visible: str | None = None, nvml: bool = True, torch_free: list[int] | None = None):
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        count = len(logical_gpus(FOUR, visible))
        monkeypatch.setattr(dev, "_cuda_count", lambda: count)
        monkeypatch.setattr(dev, "_mps_available", lambda: False)
        monkeypatch.setattr(dev, "_nvml_gpus", lambda: [dict(g) for g in FOUR] if nvml else None)
        monkeypatch.setattr(dev, "_torch_uuids", lambda n: None)
        calls = []

        def torch_mem(n):
            calls.append(n)
            return [(f, 80 * GiB) for f in (torch_free or [])]

        monkeypatch.setattr(dev, "_torch_free_memory", torch_mem)
        return calls

    return install


def test_auto_picks_gpu_with_most_free_memory(fake_gpus):
    fake_gpus(None)
    assert select_device("auto") == torch.device("cuda", 3)
    assert select_device("cuda") == torch.device("cuda", 3)
    assert select_device() == torch.device("cuda", 3)


def test_auto_respects_cuda_visible_devices(fake_gpus):
    fake_gpus("0,2")  # physical 0 (10 GiB free) and 2 (40 GiB free) -> logical cuda:0, cuda:1
    assert select_device("auto") == torch.device("cuda", 1)
    fake_gpus("GPU-bbbb,0")  # physical 1 (70 GiB) first
    assert select_device("auto") == torch.device("cuda", 0)


def test_explicit_index(fake_gpus):
    fake_gpus("0,2")
    assert select_device("cuda:0") == torch.device("cuda", 0)
    assert select_device(torch.device("cuda", 1)) == torch.device("cuda", 1)
    with pytest.raises(UsageError) as info:
        select_device("cuda:7")
    msg = str(info.value)
    assert "cuda:7" in msg and "2 CUDA device(s)" in msg and "cuda:0..cuda:1" in msg and "CUDA_VISIBLE_DEVICES='0,2'" in msg


def test_min_free_gb(fake_gpus):
    fake_gpus("0,2")
    assert select_device("auto", min_free_gb=30) == torch.device("cuda", 1)
    with pytest.raises(UsageError) as info:
        select_device("auto", min_free_gb=50)
    msg = str(info.value)
    assert "no CUDA device has 50 GiB free" in msg and "cuda:0 10.0 GiB free" in msg and "cuda:1 40.0 GiB free" in msg
    with pytest.raises(UsageError, match="cuda:0 has 10.0 GiB free"):
        select_device("cuda:0", min_free_gb=20)
    assert select_device("cuda:1", min_free_gb=20) == torch.device("cuda", 1)
    with pytest.raises(UsageError, match="min_free_gb"):
        select_device("auto", min_free_gb=-1)


def test_without_nvml_falls_back_to_torch(fake_gpus):
    calls = fake_gpus("0,1,2", nvml=False, torch_free=[5 * GiB, 1 * GiB, 9 * GiB])
    assert select_device("auto") == torch.device("cuda", 2)
    assert calls == [3]


def test_unmappable_visible_list_falls_back_to_torch(fake_gpus, monkeypatch):
    calls = fake_gpus("0,1", torch_free=[3 * GiB, 1 * GiB])
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "MIG-aaaa,MIG-bbbb")
    assert select_device("auto") == torch.device("cuda", 0)
    assert calls == [2]


def test_single_gpu_needs_no_memory_query(fake_gpus, monkeypatch):
    fake_gpus("1")
    monkeypatch.setattr(dev, "_nvml_gpus", lambda: pytest.fail("NVML queried for a single GPU"))
    assert select_device("auto") == torch.device("cuda", 0)


def test_mps_preferred_over_cpu_without_cuda(monkeypatch):
    monkeypatch.setattr(dev, "_cuda_count", lambda: 0)
    monkeypatch.setattr(dev, "_mps_available", lambda: True)
    assert select_device("auto") == torch.device("mps")
    assert select_device("mps") == torch.device("mps")


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests a CPU-only machine")
def test_cpu_machine_errors():
    assert select_device("auto") == torch.device("cpu")
    assert select_device("cpu") == torch.device("cpu")
    for spec, expected in (
        ("cuda", "built without CUDA"),
        ("cuda:7", "CUDA"),
        ("gpu", "unknown device 'gpu'"),
        ("cuda:x", "unknown device 'cuda:x'"),
    ):
        with pytest.raises(UsageError, match=expected) as info:
            select_device(spec)
        assert "valid on this machine: auto, cpu" in str(info.value)
    if not dev._mps_available():
        with pytest.raises(UsageError, match="MPS is not available"):
            select_device("mps")


def test_cpu_min_free_checks_system_memory(monkeypatch):
    monkeypatch.setattr(dev, "_cuda_count", lambda: 0)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    monkeypatch.setattr(dev, "system_memory", lambda: (2 * GiB, 8 * GiB))
    assert select_device("cpu", min_free_gb=1) == torch.device("cpu")
    with pytest.raises(UsageError, match="2.0 GiB of system memory available"):
        select_device("auto", min_free_gb=4)


@pytest.mark.gpu
def test_real_gpu_selection():
    device = select_device("auto")
    assert device.type == "cuda" and device.index is not None
    assert select_device("cuda:0") == torch.device("cuda", 0)


# ---------------------------------------------------------------- to_device


class Pair(NamedTuple):
    x: torch.Tensor
    label: str


@dataclasses.dataclass
class Batch:
    inputs: torch.Tensor
    meta: dict
    n: int = 0


@dataclasses.dataclass(frozen=True)
class Frozen:
    t: torch.Tensor


def test_to_device_recurses_and_keeps_types():
    a = torch.ones(2)
    dd = collections.defaultdict(list, {"a": a})
    obj = {
        "od": collections.OrderedDict([("z", a), ("y", [a, (a, 3)])]),
        "dd": dd,
        "pair": Pair(a, "name"),
        "batch": Batch(a, {"k": a}, n=4),
        "frozen": Frozen(a),
        "module": nn.Linear(1, 1),
        "text": "hi",
        "none": None,
    }
    out = to_device(obj, "meta")  # the meta device exists on every build: shows that tensors moved
    assert out["od"]["z"].device.type == "meta"
    assert isinstance(out["od"], collections.OrderedDict) and list(out["od"]) == ["z", "y"]
    assert out["od"]["y"][1][0].device.type == "meta" and out["od"]["y"][1][1] == 3
    assert isinstance(out["od"]["y"][1], tuple)
    assert isinstance(out["dd"], collections.defaultdict) and out["dd"].default_factory is list
    assert out["dd"]["a"].device.type == "meta"
    assert isinstance(out["pair"], Pair) and out["pair"].x.device.type == "meta" and out["pair"].label == "name"
    assert isinstance(out["batch"], Batch) and out["batch"].inputs.device.type == "meta"
    assert out["batch"].meta["k"].device.type == "meta" and out["batch"].n == 4
    assert isinstance(out["frozen"], Frozen) and out["frozen"].t.device.type == "meta"
    assert out["module"] is obj["module"] and out["text"] == "hi" and out["none"] is None
    # the input is untouched
    assert obj["od"]["z"] is a and obj["batch"].inputs is a and obj["frozen"].t is a and dd["a"] is a
    assert obj["pair"].x is a


def test_to_device_moves_shared_tensor_once_and_leaves_others():
    a = torch.arange(3.0)
    out = to_device([a, a, object], "meta")
    assert out[0] is out[1] and out[2] is object
    # same-device tensors are returned as they are
    t = torch.ones(2)
    assert to_device({"t": t}, torch.device("cpu"))["t"] is t


def test_to_device_bad_device():
    with pytest.raises(UsageError, match="unknown device 'gpu'"):
        to_device([torch.ones(1)], "gpu")


def test_to_device_cpu_target_is_blocking(monkeypatch):
    seen = []
    real_to = torch.Tensor.to

    def spy(self, *args, **kwargs):
        seen.append(kwargs.get("non_blocking"))
        return real_to(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "to", spy)
    to_device([torch.ones(1)], "cpu", non_blocking=True)
    to_device([torch.ones(1)], "meta", non_blocking=True)
    to_device([torch.ones(1)], "meta", non_blocking=False)
    assert seen == [False, True, False]


@pytest.mark.gpu
def test_to_device_cuda_round_trip():
    batch = {"x": torch.ones(4).pin_memory(), "y": [torch.zeros(2)]}
    on_gpu = to_device(batch, "cuda")
    assert on_gpu["x"].is_cuda and on_gpu["y"][0].is_cuda
    back = to_device(on_gpu, "cpu")
    assert torch.equal(back["x"], batch["x"])


# ---------------------------------------------------------------- set_threads


def test_set_threads_sets_and_validates():
    before = torch.get_num_threads()
    try:
        intra, interop = set_threads(1)
        assert intra == torch.get_num_threads() == 1 and interop == torch.get_num_interop_threads()
        for bad in (0, -2, 1.5, "2", True):
            with pytest.raises(UsageError, match="integer >= 1"):
                set_threads(bad)  # type: ignore[arg-type]
        with pytest.raises(UsageError, match="interop"):
            set_threads(1, interop=0)
        # asking for the inter-op count already in use never fails
        assert set_threads(1, interop=torch.get_num_interop_threads())[1] == torch.get_num_interop_threads()
    finally:
        torch.set_num_threads(before)


def test_set_threads_interop_once_per_process():
    code = textwrap.dedent(
        """
        import torch
        from torchwise.utils.device import set_threads
        from torchwise.core.errors import UsageError
        first = torch.get_num_interop_threads() + 1
        print(set_threads(1, interop=first) == (1, first), first)
        try:
            set_threads(1, interop=first + 1)
        except UsageError as exc:
            print("ERR", exc)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    ok, value = first.split()
    assert ok == "True"
    assert second.startswith("ERR") and "only once per process" in second and f"now {value}" in second

"""Checkpoints: atomic save (SIGKILL mid-write), safe load with clear errors, prefix-aware state dicts."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import torch.serialization as ser
from torch import nn

from torchwise.utils.checkpoint import (
    LoadResult,
    default_map_location,
    fix_prefixes,
    load_checkpoint,
    load_state_dict,
    save_checkpoint,
    save_safetensors,
    unwrap_model,
)
from torchwise.core.errors import CheckpointError, StateDictError, TorchwiseError, UsageError


def small_net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


class Custom:  # not on the weights_only allow-list
    def __init__(self) -> None:
        self.x = 1


# ---------------------------------------------------------------- save_checkpoint


def test_save_creates_parents_and_round_trips(tmp_path):
    net = small_net()
    target = tmp_path / "a" / "b" / "ckpt.pt"
    out = save_checkpoint(target, model=net.state_dict(), epoch=3, history=[1.0, 0.5], name="run")
    assert out == target and target.is_file()
    loaded = load_checkpoint(target)
    assert loaded["epoch"] == 3 and loaded["history"] == [1.0, 0.5] and loaded["name"] == "run"
    for key, value in net.state_dict().items():
        assert torch.equal(loaded["model"][key], value)
    # no temporary files left next to it, and a normal file mode (not mkstemp's 0600)
    assert os.listdir(target.parent) == ["ckpt.pt"]
    assert target.stat().st_mode & 0o044


def test_save_overwrites_and_keeps_old_file_on_error(tmp_path):
    target = tmp_path / "ckpt.pt"
    save_checkpoint(target, step=1)
    with pytest.raises(CheckpointError, match="could not save checkpoint"):
        save_checkpoint(target, step=2, bad=lambda: 0)  # lambdas cannot be pickled
    assert load_checkpoint(target)["step"] == 1
    assert os.listdir(tmp_path) == ["ckpt.pt"]
    save_checkpoint(target, step=3)
    assert load_checkpoint(target)["step"] == 3


def test_state_may_use_the_name_path(tmp_path):
    save_checkpoint(tmp_path / "p.pt", path="data/train.csv", step=1)
    assert load_checkpoint(tmp_path / "p.pt")["path"] == "data/train.csv"


def test_save_needs_state_and_rejects_directory(tmp_path):
    with pytest.raises(UsageError):
        save_checkpoint(tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="is a directory"):
        save_checkpoint(tmp_path, step=1)


KILL_CHILD = textwrap.dedent(
    """
    import io, sys, time
    from pathlib import Path
    import torch
    import torchwise.utils.checkpoint as ck

    target, marker = Path(sys.argv[1]), Path(sys.argv[2])
    big = torch.arange(1_000_000, dtype=torch.float32)
    ck.save_checkpoint(target, step=1, weights=big)          # first complete save

    real_save = torch.save

    def slow_save(obj, fh, *args, **kwargs):
        buf = io.BytesIO()
        real_save(obj, buf, *args, **kwargs)
        data = buf.getvalue()
        fh.write(data[: len(data) // 2])                    # half of the second checkpoint ...
        fh.flush()
        marker.write_text("half written")                  # ... tell the parent ...
        time.sleep(120)                                    # ... and wait to be killed
        fh.write(data[len(data) // 2 :])

    ck.torch.save = slow_save
    ck.save_checkpoint(target, step=2, weights=big * 2)
    """
)


@pytest.mark.slow
def test_sigkill_during_save_leaves_previous_checkpoint(tmp_path):
    target = tmp_path / "ckpt" / "last.pt"
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", KILL_CHILD, str(target), str(marker)])
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert child.poll() is None, "child exited before the second save"
            assert time.monotonic() < deadline, "child never reached the second save"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    # the half-written second save is a temp file; the final path still holds the first save
    leftovers = [p for p in target.parent.iterdir() if p != target]
    assert leftovers and all(p.name.startswith(".last.pt.tmp-") for p in leftovers)
    loaded = load_checkpoint(target)
    assert loaded["step"] == 1
    assert torch.equal(loaded["weights"], torch.arange(1_000_000, dtype=torch.float32))
    # the next save from a live process removes the dead writer's temp file
    save_checkpoint(target, step=3)
    assert [p.name for p in target.parent.iterdir()] == ["last.pt"]
    assert load_checkpoint(target)["step"] == 3


# ---------------------------------------------------------------- load_checkpoint errors


def test_missing_file_names_path_and_neighbours(tmp_path):
    save_checkpoint(tmp_path / "epoch1.pt", step=1)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(tmp_path / "epoch2.pt")
    msg = str(info.value)
    assert "epoch2.pt" in msg and "not found" in msg and "epoch1.pt" in msg
    assert "\n" not in msg


def test_truncated_file(tmp_path):
    good = save_checkpoint(tmp_path / "good.pt", weights=torch.randn(1000))
    data = good.read_bytes()
    bad = tmp_path / "bad.pt"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match=r"bad\.pt is truncated or corrupted.*earlier checkpoint"):
        load_checkpoint(bad)
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="empty"):
        load_checkpoint(empty)


def test_not_a_checkpoint(tmp_path):
    text = tmp_path / "notes.pt"
    text.write_text("hello, I am not a checkpoint\n")
    with pytest.raises(CheckpointError, match=r"notes\.pt is not a PyTorch checkpoint"):
        load_checkpoint(text)
    import zipfile

    archive = tmp_path / "archive.pt"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("readme.txt", "x")
    with pytest.raises(CheckpointError, match="zip archive but not a PyTorch checkpoint"):
        load_checkpoint(archive)
    with pytest.raises(CheckpointError, match="directory"):
        load_checkpoint(tmp_path)


def test_plain_pickle_and_legacy_format(tmp_path):
    import pickle

    plain = tmp_path / "plain.pkl"
    plain.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    for weights_only in (True, False):
        with pytest.raises(CheckpointError, match=r"plain\.pkl is a plain pickle file.*trust"):
            load_checkpoint(plain, weights_only=weights_only)
    legacy = tmp_path / "legacy.pt"  # torch's pre-1.6 format still loads
    torch.save({"w": torch.arange(3.0)}, legacy, _use_new_zipfile_serialization=False)
    assert torch.equal(load_checkpoint(legacy)["w"], torch.arange(3.0))
    cut = tmp_path / "legacy_cut.pt"
    cut.write_bytes(legacy.read_bytes()[:200])
    for weights_only in (True, False):
        with pytest.raises(CheckpointError, match=r"legacy_cut\.pt is truncated or corrupted"):
            load_checkpoint(cut, weights_only=weights_only)


def test_safetensors_file_is_recognised(tmp_path):
    pytest.importorskip("safetensors")
    path = save_safetensors(small_net(), tmp_path / "w.safetensors")
    with pytest.raises(CheckpointError, match="safetensors file"):
        load_checkpoint(path)


def test_weights_only_refusal_names_global_and_options(tmp_path):
    path = tmp_path / "custom.pt"
    torch.save({"obj": Custom()}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    msg = str(info.value)
    assert "custom.pt" in msg
    assert f"{__name__}.Custom" in msg
    assert "weights_only=False" in msg and "add_safe_globals" in msg and "trust" in msg
    assert "\x1b" not in msg and "\n" not in msg
    # the suggested ways do work
    assert isinstance(load_checkpoint(path, weights_only=False)["obj"], Custom)
    with ser.safe_globals([Custom]):
        assert load_checkpoint(path)["obj"].x == 1


def test_errors_are_torchwise_errors(tmp_path):
    with pytest.raises(TorchwiseError):
        load_checkpoint(tmp_path / "nope.pt")


# ---------------------------------------------------------------- device mapping


def test_default_map_location_decision():
    kw = dict(cuda_available=False, cuda_count=0, mps_available=False)
    assert default_map_location("cuda:0", **kw) == "cpu"
    assert default_map_location("cuda", **kw) == "cpu"
    assert default_map_location("mps", **kw) == "cpu"
    assert default_map_location("cpu", **kw) is None
    two = dict(cuda_available=True, cuda_count=2, mps_available=False)
    assert default_map_location("cuda:1", **two) is None
    assert default_map_location("cuda:3", **two) == "cpu"  # saved on a GPU this machine lacks
    assert default_map_location("mps", mps_available=True, cuda_available=False, cuda_count=0) is None


def _save_as_if_on(device_tag: str, path: Path, monkeypatch) -> None:
    """Save a checkpoint whose storages are tagged with ``device_tag`` (as torch.save does on a GPU)."""
    with monkeypatch.context() as m:
        m.setattr(ser, "location_tag", lambda storage: device_tag)
        save_checkpoint(path, weights=torch.arange(6.0).reshape(2, 3), step=7)


@pytest.mark.skipif(torch.cuda.is_available(), reason="tests the CPU-only machine path")
def test_gpu_saved_checkpoint_loads_on_cpu_machine(tmp_path, monkeypatch):
    path = tmp_path / "gpu.pt"
    _save_as_if_on("cuda:0", path, monkeypatch)
    # plain torch.load fails here, which is what load_checkpoint spares the user
    with pytest.raises(RuntimeError, match="CUDA"):
        torch.load(path, weights_only=True)
    loaded = load_checkpoint(path)
    assert loaded["weights"].device.type == "cpu"
    assert torch.equal(loaded["weights"], torch.arange(6.0).reshape(2, 3))
    # an explicit map_location is passed through unchanged (and so fails the same way)
    with pytest.raises(CheckpointError, match="device this machine lacks"):
        load_checkpoint(path, map_location=lambda storage, loc: None)


@pytest.mark.gpu
def test_real_gpu_checkpoint_round_trip(tmp_path):
    path = save_checkpoint(tmp_path / "real.pt", weights=torch.ones(3, device="cuda"))
    assert load_checkpoint(path)["weights"].device.type == "cuda"
    assert load_checkpoint(path, map_location="cpu")["weights"].device.type == "cpu"


# ---------------------------------------------------------------- load_state_dict


def add_prefix(sd, prefix):
    return collections.OrderedDict((prefix + k, v) for k, v in sd.items())


def assert_same_weights(a: nn.Module, b: nn.Module) -> None:
    sa, sb = unwrap_model(a).state_dict(), unwrap_model(b).state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


def fresh() -> nn.Module:
    torch.manual_seed(123)
    return nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))


def test_plain_load_and_checkpoint_dict_forms():
    src = small_net()
    for wrapped in (src.state_dict(), {"model": src.state_dict(), "epoch": 1}, {"state_dict": src.state_dict(), "step": 2}):
        dst = fresh()
        result = load_state_dict(dst, wrapped)
        assert isinstance(result, LoadResult) and result.ok and result.renamed is None
        assert sorted(result.loaded) == sorted(src.state_dict())
        assert_same_weights(src, dst)


@pytest.mark.parametrize("prefix", ["module.", "_orig_mod.", "module._orig_mod.", "_orig_mod.module."])
def test_strips_wrapper_prefix_from_checkpoint(prefix):
    src = small_net()
    dst = fresh()
    result = load_state_dict(dst, add_prefix(src.state_dict(), prefix))
    assert result.ok and prefix in result.renamed and "stripped" in result.renamed
    assert_same_weights(src, dst)


def test_adds_prefix_when_model_has_it():
    class Holder(nn.Module):  # a model whose every key starts with "module."
        def __init__(self) -> None:
            super().__init__()
            self.module = fresh()

    src = small_net()
    dst = Holder()
    result = load_state_dict(dst, src.state_dict())
    assert result.ok and "added 'module.'" in result.renamed
    assert_same_weights(src, dst.module)


def test_wrapped_models_are_unwrapped():
    src = small_net()
    dp = nn.DataParallel(fresh())  # on a CPU machine DataParallel just wraps
    assert list(dp.state_dict())[0].startswith("module.")
    load_state_dict(dp, src.state_dict())
    assert_same_weights(src, dp.module)
    # and a DataParallel-saved state dict into a plain model
    dst = fresh()
    load_state_dict(dst, dp.state_dict())
    assert_same_weights(src, dst)


def test_compiled_model_is_unwrapped():
    compiled = torch.compile(fresh())  # compiling is lazy: nothing is traced unless called
    src = small_net()
    assert list(compiled.state_dict())[0].startswith("_orig_mod.")
    load_state_dict(compiled, src.state_dict())
    assert_same_weights(src, compiled)
    dst = fresh()
    load_state_dict(dst, compiled.state_dict())
    assert_same_weights(src, dst)


def test_key_starting_with_module_without_dot_is_not_cut():
    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.modulex = nn.Linear(2, 2)
            self.module_list = nn.ModuleList([nn.Linear(2, 1)])

    torch.manual_seed(1)
    src = Net()
    dst = Net()
    result = load_state_dict(dst, src.state_dict())
    assert result.renamed is None and result.ok
    assert_same_weights(src, dst)
    # blind k[7:] would turn "modulex.weight" into "weight": make sure nothing like that happens
    mapping, how = fix_prefixes(list(src.state_dict()), list(dst.state_dict()))
    assert how is None and all(k == v for k, v in mapping.items())
    # a real DDP prefix on top of those names is still stripped exactly once
    dst2 = Net()
    load_state_dict(dst2, add_prefix(src.state_dict(), "module."))
    assert_same_weights(src, dst2)


def test_prefix_on_only_some_keys_is_not_a_prefix():
    src = small_net().state_dict()
    mixed = collections.OrderedDict(("module." + k if i else k, v) for i, (k, v) in enumerate(src.items()))
    with pytest.raises(StateDictError) as info:
        load_state_dict(fresh(), mixed)
    assert "module.0.bias" in str(info.value) and "0.bias" in str(info.value)


def test_mismatch_lists_missing_unexpected_and_shapes():
    src = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))  # "0" and "2" differ in shape
    sd = src.state_dict()
    sd["extra.weight"] = torch.zeros(1)
    del sd["2.bias"]
    dst = fresh()
    before = {k: v.clone() for k, v in dst.state_dict().items()}
    with pytest.raises(StateDictError) as info:
        load_state_dict(dst, sd)
    msg = str(info.value)
    assert "\n" not in msg
    assert "missing in checkpoint: 2.bias" in msg
    assert "unexpected in checkpoint: extra.weight" in msg
    assert "0.weight (checkpoint [5, 4] vs model [3, 4])" in msg
    assert "2.weight (checkpoint [2, 5] vs model [2, 3])" in msg
    assert "strict=False" in msg
    # strict: nothing was loaded
    for k, v in dst.state_dict().items():
        assert torch.equal(v, before[k])


def test_non_strict_loads_what_fits_and_reports_skipped():
    src = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 7))  # new head with 7 classes
    dst = fresh()
    result = load_state_dict(dst, {"model": src.state_dict()}, strict=False)
    assert not result.ok
    assert sorted(result.loaded) == ["0.bias", "0.weight"]
    assert [m[0] for m in result.mismatched] == ["2.weight", "2.bias"]
    assert result.skipped == ["2.weight", "2.bias"]
    assert torch.equal(dst[0].weight, src[0].weight)
    assert not torch.equal(dst[2].bias, src[2].bias[:2])
    assert "shape mismatches" in str(result)


def test_bad_arguments():
    with pytest.raises(UsageError):
        load_state_dict("not a model", {})  # type: ignore[arg-type]
    with pytest.raises(UsageError):
        load_state_dict(fresh(), [1, 2])  # type: ignore[arg-type]


def test_state_dict_through_checkpoint_files(tmp_path):
    src = nn.DataParallel(small_net())
    path = save_checkpoint(tmp_path / "ddp.pt", model=src.state_dict(), epoch=2)
    dst = fresh()
    load_state_dict(dst, load_checkpoint(path))
    assert_same_weights(src, dst)


# ---------------------------------------------------------------- safetensors


def test_save_safetensors_with_tied_and_view_tensors(tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")

    class Tied(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(5, 3)
            self.out = nn.Linear(3, 5, bias=False)
            self.out.weight = self.emb.weight  # weight tying: shared storage

    model = Tied()
    sd = dict(model.state_dict())
    sd["view"] = model.emb.weight.detach()[1:3]  # a view into the same storage
    sd["note"] = "not a tensor"
    # safetensors itself refuses shared storage
    with pytest.raises(RuntimeError):
        safetensors_torch.save_file({k: v for k, v in sd.items() if isinstance(v, torch.Tensor)}, tmp_path / "raw.st")
    with pytest.warns(UserWarning, match="note"):
        path = save_safetensors(sd, tmp_path / "out" / "w.safetensors", metadata={"epoch": 3})
    loaded = safetensors_torch.load_file(path)
    assert sorted(loaded) == ["emb.weight", "out.weight", "view"]
    assert torch.equal(loaded["out.weight"], model.emb.weight.detach())
    assert torch.equal(loaded["view"], model.emb.weight.detach()[1:3])
    # a model (DataParallel-wrapped even) works too, and the result loads back with load_state_dict
    path2 = save_safetensors(nn.DataParallel(small_net()), tmp_path / "m.safetensors")
    dst = fresh()
    load_state_dict(dst, safetensors_torch.load_file(path2))
    assert_same_weights(small_net(), dst)


def test_save_safetensors_without_package(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_safetensors(name, *args, **kwargs):
        if name.startswith("safetensors"):
            raise ImportError("No module named 'safetensors'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_safetensors)
    with pytest.raises(UsageError, match="pip install safetensors"):
        save_safetensors(small_net(), tmp_path / "w.safetensors")

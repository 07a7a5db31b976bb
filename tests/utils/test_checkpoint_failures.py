"""Checkpoint failures say what happened: a disk that fills mid-save, and files refused by
``weights_only`` (both torch formats), named as refusals rather than as corrupt files."""

from __future__ import annotations

import errno
import io
import os

import pytest
import torch

import torchwise.utils.checkpoint as checkpoint_module
from torchwise.utils.checkpoint import load_checkpoint, save_checkpoint
from torchwise.core.errors import CheckpointError

class Payload:
    def __reduce__(self):
        return (os.system, ("echo should-never-run",))


class Custom:  # an ordinary class, not on the weights_only allow-list
    def __init__(self) -> None:
        self.x = 1


class _FillsUp(io.RawIOBase):
    """A file that takes ``room`` bytes and then fails like a full disk."""

    def __init__(self, fh, room: int) -> None:
        self.fh, self.room = fh, room

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.fh.write(data)

    def flush(self) -> None:
        self.fh.flush()

    def fileno(self) -> int:
        return self.fh.fileno()

    def close(self) -> None:
        self.fh.close()
        super().close()


@pytest.mark.parametrize("room", [0, 600, 5000])  # full at the first byte, in the header, in the tensor data
def test_disk_full_mid_save_says_so_and_keeps_the_old_file(tmp_path, monkeypatch, room):
    path = tmp_path / "ckpt.pt"
    save_checkpoint(path, w=torch.zeros(3))
    real_fdopen = os.fdopen
    monkeypatch.setattr(checkpoint_module.os, "fdopen", lambda fd, mode: _FillsUp(real_fdopen(fd, mode), room))
    with pytest.raises(CheckpointError) as info:
        save_checkpoint(path, w=torch.randn(20_000))
    msg = str(info.value)
    assert msg.startswith(f"no space left on device while writing {path}")
    assert "enforce fail" not in msg and "lambda" not in msg and "\n" not in msg
    monkeypatch.undo()
    assert torch.equal(load_checkpoint(path)["w"], torch.zeros(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.pt"]  # the partial temp file is gone


def test_disk_full_at_fsync_says_so(tmp_path, monkeypatch):
    def fsync(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(checkpoint_module.os, "fsync", fsync)
    with pytest.raises(CheckpointError, match=r"^no space left on device while writing .*ckpt\.pt"):
        save_checkpoint(tmp_path / "ckpt.pt", w=torch.zeros(3))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_malicious_pickle_is_refused_naming_the_global_never_called_corrupt(tmp_path, legacy, capfd):
    path = tmp_path / "evil.pt"
    torch.save({"w": torch.zeros(2), "x": Payload()}, path, _use_new_zipfile_serialization=not legacy)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    msg = str(info.value)
    assert "truncated" not in msg and "corrupt" not in msg
    assert "weights_only" in msg and "posix.system" in msg and str(path) in msg
    assert "\n" not in msg and "\x1b" not in msg
    assert "should-never-run" not in capfd.readouterr().out


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_unknown_class_is_refused_with_its_name_in_both_formats(tmp_path, legacy):
    path = tmp_path / "custom.pt"
    torch.save({"obj": Custom()}, path, _use_new_zipfile_serialization=not legacy)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    msg = str(info.value)
    assert f"{__name__}.Custom" in msg and "add_safe_globals" in msg and "truncated" not in msg
    assert load_checkpoint(path, weights_only=False)["obj"].x == 1

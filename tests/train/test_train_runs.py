"""One folder per run: runs/NAME/version_N, a run id on every metrics row, --resume last within the
run's own folder, and a folder that holds another run refused instead of mixed (torchwise.train.runs)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from torch import nn

from train_helpers import loader, make_trainer, mlp, quiet

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.cli import main
from torchwise.core.errors import UsageError
from torchwise.train import Trainer, runs
from torchwise.train.checkpoints import list_checkpoints

TINY = str(Path(__file__).with_name("train_tiny_task.py")) + ":task"


def _rows(folder: Path) -> list[dict[str, str]]:
    with open(folder / "metrics.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def _train(*args: str) -> int:
    return main(["train", TINY, "--seed", "0", "--no-progress", "--log-every", "2", *args])


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_each_run_of_a_task_gets_its_own_numbered_folder_and_run_id(in_tmp):
    assert _train("--epochs", "3") == 0 and _train("--epochs", "1") == 0
    first, second = in_tmp / "runs" / "tiny" / "version_0", in_tmp / "runs" / "tiny" / "version_1"
    assert [p.name for p in list_checkpoints(first / "checkpoints")] == ["step-00000004.pt", "step-00000008.pt", "step-00000012.pt"]
    assert [p.name for p in list_checkpoints(second / "checkpoints")] == ["step-00000004.pt"]
    ids = [{row["run"] for row in _rows(folder)} for folder in (first, second)]
    assert all(len(found) == 1 and "" not in found for found in ids) and ids[0] != ids[1]  # every row carries its run's id
    assert [int(r["step"]) for r in _rows(second) if r["name"] == "train/loss"] == [2, 4]  # nothing of the first run
    assert load_checkpoint(second / "checkpoints" / "step-00000004.pt")["run_id"] == ids[1].pop()


def test_resume_last_continues_the_newest_run_and_never_an_older_ones_checkpoint(in_tmp, capsys):
    assert _train("--epochs", "3") == 0  # version_0 reaches step 12
    assert _train("--epochs", "1") == 0  # version_1, the newest run, has only step 4
    capsys.readouterr()
    assert _train("--epochs", "2", "--resume", "last") == 0
    out = capsys.readouterr().out
    newest = in_tmp / "runs" / "tiny" / "version_1"
    assert "continuing run folder runs/tiny/version_1\nresuming from runs/tiny/version_1/checkpoints/step-00000004.pt" in out
    assert "trained 4 steps in" in out and "(8 in all)" in out  # what this run did, and the total
    assert [p.name for p in list_checkpoints(newest / "checkpoints")] == ["step-00000004.pt", "step-00000008.pt"]
    assert [p.name for p in list_checkpoints(in_tmp / "runs" / "tiny" / "version_0" / "checkpoints")][-1] == "step-00000012.pt"
    assert not (in_tmp / "runs" / "tiny" / "version_2").exists()
    assert len({row["run"] for row in _rows(newest)}) == 1  # the resumed run kept its id
    assert _train("--epochs", "2", "--resume", "last") == 0  # done already: nothing to do, no new folder
    assert not (in_tmp / "runs" / "tiny" / "version_2").exists()


def test_resume_last_skips_a_failed_start_but_never_reaches_past_the_newest_run(in_tmp, capsys):
    assert _train("--epochs", "1") == 0  # version_0: a run with step-4
    (in_tmp / "runs" / "tiny" / "version_1").mkdir()  # a start that failed before it wrote anything: no run
    capsys.readouterr()
    assert _train("--epochs", "2", "--resume", "last") == 0
    assert "continuing run folder runs/tiny/version_0" in capsys.readouterr().out
    died = in_tmp / "runs" / "tiny" / "version_2"  # a run that died before its first checkpoint: the newest run
    died.mkdir()
    (died / "metrics.csv").write_text("time,step,epoch,name,value,run\n1.0,2,1,train/loss,0.7,20261124-000000-0000\n")
    assert _train("--epochs", "1", "--resume", "last") == 0
    out = capsys.readouterr().out
    assert "no checkpoint in runs/tiny/version_2/checkpoints, the newest run's; starting a new run" in out
    assert "version_0" not in out and list_checkpoints(in_tmp / "runs" / "tiny" / "version_3" / "checkpoints")


def test_an_explicit_folder_holding_another_run_is_refused_unless_resuming(in_tmp, capsys):
    assert _train("--log-dir", "runs/demo", "--epochs", "1") == 0
    capsys.readouterr()
    assert _train("--log-dir", "runs/demo", "--epochs", "2") == 2  # a second, fresh run into the same folder
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "runs/demo already holds another run" in err and "--resume last" in err
    assert [p.name for p in list_checkpoints(in_tmp / "runs" / "demo" / "checkpoints")] == ["step-00000004.pt"]  # untouched
    assert _train("--log-dir", "runs/demo", "--epochs", "2", "--resume", "last") == 0  # what `make demo` does
    assert [p.name for p in list_checkpoints(in_tmp / "runs" / "demo" / "checkpoints")][-1] == "step-00000008.pt"


def test_the_trainer_refuses_a_checkpoint_folder_of_another_run_and_continues_its_own(tmp_path):
    make_trainer(checkpoint_dir=tmp_path).fit(loader(), epochs=1)
    with pytest.raises(UsageError, match=r"already holds another run \(.*step-00000008.pt\)"):
        make_trainer(checkpoint_dir=tmp_path).fit(loader(), epochs=2)  # would prune one run's files for the other's
    t = make_trainer(checkpoint_dir=tmp_path)
    assert t.fit(loader(), epochs=2, resume="last").steps == 16
    assert t.fit(loader(), epochs=3).steps == 24  # the same Trainer again: its own run, continued


def test_the_trainers_default_log_folder_is_numbered_and_rank_zero_chooses_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = mlp()
    for _ in range(2):
        t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet(log_dir=None))
        r = t.fit(loader(), epochs=1)
    assert r.log_dir == Path("runs") / "trainer" / "version_1" and (tmp_path / r.log_dir / "metrics.csv").exists()
    assert (tmp_path / "runs" / "trainer" / "version_0" / "metrics.csv").exists()
    assert runs.versions(tmp_path / "runs" / "trainer") == [0, 1]


def test_a_metrics_file_from_before_run_ids_is_kept_aside_not_mixed(tmp_path):
    (tmp_path / "metrics.csv").write_text("time,step,epoch,name,value\n1.0,1,1,train/loss,0.5\n")
    (tmp_path / "ck").mkdir()
    t = make_trainer(log_dir=tmp_path, checkpoint_dir=tmp_path / "ck", log_every=4)
    t.fit(loader(), epochs=1, resume="last")  # (resuming: the folder may hold a run)
    assert (tmp_path / "metrics.before-run-ids.csv").read_text().startswith("time,step,epoch,name,value\n1.0")
    rows = _rows(tmp_path)
    assert rows and all(r["run"] == t.run_id for r in rows)


def test_version_folders_are_claimed_atomically_and_templates_must_name_a_whole_folder(tmp_path):
    (tmp_path / "version_3").mkdir()
    (tmp_path / "version_x").mkdir()
    assert runs.versions(tmp_path) == [3]
    assert runs.choose_version(tmp_path / "{version}", None, resuming=False) == ("version_4", "")
    assert runs.choose_version(tmp_path / "{version}", None, resuming=False) == ("version_5", "")  # 4 is taken now
    with pytest.raises(UsageError, match="whole folder name"):
        runs.choose_version(tmp_path / "run-{version}", None, resuming=False)

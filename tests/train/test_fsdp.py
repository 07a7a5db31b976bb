"""FSDP2 strategy: block discovery, activation checkpointing, sharded (DCP) checkpoints, and
2 processes (torchrun, gloo) against 1."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

import train_fsdp_script as workload
from fsdp_launch import COMMON, assert_equal, env, fsdp_reference, ok, torchrun, weights  # noqa: F401  (fixture)
from torchwise.utils.checkpoint import load_checkpoint, load_state_dict
from torchwise.core.errors import CheckpointError, UsageError
from torchwise.train import Trainer
from torchwise.train import checkpoints as ckpt
from torchwise.train.dcp import ids_to_names, names_to_ids, read_full
from torchwise.train.fsdp import FSDPStrategy, apply_activation_checkpointing, find_blocks, make_strategy
from torchwise.train.strategy import SingleDevice


def _trainer(strategy="auto", **kw) -> Trainer:
    model, _ = workload.parts()
    kw = dict(device="cpu", seed=0, log_dir=False, progress=False, strategy=strategy, **kw)
    return Trainer(model, workload.optimizer(model.parameters()), nn.CrossEntropyLoss(), **kw)


def _loader(batch: int = 16) -> DataLoader:
    return DataLoader(workload.parts()[1], batch_size=batch, shuffle=True)


def _fit(trainer: Trainer, **kw) -> dict:
    try:
        trainer.fit(_loader(kw.pop("batch", 16)), **{"epochs": 2, **kw})
        return {k: v.clone() for k, v in trainer.strategy.full_state_dict(trainer.model).items()}
    finally:
        trainer.close()


def _close(a: dict, b: dict, atol: float) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=atol, msg=key)


# ---------------------------------------------------------------- which modules are sharded


def test_find_blocks_picks_transformer_layers_repeated_blocks_and_residual_stages():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), num_layers=3, enable_nested_tensor=False)
    assert [type(b) for b in find_blocks(nn.Sequential(nn.Linear(4, 8), enc))] == [nn.TransformerEncoderLayer] * 3
    assert [type(b) for b in find_blocks(workload.Net())] == [workload.Block] * 3

    class Stage(nn.Sequential):
        pass

    class ResNetLike(nn.Module):  # stages as attributes (torchvision's layout): their repeated blocks are sharded
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3)
            self.layer1 = nn.Sequential(workload.Block(4), workload.Block(4))
            self.layer2 = nn.Sequential(workload.Block(4), workload.Block(4))

    blocks = find_blocks(ResNetLike())
    assert len(blocks) == 4 and all(type(b) is workload.Block for b in blocks)
    stages = nn.Sequential(nn.Conv2d(3, 4, 3), Stage(workload.Block(4), workload.Block(4)), Stage(workload.Block(4), workload.Block(4)))
    assert [type(b) for b in find_blocks(stages)] == [Stage, Stage]  # repeated stages: the outermost repeat wins
    assert find_blocks(nn.Sequential(nn.Linear(3, 3), nn.ReLU())) == []  # nothing repeated: only the root is sharded


def test_find_blocks_given_by_class_or_name_and_refuses_an_absent_one():
    net = workload.Net()
    assert find_blocks(net, nn.Linear)[0] is net.stem and len(find_blocks(net, nn.Linear)) == 8
    assert find_blocks(net, "Block") == list(net.blocks)
    with pytest.raises(UsageError, match="no module of that class"):
        find_blocks(net, nn.Conv2d)
    with pytest.raises(UsageError, match="nn.Module class"):
        find_blocks(net, 3)


def test_activation_checkpointing_recomputes_the_blocks_and_keeps_the_gradients():
    torch.manual_seed(0)
    x, y = torch.randn(6, 5), torch.randint(0, 3, (6,))
    plain, checkpointed = workload.parts()[0], workload.parts()[0]
    assert apply_activation_checkpointing(find_blocks(checkpointed)) == 3
    assert apply_activation_checkpointing(find_blocks(checkpointed)) == 0  # idempotent
    calls = []
    checkpointed.blocks[0].fc1.register_forward_hook(lambda *a: calls.append(1))
    for model in (plain, checkpointed):
        nn.functional.cross_entropy(model(x), y).backward()
    assert len(calls) == 2  # the forward, then its recomputation in the backward
    for (name, p), q in zip(plain.named_parameters(), checkpointed.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=0, atol=0, msg=name)


def test_make_strategy_names():
    assert type(make_strategy("auto", torch.device("cpu"))) is SingleDevice
    with pytest.raises(UsageError, match="unknown strategy 'zero3'"):
        make_strategy("zero3", torch.device("cpu"))


# ---------------------------------------------------------------- FSDP in one process (a group of one)


def test_fsdp_in_one_process_shards_and_trains_like_the_single_device():
    single = _fit(_trainer(clip_grad_norm=1.0))
    trainer = _trainer("fsdp", clip_grad_norm=1.0)
    sharded = _fit(trainer)
    assert isinstance(trainer.strategy, FSDPStrategy) and len(trainer.strategy.blocks) == 3
    assert type(trainer.optimizer.param_groups[0]["params"][0]).__name__ == "DTensor"  # the optimizer follows the shards
    _close(single, sharded, atol=1e-6)
    assert not torch.equal(sharded["head.weight"], workload.parts()[0].head.weight)


def test_an_optimizer_that_already_stepped_is_refused():
    model, _ = workload.parts()
    opt = workload.optimizer(model.parameters())
    model(torch.randn(2, 5)).sum().backward()
    opt.step()
    trainer = Trainer(model, opt, nn.CrossEntropyLoss(), device="cpu", log_dir=False, progress=False, strategy="fsdp")
    with pytest.raises(UsageError, match="optimizer that has not stepped yet"):
        trainer.fit(_loader(), max_steps=1)
    trainer.close()


def test_accumulation_skips_the_gradient_sync_on_all_but_the_last_micro_step():
    trainer = _trainer("fsdp", accumulate=2)
    trainer._place()
    seen: list[bool] = []
    original = trainer.model.set_requires_gradient_sync
    trainer.model.set_requires_gradient_sync = lambda flag, **kw: (seen.append(flag), original(flag, **kw))[1]
    trainer.fit(_loader(8), max_steps=2)
    trainer.close()
    assert seen == [False, True, False, True]


def test_precision_goes_through_fsdps_mixed_precision_policy():
    from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

    trainer = _trainer("fsdp", precision="bf16-mixed")
    trainer._place()
    policy = trainer.model._get_fsdp_state()._mp_policy
    assert policy.param_dtype == torch.bfloat16 and policy.reduce_dtype == torch.float32
    trainer.close()
    fp16 = _trainer("fsdp", precision="16-mixed", clip_grad_norm=1.0, log_every=1)
    assert isinstance(fp16.precision.scaler, ShardedGradScaler)  # found-inf agreed by every rank
    result = fp16.fit(_loader(), max_steps=3)  # unscale, sharded clip and the scaled step run on DTensor gradients
    weights_after = fp16.strategy.full_state_dict(fp16.model)
    fp16.close()
    assert result.steps == 3 and result.train_loss is not None and result.train_loss == result.train_loss
    assert weights_after["head.weight"].dtype == torch.float32  # the sharded master weights stay float32
    assert not torch.equal(weights_after["head.weight"], workload.parts()[0].head.weight)


def test_the_non_finite_guard_judges_the_sharded_gradients():
    x, y = workload.parts()[1].tensors
    x = x.clone()
    x[20] = float("nan")  # poisons the second batch of 16 (no shuffle)
    trainer = _trainer("fsdp")
    result = trainer.fit(DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16), epochs=1)
    trainer.close()
    assert result.nonfinite_skipped == 1 and result.steps == 6
    assert any("step 2 skipped" in e for e in result.events)


def test_a_single_file_checkpoint_starts_an_fsdp_run(tmp_path):
    whole = _fit(_trainer(clip_grad_norm=1.0))
    _fit(_trainer(clip_grad_norm=1.0, checkpoint_dir=tmp_path), max_steps=6)
    assert ckpt.find_last(tmp_path).name == "step-00000006.pt"
    resumed = _fit(_trainer("fsdp", clip_grad_norm=1.0), resume=str(tmp_path / "step-00000006.pt"))
    _close(whole, resumed, atol=1e-6)  # model and AdamW state came across


def test_a_sharded_checkpoint_that_does_not_fit_is_one_clear_error(tmp_path):
    _fit(_trainer("fsdp", checkpoint_dir=tmp_path), max_steps=2)
    other = nn.Sequential(nn.Linear(5, 3))
    trainer = Trainer(other, torch.optim.SGD(other.parameters(), lr=0.1), nn.CrossEntropyLoss(), device="cpu", log_dir=False, progress=False, strategy="fsdp")
    with pytest.raises(CheckpointError, match="cannot load the sharded checkpoint .*: Missing key in checkpoint state_dict: model.0.weight"):
        trainer.fit(_loader(), resume=str(tmp_path / "step-00000002.dcp"))
    trainer.close()


def test_a_save_that_dies_half_way_leaves_the_previous_checkpoint_as_it_was(tmp_path, monkeypatch):
    import torch.distributed.checkpoint as dcp

    trainer = _trainer("fsdp", checkpoint_dir=tmp_path)
    try:
        trainer.fit(_loader(), max_steps=2)
        before = read_full(tmp_path / "step-00000002.dcp")
        real_save = dcp.save

        def dies(state, checkpoint_id):  # a rank killed while writing its shard
            (Path(checkpoint_id) / "__0_0.distcp").write_bytes(b"half a shard")
            raise RuntimeError("killed while saving")

        monkeypatch.setattr(dcp, "save", dies)
        trainer.step = 3
        with pytest.raises(RuntimeError, match="killed while saving"):
            trainer.save_checkpoint()
        assert [p.name for p in ckpt.list_checkpoints(tmp_path)] == ["step-00000002.dcp"]
        assert (tmp_path / ".step-00000003.dcp.tmp").is_dir()  # the debris is not a checkpoint
        assert_equal(before["model"], read_full(tmp_path / "step-00000002.dcp")["model"])
        monkeypatch.setattr(dcp, "save", real_save)
        assert trainer.save_checkpoint() == tmp_path / "step-00000003.dcp"  # the next save clears the debris
        assert not (tmp_path / ".step-00000003.dcp.tmp").exists() and read_full(tmp_path / "step-00000003.dcp")["step"] == 3
    finally:
        trainer.close()


# ---------------------------------------------------------------- checkpoint files and names


def test_sharded_folders_are_listed_pruned_and_resumed_but_temporary_ones_are_not(tmp_path):
    for step in (2, 4, 6):
        (tmp_path / f"step-{step:08d}.dcp").mkdir()
        (tmp_path / f"step-{step:08d}.dcp" / ".metadata").write_text("x")
    (tmp_path / ".step-00000008.dcp.tmp").mkdir()  # a save that died half-way
    assert [p.name for p in ckpt.list_checkpoints(tmp_path)] == ["step-00000002.dcp", "step-00000004.dcp", "step-00000006.dcp"]
    assert ckpt.resolve_resume(str(tmp_path / "step-00000004.dcp"), None)[0].name == "step-00000004.dcp"
    ckpt.prune(tmp_path, keep=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".step-00000008.dcp.tmp", "step-00000006.dcp"]


def test_optimizer_state_keys_convert_between_positions_and_names():
    model = workload.Net()
    opt = workload.optimizer(model.parameters())
    nn.functional.cross_entropy(model(torch.randn(4, 5)), torch.tensor([0, 1, 2, 0])).backward()
    opt.step()
    names = [n for n, _ in model.named_parameters()]
    by_name = ids_to_names(opt.state_dict(), names)
    assert set(by_name["state"]) == set(names) and by_name["param_groups"][0]["params"] == names
    back = names_to_ids(by_name)
    fresh = workload.optimizer(model.parameters())
    fresh.load_state_dict(back)
    assert torch.equal(fresh.state_dict()["state"][3]["exp_avg"], opt.state_dict()["state"][3]["exp_avg"])


def test_consolidate_command_refuses_what_is_not_a_sharded_checkpoint(tmp_path, capsys):
    from torchwise.cli import main

    (tmp_path / "plain").mkdir()
    assert main(["checkpoint", "consolidate", str(tmp_path / "plain"), str(tmp_path / "out.pt")]) == 2
    assert main(["checkpoint", "consolidate", str(tmp_path / "missing"), str(tmp_path / "out.pt")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "holds no sharded checkpoint" in err[0] and "does not exist" in err[1]
    assert not (tmp_path / "out.pt").exists()
    with pytest.raises(CheckpointError, match="not a sharded checkpoint"):
        read_full(tmp_path / "plain")


# ---------------------------------------------------------------- 2 processes under torchrun (gloo)


@pytest.mark.slow
def test_two_processes_equal_one_process(fsdp_reference):
    two = weights(fsdp_reference / "ref.pt")
    assert torch.load(fsdp_reference / "ref.pt", weights_only=True)["world_size"] == 2
    one = _fit(_trainer(clip_grad_norm=1.0))  # one process, the same global batch of 16
    _close(one, two, atol=1e-5)
    shards = sorted(p.name for p in (fsdp_reference / "ck" / "step-00000012.dcp").iterdir())
    assert shards == [".metadata", "__0_0.distcp", "__1_0.distcp", "trainer.pt"]  # each rank wrote its shard


@pytest.mark.slow
def test_accumulation_equals_the_big_batch(fsdp_reference, tmp_path):
    ok(torchrun(["acc.pt", "--batch", "4", "--accumulate", "2", "--clip", "1.0"], cwd=tmp_path))
    _close(weights(fsdp_reference / "ref.pt"), weights(tmp_path / "acc.pt"), atol=1e-5)


@pytest.mark.slow
def test_killed_mid_run_keeps_the_last_checkpoint_and_resumes_bitwise(fsdp_reference, tmp_path):
    crashed = torchrun(["out.pt", *COMMON, "--checkpoint-dir", "ck", "--kill-at", "7"], cwd=tmp_path)
    assert crashed.returncode != 0 and "SIGKILL" in crashed.stderr
    assert [p.name for p in ckpt.list_checkpoints(tmp_path / "ck")] == ["step-00000004.dcp", "step-00000006.dcp"]
    assert read_full(tmp_path / "ck" / "step-00000006.dcp")["step"] == 6  # complete and readable
    ok(torchrun(["out.pt", *COMMON, "--checkpoint-dir", "ck", "--resume", "last"], cwd=tmp_path))
    assert_equal(weights(fsdp_reference / "ref.pt"), weights(tmp_path / "out.pt"))


@pytest.mark.slow
def test_consolidated_checkpoint_loads_in_one_process_and_resumes_there(fsdp_reference, tmp_path):
    out = tmp_path / "model.pt"
    proc = subprocess.run([sys.executable, "-m", "torchwise", "checkpoint", "consolidate", str(fsdp_reference / "ck"), str(out)],
                          capture_output=True, text=True, env=env(), timeout=120)
    ok(proc)
    assert "step-00000012.dcp" in proc.stdout  # the newest in the folder
    state = load_checkpoint(out)
    assert state["step"] == 12 and len(state["rng"]) == 2
    fresh = workload.Net()
    load_state_dict(fresh, state)
    assert_equal(weights(fsdp_reference / "ref.pt"), fresh.state_dict())

    # a single-process run picks up a 2-process FSDP run from step 8 (consolidated) and ends where it did
    middle = tmp_path / "step8.pt"
    subprocess.run([sys.executable, "-m", "torchwise", "checkpoint", "consolidate", str(fsdp_reference / "ck" / "step-00000008.dcp"), str(middle)],
                   check=True, capture_output=True, env=env(), timeout=120)
    resumed = _fit(_trainer(clip_grad_norm=1.0), resume=str(middle))
    _close(weights(fsdp_reference / "ref.pt"), resumed, atol=1e-5)


@pytest.mark.slow
def test_resume_under_another_world_size(fsdp_reference):
    step6 = fsdp_reference / "ck" / "step-00000006.dcp"
    trainer = _trainer("fsdp")  # one process reads the 2-process shards (DCP reshards)
    loaded = _fit(trainer, resume=str(step6), max_steps=6)
    assert trainer.step == 6
    assert_equal(read_full(step6)["model"], loaded)
    single = _trainer()  # and so does a plain single-device run, straight from the folder
    assert_equal(read_full(step6)["model"], _fit(single, resume=str(step6), max_steps=6))


# ---------------------------------------------------------------- FSDP with the phase-based Trainer


def _planned(strategy: str, **kw) -> Trainer:
    """One optimizer by name, built from factories that wait for the run's plan (so after sharding)."""
    model, _ = workload.parts()
    opt = {"main": lambda params, plan: workload.optimizer(params)}
    sched = {"main": lambda o, plan: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.1, total_iters=plan.total_steps)}
    kw = dict(device="cpu", seed=0, log_dir=False, progress=False, strategy=strategy, clip_grad_norm=1.0, **kw)
    return Trainer(model, opt, nn.CrossEntropyLoss(), scheduler=sched, **kw)


def test_fsdp_with_plan_factories_a_named_optimizer_a_scheduler_and_best_checkpoint_resumes_exactly(tmp_path):
    whole = _fit(_planned("auto"))
    trainer = _planned("fsdp", checkpoint_dir=tmp_path, checkpoint_every=3, keep_checkpoints=10)
    try:
        trainer.fit(_loader(), DataLoader(workload.parts()[1], batch_size=32), epochs=2)
        assert type(trainer.phases[0].optimizer.param_groups[0]["params"][0]).__name__ == "DTensor"  # built after sharding
        assert trainer.phases[0].params[0] is trainer.phases[0].optimizer.param_groups[0]["params"][0]  # clipping sees the shards
        assert trainer.best_checkpoint.path == tmp_path / "best.dcp" and ckpt.is_sharded(tmp_path / "best.dcp")
    finally:
        trainer.close()
    middle = read_full(tmp_path / "step-00000003.dcp")
    assert set(middle["optimizer"]) == {"main"} and middle["scheduler"]["main"]["last_epoch"] == 3
    resumed = _fit(_planned("fsdp"), resume=str(tmp_path / "step-00000003.dcp"))
    _close(whole, resumed, atol=1e-6)  # model, AdamW state and the scheduler came back into the lazily built optimizer
    on_one_device = _fit(_planned("auto"), resume=str(tmp_path / "step-00000003.dcp"))
    _close(whole, on_one_device, atol=1e-6)  # the same folder, assembled in one process


# ---------------------------------------------------------------- out of memory under FSDP


def _oom_hook(trainer: Trainer, step: int) -> list:
    """Raise torch.OutOfMemoryError in the second block's forward (mid-forward, after an all-gather) once, at ``step``."""
    fired: list = []

    def hook(module, args):
        if trainer.step + 1 == step and not fired:
            fired.append(step)
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (simulated)")

    trainer.model.blocks[1].register_forward_pre_hook(hook)
    return fired


def test_fsdp_in_one_process_recovers_from_out_of_memory_inside_the_step():
    plain = _fit(_trainer("fsdp", clip_grad_norm=1.0))
    trainer = _trainer("fsdp", clip_grad_norm=1.0)
    trainer._place()
    fired = _oom_hook(trainer, 3)
    try:
        result = trainer.fit(_loader(), epochs=2)
        split = {k: v.clone() for k, v in trainer.strategy.full_state_dict(trainer.model).items()}
    finally:
        trainer.close()
    assert fired == [3] and result.oom_splits == 2 and result.steps == 12  # no step lost: the window was redone in halves
    _close(plain, split, atol=1e-6)


def test_with_several_processes_out_of_memory_stops_the_rank_and_leaves_the_split_for_the_restart(tmp_path, monkeypatch):
    from torchwise.core.errors import TrainingError
    from torchwise.train.oom import OOMRecovery

    batch = (torch.zeros(16, 5), torch.zeros(16))
    oom = torch.OutOfMemoryError("CUDA out of memory")
    no_folder = OOMRecovery(rank=1, world_size=2)
    with pytest.raises(TrainingError, match=r"rank 1 of 2 ran out of memory on cpu at step 6 with micro-batches of 16: .*give checkpoint_dir and torchrun --max-restarts"):
        no_folder.recover(oom, batch, torch.device("cpu"), 6)
    assert no_folder.splits == 1  # nothing changed in this process: it stops
    failing = OOMRecovery(rank=1, world_size=2, folder=tmp_path)
    with pytest.raises(TrainingError, match="resumes from the last checkpoint with 2 micro-batches per batch") as err:
        failing.recover(oom, batch, torch.device("cpu"), 6)
    assert "\n" not in str(err.value) and err.value.__cause__ is oom
    # the restarted group: every rank reads the same count, whether it resumes a checkpoint or starts over
    assert "rank 1 ran out of memory at step 6" in OOMRecovery(rank=0, world_size=2, folder=tmp_path).resume(1)
    assert OOMRecovery(rank=0, world_size=2, folder=tmp_path).resume(4) is None  # a checkpoint saved later already splits more
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    restarted = OOMRecovery(rank=1, world_size=2, folder=tmp_path)
    assert restarted.start_fresh() is not None and restarted.splits == 2
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "0")  # a new run in the same folder: the old count goes
    assert OOMRecovery(rank=0, world_size=2, folder=tmp_path).start_fresh() is None
    assert not (tmp_path / "oom.json").exists()


# ---------------------------------------------------------------- several optimizers, EMA, channels_last under FSDP

COMPOSE = Path(__file__).with_name("train_fsdp_compose_script.py")


def test_several_optimizers_shard_each_top_level_submodule_and_refuse_parameters_on_the_root():
    import train_fsdp_compose_script as compose
    from torchwise.train.fsdp import top_level_units

    gan = compose.GAN()
    blocks = find_blocks(gan)
    assert [type(b) for b in blocks] == [nn.Linear] * 4
    assert top_level_units(gan, blocks) == [gan.gen, gan.disc]  # model.gen(z) gathers what the Linear blocks leave
    listed = nn.Module()
    listed.parts = nn.ModuleList([nn.Linear(2, 2), nn.ReLU(), nn.Conv2d(1, 1, 1)])  # a ModuleList is never called: its members are
    assert top_level_units(listed, []) == [listed.parts[0], listed.parts[2]]
    gan.scale = nn.Parameter(torch.ones(()))
    with pytest.raises(UsageError, match=r"several optimizers shards each top-level submodule of GAN, but parameter\(s\) scale sit on the model itself"):
        top_level_units(gan, blocks)


def test_fsdp_with_two_optimizers_ema_and_accumulation_in_one_process_equals_the_single_device(tmp_path):
    import train_fsdp_compose_script as compose

    one = compose.run("gan", 8, strategy="auto", accumulate=2)
    sharded = compose.run("gan", 8, accumulate=2, checkpoint_dir=str(tmp_path), checkpoint_every=3)
    assert sharded["sharded_ema"] and not one["sharded_ema"]  # each rank averages its own shards
    _close(one["model"], sharded["model"], atol=1e-6)
    _close(one["ema"], sharded["ema"], atol=1e-6)
    assert sharded["val"] == pytest.approx(one["val"], abs=1e-6)  # evaluated on the averaged weights
    saved = read_full(tmp_path / "step-00000003.dcp")  # the EMA went through DCP with the plug-ins
    assert set(saved["optimizer"]) == {"d", "g"} and saved["plugins"]["ema"]["updates"] == 3
    assert not torch.equal(saved["plugins"]["ema"]["weights"]["gen.0.weight"], saved["model"]["gen.0.weight"])
    single = compose.run("gan", 8, strategy="auto", accumulate=2, resume=str(tmp_path / "step-00000003.dcp"))  # the folder in one process
    _close(one["model"], single["model"], atol=1e-6)
    _close(one["ema"], single["ema"], atol=1e-6)
    compose.run("gan", 8, strategy="auto", accumulate=2, checkpoint_dir=str(tmp_path / "plain"), checkpoint_every=3)
    back = compose.run("gan", 8, accumulate=2, resume=str(tmp_path / "plain" / "step-00000003.pt"))  # a single file starts FSDP
    _close(one["model"], back["model"], atol=1e-6)
    _close(one["ema"], back["ema"], atol=1e-6)  # the whole averages cut into this rank's shards


def test_fsdp_channels_last_feeds_nhwc_inputs_and_keeps_the_shards_contiguous():
    import train_fsdp_compose_script as compose

    channels_first = compose.run("cnn", 16, strategy="auto")
    trainer = compose.trainer("cnn", channels_last=True)
    trainer._place()
    seen: list = []
    trainer.model[0].register_forward_pre_hook(lambda m, args: seen.append(args[0].is_contiguous(memory_format=torch.channels_last)))
    try:
        trainer.fit(DataLoader(compose.data("cnn"), batch_size=16, shuffle=True), epochs=2)
        weight = trainer.model[0].weight
        assert type(weight).__name__ == "DTensor" and weight.to_local().is_contiguous()  # fully_shard refuses NHWC parameters
        last = {k: v.clone() for k, v in trainer.strategy.full_state_dict(trainer.model).items()}
    finally:
        trainer.close()
    assert seen and all(seen) and trainer.auto.channels_last
    _close(channels_first["model"], last, atol=1e-5)


@pytest.mark.slow
def test_two_processes_with_two_optimizers_and_ema_equal_one_process_and_resume_bitwise(tmp_path):
    import train_fsdp_compose_script as compose

    args = ["--batch", "4", "--accumulate", "2"]  # 2 processes x 4 samples x 2 micro-steps = one process's 8 x 2
    ok(torchrun(["gan", "two.pt", *args, "--checkpoint-dir", "ck", "--checkpoint-every", "3"], cwd=tmp_path, script=COMPOSE))
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    one = compose.run("gan", 8, strategy="auto", accumulate=2)
    assert two["world_size"] == 2 and two["sharded_ema"] and two["step"] == one["step"] == 8
    _close(one["model"], two["model"], atol=1e-5)
    _close(one["ema"], two["ema"], atol=1e-5)
    assert two["val"] == pytest.approx(one["val"], abs=1e-5)
    # resumed mid-epoch from step 3 (every optimizer, the EMA's shards, the data position): bitwise the same end
    ok(torchrun(["gan", "resumed.pt", *args, "--resume", "ck/step-00000003.dcp"], cwd=tmp_path, script=COMPOSE))
    resumed = torch.load(tmp_path / "resumed.pt", weights_only=False)
    assert resumed["events"] == ["resuming from ck/step-00000003.dcp"]
    assert_equal(two["model"], resumed["model"])
    assert_equal(two["ema"], resumed["ema"])
    assert resumed["val"] == two["val"]


@pytest.mark.slow
def test_two_processes_with_channels_last_equal_one_process_channels_first(tmp_path):
    import train_fsdp_compose_script as compose

    ok(torchrun(["cnn", "two.pt", "--batch", "8", "--channels-last"], cwd=tmp_path, script=COMPOSE))
    two = torch.load(tmp_path / "two.pt", weights_only=False)
    one = compose.run("cnn", 16, strategy="auto")
    assert two["world_size"] == 2 and two["channels_last_inputs"] and all(two["channels_last_inputs"])
    assert not any(one["channels_last_inputs"])
    _close(one["model"], two["model"], atol=1e-5)
    assert two["val"] == pytest.approx(one["val"], abs=1e-5)


# ---------------------------------------------------------------- torch.compile and tuned configurations under FSDP


def test_fsdp_with_compile_runs_the_compiled_graph_and_trains_like_eager(monkeypatch):
    from torch._dynamo.backends.registry import lookup_backend

    eager = _fit(_trainer("fsdp", clip_grad_norm=1.0, accumulate=2))
    graphs: list = []

    def counting(gm, example_inputs):  # aot_eager: dynamo and AOT autograd through FSDP's hooks, no C++ build
        graphs.append(gm)
        return lookup_backend("aot_eager")(gm, example_inputs)

    real_compile = torch.compile
    monkeypatch.setattr(torch, "compile", lambda model, **kw: real_compile(model, backend=counting))
    trainer = _trainer("fsdp", clip_grad_norm=1.0, accumulate=2, compile=True)
    trainer._place()
    syncs: list[bool] = []
    original = trainer.model.set_requires_gradient_sync
    trainer.model.set_requires_gradient_sync = lambda flag, **kw: (syncs.append(flag), original(flag, **kw))[1]
    try:
        trainer.fit(_loader(), epochs=2)
        compiled = {k: v.clone() for k, v in trainer.strategy.full_state_dict(trainer.model).items()}
        assert trainer.steps.model.verified  # the compiled call succeeded (no eager fallback)
    finally:
        trainer.close()
    assert not any("torch.compile failed" in e for e in trainer.events)
    assert graphs  # the forward went through the compiler
    assert syncs[:4] == [False, True, False, True]  # no_sync reached the sharded model inside the compile wrapper
    _close(eager, compiled, atol=1e-6)


def test_a_tuned_configuration_applies_under_fsdp(tmp_path):
    import json

    import train_fsdp_compose_script as compose
    from torchwise.core.tuned import describe_model

    path = tmp_path / "tune.json"
    made_for = describe_model(compose.cnn(), torch.zeros(1, 3, 8, 8))
    path.write_text(json.dumps({"precision": "bf16-mixed", "channels_last": True, "batch_size": 8, "meta": {"model": made_for, "task": "cnn"}}))
    trainer = compose.trainer("cnn", tuned=str(path))
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = trainer.fit(DataLoader(compose.data("cnn"), batch_size=16), epochs=1)
        policy = trainer.model._get_fsdp_state()._mp_policy
    finally:
        trainer.close()
    assert not [w for w in caught if "tune.json was made for" in str(w.message)]  # fully_shard's FSDP<Name> is still the user's class
    assert trainer.tuned_applied == {"precision": "bf16-mixed", "channels_last": True, "batch_size": 8}
    assert policy.param_dtype == torch.bfloat16  # the tuned precision became FSDP's mixed-precision policy
    assert trainer.auto.channels_last and result.steps == 8  # NHWC inputs, and the tuned batch of 8 (64 samples)
    assert result.train_loss is not None and math.isfinite(result.train_loss)


def test_channels_last_without_relayout_converts_inputs_only_and_switches_off_without_touching_the_model():
    from torchwise.train.auto import AutoSettings

    class Sharded(nn.Sequential):  # as an FSDP2 model: changing its parameters' format would fail
        def to(self, *args, **kwargs):
            raise AssertionError("the parameters' memory format must not change")

    model = Sharded(nn.Conv2d(3, 4, 3))
    auto = AutoSettings("auto", False, device_type="cuda", relayout_parameters=False)  # ("auto" decides for CUDA)
    auto.start(model, torch.zeros(2, 3, 8, 8))
    assert auto.channels_last and auto.prepare_input(torch.zeros(2, 3, 8, 8)).is_contiguous(memory_format=torch.channels_last)
    assert model[0].weight.is_contiguous()
    auto.observe(torch.zeros(2, 3, 9, 9))  # shapes vary: off again, the inputs stay as they come
    assert not auto.channels_last and auto.prepare_input(torch.zeros(2, 3, 9, 9)).is_contiguous()

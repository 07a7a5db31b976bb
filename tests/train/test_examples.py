"""The realistic examples (examples/*.py) train through ``torchwise train`` exactly as a plain
PyTorch loop would, and the doctor finds nothing wrong with them.

Each example is trained at small sizes with ``torchwise train --seed 0`` (in-process, through
``torchwise.cli.main``), and by a hand-written loop below that seeds torch the same way, builds
the same task, reads the batches in the order the Trainer's seeded sampler gives (a
``DistributedSampler`` over one replica: ``randperm(n)`` seeded with ``seed + epoch``), and
writes the optimizer and scheduler out by hand. The per-step losses in ``metrics.csv`` and the
weights of the final checkpoint must agree with the loop's.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import default_collate

from torchwise.utils.checkpoint import load_checkpoint
from torchwise.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SEED = 0

SMALL: dict[str, dict[str, Any]] = {
    "char_lm": dict(block_size=16, stride=16, n_embd=16, n_head=2, n_layer=1, max_chars=3000, batch_size=16, epochs=2),
    "gru_classifier": dict(n_train=256, n_val=64, max_len=20, embed=8, hidden=16, batch_size=32, epochs=2),
    "resnet": dict(width=8, size=8, limit=320, batch_size=32, epochs=2),
    "multitask": dict(n_train=256, n_val=64, length=32, channels=4, hidden=16, batch_size=32, epochs=2),
    "gan": dict(n=512, hidden=16, batch_size=64, epochs=2),
}


# ------------------------------------------------------------------------------------- helpers

def load_example(name: str) -> Any:
    """Import examples/NAME.py as a module (the examples folder is not a package)."""
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(EXAMPLES))  # resnet.py and digits data live side by side
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(EXAMPLES))
    return module


def build(name: str, **overrides: Any) -> tuple[Any, Any]:
    """The example module and its task at test sizes, built right after seeding torch (as the CLI does)."""
    module = load_example(name)
    torch.manual_seed(SEED)
    return module, module.task(**{**SMALL[name], **overrides})


def trainer_batches(dataset: Any, batch_size: int, epoch: int, collate: Callable | None = None) -> Iterator[Any]:
    """The batches of one epoch in the Trainer's order: randperm(len) seeded with seed + epoch."""
    g = torch.Generator()
    g.manual_seed(SEED + epoch)
    order = torch.randperm(len(dataset), generator=g).tolist()
    collate = collate or default_collate
    for i in range(0, len(order), batch_size):
        yield collate([dataset[j] for j in order[i : i + batch_size]])


def train_cli(name: str, tmp_path: Path, *extra: str, **task_args: Any) -> tuple[dict[str, list[float]], dict[str, Any]]:
    """``torchwise train examples/NAME.py:task --seed 0`` at test sizes; (logged values per name, last checkpoint)."""
    args = ["train", f"{EXAMPLES / name}.py:task", "--seed", str(SEED), "--device", "cpu", "--log-dir", str(tmp_path),
            "--log-every", "1", "--no-progress", *extra]
    for key, value in {**SMALL[name], **task_args}.items():
        args += ["--task-arg", f"{key}={value!r}"]
    assert main(args) == 0
    logged: dict[str, list[float]] = defaultdict(list)
    with open(tmp_path / "metrics.csv", newline="") as f:
        for row in csv.DictReader(f):
            logged[row["name"]].append(float(row["value"]))
    last = max((tmp_path / "checkpoints").glob("step-*.pt"))
    return logged, load_checkpoint(last, map_location="cpu")


def assert_same_run(logged: dict[str, list[float]], state: dict[str, Any], hand_logged: dict[str, list[float]], model: torch.nn.Module) -> None:
    for key, values in hand_logged.items():
        assert key in logged, f"{key} was not logged; logged: {sorted(logged)}"
        assert len(logged[key]) == len(values), f"{key}: {len(logged[key])} values logged, the hand loop has {len(values)}"
        torch.testing.assert_close(torch.tensor(logged[key]), torch.tensor(values), rtol=1e-4, atol=1e-5, msg=lambda m: f"{key}: {m}")
    ours = model.state_dict()
    assert state["model"].keys() == ours.keys()
    for key, value in ours.items():
        torch.testing.assert_close(state["model"][key], value, rtol=1e-4, atol=1e-5, msg=lambda m: f"weights {key}: {m}")


def windows(n_batches: int, accumulate: int) -> list[list[int]]:
    """Micro-batch indices of each optimizer step of one epoch (the last window may be short)."""
    return [list(range(i, min(i + accumulate, n_batches))) for i in range(0, n_batches, accumulate)]


# ------------------------------------------------------------------------------ char_lm (a)

def hand_char_lm(task: Any, module: Any, epochs: int, batch_size: int, accumulate: int) -> tuple[dict[str, list[float]], Any]:
    """AdamW over name-based decay groups, warm-up + cosine over the whole run, accumulation."""
    model, data = task.model, task.train_data
    n_batches = math.ceil(len(data) / batch_size)
    total = epochs * math.ceil(n_batches / accumulate)
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "norm" in n or "emb" in n)]
    rest = [p for n, p in model.named_parameters() if n.endswith("bias") or "norm" in n or "emb" in n]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}], lr=3e-3, betas=(0.9, 0.95))
    warmup = max(1, int(0.1 * total))

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * progress))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    torch.manual_seed(SEED)
    logged: dict[str, list[float]] = defaultdict(list)
    for epoch in range(epochs):
        batches = list(trainer_batches(data, batch_size, epoch))
        for window in windows(len(batches), accumulate):
            losses = []
            for i in window:
                x, y = batches[i]
                loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten())
                (loss / len(window)).backward()
                losses.append(loss.item())
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            logged["train/loss"].append(sum(losses) / len(losses))
            logged["train/lr"].append(opt.param_groups[0]["lr"])
    return logged, sched


def test_char_lm_trains_like_a_plain_loop(tmp_path):
    module, task = build("char_lm")
    x, y = task.train_data[3]
    assert torch.equal(y[:-1], x[1:]) and not torch.equal(x, y)  # each target is the next character
    hand, _ = hand_char_lm(task, module, epochs=2, batch_size=16, accumulate=1)
    logged, state = train_cli("char_lm", tmp_path)
    assert_same_run(logged, state, hand, task.model)
    assert hand["train/loss"][-1] < hand["train/loss"][0] - 0.3  # it learns, even at this size
    assert len(state["optimizer"]["param_groups"]) == 2 and [g["weight_decay"] for g in state["optimizer"]["param_groups"]] == [0.1, 0.0]


def test_char_lm_schedule_follows_the_command_line(tmp_path):
    """--epochs/--batch-size/--accumulate change the plan: the warm-up + cosine still ends at its floor."""
    module, task = build("char_lm", batch_size=8, epochs=1)
    hand, sched = hand_char_lm(task, module, epochs=1, batch_size=8, accumulate=3)
    logged, state = train_cli("char_lm", tmp_path, "--epochs", "1", "--batch-size", "8", "--accumulate", "3")
    assert_same_run(logged, state, hand, task.model)
    n_batches = math.ceil(len(task.train_data) / 8)
    assert len(logged["train/lr"]) == math.ceil(n_batches / 3)
    assert logged["train/lr"][-1] == pytest.approx(0.1 * 3e-3)  # the floor: 10% of the peak
    assert max(logged["train/lr"]) == pytest.approx(3e-3)  # the warm-up reached the peak


# ----------------------------------------------------------------------- gru_classifier (b)

def test_gru_classifier_gets_lengths_and_trains_like_a_plain_loop(tmp_path):
    module, task = build("gru_classifier")
    model, opt = task.model, torch.optim.Adam(task.model.parameters(), lr=3e-3)
    collate = module.pad_collate(pad_value=module.PAD)
    torch.manual_seed(SEED)
    hand: dict[str, list[float]] = defaultdict(list)
    for epoch in range(2):
        for batch in trainer_batches(task.train_data, 32, epoch, collate):
            loss = F.cross_entropy(model(batch["input_ids"], batch["lengths"]), batch["label"])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            hand["train/loss"].append(loss.item())
    logged, state = train_cli("gru_classifier", tmp_path)
    assert_same_run(logged, state, hand, model)
    assert "val/accuracy" in logged


def test_gru_ignores_the_padding():
    """The packed GRU gives each sequence the same output however much padding its batch has."""
    module = load_example("gru_classifier")
    torch.manual_seed(0)
    model = module.PackedGRU(hidden=8).eval()
    short, long = torch.tensor([3, 1, 4]), torch.tensor([1, 5, 9, 2, 6, 5, 3])
    collate = module.pad_collate(pad_value=module.PAD)
    alone = collate([{"input_ids": short, "label": torch.tensor(0)}])
    padded = collate([{"input_ids": short, "label": torch.tensor(0)}, {"input_ids": long, "label": torch.tensor(1)}])
    assert padded["input_ids"].shape == (2, 7)
    torch.testing.assert_close(model(alone["input_ids"], alone["lengths"])[0], model(padded["input_ids"], padded["lengths"])[0])


# ------------------------------------------------------------------------------- resnet (c)

def test_resnet_one_cycle_trains_like_a_plain_loop(tmp_path):
    module, task = build("resnet", batch_size=24)
    model, data = task.model, task.train_data
    opt = torch.optim.SGD(model.parameters(), lr=0.2, momentum=0.9, nesterov=True, weight_decay=5e-4)
    total = 2 * math.ceil(len(data) / 24)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=total)
    torch.manual_seed(SEED)
    hand: dict[str, list[float]] = defaultdict(list)
    for epoch in range(2):
        for x, y in trainer_batches(data, 24, epoch):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            sched.step()
            hand["train/loss"].append(loss.item())
            hand["train/lr"].append(opt.param_groups[0]["lr"])
    logged, state = train_cli("resnet", tmp_path, "--batch-size", "24")  # the cycle follows the batch size
    assert_same_run(logged, state, hand, model)  # BatchNorm's running statistics included
    # the last step ran at the cycle's floor (initial lr / final_div_factor); logged after each step, so one before last
    assert logged["train/lr"][-2] == pytest.approx(0.2 / 25 / 1e4)
    assert state["model"]["stem.1.num_batches_tracked"] == total


# ---------------------------------------------------------------------------- multitask (d)

def test_multitask_dict_step_logs_each_term_and_trains_like_a_plain_loop(tmp_path):
    module, task = build("multitask", reg_weight=0.5)
    model, opt = task.model, torch.optim.AdamW(task.model.parameters(), lr=3e-3)
    torch.manual_seed(SEED)
    hand: dict[str, list[float]] = defaultdict(list)
    for epoch in range(2):
        for batch in trainer_batches(task.train_data, 32, epoch):
            out = model(batch["signal"], batch["meta"])
            cls = F.cross_entropy(out["logits"], batch["label"])
            reg = F.mse_loss(out["value"], batch["value"])
            loss = cls + 0.5 * reg
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            for key, value in (("loss", loss), ("cls_loss", cls), ("reg_loss", reg)):
                hand[f"train/{key}"].append(value.item())
        model.eval()  # validation at each epoch's end: the loss, each term, and accuracy on the step's "output"/"target"
        sums: dict[str, float] = defaultdict(float)
        with torch.no_grad():
            for i in range(0, len(task.val_data), 32):
                batch = default_collate([task.val_data[j] for j in range(i, min(i + 32, len(task.val_data)))])
                out = model(batch["signal"], batch["meta"])
                cls = F.cross_entropy(out["logits"], batch["label"])
                reg = F.mse_loss(out["value"], batch["value"])
                acc = (out["logits"].argmax(-1) == batch["label"]).float().mean()
                for key, value in (("loss", cls + 0.5 * reg), ("cls_loss", cls), ("reg_loss", reg), ("accuracy", acc)):
                    sums[key] += value.item() * len(batch["label"])
        model.train()
        for key, total in sums.items():
            hand[f"val/{key}"].append(total / len(task.val_data))
    logged, state = train_cli("multitask", tmp_path, reg_weight=0.5)
    assert_same_run(logged, state, hand, model)


# ---------------------------------------------------------------------------------- gan (e)

def test_gan_two_optimizers_train_like_a_plain_loop(tmp_path):
    module, task = build("gan")
    model = task.model
    opt_d = torch.optim.Adam(model.discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    opt_g = torch.optim.Adam(model.generator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    bce = F.binary_cross_entropy_with_logits
    torch.manual_seed(SEED)
    hand: dict[str, list[float]] = defaultdict(list)
    for epoch in range(2):
        for (real,) in trainer_batches(task.train_data, 64, epoch):
            opt_d.zero_grad(set_to_none=True)  # the discriminator's step: generated points detached
            fake = model.generator(torch.randn(len(real), 8)).detach()
            d_real, d_fake = model.discriminator(real), model.discriminator(fake)
            d_loss = bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))
            d_loss.backward()
            opt_d.step()
            opt_g.zero_grad(set_to_none=True)  # the generator's step (its loss also leaves gradients in D)
            d_out = model.discriminator(model.generator(torch.randn(len(real), 8)))
            g_loss = bce(d_out, torch.ones_like(d_out))
            g_loss.backward()
            opt_g.step()
            hand["train/d/loss"].append(d_loss.item())
            hand["train/d/d_real"].append(torch.sigmoid(d_real).mean().item())
            hand["train/d/d_fake"].append(torch.sigmoid(d_fake).mean().item())
            hand["train/g/loss"].append(g_loss.item())
    logged, state = train_cli("gan", tmp_path)
    assert_same_run(logged, state, hand, model)
    for name, opt in (("d", opt_d), ("g", opt_g)):  # the checkpoint holds both optimizers' states
        ours = opt.state_dict()["state"]
        saved = state["optimizer"][name]["state"]
        assert saved.keys() == ours.keys()
        for k in ours:
            torch.testing.assert_close(saved[k]["exp_avg_sq"], ours[k]["exp_avg_sq"], rtol=1e-4, atol=1e-7)


def test_gan_says_it_follows_train_loss_for_want_of_validation_data(tmp_path, capsys):
    """No val_data: best.pt and the run's words name train/loss (the sum of both losses), never val/loss."""
    _, task = build("gan", epochs=1)
    from torchwise.train import Trainer

    result = Trainer.from_task(task, device="cpu", seed=SEED, checkpoint_dir=tmp_path, log_dir=False).fit()
    out = capsys.readouterr().out
    assert "monitoring train/loss (the sum of the d and g losses; no validation data, so it stands in for val/loss): lower is better" in out
    best = next(line for line in out.splitlines() if line.strip().startswith("best checkpoint"))
    assert f"(train/loss {result.train_loss:.4g}, epoch 1)" in best and "(val/" not in out and "monitoring val/" not in out
    assert "  8 steps (1 epoch)\n" in out and "1 epochs" not in out  # (one epoch, singular)
    assert load_checkpoint(result.best_checkpoint)["plugins"]["best_checkpoint"]["followed"] == "train/loss"


# ------------------------------------------------------------------------------ exact resume

@pytest.mark.slow
def test_gan_resumed_after_an_epoch_ends_as_an_uninterrupted_run(tmp_path):
    """Both optimizers' states and the RNG (noise is drawn inside the steps) come back from the checkpoint."""
    _, whole = train_cli("gan", tmp_path / "whole", "--epochs", "2")
    train_cli("gan", tmp_path / "split", "--epochs", "1")
    _, resumed = train_cli("gan", tmp_path / "split", "--epochs", "2", "--resume", "last")
    assert resumed["step"] == whole["step"] == 16
    for key, value in whole["model"].items():
        assert torch.equal(resumed["model"][key], value), key


# ------------------------------------------------------------------------------ doctor-clean

@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMALL))
def test_example_is_doctor_clean(name, capsys):
    """``torchwise doctor examples/NAME.py:task --task-arg ...`` runs its steps and finds no error or warning."""
    # the loader-wait checks (TW202/TW222) time three steps by the wall clock: on a busy machine that is
    # noise, and timings are no unit test's business (they were run and read at full size by hand)
    args = ["doctor", f"{EXAMPLES / name}.py:task", "--device", "cpu", "--json", "--skip", "TW202", "--skip", "TW222"]
    for key, value in SMALL[name].items():
        args += ["--task-arg", f"{key}={value!r}"]
    rc = main(args)
    out, err = capsys.readouterr()
    assert rc in (0, 1), err.strip()
    report = json.loads(out)
    assert report["measured"].get("steps_run") == 3, report["failure"]  # "no findings" means nothing if no step ran
    bad = [f"{f['code']} {f['severity']}: {f['message']}" for f in report["findings"] if f["severity"] in ("error", "warning")]
    assert not bad, bad


def test_the_digits_data_is_read_from_scikit_learns_file_without_importing_it(monkeypatch):
    from sklearn.datasets import load_digits

    from torchwise.examples.digits import digits_arrays

    reference = load_digits()
    for name in [m for m in sys.modules if m.startswith("sklearn.")]:
        monkeypatch.setitem(sys.modules, name, None)  # any import from scikit-learn now fails (finding its folder still works)
    images, target = digits_arrays()
    assert images.shape == (1797, 8, 8) and (images == reference.images).all() and (target == reference.target).all()
    assert target.dtype == reference.target.dtype and images.dtype == reference.images.dtype

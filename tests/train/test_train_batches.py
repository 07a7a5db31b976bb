"""How a batch reaches the model (dict -> keywords, forward-signature extras, pad_collate lengths)
and the label check on every batch, on the host, before the copy to the device."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader

from train_helpers import data, loader, mlp, quiet, weights

from torchwise import pad_collate
from torchwise.utils.batch import forward_names, model_call
from torchwise.core.errors import DataError
from torchwise.utils.labels import check_batch_labels
from torchwise.train import Trainer
from torchwise.train import labelcheck as labelcheck_module
from torchwise.train import stepper as stepper_module


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(6, 3), nn.Linear(2, 3)
        self.calls: list[tuple] = []

    def forward(self, image, text, mask=None):
        self.calls.append((image.shape, text.shape, mask is not None))
        out = self.a(image) + self.b(text)
        return out if mask is None else out * mask.unsqueeze(-1)


def _batches(kind):
    x, y = data().tensors
    for i in range(0, 64, 16):
        image, text, target = x[i:i + 16], x[i:i + 16, :2], y[i:i + 16]
        if kind == "mapping-inputs":
            yield {"inputs": {"image": image, "text": text}, "targets": target}
        elif kind == "tuple-inputs":
            yield ((image, text), target)
        elif kind == "keys-by-name":
            yield {"image": image, "text": text, "label": target, "mask": torch.ones(16), "ignored": torch.zeros(1)}


@pytest.mark.parametrize("kind, has_mask", [("mapping-inputs", False), ("tuple-inputs", False), ("keys-by-name", True)])
def test_batches_reach_a_two_input_model_whole(kind, has_mask):
    model = TwoInputs()
    batches = list(_batches(kind))
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    r = t.fit(batches, batches, epochs=1)
    assert r.steps == 4 and "val/loss" in r.val
    assert model.calls[0] == (torch.Size([16, 6]), torch.Size([16, 2]), has_mask)


def test_model_call_rules():
    names = forward_names(TwoInputs())
    assert names == frozenset({"image", "text", "mask"})
    x, y, m = torch.zeros(2, 6), torch.zeros(2, dtype=torch.long), torch.ones(2)
    assert model_call((x, y, torch.tensor([1, 2])), names)[:2] == ((x,), {})  # tuple extras are positional: not passed
    args, kwargs, target = model_call({"input_ids": x, "label": y, "mask": m, "other": m}, frozenset({"input_ids", "mask"}))
    assert args == (x,) and set(kwargs) == {"mask"} and target is y
    with pytest.raises(DataError, match="expected a dict with an input key"):
        model_call({"foo": x, "label": y}, names)


class PackedGRU(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4, padding_idx=0)
        self.gru = nn.GRU(4, 5, batch_first=True)
        self.head = nn.Linear(5, 2)
        self.seen_lengths: list[list[int]] = []

    def forward(self, input_ids, lengths):
        self.seen_lengths.append(lengths.tolist())
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(input_ids), lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, h = self.gru(packed)
        return self.head(h[-1])


def test_pad_collate_lengths_reach_forward():
    g = torch.Generator().manual_seed(0)
    samples = [{"input_ids": torch.randint(1, 10, (n,), generator=g), "label": torch.tensor(n % 2)} for n in (3, 5, 2, 7, 4, 6)]
    dl = DataLoader(samples, batch_size=3, collate_fn=pad_collate())
    model = PackedGRU()
    Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet()).fit(dl, epochs=1)
    assert model.seen_lengths == [[3, 5, 2], [7, 4, 6]]


def test_a_bad_label_in_batch_3_is_named_before_any_step_on_it():
    ds = data(n=64)
    ds.tensors[1][20] = 7  # batch 3 of 8-sample batches, a 3-class model
    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet())
    snapshots = []

    class Snap:
        def on_step_end(self, trainer):
            snapshots.append(weights(trainer.model))

    t.callbacks = [Snap()]
    with pytest.raises(DataError, match=r"batch 3 of epoch 1 \(before step 3\): 1 target label\(s\) out of range .*found 7"):
        t.fit(loader(ds), epochs=1)
    assert t.step == 2 and all(torch.equal(v, snapshots[-1][k]) for k, v in weights(model).items())


def _picked_log_prob_loss(out, y):
    """NLL written by hand: advanced indexing wraps a label of -1 around silently (no range check)."""
    return -out.log_softmax(1)[torch.arange(len(y)), y].mean()


def test_a_loss_without_its_own_range_check_gets_the_host_check_on_every_cpu_batch(monkeypatch):
    calls = []
    real = labelcheck_module.check_batch_labels
    monkeypatch.setattr(labelcheck_module, "check_batch_labels", lambda t, n: calls.append(n) or real(t, n))
    ds = data(n=64)
    ds.tensors[1][20] = -1  # would train silently on class 2 of 3 without the check
    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), _picked_log_prob_loss, **quiet())
    with pytest.raises(DataError, match=r"batch 3 of epoch 1 \(before step 3\): 1 target label\(s\) out of range .*found -1"):
        t.fit(loader(ds), epochs=1)
    assert t.step == 2 and calls == [3, 3]  # batches 2 and 3, each before its step


@pytest.mark.parametrize("loss_fn", [nn.CrossEntropyLoss(), nn.functional.cross_entropy])
def test_on_the_cpu_cross_entropy_checks_its_own_labels_and_the_trainer_names_the_batch(monkeypatch, loss_fn):
    calls = []
    real = labelcheck_module.check_batch_labels
    monkeypatch.setattr(labelcheck_module, "check_batch_labels", lambda t, n: calls.append(n) or real(t, n))
    model = mlp()
    Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, **quiet()).fit(loader(), epochs=1)
    assert calls == []  # no second pass per step: torch's own check stands guard on the CPU
    ds = data(n=64)
    ds.tensors[1][40] = 5
    model = mlp()
    t = Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), loss_fn, **quiet())
    with pytest.raises(DataError, match=r"batch 6 of epoch 1 \(before step 6\): .*found 5") as info:
        t.fit(loader(ds), epochs=1)
    assert t.step == 5 and calls == [3] and isinstance(info.value.__context__, IndexError)


def test_an_index_error_that_is_not_about_labels_stays_itself():
    class Broken(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(6, 3)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls == 3:
                raise IndexError("a bug in the model")
            return self.lin(x)

    model = Broken()
    with pytest.raises(IndexError, match="a bug in the model"):
        Trainer(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet()).fit(loader(), epochs=1)


def test_labels_are_checked_on_the_host_before_the_device_copy(monkeypatch):
    order = []
    monkeypatch.setattr(stepper_module, "to_device", lambda b, device, non_blocking=False: order.append(("copy", id(b))) or b)
    real = labelcheck_module.check_batch_labels
    monkeypatch.setattr(labelcheck_module, "check_batch_labels", lambda t, n: order.append(("check", t.device.type)) or real(t, n))

    class Pretend(Trainer):  # a CPU run that copies as a GPU run would
        def _place(self):
            super()._place()
            self.steps.copy = True

    model = mlp()
    Pretend(model, torch.optim.SGD(model.parameters(), lr=0.1), nn.CrossEntropyLoss(), **quiet()).fit(loader(), max_steps=4)
    # batch 1 shows the output width; batches 2..4 are checked on the CPU, each before its copy
    assert [o[0] for o in order] == ["copy", "check", "copy", "check", "copy", "check", "copy"]
    assert all(o[1] == "cpu" for o in order if o[0] == "check")


def test_check_batch_labels():
    assert check_batch_labels(torch.tensor([0, 1, 2]), 3) is None
    assert check_batch_labels(torch.tensor([0, -100, 2]), 3) is None  # ignore_index
    assert "found -1, 3" in check_batch_labels(torch.tensor([3, -1, 0]), 3)
    assert check_batch_labels(torch.tensor([0.5, 7.0]), 3) is None  # not class labels

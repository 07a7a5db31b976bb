"""The real frameworks on small models, one module-scoped pair of runs each (their imports are
slow): Lightning's ``Trainer`` with :class:`TorchwiseWatch`, Hugging Face's ``Trainer`` with
:class:`TorchwiseCallback` on a tiny config-built model (nothing downloaded), and an Accelerate
loop inside ``torchwise.watching``. In each: a planted fault is found, a clean run stays quiet."""

from __future__ import annotations

import importlib.util

import pytest
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import torchwise
from models import data, mlp

pytestmark = pytest.mark.slow


def _needs(name):
    return pytest.mark.skipif(importlib.util.find_spec(name) is None, reason=f"{name} is not installed")


@pytest.fixture(scope="module")
def lightning_runs():
    import lightning.pytorch as pl

    from torchwise.integrations.lightning import TorchwiseWatch

    class Module(pl.LightningModule):
        def __init__(self, dead):
            super().__init__()
            self.net = mlp(dead=dead)

        def training_step(self, batch, i):
            x, y = batch
            return F.cross_entropy(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.Adam(self.parameters(), lr=3e-3)

    x, y = data()
    out = {}
    for dead in (False, True):
        cb = TorchwiseWatch(every=5, alerts=False)
        trainer = pl.Trainer(max_steps=80, accelerator="cpu", devices=1, callbacks=[cb], logger=False, enable_checkpointing=False,
                             enable_progress_bar=False, enable_model_summary=False)
        trainer.fit(Module(dead), DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True))
        out[dead] = cb.report
    return out


@_needs("lightning")
def test_lightning(lightning_runs):
    clean, dead = lightning_runs[False], lightning_runs[True]
    assert clean.findings == [], [str(f) for f in clean.findings]
    assert clean.measured["steps_run"] == 80 and clean.measured["samples"] >= 20
    [f] = dead.by_code("TW131")  # seen although Lightning runs forward and backward inside optimizer.step(closure)
    assert f.evidence["first_step"] == 20 and "64 of 64 units" in f.message


@pytest.fixture(scope="module")
def hf_runs(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    from torchwise.integrations.hf import TorchwiseCallback

    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 60, (512, 12), generator=g)
    labels = (ids[:, :6].float().mean(1) > ids[:, 6:].float().mean(1)).long()

    class Data(torch.utils.data.Dataset):
        def __len__(self):
            return len(ids)

        def __getitem__(self, i):
            return {"input_ids": ids[i], "attention_mask": torch.ones(12, dtype=torch.long), "labels": labels[i]}

    out = {}
    for lr in (1e-3, 0.0):
        torch.manual_seed(0)
        config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                            max_position_embeddings=16, num_labels=2)
        model = BertForSequenceClassification(config)
        cb = TorchwiseCallback(every=5, alerts=False)
        args = TrainingArguments(output_dir=str(tmp_path_factory.mktemp("hf")), max_steps=60, per_device_train_batch_size=16,
                                 learning_rate=lr, report_to=[], save_strategy="no", logging_strategy="no", use_cpu=True,
                                 disable_tqdm=True, dataloader_num_workers=0, lr_scheduler_type="constant")
        Trainer(model=model, args=args, train_dataset=Data(), callbacks=[cb]).train()
        out[lr] = cb.report
    return out


@_needs("transformers")
def test_hugging_face(hf_runs):
    clean, frozen = hf_runs[1e-3], hf_runs[0.0]
    assert clean.measured["steps_run"] == 60
    # quiet but for the doctor's TW130 on attention: query/key gradients are ~1e-7 at init in a tiny BERT (the
    # doctor's own calibration, reported to its owner); nothing else, and nothing of the planted fault
    assert not [f for f in clean.findings if f.code != "TW130"], [str(f) for f in clean.findings]
    assert any("did not change" in f.message for f in frozen.by_code("TW133")), [str(f) for f in frozen.findings]


@_needs("accelerate")
def test_accelerate_loop_in_watching():
    from accelerate import Accelerator

    x, y = data()
    reports = {}
    for dead in (False, True):
        accelerator = Accelerator(cpu=True)
        model = mlp(dead=dead)
        opt = torch.optim.Adam(model.parameters(), lr=3e-3)
        loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
        model, opt, loader = accelerator.prepare(model, opt, loader)
        with torchwise.watching(model, opt, every=5, alerts=False) as w:
            for epoch in range(2):
                for xb, yb in loader:
                    loss = F.cross_entropy(model(xb), yb)
                    opt.zero_grad()
                    accelerator.backward(loss)
                    opt.step()
        reports[dead] = w.report
    assert reports[False].findings == [] and reports[False].measured["steps_run"] == 64
    assert reports[True].by_code("TW131")

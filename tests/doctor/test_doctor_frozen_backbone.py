"""A frozen backbone deliberately left out of the optimizer is fine-tuning done right: no TW115 warning
(only a hint saying plainly how much of the model trains), no TW114, no Trainer TW115 warning; the twin
that forgets the head is flagged."""

from __future__ import annotations

import warnings

import torch
from torch import nn

from torchwise.doctor import doctor
from torchwise.train import Trainer

from doctor_models import class_batch

CE = nn.CrossEntropyLoss()


def fine_tuning_model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))
    for p in model[:4].parameters():  # the backbone: frozen
        p.requires_grad_(False)
    return model


def test_frozen_backbone_outside_the_optimizer_is_quiet():
    model = fine_tuning_model()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
    report = doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt)
    [plain] = report.by_code("TW115")
    assert plain.severity == "hint" and "values train" in plain.message and plain.evidence["trainable_tensors"] == ["4.weight", "4.bias"]
    assert report.by_code("TW114") == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the Trainer's own TW115 warning must not fire either
        Trainer(model, opt, CE, device="cpu", log_dir=False, progress=False)


def test_the_same_model_with_the_head_left_out_is_flagged():
    model = fine_tuning_model()
    model.add_module("5", nn.Linear(4, 4))  # a new head added after the optimizer was built
    opt = torch.optim.AdamW(model[4].parameters(), lr=1e-3)
    [finding] = doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt).by_code("TW115")
    assert finding.severity == "warning" and finding.evidence["missing"] == ["5.weight", "5.bias"]

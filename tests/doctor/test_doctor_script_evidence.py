"""Script mode's evidence (script_evidence.py) in-process: the hooks of ``doctor -- python train.py``
attached around a plain loop in this process (no child), for the cases that must stay quiet and
the ones that must not: which modules count as the trained model, which optimizer tensors are
foreign, which forward passes are evaluation."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from doctor_models import doctored

pytestmark = pytest.mark.usefixtures("one_thread")


def data(n: int = 64):
    g = torch.Generator().manual_seed(0)
    return torch.randn(n, 8, generator=g), torch.randint(0, 3, (n,), generator=g)


def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 3))


def test_teacher_ema_temperature_and_adversarial_eval_passes_stay_quiet():
    x, y = data()
    student, teacher = net(), net().requires_grad_(False).eval()
    ema = copy.deepcopy(student)
    temperature = nn.Parameter(torch.ones(()))  # outside any module, trained through the loss
    opt = torch.optim.Adam([*student.parameters(), temperature], lr=1e-2)

    def loop():
        for _ in range(10):
            student.eval()  # an attack on the inputs in eval mode, through autograd.grad
            xa = x.clone().requires_grad_(True)
            g, = torch.autograd.grad(nn.functional.cross_entropy(student(xa), y), xa)
            student.train()
            soft = teacher(x + 0.01 * g.sign()).softmax(-1)
            loss = nn.functional.cross_entropy(student(x) / temperature, soft)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for e, p in zip(ema.parameters(), student.parameters()):
                    e.lerp_(p, 0.1)
                ema.eval()
                ema(x)

    report, attached = doctored(loop)
    assert report.findings == [], [str(f) for f in report.findings]
    assert attached.evidence.models() == [student]


def test_optimizer_of_another_model_instance_and_an_eval_mode_training_loop():
    x, y = data()
    model = net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    model = net()  # re-created after the optimizer: the optimizer trains the old one

    def loop():
        model.eval()
        for _ in range(10):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop)
    foreign = [f for f in report.by_code("TW115") if f.severity == "error"]
    assert foreign and foreign[0].evidence["foreign_tensors"] == 4
    missing = [f for f in report.by_code("TW115") if "not in the optimizer" in f.message]
    assert missing and missing[0].evidence["count"] == 4
    [mode] = report.by_code("TW109")
    assert mode.evidence["layers"] == ["2"] and "test_doctor_script_evidence.py" in mode.message


def test_evaluation_with_autograd_on_between_training_steps():
    x, y = data()
    model = net()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)

    def loop():
        for _ in range(10):
            model.train()
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            model.eval()
            model(x).argmax(1)  # evaluation without no_grad: a graph nobody uses

    report, _ = doctored(loop)
    [f] = report.by_code("TW104")
    assert f.evidence["with_autograd_graph"] >= 5 and "test_doctor_script_evidence.py" in f.where


def test_frozen_batchnorm_that_still_updates_and_batchnorm_kept_in_bfloat16():
    x, y = data()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 3)).to(torch.bfloat16)
    model[1].requires_grad_(False)  # "frozen", but model.train() keeps updating its statistics
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)

    def loop():
        for _ in range(10):
            model.train()
            loss = nn.functional.cross_entropy(model(x.to(torch.bfloat16)).float(), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop)
    [frozen] = [f for f in report.by_code("TW109") if "meant frozen" in f.message]
    assert frozen.evidence["layers"] == ["1"] and frozen.evidence["frozen_by"] == ["requires_grad=False"]
    [half] = report.by_code("TW218")
    assert half.evidence["layers"] == ["1"] and half.evidence["dtypes"] == ["bfloat16"]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_script_channels_last_and_tensor_core_shapes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 20, 3, bias=False), nn.BatchNorm2d(20), nn.ReLU(), nn.Flatten(), nn.LazyLinear(10)).cuda()
    x, y = torch.randn(12, 3, 16, 16, device="cuda"), torch.randint(0, 10, (12,), device="cuda")
    model(x)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def loop():
        for _ in range(4):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    report, _ = doctored(loop)
    assert report.by_code("TW212") and report.by_code("TW210")
    sizes = {(s["module"], s["size"]) for f in report.by_code("TW210") for s in f.evidence["sizes"]}
    assert ("0", "out_channels") in sizes and ("batch", "batch_size") in sizes

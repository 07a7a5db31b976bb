"""The doctor's public behaviour: copies only, report object, selection, bad input."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest
import torch
from torch import nn

import torchwise
from torchwise.doctor import DoctorReport, Finding, available_checks, doctor
from torchwise.core.errors import UsageError

from doctor_models import class_batch, mlp


class WithBN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.drop(torch.relu(self.bn(self.fc(x)))))


def test_user_model_optimizer_and_rng_are_untouched():
    torch.manual_seed(0)
    model = WithBN()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    x, y = class_batch()
    nn.functional.cross_entropy(model(x), y).backward()
    opt.step()  # the optimizer now has state (exp_avg...)
    model.bn.eval()  # a per-module mode that must survive
    params = {k: v.detach().clone() for k, v in model.state_dict().items()}
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    modes = {n: m.training for n, m in model.named_modules()}
    opt_state = copy.deepcopy(opt.state_dict())
    rng = torch.get_rng_state()

    report = doctor(model, batch=(x, y), loss_fn=nn.CrossEntropyLoss(), optimizer=opt, steps=3)

    assert report.measured["steps_run"] == 3
    for k, v in model.state_dict().items():
        assert torch.equal(v, params[k]), k
    for n, p in model.named_parameters():
        assert torch.equal(p.grad, grads[n]), n
    assert {n: m.training for n, m in model.named_modules()} == modes
    after = opt.state_dict()
    assert after["param_groups"] == opt_state["param_groups"]
    for i, st in opt_state["state"].items():
        for k, v in st.items():
            assert torch.equal(after["state"][i][k], v)
    assert all(p is q for p, q in zip(opt.param_groups[0]["params"], model.parameters()))
    assert torch.equal(torch.get_rng_state(), rng)


def test_copy_really_trains():
    # the steps are real: the copy's loss falls over a few steps on one batch
    from torchwise.doctor.probe import build_context, run_steps

    torch.manual_seed(0)
    model = mlp()
    x, y = class_batch()
    ctx = build_context("m", model, lambda m: torch.optim.SGD(m.parameters(), lr=0.5), nn.CrossEntropyLoss(), None, (x, y),
                        steps=5, device="cpu", precision="32", for_device=None, cudnn_benchmark=None)
    run_steps(ctx, (x, y))
    assert ctx.failure is None and len(ctx.steps) == 5
    before = nn.functional.cross_entropy(model(x), y)
    after = nn.functional.cross_entropy(ctx.model(x), y)
    assert after < before


def test_report_object_json_and_table():
    model = nn.Sequential(nn.Linear(16, 4), nn.Softmax(dim=1))
    report = doctor(model, batch=class_batch(), loss_fn=nn.CrossEntropyLoss())
    assert isinstance(report, DoctorReport)
    assert not report.ok
    f = report.by_code("TW102")[0]
    assert isinstance(f, Finding) and f.severity == "error" and f.fix and f.where
    assert f.title  # from the catalog
    data = json.loads(report.to_json())
    assert data["ok"] is False
    assert data["findings"][0]["code"] == "TW102"
    assert {"code", "severity", "where", "evidence", "fix", "title", "message"} <= set(data["findings"][0])
    assert any(s["codes"] == ["TW207"] and "CUDA" in s["reason"] for s in data["skipped"])
    text = str(report)
    assert "TW102" in text and "error" in text and "skipped TW207" in text


def test_callable_package_and_lazy_export():
    assert torchwise.doctor is sys.modules["torchwise.doctor"]  # the package itself, made callable
    assert torchwise.doctor.doctor is doctor
    report = torchwise.doctor(mlp(), batch=class_batch(), loss_fn=nn.CrossEntropyLoss(), steps=1)
    assert isinstance(report, DoctorReport) and report.ok
    # lazy: `import torchwise` does not import the doctor until it is used
    probe = "import sys, torchwise; a = 'torchwise.doctor' in sys.modules; torchwise.doctor; print(a, 'torchwise.doctor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_select_and_skip():
    model = nn.Sequential(nn.Linear(16, 4), nn.Softmax(dim=1))
    batch = class_batch()
    assert doctor(model, batch=batch, loss_fn=nn.CrossEntropyLoss(), skip=["TW102"]).by_code("TW102") == []
    only = doctor(model, batch=batch, loss_fn=nn.CrossEntropyLoss(), select=["TW1"])
    assert only.by_code("TW102") and not any(s.codes[0].startswith("TW2") for s in only.skipped)


def test_every_check_module_documents_and_declares_catalog_codes():
    import ast
    from pathlib import Path

    from torchwise.catalog import PRACTICES

    covered = set()
    for module in available_checks():
        tree = ast.parse(Path(module.__file__).read_text())
        doc = ast.get_docstring(tree)
        assert doc and "Why" in doc and "Example" in doc and "Fix" in doc, module.__name__
        codes = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "CODES")
        assert codes == module.CODES and all(c in PRACTICES for c in codes)
        assert Path(module.__file__).name.startswith(codes[0].lower() + "_")
        covered.update(codes)
    runtime = {c for c, p in PRACTICES.items() if p.runtime}
    # runtime codes of `torchwise watch` (whole runs, ranks of a DDP job) are checked there, not here
    watch = Path(__file__).resolve().parents[2] / "src" / "torchwise" / "watch"
    elsewhere = {c for c in runtime - covered if watch.is_dir() and any(c in f.read_text() for f in watch.rglob("*.py"))}
    assert runtime - elsewhere <= covered, sorted(runtime - covered - elsewhere)


def test_bad_inputs_raise_one_line_errors():
    with pytest.raises(UsageError, match="batch= .* or loader="):
        doctor(mlp(), loss_fn=nn.CrossEntropyLoss())
    with pytest.raises(UsageError, match="Module"):
        doctor(42, batch=class_batch())
    with pytest.raises(UsageError, match="precision"):
        doctor(mlp(), batch=class_batch(), loss_fn=nn.CrossEntropyLoss(), precision="fp8")
    with pytest.raises(UsageError, match="loss_fn"):
        doctor(mlp(), batch=class_batch())


def test_model_returning_its_loss_needs_no_loss_fn():
    class Scored(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 1)

        def forward(self, batch):
            return ((self.fc(batch["x"]).squeeze(-1) - batch["y"].float()) ** 2).mean()

    x, y = class_batch()
    report = doctor(Scored(), batch=({"x": x, "y": y}, y))
    assert report.failure is None and report.measured["steps_run"] == 3


def test_step_failure_is_reported_not_raised():
    class Broken(nn.Module):
        def forward(self, x):
            raise RuntimeError("shape mismatch somewhere\nsecond line")

    report = doctor(Broken(), batch=class_batch(), loss_fn=nn.CrossEntropyLoss())
    assert report.failure == "RuntimeError: shape mismatch somewhere"
    assert not report.ok


def test_optimizer_factories_of_user_and_task_are_used():
    from torch.utils.data import TensorDataset

    from torchwise.core.task import Task

    head_only = lambda params: torch.optim.SGD(list(params)[-2:], lr=0.1)  # noqa: E731
    [f] = doctor(mlp(), batch=class_batch(), loss_fn=nn.CrossEntropyLoss(), optimizer=head_only).by_code("TW115")
    assert f.evidence["missing"] == ["0.weight", "0.bias"]
    task = Task(model=mlp(), train_data=TensorDataset(*class_batch(32)), loss_fn=nn.CrossEntropyLoss(), optimizer=head_only, batch_size=8)
    [f] = doctor(task).by_code("TW115")
    assert f.evidence["missing"] == ["0.weight", "0.bias"]


def test_user_loader_generator_is_untouched():
    from torch.utils.data import DataLoader, TensorDataset

    g = torch.Generator().manual_seed(7)
    loader = DataLoader(TensorDataset(*class_batch(32)), batch_size=8, shuffle=True, generator=g)
    state = g.get_state()
    doctor(mlp(), loader=loader, loss_fn=nn.CrossEntropyLoss())
    assert torch.equal(g.get_state(), state)


def test_library_select_and_skip_refuse_unknown_codes_before_any_work():
    from torch import nn

    from torchwise.doctor import check_codes, doctor
    from torchwise.core.errors import UsageError

    with pytest.raises(UsageError, match="unknown select code 'TW999'"):
        doctor(nn.Linear(2, 2), select=["TW999"])
    with pytest.raises(UsageError, match="unknown skip code 'NOPE'"):
        doctor(nn.Linear(2, 2), skip="NOPE")
    assert check_codes("tw1,TW221", "select") == ["TW1", "TW221"]  # a string is one value, case-insensitive

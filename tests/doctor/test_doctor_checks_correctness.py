"""TW1xx checks: each fault planted, the finding and its key evidence asserted; clean twins quiet."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, TensorDataset

from torchwise.doctor import doctor

from doctor_models import class_batch, codes, mlp

CE = nn.CrossEntropyLoss()


# --- TW102 -------------------------------------------------------------------------------------


def test_tw102_softmax_into_cross_entropy():
    model = nn.Sequential(mlp(), nn.Softmax(dim=1))
    report = doctor(model, batch=class_batch(), loss_fn=CE)
    [f] = report.by_code("TW102")
    assert f.severity == "error" and "cross_entropy" in f.message
    assert f.evidence["min"] >= 0 and f.evidence["max_abs_row_sum_minus_1"] < 1e-3
    assert f.evidence["rows"] == 16 and f.evidence["classes"] == 4


def test_tw102_softmax_inside_a_custom_loss_function():
    def my_loss(out, y):  # softmax hidden in the loss wrapper: still seen at the F.cross_entropy call
        return nn.functional.cross_entropy(out.softmax(-1), y)

    assert doctor(mlp(), batch=class_batch(), loss_fn=my_loss).by_code("TW102")


def test_tw102_nll_loss_on_raw_logits():
    report = doctor(mlp(), batch=class_batch(), loss_fn=nn.NLLLoss())
    [f] = report.by_code("TW102")
    assert "nll_loss" in f.message and f.evidence["max_abs_logsumexp"] > 1e-2


def test_tw102_quiet_for_logits_and_log_softmax():
    assert not doctor(mlp(), batch=class_batch(), loss_fn=CE).by_code("TW102")
    model = nn.Sequential(mlp(), nn.LogSoftmax(dim=1))
    assert not doctor(model, batch=class_batch(), loss_fn=nn.NLLLoss()).by_code("TW102")


# --- TW105 / TW112 -----------------------------------------------------------------------------


class LogOfSoftmax(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 4)

    def forward(self, x):
        return torch.log(torch.softmax(self.fc(x) * 1e4, dim=1))  # confident rows: exact zeros


def test_tw105_log_of_zero_probabilities():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 16), LogOfSoftmax())
    report = doctor(model, batch=class_batch(), loss_fn=nn.NLLLoss())
    [f] = report.by_code("TW105")
    assert f.severity == "error" and f.where == "1"
    assert f.evidence["zeros"] > 0 and f.evidence["log_call"] == "torch.log"
    assert f.evidence["step"] == 0
    assert not report.by_code("TW112")
    assert report.measured["steps_run"] == 1  # stopped at the bad step


class DivideByZero(nn.Module):
    def forward(self, x):
        return x / (x - x)


def test_tw112_first_module_that_went_non_finite():
    model = nn.Sequential(nn.Linear(16, 8), DivideByZero(), nn.Linear(8, 4))
    report = doctor(model, batch=class_batch(), loss_fn=CE)
    [f] = report.by_code("TW112")
    assert f.where == "1" and f.evidence["module_type"] == "DivideByZero" and f.evidence["kind"] == "output"
    assert "128 Inf" in f.evidence["detail"]
    assert not report.ok


def test_tw112_non_finite_input_batch():
    x, y = class_batch()
    x[3, 2] = float("nan")
    [f] = doctor(mlp(), batch=(x, y), loss_fn=CE).by_code("TW112")
    assert f.evidence["kind"] == "input"


# --- TW106 -------------------------------------------------------------------------------------


def test_tw106_labels_out_of_range_with_values():
    x, _ = class_batch()
    y = torch.tensor([0, 1, 2, 3, 4, 5] * 2 + [0, 1, 2, 3])  # width 4: 4 and 5 are out of range
    report = doctor(mlp(out=4), batch=(x, y), loss_fn=CE)
    [f] = report.by_code("TW106")
    assert f.severity == "error" and f.evidence["bad_values"] == [4, 5] and f.evidence["output_width"] == 4
    assert f.evidence["bad_count"] == 4
    assert report.failure is not None and "IndexError" in report.failure  # the CPU loss raised; explained


def test_tw106_ignore_index_is_allowed():
    x, y = class_batch()
    y[:3] = -100
    report = doctor(mlp(), batch=(x, y), loss_fn=CE)
    assert not report.by_code("TW106") and report.failure is None


# --- TW109 -------------------------------------------------------------------------------------


class BNNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.bn = nn.BatchNorm1d(32)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.drop(torch.relu(self.bn(self.fc(x)))))


def test_tw109_frozen_batchnorm_statistics_change():
    model = BNNet()
    model.bn.eval()
    model.bn.requires_grad_(False)
    report = doctor(model, batch=class_batch(), loss_fn=CE)
    [f] = report.by_code("TW109")
    assert f.where == "bn" and f.evidence["layers"] == ["bn"] and f.evidence["max_stat_change"] > 0
    assert "requires_grad=False" in f.evidence["frozen_by"]


def test_tw109_batchnorm_frozen_only_by_eval():
    model = BNNet()
    model.bn.eval()
    [f] = doctor(model, batch=class_batch(), loss_fn=CE).by_code("TW109")
    assert f.evidence["frozen_by"] == ["eval() while the model trained"]


def test_tw109_quiet_for_a_freeze_that_survives_train():
    model = BNNet()
    model.bn.requires_grad_(False)
    model.bn.momentum = 0.0  # statistics cannot move
    assert not doctor(model, batch=class_batch(), loss_fn=CE).by_code("TW109")
    assert not doctor(BNNet(), batch=class_batch(), loss_fn=CE).by_code("TW109")  # trainable BN


def test_tw109_model_left_in_eval_mode():
    model = BNNet().eval()
    [f] = doctor(model, batch=class_batch(), loss_fn=CE).by_code("TW109")
    assert "eval mode" in f.message and f.evidence["model_training"] is False
    assert set(f.evidence["layers"]) == {"bn", "drop"}
    # without mode-dependent layers eval mode changes nothing
    assert not doctor(mlp().eval(), batch=class_batch(), loss_fn=CE).by_code("TW109")


# --- TW113 -------------------------------------------------------------------------------------


def test_tw113_regression_shapes_broadcast():
    x, _ = class_batch()
    y = torch.randn(16)  # (16,) against a (16, 1) prediction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        report = doctor(mlp(out=1), batch=(x, y), loss_fn=nn.MSELoss())
    [f] = report.by_code("TW113")
    assert f.evidence["prediction_shape"] == [16, 1] and f.evidence["target_shape"] == [16]
    assert f.evidence["broadcast_shape"] == [16, 16] and f.severity == "error"


@pytest.mark.parametrize("loss", [nn.L1Loss(), nn.SmoothL1Loss(), nn.HuberLoss()])
def test_tw113_other_regression_losses(loss):
    x, _ = class_batch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert doctor(mlp(out=1), batch=(x, torch.randn(16)), loss_fn=loss, steps=1).by_code("TW113")


def test_tw113_quiet_for_matching_shapes():
    x, _ = class_batch()
    assert not doctor(mlp(out=1), batch=(x, torch.randn(16, 1)), loss_fn=nn.MSELoss()).by_code("TW113")


# --- TW114 -------------------------------------------------------------------------------------


class UnusedHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(16, 4)
        self.aux = nn.Linear(16, 2)  # never called

    def forward(self, x):
        return self.body(x)


def test_tw114_parameters_without_gradient():
    [f] = doctor(UnusedHead(), batch=class_batch(), loss_fn=CE).by_code("TW114")
    assert f.evidence["parameters"] == ["aux.weight", "aux.bias"] and f.evidence["values"] == 34
    assert f.evidence["backward_passes"] == 3


def test_tw114_quiet_for_frozen_unused_parameters():
    model = UnusedHead()
    model.aux.requires_grad_(False)
    assert not doctor(model, batch=class_batch(), loss_fn=CE).by_code("TW114")


# --- TW115 -------------------------------------------------------------------------------------


def test_tw115_missing_frozen_and_foreign():
    model = mlp()
    model[0].requires_grad_(False)
    opt = torch.optim.SGD(list(model[0].parameters()), lr=0.1)  # frozen layer in, trainable head out
    found = {f.severity: f for f in doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt).by_code("TW115")}
    assert found["warning"].evidence["missing"] == ["2.weight", "2.bias"]
    # nothing it holds can train: an error naming the frozen tensors and the trainable ones left out
    assert "can change no weight" in found["error"].message and found["error"].where == "0.weight, 0.bias"
    assert found["error"].evidence["trainable_not_in_optimizer"] == ["2.weight", "2.bias"]

    model = mlp()
    model[0].requires_grad_(False)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)  # the trainable head is in too: only a hint
    hints = doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt).by_code("TW115")
    assert {f.severity for f in hints} == {"hint"}
    [inside] = [f for f in hints if "inside the optimizer" in f.message]
    assert inside.evidence["frozen_in_optimizer"] == ["0.weight", "0.bias"]

    other = mlp()
    opt = torch.optim.SGD(other.parameters(), lr=0.1)  # built for another instance
    [f] = [f for f in doctor(mlp(), batch=class_batch(), loss_fn=CE, optimizer=opt).by_code("TW115") if f.severity == "error"]
    assert f.evidence["foreign_tensors"] == 4


def test_tw115_quiet_and_skipped():
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    assert not doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt).by_code("TW115")
    report = doctor(model, batch=class_batch(), loss_fn=CE)
    assert any(s.codes == ("TW115",) and "no optimizer" in s.reason for s in report.skipped)


# --- TW117 -------------------------------------------------------------------------------------


class Sentences(Dataset):
    def __len__(self):
        return 20

    def __getitem__(self, i):
        return torch.ones(3 + i % 5), torch.tensor(i % 2)


class MeanModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(1, 2)

    def forward(self, x):
        return self.fc(x.float().mean(-1, keepdim=True))


def pad(samples):
    xs, ys = zip(*samples)
    return nn.utils.rnn.pad_sequence(list(xs), batch_first=True), torch.stack(ys)


def test_tw117_variable_length_with_default_collate():
    report = doctor(MeanModel(), loader=DataLoader(Sentences(), batch_size=4), loss_fn=CE)
    [f] = report.by_code("TW117")
    assert f.evidence["field"] == "sample[0]" and len(f.evidence["shapes_to_sample_indices"]) == 5
    assert report.failure is not None  # default_collate failed indeed


def test_tw117_quiet_with_padding_collate_or_single_samples():
    assert not doctor(MeanModel(), loader=DataLoader(Sentences(), batch_size=4, collate_fn=pad), loss_fn=CE).by_code("TW117")
    data = TensorDataset(*class_batch(32))
    assert not doctor(mlp(), loader=DataLoader(data, batch_size=8), loss_fn=CE).by_code("TW117")


# --- TW104 -------------------------------------------------------------------------------------


def test_tw104_evaluate_with_autograd_on():
    def evaluate(model, batch):
        model.eval()
        return model(batch[0]).argmax(1)

    [f] = doctor(mlp(), batch=class_batch(), loss_fn=CE, evaluate=evaluate).by_code("TW104")
    assert f.evidence == {"forward_passes": 1, "with_autograd_graph": 1}


def test_tw104_quiet_under_inference_mode_and_skipped_without_evaluate():
    def evaluate(model, batch):
        with torch.inference_mode():
            return model(batch[0]).argmax(1)

    report = doctor(mlp(), batch=class_batch(), loss_fn=CE, evaluate=evaluate)
    assert not report.by_code("TW104") and "TW104" not in {c for s in report.skipped for c in s.codes}
    report = doctor(mlp(), batch=class_batch(), loss_fn=CE)
    assert any(s.codes == ("TW104",) for s in report.skipped)


# --- clean models ------------------------------------------------------------------------------


def test_clean_mlp_has_no_findings():
    model = mlp()
    opt = torch.optim.AdamW(model.parameters())
    report = doctor(model, batch=class_batch(), loss_fn=CE, optimizer=opt)
    assert report.findings == [] and report.ok and report.failure is None
    assert codes(report) == set()


def test_clean_regression_mlp_with_loader_has_no_findings():
    g = torch.Generator().manual_seed(1)
    data = TensorDataset(torch.randn(64, 16, generator=g), torch.randn(64, 1, generator=g))
    report = doctor(mlp(out=1), loader=DataLoader(data, batch_size=16, shuffle=True), loss_fn=nn.MSELoss())
    assert report.findings == [], [str(f) for f in report.findings]

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.utils.summary import count_parameters, format_bytes, format_count, summary


class Tied(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.out = nn.Linear(4, 10, bias=False)
        self.out.weight = self.emb.weight  # shared

    def forward(self, x):
        return self.out(self.emb(x))


def test_count_parameters_counts_shared_once_and_trainable():
    m = Tied()
    assert count_parameters(m) == 40
    lin = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2))
    assert count_parameters(lin) == 3 * 4 + 4 + 4 * 2 + 2
    lin[0].weight.requires_grad_(False)
    assert count_parameters(lin, trainable_only=True) == 4 + 4 * 2 + 2
    with pytest.raises(UsageError):
        count_parameters("not a model")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "n, text",
    [(0, "0"), (999, "999"), (1000, "1.00 K"), (1_234_567, "1.23 M"), (12_345_678, "12.3 M"),
     (999_999, "1.00 M"), (2_500_000_000, "2.50 G")],
)
def test_format_count(n, text):
    assert format_count(n) == text


@pytest.mark.parametrize("n, text", [(512, "512 B"), (1536, "1.50 KiB"), (3 * 1024**2, "3.00 MiB"), (1024**3, "1.00 GiB")])
def test_format_bytes(n, text):
    assert format_bytes(n) == text


def test_linear_flops_and_rows():
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    model[2].weight.requires_grad_(False)
    s = summary(model, torch.randn(8, 32))
    assert s.flops == 2 * 8 * 32 * 64 + 2 * 8 * 64 * 10
    names = [r.name for r in s.rows]
    assert names == ["0", "1", "2"]
    first, relu, last = s.rows
    assert first.flops == 2 * 8 * 32 * 64 and first.output_shape == (8, 64)
    assert first.trainable_params == 32 * 64 + 64 and first.frozen_params == 0
    assert relu.flops == 0 and relu.params == 0
    assert last.frozen_params == 640 and last.trainable_params == 10
    assert s.total_params == count_parameters(model)
    assert s.trainable_params == count_parameters(model, trainable_only=True)
    assert s.frozen_params == 640
    assert s.param_bytes == 4 * s.total_params


def test_single_linear_flops():
    s = summary(nn.Linear(32, 64), torch.randn(8, 32))
    assert s.flops == 2 * 8 * 32 * 64
    assert s.output_shape == (8, 64)


def test_conv_flops_nested_names_and_depth():
    model = nn.Sequential(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU()), nn.Flatten(), nn.Linear(8 * 6 * 6, 5))
    s = summary(model, torch.randn(2, 3, 6, 6))
    conv_flops = 2 * (2 * 8 * 6 * 6) * (3 * 3 * 3)  # 2 * outputs * (Cin*kh*kw)
    rows = {r.name: r for r in s.rows}
    assert rows["0.0"].flops == conv_flops
    assert rows["0"].flops == conv_flops  # containers include their children
    assert rows["0.0"].depth == 2 and rows["0.0"].output_shape == (2, 8, 6, 6)
    assert s.flops == conv_flops + 2 * 2 * 288 * 5
    shallow = summary(model, torch.randn(2, 3, 6, 6), depth=1)
    assert [r.name for r in shallow.rows] == ["0", "1", "2"]


def test_model_left_unchanged_and_modes_restored():
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))
    model.train()
    model[1].eval()  # a mixed-mode model must keep its per-module modes
    before = {k: v.clone() for k, v in model.state_dict().items()}
    summary(model, torch.randn(5, 4))
    assert model.training and model[0].training and not model[1].training
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert all(not h for m in model.modules() for h in (m._forward_hooks,))


def test_shared_module_called_twice_and_multi_output():
    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(3, 3)

        def forward(self, x):
            y = self.a(self.a(x))
            return y, {"h": y.sum(-1)}

    s = summary(M(), torch.randn(2, 3))
    (row,) = s.rows
    assert row.calls == 2 and row.flops == 2 * (2 * 2 * 3 * 3)
    assert s.output_shape == [(2, 3), {"h": (2,)}]
    assert "x2" in str(s)


def test_tuple_and_dict_inputs():
    class Two(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.l = nn.Linear(2, 2)

        def forward(self, a, b=None):
            return self.l(a) + (0 if b is None else b)

    x = torch.randn(4, 2)
    assert summary(Two(), (x, x)).output_shape == (4, 2)
    assert summary(Two(), {"a": x, "b": x}).output_shape == (4, 2)


def test_str_table_and_to_dict():
    model = nn.Sequential(nn.Linear(1000, 1000), nn.ReLU())
    s = summary(model, torch.randn(1, 1000))
    text = str(s)
    assert "1.00 M" in text  # 1,001,000 params
    assert "Total params:         1.00 M (1,001,000)" in text
    assert "2.00 MFLOPs" in text
    assert "3.82 MiB" in text  # 4,004,000 bytes
    d = s.to_dict()
    json.dumps(d)
    assert d["total_params"] == 1_001_000 and d["rows"][0]["output_shape"] == [1, 1000]
    assert d["rows"][0]["params"] == 1_001_000


def test_bad_input_gives_one_clear_error():
    with pytest.raises(UsageError, match="failed: RuntimeError"):
        summary(nn.Linear(3, 2), torch.randn(2, 5))
    with pytest.raises(UsageError, match="depth"):
        summary(nn.Linear(3, 2), torch.randn(2, 3), depth=0)


@pytest.mark.slow
def test_cli_summary(run_cli, capsys):
    res = run_cli("summary", "examples/digits.py:task", "--depth", "1")
    assert res.returncode == 0, res.stderr
    assert "features (Sequential)" in res.stdout and "features.0" not in res.stdout
    assert "Total params:" in res.stdout
    from torchwise.cli import main  # the JSON form in this process (one child per command is enough)

    assert main(["summary", "examples/digits.py:task", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_params"] == 29_162 and data["flops"] > 0
    # a bad task reference: tests/core/test_task.py::test_cli_reports_bad_task_in_one_line


def test_public_name_is_callable_whatever_the_import_order():
    import torchwise
    from torchwise import count_parameters as cp, summary as summarise  # module imported by the first name

    s = summarise(nn.Linear(2, 3), torch.randn(1, 2))
    assert s.flops == 2 * 2 * 3 and cp(nn.Linear(2, 3)) == 9
    assert torchwise.summary(nn.Linear(2, 3), torch.randn(1, 2)).total_params == 9


def test_attention_flops_count_what_training_runs():
    """The eval fast path of TransformerEncoder (nested tensors, fused attention) hid work from the
    counter; the summary counts the forward that training runs."""
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    model = nn.TransformerEncoder(layer, 2)
    x = torch.randn(8, 32, 128)
    counter = FlopCounterMode(display=False)
    model.train()
    with counter:
        model(x)
    trained = counter.get_total_flops()
    model.eval()
    s = summary(model, x)
    assert s.flops == trained
    with torch.no_grad(), FlopCounterMode(display=False) as eval_counter:  # what the old summary counted
        model(x)
    assert eval_counter.get_total_flops() < 0.8 * trained
    assert not model.training and all(not m.training for m in model.modules())  # modes restored
    mha = nn.MultiheadAttention(64, 4, batch_first=True).eval()
    q = torch.randn(2, 10, 64)
    with FlopCounterMode(display=False) as c:
        mha.train()
        mha(q, q, q)
    mha.eval()
    assert summary(mha, (q, q, q)).flops == c.get_total_flops()

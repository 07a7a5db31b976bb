from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.utils.per_sample import fast_path_problem, per_sample_grads

B = 6


def loop_grads(model: nn.Module, loss_fn, x, y) -> dict[str, torch.Tensor]:
    """The reference: batch size 1, one backward per sample."""
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    out: dict[str, list[torch.Tensor]] = {n: [] for n, _ in named}
    for i in range(x.shape[0]):
        model.zero_grad(set_to_none=True)
        loss_fn(model(x[i : i + 1]), y[i : i + 1]).backward()
        for n, p in named:
            out[n].append(torch.zeros_like(p) if p.grad is None else p.grad.clone())
    model.zero_grad(set_to_none=True)
    return {n: torch.stack(v) for n, v in out.items()}


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(5, 7), nn.ReLU(inplace=True), nn.Dropout(0.3), nn.Linear(7, 3))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(inplace=True),
        nn.Conv2d(4, 6, 3, stride=2, groups=2, bias=False), nn.ReLU(),
        nn.MaxPool2d(1), nn.Flatten(), nn.Linear(6 * 3 * 3, 3),
    )


def cnn_wide() -> nn.Module:
    """Eight or more input channels: the channels-last im2col branch."""
    return nn.Sequential(
        nn.Conv2d(2, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 9, 3, stride=2, dilation=2, padding=2, padding_mode="circular"), nn.ReLU(),
        nn.Conv2d(9, 4, (2, 3), padding="same"), nn.Flatten(), nn.Linear(4 * 4 * 4, 3),
    )


def cnn1d() -> nn.Module:
    return nn.Sequential(
        nn.Conv1d(3, 4, 3, padding="same", padding_mode="reflect"), nn.Tanh(),
        nn.Conv1d(4, 8, 2, padding="same", dilation=2), nn.Conv1d(8, 4, 3, stride=2, padding=1),
        nn.Flatten(), nn.Linear(4 * 4, 3),
    )


class EmbedModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(11, 4, padding_idx=0)
        self.head = nn.Linear(4, 3)

    def forward(self, idx):
        return self.head(self.emb(idx).mean(dim=1))


class TiedLM(nn.Module):
    """Embedding and output layer share one weight; a Linear over a (B, T, D) input."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(9, 4)
        self.mix = nn.Linear(4, 4)
        self.out = nn.Linear(4, 9, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, idx):
        return self.out(torch.relu(self.mix(self.emb(idx)))).mean(dim=1)


def data_for(name: str):
    g = torch.Generator().manual_seed(1)
    y = torch.randint(0, 3, (B,), generator=g)
    if name == "mlp":
        return mlp(), torch.randn(B, 5, generator=g), y
    if name == "cnn":
        return cnn(), torch.randn(B, 2, 8, 8, generator=g), y
    if name == "cnn_wide":
        return cnn_wide(), torch.randn(B, 2, 8, 8, generator=g), y
    if name == "cnn1d":
        return cnn1d(), torch.randn(B, 3, 8, generator=g), y
    if name == "embedding":
        idx = torch.randint(0, 11, (B, 5), generator=g)
        idx[0, :2] = 0  # padding positions
        return EmbedModel(), idx, y
    idx = torch.randint(0, 9, (B, 5), generator=g)
    return TiedLM(), idx, torch.randint(0, 9, (B,), generator=g)


LOSSES = {
    # nn modules take the "scale the batch loss" path, plain functions the per-row path
    "ce_mean_module": nn.CrossEntropyLoss(),
    "ce_sum_module": nn.CrossEntropyLoss(reduction="sum"),
    "ce_mean_fn": lambda out, y: F.cross_entropy(out, y),
    "ce_sum_fn": lambda out, y: F.cross_entropy(out, y, reduction="sum"),
}


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
@pytest.mark.parametrize("model_name", ["mlp", "cnn", "cnn_wide", "cnn1d", "embedding", "tied"])
@pytest.mark.parametrize("loss_name", list(LOSSES))
@pytest.mark.parametrize("method", ["fast", "vmap"])
def test_matches_the_per_sample_loop(model_name, loss_name, method):
    torch.manual_seed(0)
    model, x, y = data_for(model_name)
    model.eval()
    loss_fn = LOSSES[loss_name]
    ref = loop_grads(model, loss_fn, x, y)
    got = per_sample_grads(model, loss_fn, x, y, method=method)
    assert got.method == method
    assert list(got) == list(ref)
    for n in ref:
        assert got[n].shape == ref[n].shape == (B, *dict(model.named_parameters())[n].shape)
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)
    assert all(p.grad is None for p in model.parameters())


def test_mse_mean_with_regression_targets():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2)).eval()
    x, y = torch.randn(B, 4), torch.randn(B, 2)
    ref = loop_grads(model, nn.MSELoss(), x, y)
    for method in ("fast", "vmap"):
        got = per_sample_grads(model, nn.MSELoss(), x, y, method=method)
        for n in ref:
            torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)


def test_sums_of_per_sample_grads_give_the_batch_gradient_for_sum_loss():
    model, x, y = data_for("cnn")
    model.eval()
    got = per_sample_grads(model, nn.CrossEntropyLoss(reduction="sum"), x, y)
    nn.CrossEntropyLoss(reduction="sum")(model(x), y).backward()
    for n, p in model.named_parameters():
        torch.testing.assert_close(got[n].sum(0), p.grad, atol=1e-5, rtol=1e-5)


def test_loss_that_cannot_be_vmapped_falls_back_to_rows():
    model, x, y = data_for("mlp")
    model.eval()

    def loss_fn(out, target):
        if float(out.detach().abs().max().item()) > 1e9:  # .item() breaks vmap
            raise AssertionError
        return F.cross_entropy(out, target)

    ref = loop_grads(model, loss_fn, x, y)
    got = per_sample_grads(model, loss_fn, x, y, method="fast")
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)


def test_unsupported_layer_auto_uses_vmap_and_fast_refuses():
    model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Linear(6, 3)).eval()
    x, y = torch.randn(B, 4), torch.randint(0, 3, (B,))
    assert "LayerNorm" in (fast_path_problem(model) or "")
    got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    assert got.method == "vmap"
    ref = loop_grads(model, nn.CrossEntropyLoss(), x, y)
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)
    with pytest.raises(UsageError, match="LayerNorm"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y, method="fast")
    # a frozen LayerNorm needs no formula: the fast path applies
    model[1].requires_grad_(False)
    assert fast_path_problem(model) is None
    fast = per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    assert fast.method == "fast" and "1.weight" not in fast
    ref = loop_grads(model, nn.CrossEntropyLoss(), x, y)
    for n in ref:
        torch.testing.assert_close(fast[n], ref[n], atol=1e-5, rtol=1e-5)


def test_weight_used_outside_its_layer_is_detected():
    class Sneaky(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 3)

        def forward(self, x):
            h = torch.relu(self.a(x))
            return self.b(h) + F.linear(h, self.b.weight)  # second, functional use of b.weight

    model = Sneaky().eval()
    x, y = torch.randn(B, 4), torch.randint(0, 3, (B,))
    assert fast_path_problem(model) is None  # not visible statically
    with pytest.raises(UsageError, match=r"b\.weight is used 2 time"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y, method="fast")
    with pytest.warns(RuntimeWarning, match="using vmap"):
        got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    assert got.method == "vmap"
    ref = loop_grads(model, nn.CrossEntropyLoss(), x, y)
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)


def test_batchnorm_in_train_mode_is_refused_and_eval_works():
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Linear(6, 3))
    x, y = torch.randn(B, 4), torch.randint(0, 3, (B,))
    with pytest.raises(UsageError, match=r"1 \(BatchNorm1d\) is in training mode"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    model.eval()
    before = model[1].running_mean.clone()
    got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    assert got.method == "vmap" and torch.equal(model[1].running_mean, before)
    ref = loop_grads(model, nn.CrossEntropyLoss(), x, y)
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)


def test_unused_layer_gets_zero_grads_and_bad_arguments():
    class Partial(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.used = nn.Linear(3, 2)
            self.unused = nn.Linear(3, 2)

        def forward(self, x):
            return self.used(x)

    model = Partial()
    x, y = torch.randn(B, 3), torch.randint(0, 2, (B,))
    got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y, method="fast")
    assert torch.count_nonzero(got["unused.weight"]) == 0 and got["unused.weight"].shape == (B, 2, 3)
    with pytest.raises(UsageError, match="unknown method"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y, method="opacus")
    with pytest.raises(UsageError, match="batch size"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y[:3])
    for method in ("vmap", "fast"):
        with pytest.raises(UsageError, match="one number"):
            per_sample_grads(model, lambda out, t: out * 2, x, y, method=method)


def test_frozen_batchnorm_cnn_takes_the_fast_path():
    from torchwise.utils.layers import freeze_batchnorm

    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.2), nn.Linear(4 * 4 * 4, 3),
    )
    x, y = torch.randn(B, 1, 8, 8), torch.randint(0, 3, (B,))
    model.train()
    with pytest.raises(UsageError, match="BatchNorm2d"):
        per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    freeze_batchnorm(model)
    model.eval()  # dropout off so that the loop is deterministic
    got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y)
    assert got.method == "fast" and set(got) == {"0.weight", "6.weight", "6.bias"}
    ref = loop_grads(model, nn.CrossEntropyLoss(), x, y)
    for n in ref:
        torch.testing.assert_close(got[n], ref[n], atol=1e-5, rtol=1e-5)


def test_dropout_in_train_mode_runs_with_both_methods():
    model, x, y = data_for("mlp")
    model.train()
    for method in ("fast", "vmap"):
        got = per_sample_grads(model, nn.CrossEntropyLoss(), x, y, method=method)
        assert got["3.weight"].shape == (B, 3, 7) and torch.isfinite(got["3.weight"]).all()

from __future__ import annotations

import copy
import io

import pytest
import torch
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.utils.layers import INIT_SCHEMES, freeze_batchnorm, init_weights, unfreeze_batchnorm


def bn_model() -> nn.Sequential:
    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 2))
    # give the statistics non-default values
    m.train()
    with torch.no_grad():
        m(torch.randn(8, 3, 6, 6) * 3 + 1)
    return m


def snapshot(bn: nn.BatchNorm2d) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in bn.state_dict().items()}


def test_freeze_survives_train_and_training_steps():
    model = bn_model()
    bn = model[1]
    before = snapshot(bn)
    freeze_batchnorm(model)
    model.train()
    assert model.training and model[0].training and not bn.training
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(8, 3, 6, 6) * 5 - 2).sum().backward()
        opt.step()
    after = bn.state_dict()
    for k in before:
        assert torch.equal(before[k], after[k]), k
    assert not bn.training
    assert not bn.weight.requires_grad and not bn.bias.requires_grad and bn.weight.grad is None
    # setting the flag directly is undone at the next forward
    bn.training = True
    model(torch.randn(2, 3, 6, 6))
    assert not bn.training
    assert torch.equal(bn.running_mean, before["running_mean"])


def test_without_freeze_statistics_do_change():
    """Guards the test above: the same steps move the statistics of an unfrozen model."""
    model = bn_model()
    before = snapshot(model[1])
    model.train()
    model(torch.randn(8, 3, 6, 6) * 5 - 2)
    assert not torch.equal(model[1].running_mean, before["running_mean"])


def test_unfreeze_restores_behaviour():
    model = bn_model()
    model[1].bias.requires_grad_(False)  # a choice made before freezing is kept
    freeze_batchnorm(model)
    freeze_batchnorm(model)  # idempotent
    unfreeze_batchnorm(model.train())
    bn = model[1]
    assert bn.training and bn.weight.requires_grad and not bn.bias.requires_grad
    assert "train" not in bn.__dict__ and not bn._forward_pre_hooks
    before = bn.running_mean.clone()
    model(torch.randn(8, 3, 6, 6) + 4)
    assert not torch.equal(bn.running_mean, before)
    model.eval()
    assert not bn.training


def test_frozen_model_survives_deepcopy_and_pickle():
    model = freeze_batchnorm(bn_model())
    for clone in (copy.deepcopy(model), torch.load(_save(model), weights_only=False)):
        clone.train()
        assert not clone[1].training and clone[0].training
        before = clone[1].running_mean.clone()
        clone(torch.randn(4, 3, 6, 6) + 3)
        assert torch.equal(clone[1].running_mean, before)


def _save(model: nn.Module) -> io.BytesIO:
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    return buf


def test_freeze_refuses_bn_without_running_stats():
    with pytest.raises(UsageError, match="track_running_stats=False"):
        freeze_batchnorm(nn.Sequential(nn.BatchNorm1d(3, track_running_stats=False)))


class Mixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(20, 30)
        self.conv = nn.Conv2d(3, 8, 3)
        self.emb = nn.Embedding(10, 20, padding_idx=1)
        self.ln = nn.LayerNorm(30)
        self.bn = nn.BatchNorm1d(30)
        self.gru = nn.GRU(20, 10)
        with torch.no_grad():
            for p in self.parameters():
                p.fill_(0.5)


@pytest.mark.parametrize("scheme", list(INIT_SCHEMES))
def test_init_weights_schemes(scheme):
    torch.manual_seed(0)
    m = init_weights(Mixed(), scheme)
    assert torch.count_nonzero(m.lin.bias) == 0 and torch.count_nonzero(m.conv.bias) == 0
    assert torch.count_nonzero(m.gru.bias_ih_l0) == 0
    assert torch.all(m.ln.weight == 1) and torch.all(m.ln.bias == 0)
    assert torch.all(m.bn.weight == 1) and torch.all(m.bn.bias == 0)
    assert torch.count_nonzero(m.emb.weight[1]) == 0
    for w in (m.lin.weight, m.conv.weight, m.emb.weight[2:], m.gru.weight_ih_l0):
        assert not torch.all(w == 0.5), scheme  # re-initialised
        assert w.std() > 0
    if scheme == "orthogonal":
        w = m.lin.weight  # 30 x 20: orthonormal columns
        torch.testing.assert_close(w.T @ w, torch.eye(20), atol=1e-4, rtol=0)


def test_init_weights_statistics_and_kwargs():
    torch.manual_seed(0)
    lin = nn.Linear(400, 300)
    init_weights(lin, "kaiming_normal", nonlinearity="relu")
    assert abs(lin.weight.std().item() - (2 / 400) ** 0.5) < 0.005
    init_weights(lin, "normal")
    assert abs(lin.weight.std().item() - 0.02) < 0.002
    init_weights(lin, "trunc_normal", std=0.1, a=-0.15, b=0.15)
    assert lin.weight.abs().max() <= 0.15
    init_weights(lin, "xavier_uniform")
    bound = (6 / (400 + 300)) ** 0.5
    assert lin.weight.abs().max() <= bound and lin.weight.abs().max() > 0.9 * bound


def test_init_weights_errors():
    with pytest.raises(UsageError, match="valid schemes: xavier_uniform, xavier_normal, kaiming_uniform"):
        init_weights(nn.Linear(2, 2), "he")
    with pytest.raises(UsageError, match="does not take std"):
        init_weights(nn.Linear(2, 2), "xavier_uniform", std=1.0)

from __future__ import annotations

import re
import sys

import pytest
import torch
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.utils.hooks import autograd_graph, capture, layer_grad


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True)),
        nn.Linear(8, 3),
    )


def no_hooks(model: nn.Module) -> bool:
    return all(not m._forward_hooks and not m._backward_hooks for m in model.modules())


def test_capture_default_leaves_outputs_detached_and_cloned():
    model = make_model()
    x = torch.randn(5, 4)
    with capture(model) as cap:
        out = model(x)
    assert set(cap.outputs) == {"0.0", "0.1", "1"}
    lin = cap.outputs["0.0"]
    # the in-place ReLU after the Linear must not change what was captured
    expected = x @ model[0][0].weight.T + model[0][0].bias
    torch.testing.assert_close(lin, expected)
    assert (lin < 0).any() and not lin.requires_grad
    torch.testing.assert_close(cap["1"], out.detach())
    assert no_hooks(model)


def test_capture_grads_match_autograd():
    model = make_model()
    x = torch.randn(5, 4)
    with capture(model, ["0.0", "1"], grads=True) as cap:
        out = model(x)
        loss = (out * torch.arange(3.0)).sum()
        loss.backward()
    # d loss / d out = arange(3) broadcast over rows
    torch.testing.assert_close(cap.grads["1"], torch.arange(3.0).expand(5, 3))
    # gradient of the Linear output = (arange @ W2) masked by the ReLU
    h = cap.outputs["0.0"]
    expected = (torch.arange(3.0) @ model[1].weight).expand(5, 8) * (h > 0)
    torch.testing.assert_close(cap.grads["0.0"], expected)
    assert no_hooks(model)
    # hooks are gone: a later backward records nothing new
    model(x).sum().backward()
    assert len(cap.grad_history["1"]) == 1


def test_capture_patterns_types_and_repeated_calls():
    model = make_model()
    with capture(model, "0.*") as cap:
        model(torch.randn(2, 4))
    assert set(cap.outputs) == {"0.0", "0.1"}
    with capture(model, nn.Linear) as cap:
        model(torch.randn(2, 4))
        model(torch.randn(3, 4))
    assert set(cap.outputs) == {"0.0", "1"}
    assert [t.shape[0] for t in cap.history["1"]] == [2, 3]
    assert cap.outputs["1"].shape == (3, 3)


def test_capture_removes_hooks_when_body_raises():
    model = make_model()
    with pytest.raises(RuntimeError, match="boom"):
        with capture(model, grads=True):
            model(torch.randn(2, 4)).sum()
            assert not no_hooks(model)
            raise RuntimeError("boom")
    assert no_hooks(model)
    assert all(not m._forward_hooks for m in model.modules())


def test_capture_unknown_name_lists_near_names():
    model = nn.Sequential()
    model.add_module("encoder", nn.Linear(2, 2))
    model.add_module("decoder", nn.Linear(2, 2))
    with pytest.raises(UsageError, match=r"no module matching 'encodr'.*encoder"):
        with capture(model, "encodr"):
            pass
    with pytest.raises(UsageError, match="no Conv2d module"):
        with capture(model, nn.Conv2d):
            pass
    assert no_hooks(model)


def test_capture_tuple_output_grads():
    class Split(nn.Module):
        def forward(self, x):
            return x * 2, x * 3

    class M(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.split = Split()

        def forward(self, x):
            a, b = self.split(x)
            return (a + 10 * b).sum()

    m = M()
    x = torch.randn(3, requires_grad=True)
    with capture(m, "split", grads=True) as cap:
        m(x).backward()
    assert isinstance(cap.outputs["split"], tuple)
    torch.testing.assert_close(cap.grads["split"][(0,)], torch.ones(3))
    torch.testing.assert_close(cap.grads["split"][(1,)], torch.full((3,), 10.0))


def test_layer_grad_structures_and_no_dot_grad():
    model = make_model()
    x = torch.randn(6, 4)
    loss = model(x).pow(2).mean()
    grads = layer_grad(loss, model, retain_graph=True)
    assert list(grads) == [n for n, _ in model.named_parameters()]
    assert all(p.grad is None for p in model.parameters())
    # the same numbers as backward
    loss.backward(retain_graph=True)
    for n, p in model.named_parameters():
        torch.testing.assert_close(grads[n], p.grad)
    model.zero_grad(set_to_none=True)

    w, b = model[1].weight, model[1].bias
    as_list = layer_grad(loss, [w, b], retain_graph=True)
    assert isinstance(as_list, list) and as_list[0].shape == w.shape
    as_dict = layer_grad(loss, {"w": w}, retain_graph=True)
    assert set(as_dict) == {"w"}
    single = layer_grad(loss, w)
    torch.testing.assert_close(single, as_list[0])
    assert w.grad is None
    # the graph was freed by the last call (no retain_graph)
    with pytest.raises(RuntimeError):
        layer_grad(loss, w)


def test_layer_grad_unused_param_is_zero_and_errors():
    a = torch.randn(3, requires_grad=True)
    unused = torch.randn(2, requires_grad=True)
    g = layer_grad((a * 2).sum(), [a, unused])
    torch.testing.assert_close(g[0], torch.full((3,), 2.0))
    torch.testing.assert_close(g[1], torch.zeros(2))
    with pytest.raises(UsageError, match="scalar"):
        layer_grad(a * 2, [a])
    with pytest.raises(UsageError, match="does not require grad"):
        layer_grad((a * 2).sum(), [torch.randn(3)])


def test_autograd_graph_dot_names_and_edges():
    lin = nn.Linear(3, 2)
    out = lin(torch.randn(4, 3)).relu().sum()
    g = autograd_graph(out, lin)
    dot = g.dot
    assert dot.startswith("digraph")
    assert re.search(r'label="weight\\n\(2, 3\)"', dot)
    assert re.search(r'label="bias\\n\(2,\)"', dot)
    assert "AddmmBackward0" in dot and "ReluBackward0" in dot and "SumBackward0" in dot
    # weight->T, T->addmm, bias->addmm, addmm->relu, relu->sum, sum->output
    assert len(g.edges) == 6
    assert dot.count("->") == 6
    # names from a dict; an input that requires grad is an unnamed leaf
    x = torch.randn(4, 3, requires_grad=True)
    g2 = autograd_graph({"y": lin(x)}, {"W": lin.weight})
    assert 'label="W\\n(2, 3)"' in g2.dot and 'label="leaf\\n(4, 3)"' in g2.dot
    assert 'label="leaf\\n(2,)"' in g2.dot  # the bias, not named in the dict
    assert "output[y]" in g2.dot


def test_autograd_graph_without_graph_is_clear():
    with pytest.raises(UsageError, match="does not require grad"):
        autograd_graph(torch.randn(3))


def test_render_dot_text_and_missing_graphviz(tmp_path, monkeypatch):
    lin = nn.Linear(2, 2)
    g = autograd_graph(lin(torch.randn(1, 2)), lin)
    path = g.render(tmp_path / "g.dot")
    assert path.read_text() == g.dot
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz -> ImportError
    with pytest.raises(UsageError, match=r"pip install 'torchwise\[viz\]'"):
        g.render(tmp_path / "g.svg")


def test_render_missing_dot_binary(tmp_path, monkeypatch):
    pytest.importorskip("graphviz")
    import torchwise.utils.hooks as hooks

    monkeypatch.setattr(hooks.shutil, "which", lambda name: None)
    lin = nn.Linear(2, 2)
    g = autograd_graph(lin(torch.randn(1, 2)), lin)
    with pytest.raises(UsageError, match="Graphviz's `dot` program"):
        g.render(tmp_path / "g.png")


def test_render_svg_when_dot_installed(tmp_path):
    pytest.importorskip("graphviz")
    import shutil

    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed here")
    lin = nn.Linear(2, 2)
    path = autograd_graph(lin(torch.randn(1, 2)), lin).render(tmp_path / "g.svg")
    assert "<svg" in path.read_text()

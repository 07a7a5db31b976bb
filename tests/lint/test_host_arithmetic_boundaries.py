"""Boundaries of two round-29 precision changes: the twins that must still be reported.

TW205 leaves arithmetic on data alone (a standardized window of a loaded array); arithmetic of
Python numbers, literals and sizes is still a new tensor. TW104 leaves an evaluation that restores
train() when every caller runs it under no_grad; a bare call still counts."""

from __future__ import annotations

import textwrap

import pytest

from torchwise.lint import check_source


def lines(source: str, code: str) -> list[int]:
    return [f.line for f in check_source(textwrap.dedent(source), "t.py") if f.code == code]


@pytest.mark.parametrize("expr", ["[0.5] * x.size(0)", "1.0 / x.shape[1]", "x.shape[0] * 2 - 1", "list(range(x.size(1))) * 2"])
def test_tw205_python_arithmetic_in_forward_is_still_a_new_tensor(expr):
    src = f"""
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                w = torch.tensor({expr}).cuda()
                return x * w
    """
    assert lines(src, "TW205") == [5]


def test_tw205_list_arithmetic_through_a_name_is_still_a_new_tensor():
    src = """
        import torch
        def train(model, loader, k, device):
            for x, y in loader:
                w = [1.0] * k + [2.0]
                w = torch.tensor(w).to(device)
                model(x, w)
    """
    assert lines(src, "TW205") == [6]


def test_tw205_numpy_constant_buffer_scaled_is_still_built_on_the_host():
    src = """
        import numpy as np
        import torch
        class M(torch.nn.Module):
            def forward(self, x):
                m = 0.5 * np.ones((x.shape[0], 4))
                m = torch.tensor(m).cuda()
                return x * m
    """
    assert lines(src, "TW205") == [7]


VALIDATE = """
    import torch
    class Runner:
        def __init__(self, model, opt, loss):
            self.model, self.opt, self.loss = model, opt, loss
        def fit(self, train_dl, val_dl, epochs):
            for epoch in range(epochs):
                for x, y in train_dl:
                    self.opt.zero_grad()
                    self.loss(self.model(x), y).backward()
                    self.opt.step()
                CALL
        def validate(self, dl):
            self.model.eval()
            total = 0.0
            for x, y in dl:
                total += self.loss(self.model(x), y).item()
            self.model.train()
            return total
    if __name__ == "__main__":
        Runner(*build()).fit(*loaders(), epochs=3)
"""


def test_tw104_validation_restoring_train_mode_called_bare_is_reported():
    assert lines(VALIDATE.replace("CALL", "print(self.validate(val_dl))"), "TW104") == [17]


def test_tw104_validation_restoring_train_mode_called_only_under_no_grad_is_quiet():
    call = "with torch.no_grad():\n                    print(self.validate(val_dl))"
    assert lines(VALIDATE.replace("CALL", call), "TW104") == []


def test_tw104_validation_restoring_train_mode_with_one_bare_call_is_reported():
    call = "with torch.no_grad():\n                    print(self.validate(val_dl))\n                print(self.validate(val_dl))"
    assert lines(VALIDATE.replace("CALL", call), "TW104") == [19]


def test_tw104_decoding_method_another_module_calls_bare_is_reported(tmp_path):
    import recall_corpus101
    from torchwise.lint import lint_paths

    project = next(p for p in recall_corpus101.PROJECTS if p.code == "TW104")
    for name, text in project.files.items():
        if name.endswith("infer.py"):
            text = text.replace("    with torch.no_grad():\n        for p in prompts:\n            print(", "    for p in prompts:\n        print(")
            assert "no_grad" not in text
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = lint_paths([str(tmp_path)], select=["TW104"], use_config=False, jobs=1)
    assert [(f.path.replace("\\", "/").rsplit("/", 1)[-1], f.line) for f in found] == [("model.py", 13)]

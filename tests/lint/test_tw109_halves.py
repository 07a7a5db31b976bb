"""TW109 says which half of a BatchNorm freeze is missing: the statistics (a later train()
undoes the eval), the affine parameters (requires_grad left on), or both."""

from __future__ import annotations

from recall_shapes import d
from torchwise.lint import lint_source

_FREEZE = """
    import torch.nn as nn
    def freeze_bn(model):
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.eval(){extra}
"""


def _messages(src: str) -> list[str]:
    return [f.message for f in lint_source(src, "train.py", select=["TW109"])]


def test_undone_by_train_with_trainable_affine_names_both_halves():
    (msg,) = _messages(d(_FREEZE.format(extra="")) + ("freeze_bn(model)\nmodel.train()\n"))
    assert "model.train() on line 7" in msg and "running statistics update again" in msg
    assert "affine weight and bias still train" in msg


def test_undone_by_train_with_frozen_affine_names_the_statistics_only():
    (msg,) = _messages(d(_FREEZE.format(extra="\n                m.requires_grad_(False)")) + ("freeze_bn(model)\nmodel.train()\n"))
    assert "running statistics update again" in msg and "affine" not in msg


def test_reapplied_after_train_names_the_affine_half_only():
    (msg,) = _messages(d(_FREEZE.format(extra="")) + ("for e in range(3):\n    model.train()\n    freeze_bn(model)\n"))
    assert "running statistics stay fixed" in msg and "affine weight and bias still train" in msg

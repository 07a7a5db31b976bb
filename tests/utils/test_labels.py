from __future__ import annotations

import torch

from torchwise.utils.labels import is_class_target, label_problem


def test_in_range_labels_pass():
    assert label_problem(torch.randn(4, 3), torch.tensor([0, 1, 2, 1])) is None


def test_out_of_range_names_labels_and_width():
    msg = label_problem(torch.randn(5, 10), torch.tensor([0, 10, 12, 3, 12]))
    assert msg is not None
    assert "width 10" in msg and "10, 12" in msg and "[0, 9]" in msg
    assert msg.startswith("3 target label(s)")


def test_negative_label_flagged_but_ignore_index_allowed():
    assert label_problem(torch.randn(3, 4), torch.tensor([0, -100, 2])) is None
    msg = label_problem(torch.randn(3, 4), torch.tensor([0, -1, 2]))
    assert msg is not None and "-1" in msg
    assert label_problem(torch.randn(3, 4), torch.tensor([0, -100, 2]), ignore_index=None) is not None


def test_segmentation_layout_uses_dim_1():
    out = torch.randn(2, 3, 4, 4)
    tgt = torch.zeros(2, 4, 4, dtype=torch.long)
    assert label_problem(out, tgt) is None
    tgt[1, 2, 3] = 3
    assert "width 3" in label_problem(out, tgt)


def test_non_classification_targets_ignored():
    assert label_problem(torch.randn(4, 3), torch.randn(4, 3)) is None  # regression / soft labels
    assert label_problem(torch.randn(4, 1), torch.tensor([5.0, 1, 2, 3])) is None
    assert not is_class_target(torch.randn(4, 3), torch.ones(4, 3, dtype=torch.long))
    assert is_class_target(torch.randn(4, 3), torch.ones(4, dtype=torch.long))

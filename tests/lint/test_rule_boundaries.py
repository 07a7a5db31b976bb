"""Boundaries of TW110 and TW107 found by review: each quiet case beside the twin that is flagged."""

from __future__ import annotations

import textwrap

import pytest

from torchwise.lint import check_source


def codes(source: str, code: str) -> list[int]:
    return [f.line for f in check_source(textwrap.dedent(source), "t.py") if f.code == code]


AMP_LOOP = """
    import torch

    def clear(opt):
        opt.zero_grad(set_to_none=True)

    def train(model, loader, optimizer, loss_fn):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = loss_fn(model(x), y)
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            clear(optimizer)
"""


def test_tw110_amp_loop_whose_helper_zeroes_the_optimizer_is_quiet():
    assert codes(AMP_LOOP, "TW110") == []


def test_tw110_the_same_amp_loop_without_the_helper_is_flagged():
    assert codes(AMP_LOOP.replace("            clear(optimizer)\n", ""), "TW110") == [9]


def test_tw110_helper_before_backward_also_counts():
    moved = AMP_LOOP.replace("            clear(optimizer)\n", "").replace(
        "        for x, y in loader:\n", "        for x, y in loader:\n            clear(optimizer)\n")
    assert codes(moved, "TW110") == []


VIEWS = """
    import torch
    x = torch.zeros(2, 3, 4)
    a = x.permute(0, 2, 1).view(2, 3, 4)      # same rank: only splits/keeps sizes, allowed
    b = x.transpose(1, 2).view(2, 4, 3)       # same rank, the transposed shape itself: works
    c = x.transpose(1, 2).view(2, 2, 2, 3)    # more sizes: splits, works
    d = x.permute(0, 2, 1).view(2, 12)        # one size fewer: merges, fails
    e = x.transpose(1, 2).view(-1)            # flatten: fails
"""


@pytest.mark.needs_torch  # runs the quiet case in torch too
def test_tw107_same_rank_and_splitting_views_are_quiet_merging_ones_flagged():
    assert codes(VIEWS, "TW107") == [7, 8]
    b = torch_result("x.transpose(1, 2).view(2, 4, 3)")
    assert b == (2, 4, 3)  # the quiet same-rank case really runs


def torch_result(expr: str):
    import torch

    x = torch.zeros(2, 3, 4)
    return tuple(eval(expr, {"x": x}).shape)

"""Fixtures shared by the doctor tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """One thread: no thread A/B steps (TW221 is tested on its own), steadier timings."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)

"""Fixtures shared by the lint tests."""

from __future__ import annotations

import pytest

from torchwise.lint.config import clear_cache


@pytest.fixture
def fresh_config_cache():
    """Configuration files are cached per folder: each test starts and ends with none."""
    clear_cache()
    yield
    clear_cache()

"""The public API: small, lazy, documented."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest

import torchwise


def _in_subprocess(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_import_torchwise_does_not_import_torch():
    out = _in_subprocess("import sys, torchwise; print('torch' in sys.modules)")
    assert out == "False"


@pytest.mark.parametrize("name", sorted(torchwise._EXPORTS))
def test_every_export_resolves_and_is_documented(name):
    obj = getattr(torchwise, name)
    assert obj is not None
    if name in ("PRACTICES",):
        return
    doc = inspect.getdoc(obj)
    assert doc and len(doc) > 15, f"torchwise.{name} needs a docstring"


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        torchwise.nope  # noqa: B018


def test_dir_lists_the_public_api():
    assert "Trainer" in dir(torchwise) and "seed_everything" in dir(torchwise)


@pytest.mark.parametrize("name", ["doctor", "tune"])
def test_engine_packages_are_callable(name):
    engine = getattr(torchwise, name)
    assert callable(engine)
    # the subpackage is still a package: its submodules import normally
    assert hasattr(engine, "__path__")

"""Make an engine subpackage callable, so ``torchwise.doctor(...)`` works although
``torchwise.doctor`` is also a package (``torchwise.doctor.checks``...)."""

from __future__ import annotations

import sys
import types


def make_callable(module_name: str, func_name: str) -> None:
    """Turn ``sys.modules[module_name]`` into a module whose call forwards to ``func_name``."""
    module = sys.modules[module_name]

    class _CallableModule(types.ModuleType):
        def __call__(self, *args, **kwargs):
            return getattr(self, func_name)(*args, **kwargs)

    module.__class__ = _CallableModule

"""Optional dependencies: which pip extra brings which import, and the one line that says so.

``pip install torchwise`` is what ``lint``, ``rule``, ``rules`` and the flake8 plugin need (no
torch, no numpy). Everything that runs a model needs the ``torch`` extra; the examples need
scikit-learn (``examples``), the charts matplotlib/graphviz (``viz``). When one of these imports
fails, the CLI prints :func:`install_hint` instead of a traceback. Imports nothing heavy.
"""

from __future__ import annotations

import importlib.util

CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# top-level import name -> (what to call it, the pip extra that installs it)
EXTRAS: dict[str, tuple[str, str]] = {
    "torch": ("PyTorch", "torch"),
    "numpy": ("NumPy", "torch"),
    "rich": ("rich", "torch"),
    "sklearn": ("scikit-learn", "examples"),
    "matplotlib": ("matplotlib", "viz"),
    "graphviz": ("the graphviz package", "viz"),
    "tensorboard": ("TensorBoard", "tensorboard"),
    "safetensors": ("safetensors", "safetensors"),
}


def install_line(extra: str) -> str:
    """``pip install 'torchwise[EXTRA]'`` (``extra`` may name several: ``"torch,examples"``), with
    the CPU-only torch hint when the torch extra is one of them."""
    line = f"pip install 'torchwise[{extra}]'"
    if "torch" in extra.split(","):
        line += f" (for a CPU-only torch, first: pip install torch --index-url {CPU_INDEX})"
    return line


def missing_module(exc: BaseException) -> str | None:
    """The top-level name of a known optional module whose import failed in ``exc`` or its causes."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ModuleNotFoundError) and current.name:
            root = current.name.split(".")[0]
            if root in EXTRAS:
                return root
        current = current.__cause__ or current.__context__
    return None


def install_hint(module: str) -> str:
    """``PyTorch is not installed: pip install 'torchwise[torch]' (...)``."""
    what, extra = EXTRAS[module]
    return f"{what} is not installed: {install_line(extra)}"


def available(module: str) -> bool:
    """Whether ``module`` can be imported here (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False

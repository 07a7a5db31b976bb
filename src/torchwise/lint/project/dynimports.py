"""Modules a script imports by name at run time: ``importlib.import_module("approach." + args.approach)``.

A continual-learning or model-zoo entry point often picks the module it runs from a package by a
command-line name (``import_module(name="approach." + args.approach)``,
``importlib.import_module(f"models.{name}")``, ``__import__("nets." + arch)``). No import statement
names those modules, yet the script runs each of them on the device it chooses. Text only: the
packages such a call names as the prefix of a name built at run time.
"""

from __future__ import annotations

from torchwise.lint.engine.lazyre import lazy_compile

# import_module("pkg." + x) / import_module(name='pkg.' + x) / import_module(f"pkg.{x}") / __import__("pkg." + x)
_DYNAMIC = lazy_compile(r"""(?:import_module|__import__)\(\s*(?:name\s*=\s*)?f?["']((?:\w+\.)*\w+)\.(?:\{|["']\s*\+)""")


def dynamic_packages(text: str) -> set[str]:
    """The last names of the packages whose modules ``text`` imports by a name built at run time."""
    if "import_module(" not in text and "__import__(" not in text:
        return set()
    return {m.group(1).rsplit(".", 1)[-1] for m in _DYNAMIC.finditer(text)}


def in_packages(path: str, packages: set[str]) -> bool:
    """``path`` lies directly in a folder named one of ``packages`` (``src/approach/bic.py`` for ``approach``)."""
    parts = path.replace("\\", "/").split("/")
    return len(parts) > 1 and parts[-2] in packages


def run_time_packages(texts: list[tuple[str, str]], cpu_files: set[str]) -> set[str]:
    """The packages that files with a CPU path import modules of by run-time names: such a folder is
    the entry point's code, no GPU-only sub-project of a collection beside it."""
    return set().union(*(dynamic_packages(t) for p, t in texts if p in cpu_files))


__all__ = ["dynamic_packages", "in_packages", "run_time_packages"]

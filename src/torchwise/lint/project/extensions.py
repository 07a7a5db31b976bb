"""CUDA extensions a project depends on: the files that import, at module level, a compiled
module that only runs on an NVIDIA GPU.

A point-cloud or 3-D project builds its own kernels (``setup.py`` with
``CUDAExtension('chamfer', ['chamfer.cu', ...])``, or ``torch.utils.cpp_extension.load(name=...,
sources=[... .cu])`` at import time) or depends on kernel packages (``knn_cuda``,
``pointnet2_ops``): a model importing them cannot run on a CPU, whatever device checks the
scripts around it write (``args.use_gpu = torch.cuda.is_available()`` only sets a flag). Such
files count as GPU-only files of the project, like those importing Triton or apex
(:mod:`torchwise.lint.project.text`).

Text only, no parsing: an import at column 0 (module level, not under ``try``/``if``) naming

- a module whose top-level name ends in ``_cuda`` (``knn_cuda``, ``emd_cuda``) and that is not a
  Python module or package of the project itself (a helper ``to_cuda.py`` is not a kernel);
- a known kernel package (``pointnet2_ops``, ``pointops``);
- an extension the project builds for CUDA only (a ``CUDAExtension(`` with no ``CppExtension(``
  in the same file, or a set-up that picks ``CppExtension`` or ``CUDAExtension`` and raises
  without CUDA: ``else: raise NotImplementedError("Cuda is not available")``), by its module
  name (``extension("_ext", sources)`` too) or by the folder holding its ``setup.py``
  (``from extensions.chamfer_dist import ChamferDistanceL1``);
- a module of the project that JIT-builds ``.cu`` sources with ``cpp_extension.load(`` at
  module level (``fused = load("fused", sources=[...".cu"])``), by its module name.

An import in a module-level ``try:`` whose ``except ImportError:`` re-raises (``try: import
pointnet2._ext as _ext`` / ``except ImportError: raise ImportError("see the README")``) counts as
unconditional: the module cannot do without it.
"""

from __future__ import annotations

import os
import re

from torchwise.lint.engine.lazyre import lazy_compile

# kernel packages with no CPU implementation (their names do not end in `_cuda`)
KERNEL_PACKAGES = ("pointnet2_ops", "pointops")
_IMPORT = lazy_compile(r"^(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+\(?([\w, \t*]+)|import[ \t]+([\w., \t]+))", re.M)
_CUDA_EXT = lazy_compile(r"""CUDAExtension\(\s*(?:name\s*=\s*)?["']([\w.]+)["']""")
# a set-up that picks CppExtension or CUDAExtension into a variable and refuses to build without
# CUDA (`else: raise NotImplementedError("Cuda is not available")`): its CPU build is no build
_NO_CPU_BUILD = lazy_compile(r"""^[ \t]*else[ \t]*:[ \t]*\n[ \t]*raise[ \t]+\w+\([ \t]*(?:f?["'][^"'\n]*cuda|CUDA)""", re.M | re.I)
_EXT_VAR = lazy_compile(r"""\b[a-z_]*extension\(\s*(?:name\s*=\s*)?["']([\w.]+)["']""")
_JIT_LOAD = lazy_compile(r"^\w+[ \t]*=[ \t]*(?:[\w.]+\.)?load\(", re.M)
_CU_SOURCE = lazy_compile(r"""\.cu["']""")


def _module_names(path: str) -> tuple[str, str]:
    """``a/b/chamfer_dist/setup.py`` -> (``setup``, ``chamfer_dist``): the module's name and its folder's."""
    parts = path.replace("\\", "/").split("/")
    stem = parts[-1][:-3] if parts[-1].endswith(".py") else parts[-1]
    return stem, parts[-2] if len(parts) > 1 else ""


def _built_extensions(texts: list[tuple[str, str]], root: str) -> set[str]:
    """Names by which the project's CUDA-only extensions are imported (``root``: the project's
    folder, whose own ``setup.py`` names no importable folder)."""
    names: set[str] = set()
    for path, text in texts:
        stem, folder = _module_names(path)
        if "CUDAExtension(" in text and "CppExtension(" not in text or "CUDAExtension" in text and _NO_CPU_BUILD.search(text):
            found = [m.group(1).split(".")[0] for m in (*_CUDA_EXT.finditer(text), *_EXT_VAR.finditer(text))]
            names.update(found)
            if found and stem == "setup" and folder and os.path.dirname(path.replace("\\", "/")) != root:
                names.add(folder)
        elif "cpp_extension" in text and "load(" in text and _CU_SOURCE.search(text) and _JIT_LOAD.search(text):
            names.add(stem)
    return names


def _import_lines(text: str, anywhere: bool = False) -> list[str]:
    """The import statements that start at column 0 (``import a.b``, ``from x import (y, z)``),
    found with ``str.find`` - no regex tried at every line; with ``anywhere``, indented ones too
    (imports inside functions and ``if`` blocks)."""
    out = []
    pos = text.find("import")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        line = text[start:end if end >= 0 else len(text)]
        if anywhere:
            line = line.lstrip()
        if line.startswith(("import ", "from ")):
            out.append(line)
        pos = text.find("import", end) if end >= 0 else -1
    return out


def imported(text: str, anywhere: bool = False) -> tuple[set[str], set[str]]:
    """The dotted components of the modules the file imports at column 0 (with ``anywhere``: at
    any indentation), and the names it imports from them (``from . import chamfer``)."""
    modules: set[str] = set()
    names: set[str] = set()
    for line in _import_lines(text, anywhere):
        m = _IMPORT.match(line)
        if m is None:
            continue
        if m.group(3) is not None:
            for item in m.group(3).split(","):
                modules.update(item.strip().split(" ")[0].split("."))
        else:
            modules.update(p for p in m.group(1).split(".") if p)
            names.update(n.strip().split(" ")[0] for n in m.group(2).split(",") if n.strip())
    return modules, names


_TRY_IMPORT = lazy_compile(r"^try[ \t]*:[ \t]*\n[ \t]+((?:import|from)[ \t][^\n]*)\n(?:[ \t]+[^\n]*\n){0,3}?"
                         r"except[ \t]+ImportError[^\n]*:[ \t]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)+)", re.M)


def _required_in_try(text: str) -> list[str]:
    """``try: import pointnet2._ext as _ext`` / ``except ImportError: ... raise ImportError(...)``
    at module level: an import the module cannot do without (its handler re-raises)."""
    return [m.group(1) for m in _TRY_IMPORT.finditer(text) if "raise" in m.group(2)]


def cuda_extension_files(texts: list[tuple[str, str]]) -> list[str]:
    """The files of the project that import a CUDA-only extension at module level (see the module doc)."""
    if not any("_cuda" in t or "pointnet2_ops" in t or "pointops" in t or "cpp_extension" in t for _, t in texts):
        return []
    own = {n for path, _ in texts for n in _module_names(path)}
    paths = [p.replace("\\", "/") for p, _ in texts]
    try:
        root = os.path.dirname(paths[0]) if len(paths) == 1 else os.path.commonpath(paths)
    except ValueError:  # absolute and relative paths mixed
        root = ""
    built = _built_extensions(texts, root) if any("cpp_extension" in t for _, t in texts) else set()
    out = []
    needles = ("_cuda", *KERNEL_PACKAGES, *built)
    for path, text in texts:
        if "import" not in text or not any(n in text for n in needles):
            continue  # (a cheap text test before the import lines are read)
        stem, _ = _module_names(path)
        modules, names = imported(text)
        if "except ImportError" in text:
            for line in _required_in_try(text):
                m = _IMPORT.match(line)
                if m is not None and m.group(3) is not None:
                    for item in m.group(3).split(","):
                        modules.update(item.strip().split(" ")[0].split("."))
                elif m is not None:
                    modules.update(p for p in m.group(1).split(".") if p)
        if any(n.endswith("_cuda") and len(n) > 5 and n not in own for n in modules) \
                or any(n in modules for n in KERNEL_PACKAGES) or ((modules | names) & built) - {stem}:
            out.append(path)
    return out


def module_keys(path: str) -> set[str]:
    """The names an import may reach this file by: its module name, or its package's for ``__init__.py``."""
    stem, folder = _module_names(path)
    return {folder} if stem == "__init__" and folder else {stem}


def kernel_importers(texts: list[tuple[str, str]], kernels: list[str]) -> frozenset[str]:
    """The files whose module-level imports reach one of ``kernels`` (files importing a CUDA-only
    extension), directly or through other modules of the project (``main.py`` imports
    ``models``, whose ``__init__`` imports ``point_mae``, which imports ``knn_cuda``): none of
    them can even be imported without the kernels. Matched by module names, so a name that
    several files share counts for each (an over-estimate that only keeps lint quieter)."""
    if not kernels:
        return frozenset()
    reached = set(kernels)
    keys = set().union(*(module_keys(p) for p in reached))
    pending = [(p, t) for p, t in texts if p not in reached and "import" in t]
    names: dict[str, set[str]] = {}  # the import names of a file, read once it names a key at all
    grew = True
    while grew:
        grew = False
        for path, text in pending:
            if path in reached or not any(k in text for k in keys):
                continue
            if path not in names:
                names[path] = set().union(*imported(text))
            if names[path] & keys:
                reached.add(path)
                keys |= module_keys(path)
                grew = True
    return frozenset(reached)


def vendored_only(kernels: list[str], reached: frozenset[str]) -> bool:
    """Every file that reaches a kernel lies in a folder of a file importing the extension itself
    (the vendored kernel package and its wrappers, ``losses/cuda/emd/layer.py``): no module of the
    project's own code elsewhere imports them at module level - with no script among them (the
    caller checks), an optional extension the project may do without, not a GPU-only design."""
    folders = {os.path.dirname(p.replace("\\", "/")) for p in kernels}
    return bool(kernels) and all(os.path.dirname(p.replace("\\", "/")) in folders for p in reached)


__all__ = ["KERNEL_PACKAGES", "cuda_extension_files", "imported", "kernel_importers", "module_keys", "vendored_only"]

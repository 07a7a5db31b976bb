"""Stand-alone GPU scripts: entry points that offer no way to run without a GPU.

Whether hard-coded CUDA breaks anything depends on whether a CPU run reaches it. A library
module (a model, a dataset, a loss) runs wherever the scripts that import it run: in a project
that offers a CPU path somewhere, its ``.cuda()`` breaks that path. An *entry point* runs only
when a user starts it, on the device it sets up itself: a script that has no device choice of
its own, parses no options with a device flag and calls no helper that chooses the device is
written for the GPU it hard-codes (an analysis script under ``scripts/``, the test of a CUDA
extension, an evaluation script of a GPU-only method), whatever its sibling scripts offer.

Text only, no parsing. A file is such a script when

- it is an entry point: ``if __name__ == "__main__":`` or ``parse_args(`` at column 0;
- no file of the project imports it (by its module name: ``import eval``, ``from tools import
  eval``, ``from .eval import x``);
- it names CUDA (``.cuda(``, a ``"cuda"`` string, ``torch.cuda.``) and has no CPU path of its
  own (:func:`torchwise.lint.project.text.cpu_path`: a GPU check that chooses, a device flag or
  option, a ``"cpu"`` device chosen - a ``map_location="cpu"`` or a ``.to("cpu")`` of results
  chooses nothing);
- no module of the project that it imports has a CPU path (the options it parses with their
  ``--no_cuda``, a ``get_device()`` helper it calls);
- it is no model module that the project may load by computed name (``importlib``) and that
  tests itself in a ``__main__`` block.
"""

from __future__ import annotations

import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.project.extensions import imported, module_keys

_MAIN = lazy_compile(r"""^if[ \t]+__name__[ \t]*==[ \t]*["']__main__["'][ \t]*:""", re.M)
_TOP_ARGS = lazy_compile(r"^\S[^\n]*\bparse_args\(", re.M)
_CUDA = (".cuda(", '"cuda', "'cuda", "torch.cuda.")


def entry_point(text: str) -> bool:
    """``if __name__ == "__main__":`` or ``parse_args(`` at column 0: a script a user starts."""
    return ("__main__" in text and _MAIN.search(text) is not None) or (
        "parse_args(" in text and _TOP_ARGS.search(text) is not None)


def _imported_by(path: str, texts: list[tuple[str, str]], cache: dict[str, tuple[set[str], set[str]]]) -> bool:
    """Some other file of the project imports ``path`` by its module name (an over-estimate by
    names: a script that might be imported keeps its findings)."""
    keys = module_keys(path)
    folder = path.replace("\\", "/").rsplit("/", 2)[-2] if "/" in path.replace("\\", "/") else ""
    for other, text in texts:
        if other == path or not any(k in text for k in keys) or "import" not in text:
            continue
        if other not in cache:
            cache[other] = imported(text, anywhere=True)
        modules, names = cache[other]
        if modules & keys or (names & keys and (folder in modules or "from . import" in text)):
            return True
    return False


_MODULE_CLASS = lazy_compile(r"^class[ \t]+\w+[ \t]*\([ \t]*(?:torch\.)?(?:nn\.)?Module[ \t]*\)", re.M)
_DYNAMIC = ("import_module(", "__import__(")


def gpu_scripts(texts: list[tuple[str, str]], cpu_paths: set[str]) -> frozenset[str]:
    """The stand-alone GPU scripts among ``texts`` (see the module doc); ``cpu_paths``: the files
    with a CPU path of their own. In a project that imports modules by computed name
    (``importlib.import_module(FLAGS.model)``), a file defining an ``nn.Module`` may be such a
    module with a ``__main__`` self-test: it is no stand-alone script."""
    if not cpu_paths:
        return frozenset()  # no CPU path anywhere: the project-level test already decides
    dynamic = any(d in t for _, t in texts for d in _DYNAMIC)
    cpu_keys: set[str] = set()
    for path in cpu_paths:
        cpu_keys |= module_keys(path)
    cache: dict[str, tuple[set[str], set[str]]] = {}
    out = []
    for path, text in texts:
        if path in cpu_paths or not any(c in text for c in _CUDA) or not entry_point(text) or (
                dynamic and "Module" in text and _MODULE_CLASS.search(text) is not None):
            continue
        modules, names = cache[path] = imported(text, anywhere=True)
        if (modules | names) & cpu_keys or _imported_by(path, texts, cache):
            continue
        out.append(path)
    return frozenset(out)


__all__ = ["entry_point", "gpu_scripts"]

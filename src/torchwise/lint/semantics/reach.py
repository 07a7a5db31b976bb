"""Which modules of a project a set of files reaches through their imports (a text-level import
graph over the project's files, matched by module name: ``from core.data_loader import x`` and
``from . import data_loader`` both reach ``core/data_loader.py``). Loose on purpose: a module
name shared by two files reaches both, so a question "is this module on that script's path?"
errs towards yes."""

from __future__ import annotations

import os
import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts

_IMPORT = lazy_compile(r"^[ \t]*(?:from[ \t]+(\.*[ \t]*[\w.]*)[ \t]+import[ \t]+([\w, \t()\\*]+)|import[ \t]+([\w., \t]+))", re.M)


def _stem(path: str) -> str:
    base, _ = os.path.splitext(os.path.basename(path.replace("\\", "/")))
    return os.path.basename(os.path.dirname(path.replace("\\", "/"))) if base == "__init__" else base


def _imported(text: str) -> set[str]:
    """Every part of every module or name the text imports (``core``, ``data_loader``, ``get_loader``)."""
    out: set[str] = set()
    for m in _IMPORT.finditer(text):
        if m.group(3) is not None:
            for part in m.group(3).split(","):
                out.update(part.split(" as ")[0].strip().split("."))
        else:
            out.update(p.strip() for p in m.group(1).split(".") if p.strip())  # (`from .. ops.x import`)
            out.update(n.split(" as ")[0].strip(" \t()\\") for n in m.group(2).split(","))
    return out


def reached_from(facts: ProjectFacts, starts: tuple[str, ...]) -> frozenset[str]:
    """The paths of the project's files that ``starts`` (paths) import, directly or not, with
    ``starts`` themselves (worked out once per project and process)."""
    key = ("reach", starts)
    found = facts.answers.get(key)
    if found is None:
        by_stem: dict[str, list[str]] = {}
        texts = dict(facts.files)
        for path in texts:
            by_stem.setdefault(_stem(path), []).append(path)
        seen = set(starts)
        todo = [p for p in starts if p in texts]
        while todo:
            path = todo.pop()
            for name in _imported(texts[path]):
                for other in by_stem.get(name, ()):
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
        found = facts.answers[key] = frozenset(seen)
    return found


def training_seeders(facts: ProjectFacts) -> tuple[str, ...]:
    """The files of the project that seed a generator, less the evaluation scripts among them: an
    entry point (``__main__``, ``parse_args()``) that evaluates (``net.eval()``) and reaches no
    training code - no file it is or imports runs ``.backward(`` with an optimizer step. Such a
    script seeds its own shuffle (``random.seed(args.seed)`` in ``eval.py``) and asks nothing of
    the training loss and augmentations it happens to import."""
    key = ("training-seeders",)
    found = facts.answers.get(key)
    if found is None:
        texts = dict(facts.files)
        trainers = {p for p, t in facts.files if ".backward(" in t and (".step(" in t or "optim" in t)}
        found = facts.answers[key] = tuple(p for p in facts.seed_files if not _evaluation_script(texts.get(p, "")) or (
            reached_from(facts, (p,)) & trainers))
    return found


def _evaluation_script(text: str) -> bool:
    return ("__main__" in text or "parse_args(" in text) and ".eval()" in text


# text that moves data or a model to an accelerator
_MOVES = (".cuda(", ".to(device", ".to(self.device", ".to(args.device", ".to(DEVICE", '"cuda', "'cuda")


def on_a_mover_path(facts: ProjectFacts, path: str) -> bool:
    """Is the module ``path`` imported (directly or not) by a file of the project that moves data
    to an accelerator - or is it one? True when that cannot be known: the project's files are
    unknown (linted alone), or some file imports modules by computed name (``importlib``, a
    registry that scans a folder)."""
    if not facts.files:
        return True
    key = ("movers",)
    movers = facts.answers.get(key)
    if movers is None:
        movers = facts.answers[key] = tuple(p for p, text in facts.files if any(m in text for m in _MOVES))
        facts.answers[("dynamic-imports",)] = any("importlib" in t or "__import__(" in t for _, t in facts.files)
    return facts.answers[("dynamic-imports",)] or path in reached_from(facts, movers)


# text of torch randomness a run draws at every step without naming a random function: dropout
# masks, shuffling loaders, random splits (a layer's initial weights alone are not counted across
# files: drawn once, by whoever builds the model)
_IMPLICIT_TORCH = ("Dropout(", "F.dropout(", "shuffle=True", "random_split(")


def implicit_torch_draws(facts: ProjectFacts, path: str) -> str | None:
    """The first module that ``path`` imports (directly or not) whose text draws from torch's
    generator every step without naming a random function (``nn.Dropout(``, a ``shuffle=True``
    loader); None when none does."""
    texts = dict(facts.files)
    for other in sorted(reached_from(facts, (path,))):
        if other != path and other in texts and any(w in texts[other] for w in _IMPLICIT_TORCH):
            return other
    return None


_EXPLICIT_TORCH = ("torch.rand", "torch.randn(", "torch.randint(", "torch.randperm(", "torch.bernoulli(", "torch.multinomial(",
                   ".normal_(", ".uniform_(")


def importer_torch_draws(facts: ProjectFacts, path: str) -> str | None:
    """The first training entry script (``__main__``/``parse_args()``, a backward pass) that imports
    the module ``path`` (directly or not) and draws from torch's generator - itself or through a
    module it reaches (``torch.randperm``, ``nn.Dropout(``, a shuffling loader): a data module that
    seeds ``random`` and NumPy per epoch seeds only part of the run that uses it; None when none."""
    texts = dict(facts.files)
    for script in sorted(texts):
        text = texts[script]
        if script == path or not ("__main__" in text or "parse_args(" in text) or ".backward(" not in text:
            continue
        reached = reached_from(facts, (script,))
        if path in reached and any(w in texts[o] for o in reached if o in texts for w in (*_IMPLICIT_TORCH, *_EXPLICIT_TORCH)):
            return script
    return None

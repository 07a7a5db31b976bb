"""The seeds of one run (TW301): a project of several programs (a folder per algorithm, each with
its own ``main.py``) seeds NumPy in one of them, and that seed does nothing for another program,
whose ``main.py`` seeds torch only while its agent module draws from NumPy every step
(``np.random.rand() < eps`` in ``select_action``, ``np.random.shuffle(perm)`` over minibatches).

A run's seeds are those of the entry script and of every file it may import (the loose reach of
:func:`.reach.reached_from`: a module name shared by two folders reaches both, so a seed errs
towards counted); its draws are those of the modules it imports for sure - resolved the way
Python resolves them for a script, its own folder first (``from utils import x`` beside
``main.py`` is that folder's ``utils.py``, not another program's)."""

from __future__ import annotations

import os
import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.reach import _imported, _stem, reached_from
from torchwise.lint.semantics.seedtext import SEED_HELPERS as _HELPERS, SEEDS



def run_seeded(facts: ProjectFacts, script: str) -> set[str] | None:
    """The generator families (``random``, ``numpy``, ``torch``) seeded by ``script`` or any file it
    may import; None when one of them calls or defines a seed helper (it may seed anything)."""
    key = ("runseeds:seeded", script)
    if key in facts.answers:
        return facts.answers[key]
    texts = dict(facts.files)
    found: set[str] | None = set()
    for path in reached_from(facts, (script,)):
        text = texts.get(path, "")
        if any(h in text for h in _HELPERS) or "def " in text and "seed" in text and _defines_seed_function(text):
            found = None
            break
        for family, (needle, pattern) in SEEDS.items():
            if needle in text and pattern.search(text):
                found.add(family)
    facts.answers[key] = found
    return found


_SEED_DEF = lazy_compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w*seed\w*[ \t]*\(", re.M | re.I)


def _defines_seed_function(text: str) -> bool:
    """A ``def`` at the start of a line whose name holds ``seed`` (``def set_seed(``, ``def seed_all(``)."""
    return _SEED_DEF.search(text) is not None


def imported_for_sure(facts: ProjectFacts, script: str) -> tuple[str, ...]:
    """The project's files that ``script`` imports, directly or not, resolved script-folder first:
    an imported name that a file of the script's folder (or below it) answers reaches only those;
    one that no such file answers reaches nothing here (another program's module of that name
    may not be the one imported)."""
    key = ("runseeds:imports", script)
    found = facts.answers.get(key)
    if found is None:
        texts = dict(facts.files)
        home = os.path.dirname(script)
        by_stem: dict[str, list[str]] = {}
        for path in texts:
            folder = os.path.dirname(path)
            if path != script and (folder == home or folder.startswith(home + os.sep)):
                by_stem.setdefault(_stem(path), []).append(path)
        seen = {script}
        todo = [script] if script in texts else []
        while todo:
            path = todo.pop()
            for name in _imported(texts[path]):
                found = by_stem.get(name, ())
                near = [o for o in found if os.path.dirname(o) in (home, os.path.dirname(path))]
                for other in near or found:
                    if other not in seen:
                        seen.add(other)
                        todo.append(other)
        found = facts.answers[key] = tuple(sorted(seen - {script}))
    return found


def lone_trainer(facts: ProjectFacts, script: str) -> bool:
    """``script`` is a program of its own: no other file of the project imports it (a dataset
    module with a ``__main__`` demo is no entry point of a run), and it or a module it imports for
    sure runs a backward pass."""
    texts = dict(facts.files)
    stem = _stem(script)
    if any(p != script and stem in t and stem in _imported(t) for p, t in facts.files):
        return False
    return any(".backward(" in texts.get(p, "") for p in (script, *imported_for_sure(facts, script)))

"""Old import paths of modules that moved into ``torchwise.core``, ``torchwise.utils`` and
``torchwise.cli``, kept working.

``import torchwise.seed`` (or ``from torchwise.seed import seed_everything``) gives the very module
object ``torchwise.utils.seed``: one module under two names, never two copies of its classes. The
finder is installed by ``torchwise/__init__.py``; it only answers for the names in :data:`MOVED`
and imports nothing until one of them is asked for. New code imports the new paths (a test of the
import graph checks that torchwise itself does).
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
from types import ModuleType

# old dotted name -> where the module lives now
MOVED: dict[str, str] = {
    "torchwise.errors": "torchwise.core.errors",
    "torchwise._output": "torchwise.core.output",
    "torchwise._callable_module": "torchwise.core.callable_module",
    "torchwise.task": "torchwise.core.task",
    "torchwise.task_args": "torchwise.core.task_args",
    "torchwise.tune.config": "torchwise.core.tuned",
    "torchwise.rules_cli": "torchwise.cli.rules",
    **{f"torchwise.{name}": f"torchwise.utils.{name}" for name in (
        "env", "seed", "device", "memory", "checkpoint", "summary", "hooks", "layers", "per_sample",
        "collate", "convert", "batch", "labels", "nonfinite",
    )},
}


# The loader and the finder follow the protocols of importlib.abc.Loader and MetaPathFinder
# without subclassing them: importing importlib.abc imports importlib.resources, tempfile and
# shutil (about 90 million instructions), a cost every `torchwise lint` start would pay for nothing.
class _AliasLoader:
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # A placeholder takes the import machinery's bookkeeping (its __spec__ is set to the old
        # name); exec_module then puts the real module in its place.
        return ModuleType(spec.name)

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns whatever sys.modules holds under the name after this call.
        sys.modules[module.__name__] = importlib.import_module(self.target)


class MovedModuleFinder:
    """Resolves the old names in :data:`MOVED` to the modules' new homes."""

    def invalidate_caches(self) -> None:
        """Nothing is cached (what importlib.abc.MetaPathFinder's default does)."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(new))


def install() -> None:
    """Add the finder once, after the standard finders (a real module of that name always wins)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(MovedModuleFinder())

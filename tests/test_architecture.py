"""The import graph keeps the layers of ARCHITECTURE.md.

Read with ``ast`` (nothing is imported): every ``import`` of a torchwise module, at module level or
inside a function, except under ``if TYPE_CHECKING:``. The test fails on

- a package importing one it may not (a lower layer importing a higher one, or two engines that
  must stay apart): :data:`ALLOWED`;
- an import circle between modules at import time (module-level imports);
- torchwise code importing a module through an old path kept only for users (``torchwise.seed``);
- ``torchwise.lint`` (and the commands that must start fast) importing torch, checked in a child
  process that lints a file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from torchwise.core.moved import MOVED

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "torchwise"

# area -> areas it may import (besides itself). An area is a top-level module or subpackage.
# Layers, bottom up: catalog | core | utils | engines (lint; train; tune and doctor, which run
# train's steps; watch, which builds on the doctor) | integrations | cli and the package root.
ALLOWED: dict[str, set[str]] = {
    "catalog": set(),
    "core": {"catalog"},
    "utils": {"catalog", "core"},
    "lint": {"catalog", "core"},
    "train": {"catalog", "core", "utils"},
    "tune": {"catalog", "core", "utils", "train"},
    "doctor": {"catalog", "core", "utils", "train"},
    "watch": {"catalog", "core", "utils", "train", "doctor"},
    "integrations": {"catalog", "core", "utils", "train", "doctor", "watch"},
    "examples": {"catalog", "core", "utils"},  # the digits Task shipped for `torchwise demo`
    "cli": {"catalog", "core", "utils", "lint", "train", "tune", "doctor", "watch", "examples"},
    "__init__": {"catalog", "core", "utils", "lint", "train", "tune", "doctor", "watch", "integrations"},
    "__main__": {"cli"},
}

# Upward imports that are deliberate, each lazy (inside a function) and opt-in. Keep this short.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("train", "watch"): "Trainer(watch=True) attaches the run watcher; imported only when asked for",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module, module: str, is_package: bool) -> list[tuple[str, bool]]:
    """(imported torchwise module, at import time?) for every import in ``tree``."""
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit(other, top)
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, top) for a in child.names if a.name.split(".")[0] == "torchwise")
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative import
                    anchor = module.split(".") if is_package else module.split(".")[:-1]
                    anchor = anchor[: len(anchor) - (child.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                if base.split(".")[0] == "torchwise":
                    found.append((base, top))
                    found.extend((f"{base}.{a.name}", top) for a in child.names)
            inner_top = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(child, inner_top)

    visit(tree, True)
    return found


def _all_imports() -> dict[str, list[tuple[str, bool]]]:
    """Every module of ours -> every torchwise name it imports (modules and imported names)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        name = _module_name(path)
        found[name] = _imports(ast.parse(path.read_text(encoding="utf-8"), str(path)), name, path.name == "__init__.py")
    return found


RAW = _all_imports()
# keep only the names that are modules of ours ("from torchwise.x import name" also lists names)
GRAPH = {m: [(t, top) for t, top in edges if t in RAW] for m, edges in RAW.items()}


def _area(module: str) -> str:
    parts = module.split(".")
    return "__init__" if len(parts) == 1 else parts[1]


def test_every_area_is_known():
    unknown = sorted({_area(m) for m in GRAPH} - set(ALLOWED))
    assert not unknown, f"new top-level area(s) {unknown}: place them in ALLOWED and ARCHITECTURE.md"


def test_no_area_imports_a_higher_or_separate_one():
    bad = []
    for module, edges in GRAPH.items():
        src = _area(module)
        for target, _ in edges:
            dst = _area(target)
            # the package root is imported first as every module's parent; it holds only lazy
            # names and __version__, so reading it is no dependency on a layer
            if target == "torchwise":
                continue
            if dst != src and dst not in ALLOWED[src] and (src, dst) not in EXCEPTIONS:
                bad.append(f"{module} imports {target} ({src} may not import {dst})")
    assert not bad, "\n".join(sorted(set(bad)))


def test_exceptions_are_lazy():
    for module, edges in GRAPH.items():
        for target, top in edges:
            if (_area(module), _area(target)) in EXCEPTIONS:
                assert not top, f"{module} imports {target} at import time; the exception allows a lazy import only"


def _cycle(graph: dict[str, list[tuple[str, bool]]]) -> list[str] | None:
    top_edges = {m: sorted({t for t, top in edges if top and t != m}) for m, edges in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in top_edges.get(node, []):
            # a package's __init__ importing its own submodules is how packages are built
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (found := dfs(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(top_edges):
        if node not in state and (found := dfs(node)):
            return found
    return None


def test_no_import_circle_at_import_time():
    cycle = _cycle(GRAPH)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_checker_sees_circles_and_upward_imports():
    # the checker itself must be able to fail: feed it a small graph with both faults
    tree = ast.parse("from torchwise.doctor import report\nimport torchwise.utils.seed\n"
                     "def f():\n    from torchwise.watch import x\n"
                     "if TYPE_CHECKING:\n    from torchwise.cli import y\n")
    edges = _imports(tree, "torchwise.train.trainer", False)
    assert ("torchwise.doctor", True) in edges and ("torchwise.utils.seed", True) in edges
    assert ("torchwise.watch", False) in edges and not any(t.startswith("torchwise.cli") for t, _ in edges)
    rel = _imports(ast.parse("from .phases import task_step\nfrom .. import catalog\n"), "torchwise.train.trainer", False)
    assert ("torchwise.train.phases", True) in rel and ("torchwise.catalog", True) in rel


def test_the_circle_finder_finds_one_and_ignores_lazy_edges():
    graph = {"a.x": [("a.y", True)], "a.y": [("a.z", True)], "a.z": [("a.x", True)]}
    assert _cycle(graph) == ["a.x", "a.y", "a.z", "a.x"]
    graph["a.z"] = [("a.x", False)]  # the closing import inside a function: no circle at import time
    assert _cycle(graph) is None
    assert _cycle({"p": [("p.sub", True)], "p.sub": [("p", True)]}) is None  # a package and its submodule


def test_torchwise_itself_uses_the_new_paths():
    old = [f"{m} imports {t} (now {MOVED[t]})" for m, edges in RAW.items() if m != "torchwise.core.moved"
           for t, _ in edges if t in MOVED]
    assert not old, "\n".join(sorted(set(old)))


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_import_paths_give_the_same_module(old):
    import importlib

    assert importlib.import_module(old) is importlib.import_module(MOVED[old])


def test_old_from_import_and_attribute_access_work_in_a_fresh_process():
    code = (  # modules that do not import torch, so the child starts fast
        "import sys\n"
        "from torchwise.errors import UsageError\n"
        "from torchwise.core.errors import UsageError as U2\n"
        "assert UsageError is U2\n"
        "from torchwise.rules_cli import explain\n"
        "assert explain is sys.modules['torchwise.cli.rules'].explain\n"
        "import torchwise.task_args\n"
        "assert torchwise.task_args is sys.modules['torchwise.core.task_args']\n"
        "assert 'torch' not in sys.modules\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_lint_and_the_catalog_commands_never_import_torch(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nfor x in loader:\n    loss = model(x).sum()\n    loss.backward()\n")
    code = (
        "import sys\n"
        "from torchwise.cli import main\n"
        f"main(['lint', {str(script)!r}, '--format', 'json'])\n"
        "main(['rules'])\n"
        "main(['rule', 'TW201'])\n"
        "import torchwise.lint, torchwise.catalog, torchwise.cli.rules\n"
        "sys.stdout.flush()\n"
        "print('TORCH' if 'torch' in sys.modules else 'NO-TORCH', file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stderr.strip().endswith("NO-TORCH"), out.stderr[-2000:]

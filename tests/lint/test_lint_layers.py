"""The lint package is layered one way: data, engine core, semantic helpers, project facts, rules,
drivers. A module imports only its own layer or lower ones, no import circle exists (lazy imports
inside functions count too), and no module of the package imports torch."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import torchwise.lint

PACKAGE = "torchwise.lint"
ROOT = Path(torchwise.lint.__file__).resolve().parent

# (layer, module-name prefixes), lowest first. Every module of the package must be in one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("data", ("findings", "facts")),
    ("engine", ("engine",)),
    ("helpers", ("semantics",)),
    ("project", ("project",)),
    ("rules", ("rule", "rules")),
    ("drivers", ("core", "config", "runner", "output", "cli", "flake8_plugin", "")),
)


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def layer_of(module: str) -> int:
    local = module[len(PACKAGE) + 1:] if module != PACKAGE else ""
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if local == prefix or (prefix and local.startswith(prefix + ".")):
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in {__file__}")


def imported_modules(source: str, this: str, is_package: bool, modules: set[str]) -> set[str]:
    """The package's modules that the module ``this`` imports anywhere in it (functions included)."""
    package = this if is_package else this.rsplit(".", 1)[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name.startswith(PACKAGE) and name != this:
                out.add(name)
    return out


def import_graph() -> dict[str, set[str]]:
    files = sorted(ROOT.rglob("*.py"))
    modules = {module_name(p) for p in files}
    return {module_name(p): imported_modules(p.read_text(encoding="utf-8"), module_name(p), p.name == "__init__.py", modules)
            for p in files}


GRAPH = import_graph()


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as a list of modules (first == last), else None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_graph_sees_the_package():
    assert len(GRAPH) > 60  # every rule module, the engine, the helpers...
    assert "torchwise.lint.engine.context" in GRAPH["torchwise.lint.engine"]
    assert "torchwise.lint.semantics.devices" in GRAPH["torchwise.lint.rules.tw207_host_sync"]
    assert "torchwise.lint.semantics.files" in GRAPH["torchwise.lint.project"]


def test_no_import_circle():
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import circle: " + " -> ".join(cycle)


def test_find_cycle_finds_lazy_and_long_circles():
    # the circle this test was written against: engine -> project -> semantics -> engine
    graph = {"engine": {"project"}, "project": {"semantics"}, "semantics": {"engine"}, "rules": {"engine"}}
    assert find_cycle(graph) == ["engine", "project", "semantics", "engine"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_lazy_and_relative_imports_are_part_of_the_graph():
    source = ("from . import dataflow\nfrom ..semantics.steps import hot_loops\n"
              "def f():\n    from torchwise.lint.rules import all_rules\n    import torchwise.lint.project\n")
    found = imported_modules(source, "torchwise.lint.engine.context", False, set(GRAPH))
    assert found == {"torchwise.lint.engine.dataflow", "torchwise.lint.semantics.steps", "torchwise.lint.rules",
                     "torchwise.lint.project"}


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_imports_go_down_the_layers(module):
    mine = layer_of(module)
    up = sorted(m for m in GRAPH[module] if layer_of(m) > mine)
    assert not up, f"{module} ({LAYERS[mine][0]}) imports a higher layer: " + ", ".join(
        f"{m} ({LAYERS[layer_of(m)][0]})" for m in up)


def test_helpers_and_engine_never_import_a_rule():
    rules_layer = [i for i, (name, _) in enumerate(LAYERS) if name == "rules"][0]
    for module, deps in GRAPH.items():
        if layer_of(module) < rules_layer:
            assert not [d for d in deps if layer_of(d) == rules_layer], module


def test_rule_modules_import_no_other_rule_module():
    for module, deps in GRAPH.items():
        if module.startswith("torchwise.lint.rules.tw"):
            assert not [d for d in deps if d.startswith("torchwise.lint.rules.")], module


def test_no_module_of_lint_imports_torch(tmp_path):
    target = tmp_path / "train.py"
    target.write_text("import torch\nfor x, y in loader:\n    loss = model(x).sum()\n    loss.backward()\n"
                      "    opt.step()\n    print(loss.item())\nsd = torch.load('m.pt')\n")
    script = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        import torchwise.lint
        from torchwise.lint import lint_paths, lint_source
        for info in pkgutil.walk_packages(torchwise.lint.__path__, "torchwise.lint."):
            if info.name != "torchwise.lint.flake8_plugin":  # needs flake8; checked in its own test
                importlib.import_module(info.name)
        assert lint_source(open({str(target)!r}).read(), "train.py")
        assert lint_paths([{str(tmp_path)!r}], use_config=False, jobs=1)
        bad = sorted(m for m in sys.modules if m == "torch" or m.startswith("torch."))
        print("torch modules:", bad)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "torch modules: []", r.stdout

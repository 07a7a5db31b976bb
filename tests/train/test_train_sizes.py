"""The Trainer stays in small pieces: no module of train/ above 400 lines, no function above 60.

Issue 21 split a 1,091-line trainer into components; this keeps it that way. Nothing is exempt:
a function or module that must grow past the limit is split, or the limit is changed here, in
review, for everyone.
"""

from __future__ import annotations

import ast
from pathlib import Path

import torchwise.train

TRAIN = Path(torchwise.train.__file__).resolve().parent
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60  # from the ``def`` line (decorators excluded) to the last line of the body


def sizes(source: str) -> tuple[int, list[tuple[str, int]]]:
    """(the module's line count, [(qualified function name, its line count)])."""
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((name, child.end_lineno - child.lineno + 1))  # type: ignore[operator]
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return len(source.splitlines()), found


def test_the_size_check_measures_modules_and_nested_functions():
    """The measure itself: a 3-line method and a nested 2-line function are counted as such."""
    lines, functions = sizes("class A:\n    def f(self):\n        def g():\n            pass\n        return 1\n")
    assert lines == 5 and dict(functions) == {"A.f": 4, "A.f.g": 2}


def test_no_train_module_or_function_is_too_long():
    modules = sorted(TRAIN.glob("*.py"))
    assert len(modules) > 20  # the package was found (a wrong path would pass vacuously)
    too_long = []
    for path in modules:
        lines, functions = sizes(path.read_text(encoding="utf-8"))
        if lines > MAX_MODULE_LINES:
            too_long.append(f"{path.name}: {lines} lines (at most {MAX_MODULE_LINES})")
        too_long += [f"{path.name}: {name}() {n} lines (at most {MAX_FUNCTION_LINES})" for name, n in functions if n > MAX_FUNCTION_LINES]
    assert not too_long, "split these:\n" + "\n".join(too_long)

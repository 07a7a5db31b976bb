"""What kind of code a file or branch is: test files, and the old-API branch of code that
supports several library versions."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, last_name, str_consts
from torchwise.lint.engine.lazyre import lazy_compile


_TEST_DIRS = frozenset({"tests", "test", "testing", "unittests", "unit_tests", "integration_tests"})


_TEST_IMPORT = lazy_compile(r"^\s*(?:import|from)\s+(?:pytest|unittest|hypothesis|nose)\b", re.M)
_TEST_FUNC = lazy_compile(r"^\s*def test\w*\(", re.M)
_SCRIPT_ARGS = lazy_compile(r"^\S.*\bparse_args\(", re.M)  # a script's arguments parsed at its top level
_ASSERTS = lazy_compile(r"^\s*assert\b|\.assert\w*\(|pytest\.raises|assert_close|assert_allclose", re.M)


def is_test_path(path: str, text: str | None = None) -> bool:
    """A test file: under a ``tests``/``test`` folder or named ``conftest.py``; or named
    ``test_*.py``, ``*_test.py``, ``*_tests.py``, ``*unittests.py`` *and* written as tests (imports pytest/unittest, or has ``test*``
    functions that assert). Tests build tiny loaders and models on purpose and check that things
    *can* be done (scripted, wrapped in DataParallel...); performance and device advice does not
    apply. An evaluation script named ``test_classification.py`` is no test file: it runs a
    trained model and gets the advice every script gets. Without ``text`` the name decides."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    if name == "conftest.py" or any(p in _TEST_DIRS for p in parts[:-1]):
        return True
    stem = name[:-3] if name.endswith(".py") else name
    if not (stem.startswith("test_") or stem.endswith(("_test", "_tests", "unittests")) or stem == "tests"):
        return False
    return text is None or looks_like_tests(text)


def looks_like_tests(text: str) -> bool:
    """Source written as tests: a test framework imported, or a ``test*`` function that asserts in
    its own body. A command-line script (``parse_args()``) whose helper is named ``test_transform``
    and that asserts its arguments at the top level is no test file."""
    if _TEST_IMPORT.search(text):
        return True
    if not _ASSERTS.search(text) or ("parse_args(" in text and _SCRIPT_ARGS.search(text)):
        return False
    return any(_ASSERTS.search(_body(text, m.start(), m.end())) for m in _TEST_FUNC.finditer(text))


def _body(text: str, start: int, end: int) -> str:
    """The indented block under the ``def`` line found at ``start:end``."""
    head = text.find("def", start)
    indent = head - (text.rfind("\n", 0, head) + 1)
    lines = text[text.find("\n", end) + 1:].split("\n") if "\n" in text[end:] else []
    block = []
    for line in lines:
        stripped = line.lstrip()
        if stripped and not stripped.startswith("#") and len(line) - len(stripped) <= indent:
            break
        block.append(line)
    return "\n".join(block)


_VERSION_TEST = lazy_compile(r"version|greater|less|_ge_|_lt_|TORCH_\d|torch_\d|_\d_\d", re.I)


def _probes_module(ctx: Context, test: AST) -> bool:
    """``hasattr(torch, "amp")``, ``hasattr(F, "gelu")``: a test for a name in an imported module or
    class (a feature probe). ``hasattr(m, 'weight')`` on a module instance or ``self`` is no such test."""
    if "hasattr" not in ctx.text(test):
        return False
    for node in ast.walk(test):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id == "hasattr" and node.args:
            if ctx.qualname(node.args[0]) is not None:
                return True
    return False
_FALLBACK_ERRORS = frozenset({"AttributeError", "ImportError", "ModuleNotFoundError", "TypeError", "NameError"})


def in_compat_fallback(ctx: Context, node: AST, new_api: re.Pattern[str] | None = None) -> bool:
    """Is ``node`` the old-API branch of code that supports several library versions?

    Inside ``except AttributeError/ImportError/TypeError`` (the new API was missing), or in an
    ``if``/conditional expression that tests a version (``_TORCH_GREATER_EQUAL_2_4``,
    ``is_torch_version(...)``, ``hasattr(torch, "amp")``) or whose other branch uses the new API
    (``new_api`` matched against its source text)."""
    child = node
    for anc in ctx.ancestors(node):
        cls = anc.__class__
        if cls is ast.ExceptHandler and getattr(child, "_tw_field", "") == "body":
            names = [last_name(t) for t in ([anc.type] if anc.type is not None and anc.type.__class__ is not ast.Tuple
                                                else getattr(anc.type, "elts", []))]
            if anc.type is None or _FALLBACK_ERRORS.intersection(n for n in names if n):
                return True
        if cls in (ast.If, ast.IfExp):
            field = getattr(child, "_tw_field", "")
            if field in ("body", "orelse"):
                if _VERSION_TEST.search(ctx.text(anc.test)) or _probes_module(ctx, anc.test):
                    return True
                if new_api is not None:
                    other = anc.orelse if field == "body" else anc.body
                    others = other if isinstance(other, list) else [other]
                    if any(new_api.search(ctx.text(o)) for o in others):
                        return True
        child = anc
    return False


def _main_block(ctx: Context, node: AST) -> ast.If | None:
    """The module-level ``if __name__ == "__main__":`` block around ``node``, if any."""
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.If and ctx.parent(anc) is ctx.tree:
            test = anc.test
            if test.__class__ is ast.Compare and any(
                    n.__class__ is ast.Name and n.id == "__name__" for n in ast.walk(test)) and "__main__" in set(
                    str_consts(test)):
                return anc
    return None


def in_demo_main(ctx: Context, node: AST) -> bool:
    """In the ``__main__`` block of a library module (it defines classes or functions) that only
    exercises them - no function of its own, no loop but one that only prints: a smoke test that prints a shape or a
    score on made-up inputs, where performance and reproducibility advice gains nothing."""
    block = _main_block(ctx, node)
    if block is None or not any(n.__class__ in (ast.ClassDef, ast.FunctionDef) for n in ctx.tree.body):
        return False
    key = ("sem:demo-main", id(block))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = not any(n.__class__ is ast.FunctionDef or (
            n.__class__ in (ast.For, ast.While, ast.AsyncFor) and not _only_prints(n.body)) for n in ast.walk(block))
    return found


def _only_prints(body: list[ast.stmt]) -> bool:
    """A loop that only prints (``for x, y in loader: print(x.shape)``): a look at the data."""
    return all(s.__class__ is ast.Expr and s.value.__class__ is ast.Call and last_name(s.value.func) == "print"
               for s in body)
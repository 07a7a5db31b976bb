"""Dead code across the project: a module-level function or class of a file that nothing in the
project names (``def recall(...)`` left in a metrics module, ``def all_gather(data)`` in an unused
distributed helper; an import of it is no use when the importing module only calls it in a
comment, ``# flops = count_flops(model, n)``), or that only dead code names (``sequence_mask`` called only by the
``forward`` of a ``GlobalAttention`` class nobody builds); and a function or method whose name
occurs nowhere in the project but in its own ``def`` (no call, no reference, not even a string or
a comment). Per-call rules (TW104, TW205, TW402, TW403) report nothing there: it never runs
(ruling R5 of issue 22). Only in a script or a module the project imports: a module nobody imports
is an entry point of a library, whose callers are not in the project - unless it is an old version
of a class or function the project imports from another module (:mod:`.superseded`). A class is
never dead where its module, or one that names it, picks classes by a computed name (``Model =
eval(model_type)``, ``globals()[name]``). A text test per name,
cached per project or file."""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.superseded import superseded

# names a framework calls by itself (a test runner, torch.hub, an entry point): never dead
_CALLED_BY_NAME = re.compile(r"^(?:test|main$|setup$|run$|cli$)")
_ENTRY_FILES = frozenset({"hubconf.py", "setup.py", "conftest.py", "__main__.py"})


def dead_code(ctx: Context, node: AST | None) -> bool:
    """``node`` (a function, or any node inside one) lies in a module-level function or class,
    or a method of one, that nothing in the project refers to but dead code. Only when the file
    is linted with its project (a file linted alone cannot know its callers)."""
    if node is None or not ctx.project.files or os.path.basename(ctx.path) in _ENTRY_FILES:
        return False
    top = _top_level_of(ctx, node)
    if not _module_in_use(ctx):  # an old version of a class the project imports from elsewhere; a copy of a module
        return top is not None and (superseded(ctx, top) or ctx._cache.get("deadcode:shadowed", False))  # it imports elsewhere
    if top is not None and _dead(ctx, top, 2):
        return True
    return _in_named_once_function(ctx, node)


in_dead_function = dead_code


def never_named(ctx: Context, node: AST) -> bool:
    """``node`` lies in a function or method whose name occurs nowhere in the project but in its
    own ``def`` (the named-once half of :func:`dead_code`, without the test of unreferenced
    classes, which plug-in registries - classes looked up by a string - defeat)."""
    if not ctx.project.files or os.path.basename(ctx.path) in _ENTRY_FILES or not _module_in_use(ctx):
        return False
    return _in_named_once_function(ctx, node)


def _in_named_once_function(ctx: Context, node: AST) -> bool:
    func = node if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) else ctx.function_of(node)
    while func is not None:
        if func.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and _named_once(ctx, func):
            return True
        func = ctx.function_of(func)
    return False


def dead_ranges(ctx: Context, lines: set[int] | None = None) -> list[tuple[int, int]]:
    """``(first, last)`` lines of every function of the file that is dead code (empty when the file
    is linted alone); with ``lines``, only of the functions that hold one of them."""
    if not ctx.project.files or not any(p == ctx.path for p, _ in ctx.project.files):
        return []
    return [(f.lineno, f.end_lineno or f.lineno) for kind in (ast.FunctionDef, ast.AsyncFunctionDef)
            for f in ctx.nodes.get(kind, ()) if (lines is None or any(f.lineno <= n <= (f.end_lineno or f.lineno) for n in lines))
            and dead_code(ctx, f)]


def function_at(ctx: Context, line: int) -> AST | None:
    """The innermost function of the file whose lines hold ``line``."""
    best = None
    for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
        for f in ctx.nodes.get(kind, ()):
            if f.lineno <= line <= (f.end_lineno or f.lineno) and (best is None or f.lineno > best.lineno):
                best = f
    return best


def _module_in_use(ctx: Context) -> bool:
    """The file is a script (``__main__``) or a module another file of the project imports: then
    what nothing names in it is left over. A module nobody imports is an entry point of a library,
    whose users are not in the project."""
    found = ctx._cache.get("deadcode:used")
    if found is None:
        raw = os.path.splitext(os.path.basename(ctx.path))[0]
        others = [t for p, t in ctx.project.files if p != ctx.path and raw in t]
        stem = re.escape(raw)
        imports = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]*)\b" + stem + r"\b[ \t]+import|(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]"
                             r"([^\n]*)\b" + stem + r"\b)", re.M)
        found = "__main__" in ctx.source
        shadowed = False
        for t in others if not found else ():
            for m in imports.finditer(t):
                if _resolves_elsewhere(ctx, raw, m):
                    shadowed = True  # `from utils import misc` names utils/misc.py, not this segmentation/misc.py
                else:
                    found = True
                    break
            if found:
                break
        ctx._cache["deadcode:used"] = found
        ctx._cache["deadcode:shadowed"] = shadowed and not found
    return found


def _resolves_elsewhere(ctx: Context, stem: str, m: re.Match[str]) -> bool:
    """The import ``m`` names the module ``stem`` through a package (``from utils import misc``,
    ``from utils.misc import x``, ``import utils.misc``) that is not this file's folder, and another
    file of the project sits at that package path (``utils/misc.py``): it imports that file."""
    if m.group(1) is not None:
        package = m.group(1).rstrip(".")
    elif m.group(2) is not None:
        package = m.group(2)  # from utils import misc
    else:
        head = m.group(3).rstrip().rsplit(" ", 1)[-1].rstrip(",")  # import utils.misc
        package = head.rstrip(".") if head.endswith(".") else ""
    if not package or package.startswith(".") or package.rsplit(".", 1)[-1] == os.path.basename(os.path.dirname(ctx.path)):
        return False
    tail = "/" + package.replace(".", "/") + "/" + stem + ".py"
    return any(("/" + p.replace("\\", "/")).endswith(tail) for p, _ in ctx.project.files if p != ctx.path)


def _top_level_of(ctx: Context, node: AST) -> AST | None:
    """The module-level def or class around ``node``."""
    for anc in [node, *ctx.ancestors(node)]:
        if ctx.parent(anc) is ctx.tree:
            return anc if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) else None
    return None


def _dead(ctx: Context, top: AST, depth: int) -> bool:
    key = ("deadcode", id(top))
    found = ctx._cache.get(key)
    if found is None:
        ctx._cache[key] = False  # a reference cycle (recursion) counts as alive while it is worked out
        found = _unreferenced(ctx, top, depth)
        ctx._cache[key] = found
    return found


def _dynamic(text: str) -> bool:
    """``eval(name)`` (not ``.eval()`` nor ``model_eval(``) or ``globals()[...]`` in ``text``: a
    lookup by a computed name. Searched with ``str.find``, no regex over the whole text."""
    if "globals()[" in text:
        return True
    pos = text.find("eval(")
    while pos >= 0:
        before = text[pos - 1] if pos else " "
        if not (before.isalnum() or before in "_."):
            after = text[pos + 5:pos + 40].lstrip(" \t")
            if after[:1].isalpha() or after[:1] == "_":
                return True
        pos = text.find("eval(", pos + 5)
    return False



def _looked_up_by_name(ctx: Context) -> bool:
    """This module, or one that names it, picks classes by a name it computes (``Model =
    eval(model_type)``, ``globals()[args.arch]``): its classes may be alive without being named."""
    found = ctx._cache.get("deadcode:dynamic")
    if found is None:
        lookups = ctx.project.answers.get("deadcode:lookups")
        if lookups is None:  # the project's files that pick by a computed name, found once
            lookups = [(p, t) for p, t in ctx.project.files if _dynamic(t)]
            ctx.project.answers["deadcode:lookups"] = lookups
        stem = os.path.splitext(os.path.basename(ctx.path))[0]
        found = any(p == ctx.path or stem in t for p, t in lookups) or (
            not ctx.project.files and _dynamic(ctx.source))
        ctx._cache["deadcode:dynamic"] = found
    return found


def _unreferenced(ctx: Context, top: AST, depth: int) -> bool:
    name = top.name
    if top.decorator_list or name.startswith("__") or _CALLED_BY_NAME.match(name):
        return False
    if top.__class__ is ast.ClassDef and _looked_up_by_name(ctx):
        return False  # chosen by a computed name (`eval(model_type)`): named in a command line or config
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    if any(p != ctx.path and name in text and word.search(text) and _used_beyond_import(p, text, word)
           for p, text in ctx.project.files):
        return False  # named in another module: called, listed in a registry, re-exported...
    spans = _top_level_spans(ctx)
    lines = ctx.source.splitlines()
    for number, line in enumerate(lines, 1):
        if name not in line:
            continue
        for m in word.finditer(line):
            if number == top.lineno and line[:m.start()].rstrip().endswith(("def", "class")):
                continue  # the definition itself
            owner = _owner_at(spans, number)
            if owner is top:
                continue  # recursion, or the class naming itself
            if owner is None or depth == 0 or not _dead(ctx, owner, depth - 1):
                return False
    return True


_IMPORT_STMT = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]"
                          r"(?:[^\n\\]|\\\n)*)", re.M)
# a module that picks what it imports by a name computed at run time
_DYNAMIC = ("eval(", "getattr(", "globals()", "locals()", "__dict__", "vars(")


def _used_beyond_import(path: str, text: str, word: re.Pattern[str]) -> bool:
    """The name occurs in ``text`` other than in an import statement or a comment: a module that
    imports a helper whose only call is commented out (``# flops = count_flops(model, n)``) does
    not use it. A package's ``__init__.py`` re-exports what it imports, and a module that picks a
    name at run time (``eval(model_type)``) may use anything it imports."""
    if os.path.basename(path) == "__init__.py":
        return True
    spans = [m.span() for m in _IMPORT_STMT.finditer(text)]
    commented_call = False
    for m in word.finditer(text):
        at = m.start()
        if any(a <= at < b for a, b in spans):
            continue
        line_start = text.rfind("\n", 0, at) + 1
        if "#" in text[line_start:at]:  # after a comment sign (a '#' in a string before it counts too: rare)
            commented_call = commented_call or text.startswith("(", m.end())
            continue
        return True
    # eval(model_type) may pick any name the module imports: only a call commented out says it is unused
    return not commented_call and any(d in text for d in _DYNAMIC)


def _top_level_spans(ctx: Context) -> list[tuple[int, int, AST]]:
    spans = ctx._cache.get("deadcode:spans")
    if spans is None:
        spans = []
        for stmt in ctx.tree.body:
            if stmt.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
                first = min([stmt.lineno, *(d.lineno for d in stmt.decorator_list)])
                spans.append((first, stmt.end_lineno or stmt.lineno, stmt))
        ctx._cache["deadcode:spans"] = spans
    return spans


def _owner_at(spans: list[tuple[int, int, AST]], line: int) -> AST | None:
    for first, last, stmt in spans:
        if first <= line <= last:
            return stmt
    return None


# names that frameworks or Python call without the project naming them
_HOOKS = frozenset({"forward", "main", "run", "setup", "teardown", "configure_optimizers", "training_step",
                    "validation_step", "test_step", "predict_step"})


def _named_once(ctx: Context, func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    name = func.name
    if func.decorator_list or name.startswith("__") or name.startswith("on_") or name in _HOOKS:
        return False
    key = ("dead:uses", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = 0
        for _, text in ctx.project.files:
            if name in text:
                found += _words(text, name, 2 - found)
                if found > 1:
                    break
        ctx.project.answers[key] = found
    return found == 1


def _words(text: str, name: str, limit: int) -> int:
    """How often ``name`` occurs in ``text`` as a whole word (counting stops at ``limit``)."""
    n, size = 0, len(name)
    pos = text.find(name)
    while pos >= 0 and n < limit:
        before = text[pos - 1] if pos else " "
        after = text[pos + size] if pos + size < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            n += 1
        pos = text.find(name, pos + 1)
    return n

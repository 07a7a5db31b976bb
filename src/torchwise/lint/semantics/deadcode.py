"""Dead code across the project: a module-level function or class of a file that nothing in the
project names (``def recall(...)`` left in a metrics module, ``def all_gather(data)`` in an unused
distributed helper; an import of it is no use when the importing module only calls it in a
comment, ``# flops = count_flops(model, n)``; a copy of it that another module defines or imports
from a third is no use either), or that only dead code names (``sequence_mask`` called only by the
``forward`` of a ``GlobalAttention`` class nobody builds; also in another module, or the ``if
__name__ == "__main__":`` demo of a module the project imports); and a function or method whose name
occurs nowhere in the project but in its own ``def`` (no call, no reference, not even a string;
a mention in a comment, ``# train_graph_completion(args)``, is no use either). A
``test*`` function is called by a test runner only in a test module: in a training script it is
dead like any other name. A script that no other file imports or names calls nothing of theirs,
so their own functions of the same name (``train`` of another script) do not keep its ``train``
alive. Per-call rules
(TW104, TW205, TW402, TW403) report nothing there: it never runs (ruling R5 of issue 22). Only in a script or a module the project imports: a module nobody imports
is an entry point of a library, whose callers are not in the project - unless it is an old version
of a class or function the project imports from another module (:mod:`.superseded`). A class is
never dead where its module, or one that names it, picks classes by a computed name (``Model =
eval(model_type)``, ``globals()[name]``), and a module-level function of a script that ends in
``fire.Fire()`` with no argument is a command of it. A text test per name,
cached per project or file."""

from __future__ import annotations

import ast
import os
import re
from bisect import bisect_right

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import imports_module, parsed_file
from torchwise.lint.semantics.cliexposed import cli_exposed
from torchwise.lint.semantics.deadtext import (called_by_name, import_spans, only_in_prose, others_attribute, own_copy, owners_look_local,
                                                resolves_elsewhere, used_beyond_import, words)
from torchwise.lint.semantics.deadmethods import function_at, named_once, only_dead_callers, private_named_once
from torchwise.lint.semantics.deadmodules import configured_module, left_over, named_in_references, runs_as_script
from torchwise.lint.semantics.mentionsonly import in_export_list, namespace_lookups, only_type_tests, reexport_only, type_test
from torchwise.lint.semantics.redefined import redefined_later
from torchwise.lint.semantics.superseded import superseded

_NEVER = lazy_compile(r"(?!)")  # matches nothing: no other file names the module
_ENTRY_FILES = frozenset({"hubconf.py", "setup.py", "conftest.py", "__main__.py"})


def dead_code(ctx: Context, node: AST | None) -> bool:
    """``node`` (a function, or any node inside one) lies in a module-level function or class,
    or a method of one, that nothing in the project refers to but dead code. Only when the file
    is linted with its project (a file linted alone cannot know its callers)."""
    if node is None or not ctx.project.files or os.path.basename(ctx.path) in _ENTRY_FILES:
        return False
    top = _top_level_of(ctx, node)
    if cli_exposed(ctx, top):
        return False  # a sub-command of `fire.Fire()`
    if redefined_later(ctx, top):
        return True  # a later def of the same name replaces it: nothing can call it
    if not _module_in_use(ctx):  # an old version of a class the project imports from elsewhere; a copy of a module
        if top is not None and (superseded(ctx, top) or ctx._cache.get("deadcode:shadowed", False)):  # it imports elsewhere
            return True
        return left_over(ctx)  # imported, run and named by nothing
    if top is not None and _dead(ctx, top, 2):
        return True
    return _in_named_once_function(ctx, node)


in_dead_function = dead_code


def never_named(ctx: Context, node: AST) -> bool:
    """``node`` lies in a function or method whose name occurs nowhere in the project but in its
    own ``def`` (the named-once half of :func:`dead_code`, without the test of unreferenced
    classes, which plug-in registries - classes looked up by a string - defeat)."""
    if not ctx.project.files or os.path.basename(ctx.path) in _ENTRY_FILES:
        return False
    if not _module_in_use(ctx):  # a library's entry module: its users call its public names, not its private ones
        return private_named_once(ctx, node)
    return not cli_exposed(ctx, _top_level_of(ctx, node)) and _in_named_once_function(ctx, node)


def never_runs(ctx: Context, node: AST) -> bool:
    """For per-step rules that plug-in registries would mislead: :func:`never_named`, or
    :func:`dead_code` (helpers only dead classes call, a class nothing names) where no file of the
    project picks classes out of modules by a computed name (``importlib.import_module(...)``
    with ``getattr(mod, name)``, as a registry scanning a folder of models does)."""
    if never_named(ctx, node):
        return True
    return not _classes_by_name(ctx) and dead_code(ctx, node)


_GETATTR_COMPUTED = lazy_compile(r"getattr\([ \t]*[\w.]+[ \t]*,[ \t]*(?![ \t]*['\"])")


def _classes_by_name(ctx: Context) -> bool:
    found = ctx.project.answers.get("deadcode:classes-by-name")
    if found is None:
        found = any(("import_module(" in t or "__import__(" in t) and _GETATTR_COMPUTED.search(t) is not None
                    for _, t in ctx.project.files)
        ctx.project.answers["deadcode:classes-by-name"] = found
    return found


def _in_named_once_function(ctx: Context, node: AST) -> bool:
    func = node if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) else ctx.function_of(node)
    while func is not None:
        if func.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and (named_once(ctx, func) or only_dead_callers(ctx, func, 3)):
            return not (ctx.scope_of(func).__class__ is ast.Module and cli_exposed(ctx, func))  # a `fire.Fire()` command
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


def dead_at(ctx: Context, line: int) -> bool:
    """Line ``line`` of the file lies in dead code: a function :func:`dead_code` finds dead, or
    a left-over module (:mod:`.deadmodules`) at its top level."""
    if not ctx.project.files or os.path.basename(ctx.path) in _ENTRY_FILES:
        return False
    func = function_at(ctx, line)
    if func is not None:
        return dead_code(ctx, func)
    return not _module_in_use(ctx) and left_over(ctx)


def _module_in_use(ctx: Context) -> bool:
    """The file is a script (``__main__``) or a module another file of the project imports: then
    what nothing names in it is left over. A module nobody imports is an entry point of a library,
    whose users are not in the project."""
    found = ctx._cache.get("deadcode:used")
    if found is None:
        raw = os.path.splitext(os.path.basename(ctx.path))[0]
        others = [t for p, t in ctx.project.files if p != ctx.path and raw in t]
        stem = re.escape(raw)
        imports = _NEVER if not others else re.compile(r"^[ \t]*(?:from[ \t]+((?:\.+[ \t]*)?[\w.]*)\b" + stem + r"\b[ \t]+import|(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]"
                             r"([^\n]*)\b" + stem + r"\b)", re.M)
        imported = shadowed = False
        for t in others:
            for m in imports.finditer(t):
                if resolves_elsewhere(ctx, raw, m):
                    shadowed = True  # `from utils import misc` names utils/misc.py, not this segmentation/misc.py
                else:
                    imported = True
                    break
            if imported:
                break
        ctx._cache["deadcode:imported"] = imported
        found = "__main__" in ctx.source or imported or runs_as_script(ctx) or (not shadowed and configured_module(ctx, raw))
        ctx._cache["deadcode:used"] = found
        ctx._cache["deadcode:shadowed"] = shadowed and not found
    return found


def _main_block(ctx: Context) -> tuple[int, int] | None:
    """The lines of the ``if __name__ == "__main__":`` block of a module other modules of the
    project import: a demo or self-test run by hand, not a use by the project."""
    if "__main__" not in ctx.source or not _module_in_use(ctx) or not ctx._cache.get("deadcode:imported"):
        return None
    for stmt in ctx.tree.body:
        if stmt.__class__ is ast.If and "__main__" in ctx.text(stmt.test) and "__name__" in ctx.text(stmt.test):
            return stmt.lineno, stmt.end_lineno or stmt.lineno
    return None


def _only_in_dead_parts(ctx: Context, path: str, text: str, word: re.Pattern[str], depth: int) -> bool:
    """Every use of the name in the other module ``path`` lies in its own dead code - a class or
    function nothing uses, or the demo block of a module the project imports (``ModelNetDataLoader``
    built only under ``if __name__ == "__main__":`` of a dataset module)."""
    if depth < 0:
        return False
    if not owners_look_local(ctx, path, text, word):  # a text test first: no module is parsed for a use that is evidently alive
        return '"""' in text and _only_quoted(ctx, path, text, word)
    other = parsed_file(ctx.project, path, text)
    if other is None or not _module_in_use(other):
        return False
    spans, demo = _top_level_spans(other), _main_block(other)
    imports = import_spans(text)
    for m in word.finditer(text):
        if any(a <= m.start() < b for a, b in imports):
            if re.match(r"[ \t]+as[ \t]+\w", text[m.end():m.end() + 40]):
                return False  # from loops import train_vanilla as train: its uses go by the other name
            continue
        line = text.count("\n", 0, m.start()) + 1
        if "#" in text[text.rfind("\n", 0, m.start()) + 1:m.start()]:
            continue  # in a comment
        owner = _owner_at(spans, line)
        if owner is None:
            if demo is None or not demo[0] <= line <= demo[1]:
                return False
        elif not _dead(other, owner, depth):
            return False
    return True


def _only_quoted(ctx: Context, path: str, text: str, word: re.Pattern[str]) -> bool:
    """Every use of the name in the other module ``path`` outside its imports lies in a comment or
    a docstring (``model = BertForTokenClassification.from_pretrained(...)`` in the usage example
    of another class's docstring)."""
    other = parsed_file(ctx.project, path, text)
    if other is None:
        return False
    imports = import_spans(text)
    for m in word.finditer(text):
        if any(a <= m.start() < b for a, b in imports):
            return False  # imported by name: maybe used under an alias or re-exported
        start = text.rfind("\n", 0, m.start()) + 1
        if not _silent_at(other, text.count("\n", 0, m.start()) + 1, text[start:m.start()]):
            return False
    return True


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
        found = any(p == ctx.path or stem in t and names_module(ctx, p, t, stem) for p, t in lookups) or (
            not ctx.project.files and _dynamic(ctx.source))
        ctx._cache["deadcode:dynamic"] = found
    return found


def names_module(ctx: Context, path: str, text: str, stem: str) -> bool:
    """The file ``path`` imports a module named ``stem`` that may be this one: not only by a bare
    name that its own folder's ``stem.py`` answers (``from model import GNN`` in ``chem/``, beside
    ``chem/model.py``)."""
    if not imports_module(text, stem):
        return False
    folder = os.path.dirname(path)
    if folder == os.path.dirname(ctx.path) or not any(os.path.dirname(p) == folder and os.path.basename(p) == stem + ".py"
                                                       for p, _ in ctx.project.files):
        return True
    return re.search(r"^[ \t]*(?:from[ \t]+[\w.]+\." + re.escape(stem) + r"\b|import[ \t]+[\w.]+\." + re.escape(stem) + r"\b|from[ \t]+[\w.]*"
                     r"[ \t]+import[^\n]*\b" + re.escape(stem) + r"\b)", text, re.M) is not None  # through a package: maybe this one


def _unreferenced(ctx: Context, top: AST, depth: int) -> bool:
    name = top.name
    if not all(map(_inert_decorator, top.decorator_list)) or name.startswith("__") or called_by_name(name, ctx.path):
        return False  # a decorator may register it (`@register_model`): alive unless it only writes a docstring
    if top.__class__ is ast.ClassDef and _looked_up_by_name(ctx):
        return False  # chosen by a computed name (`eval(model_type)`): named in a command line or config
    word = re.compile(r"\b" + re.escape(name) + r"\b")
    is_class = top.__class__ is ast.ClassDef  # a class named elsewhere only in prose (help='prop alpha') is built nowhere
    spans, demo = _top_level_spans(ctx), _main_block(ctx)
    starts = ctx._cache.get("deadcode:starts")
    if starts is None:  # where each line starts (as str.splitlines counts them)
        starts = [0]
        for piece in ctx.source.splitlines(True):
            starts.append(starts[-1] + len(piece))
        ctx._cache["deadcode:starts"] = starts
    source = ctx.source
    at = source.find(name)
    while at >= 0:  # every use of the name as a word: this file first, a call at module level settles it cheaply
        start, at = at, source.find(name, at + 1)
        if start and (source[start - 1].isalnum() or source[start - 1] == "_") or \
                (source[start + len(name):start + len(name) + 1].isalnum() or source[start + len(name):start + len(name) + 1] == "_"):
            continue  # part of a longer word
        number = bisect_right(starts, start)
        if source[starts[number - 1]:start].strip() in ("def", "async def", "class"):
            continue  # the definition itself, or a method of the same name (`PCRNetTransform.convert2transformation`)
        owner = _owner_at(spans, number)
        if owner is top or source[start - 1] == "." or _silent_at(ctx, number, source[starts[number - 1]:start]):
            continue  # recursion, the class naming itself, another object's attribute (np.argmax), code quoted out
        if owner is None and demo is not None and demo[0] <= number <= demo[1]:
            continue  # the demo block of a module the project imports
        if is_class and (type_test(source[starts[number - 1]:start]) or owner is None and in_export_list(source, start)
                         and not namespace_lookups(ctx)):
            continue  # isinstance(m, Name), __all__ = ['Name']: nothing built
        if owner is None or depth == 0 or not _dead(ctx, owner, depth - 1):
            return False
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    if _named_by_no_file(ctx, stem):
        return not named_in_references(ctx, name)  # a script no file imports: the others' names are their own
    return not any(p != ctx.path and name in text and word.search(text) and not own_copy(ctx, text, name, stem)
                   and not others_attribute(text, name, stem, os.path.basename(os.path.dirname(ctx.path)))
                   and used_beyond_import(p, text, word) and not (is_class and (only_in_prose(text, word) or only_type_tests(text, word)))
                   and not (reexport_only(ctx, p, text, word) and not namespace_lookups(ctx))
                   and not _only_in_dead_parts(ctx, p, text, word, depth - 1)
                   for p, text in ctx.project.files) and not named_in_references(ctx, name)  # named in another module
    # (called, listed in a registry, re-exported) or in a config (`_target_: models.Critic`)


def _named_by_no_file(ctx: Context, stem: str) -> bool:
    """No other Python file of the project imports this module or names it at all (no import, no
    ``runpy``/``subprocess`` path, no string): a script run by hand, whose functions no other
    module can call - a ``train`` of another script is that script's own. Not where the script
    hands its functions to a command line by name (``fire.Fire()``) or picks one by a computed
    name (``globals()[args.cmd]``, ``eval(name)``, ``sys.modules``)."""
    found = ctx._cache.get("deadcode:unnamed")
    if found is None:
        source = ctx.source
        found = not ctx._cache.get("deadcode:imported", True) and "Fire(" not in source and "sys.modules" not in source \
            and not _dynamic(source) and not any(p != ctx.path and stem in t and words(t, stem, 1) for p, t in ctx.project.files)
        ctx._cache["deadcode:unnamed"] = found
    return found


# decorators that only document or fill in a class, registering nothing (the docstring helpers of
# a vendored Hugging Face modeling file, `@add_start_docstrings(...)`; `@dataclass`)
_INERT_DECORATORS = frozenset({"add_start_docstrings", "add_start_docstrings_to_model_forward", "add_start_docstrings_to_callable",
                                "add_code_sample_docstrings", "replace_return_docstrings", "dataclass", "total_ordering"})


def _inert_decorator(node: AST) -> bool:
    node = node.func if node.__class__ is ast.Call else node
    name = node.attr if node.__class__ is ast.Attribute else node.id if node.__class__ is ast.Name else ""
    return name in _INERT_DECORATORS


def _silent_at(ctx: Context, line: int, before: str) -> bool:
    """A use on line ``line`` after the text ``before`` is in a comment, or in a string that is
    a statement of its own (code quoted out with triple quotes, a docstring)."""
    if "#" in before:
        return True
    spans = ctx._cache.get("deadcode:quoted")
    if spans is None:
        spans = [(e.lineno, e.end_lineno or e.lineno) for e in ctx.nodes.get(ast.Expr, ())
                 if e.value.__class__ is ast.Constant and isinstance(e.value.value, str)]
        ctx._cache["deadcode:quoted"] = spans
    return any(a <= line <= b for a, b in spans)


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

"""Files that call a helper of their project which falls back to the CPU.

A short helper that moves what it is handed (or what it builds and returns) to CUDA only when a
GPU is there - ``def tensor2var(x): if torch.cuda.is_available(): x = x.cuda(); return
Variable(x)``, a model factory ``def make(name): model = models[name](); if
torch.cuda.is_available(): model.cuda(); return model``, or a helper that returns what it is
handed moved onto a device it chooses with a CPU alternative (``def cc(net): device =
torch.device("cuda" if torch.cuda.is_available() else "cpu"); return net.to(device)``) - is the
project's CPU path. A file that
calls it (its model or its batches go through the fallback) offers that CPU path itself; a bare
``.cuda()`` beside the call breaks it (METHOD R17: a helper the file itself calls that falls back
to the CPU is linked evidence). Only the calling file is linked: the modules it imports are not.

Text first (a GPU check followed by a ``.cuda()`` on the next line, in a function of at most
:data:`MAX_LINES` lines); the few blocks that match are parsed to check that the move is of a
parameter or of a value the helper returns. A call is linked by its import: ``from utils import
tensor2var`` / ``from utils import *`` and ``tensor2var(``, or ``import models`` and
``models.make(``.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.project.extensions import imported, module_keys
from torchwise.lint.project.functions import function_blocks

MAX_LINES = 25
# `if torch.cuda.is_available():` and a `.cuda(` move on the next line of its body
_GUARDED_MOVE = lazy_compile(r"^([ \t]*)if[ \t]+torch\.cuda\.is_available\(\)[ \t]*:[ \t]*\r?\n\1[ \t]+[^\n]*\.cuda\(", re.M)
# `"cuda" if torch.cuda.is_available() else "cpu"`: a device chosen with a CPU alternative
_CHOICE = lazy_compile(r"""["']cuda(?::0)?["'][ \t]+if[ \t]+torch\.cuda\.is_available\(\)[ \t]+else[ \t]+["']cpu["']""")


def _is_choice(node: ast.AST | None) -> bool:
    """``torch.device("cuda" if torch.cuda.is_available() else "cpu")`` or the bare conditional."""
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "torch.device" and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.IfExp) and _CHOICE.search(ast.unparse(node)) is not None


def _function_and_params(block: str) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, set[str]] | None:
    """The function a helper's text defines and its parameter names; None where it does not parse."""
    try:
        func = ast.parse(block).body[0]
    except (SyntaxError, ValueError, IndexError, RecursionError, MemoryError):
        return None
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    return func, {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}


def _returns_handed_on_choice(block: str) -> bool:
    """The parsed helper returns a parameter moved onto a device chosen with a CPU alternative:
    ``def cc(net): device = torch.device("cuda" if torch.cuda.is_available() else "cpu"); return
    net.to(device)``."""
    parsed = _function_and_params(block)
    if parsed is None:
        return False
    func, params = parsed
    chosen = {t.id for n in func.body if isinstance(n, ast.Assign) and _is_choice(n.value)
              for t in n.targets if isinstance(t, ast.Name)}
    for node in func.body:
        v = node.value if isinstance(node, ast.Return) else None
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and v.func.attr == "to" and len(v.args) == 1 \
                and isinstance(v.func.value, ast.Name) and v.func.value.id in params \
                and (isinstance(v.args[0], ast.Name) and v.args[0].id in chosen or _is_choice(v.args[0])):
            return True
    return False


def _moves_handed_value(block: str) -> bool:
    """The parsed helper moves, under its GPU check, a parameter or a name it returns, has no
    ``else`` branch there, and returns something."""
    parsed = _function_and_params(block)
    if parsed is None:
        return False
    func, params = parsed
    returned = {n.id for r in ast.walk(func) if isinstance(r, ast.Return) and r.value is not None
                for n in ast.walk(r.value) if isinstance(n, ast.Name)}
    if not returned and not any(isinstance(r, ast.Return) and r.value is not None for r in ast.walk(func)):
        return False
    for node in func.body:
        if not (isinstance(node, ast.If) and not node.orelse and isinstance(node.test, ast.Call)
                and ast.unparse(node.test.func) == "torch.cuda.is_available"):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "cuda" \
                    and isinstance(call.func.value, ast.Name) and call.func.value.id in params | returned:
                return True
    return False


def fallback_helpers(texts: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Helper name -> the module keys of the files defining it (see the module doc)."""
    found: dict[str, set[str]] = {}
    for path, text in texts:
        if "is_available()" not in text:
            continue
        guarded = ".cuda(" in text and _GUARDED_MOVE.search(text) is not None
        chosen = ".to(" in text and "else" in text and _CHOICE.search(text) is not None
        if not guarded and not chosen:
            continue
        for name, _, block in function_blocks(text, ("is_available()",), MAX_LINES):
            if guarded and _GUARDED_MOVE.search(block) is not None and _moves_handed_value(block) or (
                    chosen and _CHOICE.search(block) is not None and _returns_handed_on_choice(block)):
                found.setdefault(name, set()).update(module_keys(path))
    return found


def helper_callers(texts: list[tuple[str, str]]) -> frozenset[str]:
    """The files that call a fallback helper of their project, imported from the module that
    defines it (not the defining file itself: its own moves are judged by itself)."""
    helpers = fallback_helpers(texts)
    if not helpers:
        return frozenset()
    out = []
    for path, text in texts:
        if "import" not in text or not any(f"{h}(" in text for h in helpers):
            continue
        modules, names = imported(text, anywhere=True)
        for helper, keys in helpers.items():
            if f"{helper}(" not in text or module_keys(path) & keys and f"def {helper}(" in text:
                continue
            direct = (helper in names or "*" in names) and modules & keys
            dotted = any(re.search(rf"(?<![\w.]){re.escape(k)}\.{helper}\(", text) for k in keys & (modules | names))
            if direct and re.search(rf"(?<![\w.]){helper}\(", text) or dotted:
                out.append(path)
                break
    return frozenset(out)


__all__ = ["fallback_helpers", "helper_callers"]

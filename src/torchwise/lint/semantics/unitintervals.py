"""A log interval that is no interval (TW207): ``if (batch_idx + 1) % args.log_step == 0:`` where
``parser.add_argument('--log_step', default=1, ...)`` in the same file - or, when the file declares
no such option, in every other module of the project that does (the entry script of a library
step) - and nothing in the project sets it otherwise (no ``args.log_step = ...``, no other file
naming the option but to declare or read it): every run that does not pass the option reads on
every step. Also through a local copy made once (``log_step = args.log_step``) and through a
parameter of the function (``def train_epoch(..., print_modulus=1)``) that every caller of the
project leaves at 1 or hands such an option (``train_epoch(..., args.print_modulus)``)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, keyword
from torchwise.lint.semantics.callers import caller_arguments


def every_step_interval(ctx: Context, test: AST) -> bool:
    """``test`` is ``<count> % args.<option> == 0`` with the option's argparse default 1 (the only
    setting of it in the project), also as a part of ``and`` (``... == 0 and args.model == "tfn"``:
    the other parts are no interval) or of ``or`` (``... == 0 or step == iters``: the branch runs
    whenever the interval test holds)."""
    if test.__class__ is ast.BoolOp:
        return any(every_step_interval(ctx, part) for part in test.values)
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.ops[0].__class__ is not ast.Eq:
        return False
    left = test.left
    if left.__class__ is not ast.BinOp or left.op.__class__ is not ast.Mod:
        return False
    divisor = left.right
    if divisor.__class__ is ast.Name:
        return _unit_name(ctx, divisor)
    return _unit_option(ctx, divisor)


def _unit_option(ctx: Context, divisor: AST, exempt: str = "") -> bool:
    """``args.<option>`` whose argparse default is 1 and that nothing sets otherwise (``exempt``: a
    file that names it as its parameter)."""
    if divisor.__class__ is not ast.Attribute or divisor.value.__class__ is not ast.Name:
        return False
    option = divisor.attr
    key = ("sem:unit-interval", option, exempt)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _default_one(ctx, option) and _set_nowhere_else(ctx, option, exempt)
    return found


def _unit_name(ctx: Context, name: ast.Name) -> bool:
    """A local bound once from such an option (``log_step = args.log_step``), or a parameter that
    defaults to 1 and that every caller of the project leaves so or hands such an option."""
    b = ctx.binding_at(name.id, name)
    func = ctx.function_of(name)
    if b is None or func is None or ctx.function_of(b.node) is not func:
        return False
    if b.kind == "assign":
        chain = ctx.bindings(func).get(name.id, ())
        return len(chain) == 1 and _unit_option(ctx, b.value)
    if b.kind != "param" or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    positional = [*func.args.posonlyargs, *func.args.args]
    defaults = dict(zip([a.arg for a in positional[len(positional) - len(func.args.defaults):]], func.args.defaults))
    defaults.update({a.arg: d for a, d in zip(func.args.kwonlyargs, func.args.kw_defaults) if d is not None})
    default = defaults.get(name.id)
    if not _is_one(default):
        return False
    calls = 0
    for other, value, _ in caller_arguments(ctx, func, name.id, elsewhere="importers"):
        calls += 1
        if value is not None and not _is_one(value) and not _unit_option(other, value, ctx.path):
            return False
    return calls > 0


def _is_one(node: AST | None) -> bool:
    return node.__class__ is ast.Constant and node.value == 1 and node.value is not True


def _default_one(ctx: Context, option: str) -> bool:
    for call in ctx.calls_named("add_argument") if "add_argument" in ctx.source else ():
        names = {a.value.lstrip("-").replace("-", "_") for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)}
        if option not in names:
            continue
        default = keyword(call, "default")
        return default is not None and _is_one(default.value)
    # declared elsewhere (the entry script, an options module): every declaration says 1
    pattern = re.compile(r"add_argument\(\s*['\"]-{0,2}" + re.escape(option).replace("_", "[_-]") + r"['\"][^\n]*")
    seen = [m.group(0) for p, t in ctx.project.files if p != ctx.path and "add_argument" in t for m in pattern.finditer(t)]
    return bool(seen) and all(re.search(r"\bdefault\s*=\s*1\s*[,)]", line) for line in seen)


def _set_nowhere_else(ctx: Context, option: str, exempt: str = "") -> bool:
    """No assignment to ``<x>.<option>`` in the file, and no other file of the project names it
    but in a declaration of its own parser (``add_argument('--log_interval', default=20)`` of a
    sibling script) or in reads of the parsed options (``train_epoch(..., args.print_modulus)``)."""
    if any(t.__class__ is ast.Attribute and t.attr == option for node in ctx.nodes.get(ast.Assign, ()) for t in node.targets):
        return False
    spelled = (option, option.replace("_", "-"))
    read = re.compile(r"\." + re.escape(option) + r"\b(?!\s*=[^=])")
    return not any(p not in (ctx.path, exempt) and any(s in t for s in spelled) and not _own_option(t, spelled, read) for p, t in ctx.project.files)


def _own_option(text: str, spelled: tuple[str, str], read: re.Pattern) -> bool:
    """``text`` declares the option for a parser of its own (a sibling script's ``add_argument``),
    or names it only in reads of an options object (``args.log_step`` not assigned)."""
    lines = [line for line in text.splitlines() if any(s in line for s in spelled)]
    return any("add_argument" in line for line in lines) or all(
        not any(s in read.sub("", line) for s in spelled) for line in lines)


__all__ = ["every_step_interval"]

"""Scripts that can only run on the CPU: every CUDA choice of the file sits behind an option no
command line can turn on. The usual shape is a switch written the wrong way round::

    parser.add_argument('--no-cuda', action='store_true', default=True)   # never False
    args.cuda = not args.no_cuda and torch.cuda.is_available()            # never True
    device = torch.device("cuda" if args.cuda else "cpu")                  # always the CPU

An option with ``action='store_true'`` and a true default is on in every run (and one with
``store_false`` and a false default off); tests read through ``not``/``and``/``or`` and through
names and ``args.x = ...`` assignments of the file. The file runs only on the CPU when it names
CUDA at least once (a ``"cuda"`` device string, ``.cuda()``, ``torch.cuda.*`` other than
``is_available()``) and every such place lies in the arm of an ``if`` or conditional expression
that no run takes, and it takes no device from another module (``.to(device)`` of an imported
name). A fact of the file that every per-step rule can use: what a CPU run does per step waits
for no accelerator. Files whose only device is a ``'cpu'`` constant and that name no accelerator
at all count too (:mod:`torchwise.lint.semantics.cpuconstant`).
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, keyword
from torchwise.lint.semantics.cpuconstant import cpu_constant_script

_QUERIES = frozenset({"is_available", "device_count"})


def runs_only_on_cpu(ctx: Context) -> bool:
    """Can the file only run on the CPU (module doc)? Computed once per file."""
    found = ctx._cache.get("cpuonly:file")
    if found is None:
        found = ctx._cache["cpuonly:file"] = _cpu_only(ctx) or cpu_constant_script(ctx)
    return found


def _cpu_only(ctx: Context) -> bool:
    src = ctx.source
    if "cuda" not in src or "add_argument" not in src or ("store_true" not in src and "store_false" not in src):
        return False
    fixed = _fixed_options(ctx)
    if not fixed:
        return False
    gated = 0
    for node in _cuda_mentions(ctx):
        if not _in_unrun_arm(ctx, node, fixed):
            return False
        gated += 1
    return gated > 0 and not _imported_device(ctx)


def _fixed_options(ctx: Context) -> dict[str, bool]:
    """``{dest: value}`` of the argparse options no command line can change: ``store_true`` with a
    true default (always on), ``store_false`` with a false default (always off)."""
    out: dict[str, bool] = {}
    for call in ctx.calls_named("add_argument"):
        action, default = keyword(call, "action"), keyword(call, "default")
        if action is None or default is None or action.value.__class__ is not ast.Constant \
                or default.value.__class__ is not ast.Constant:
            continue
        kind, value = action.value.value, bool(default.value.value)
        if (kind, value) not in (("store_true", True), ("store_false", False)):
            continue
        dest = keyword(call, "dest")
        names = [dest.value.value] if dest is not None and dest.value.__class__ is ast.Constant else [
            a.value for a in call.args if a.__class__ is ast.Constant and isinstance(a.value, str)]
        for name in names:
            out[name.lstrip("-").replace("-", "_")] = value
    return out


def _value_of(ctx: Context, test: AST, fixed: dict[str, bool], depth: int = 4) -> bool | None:
    """The value ``test`` has in every run, or None when it may vary."""
    if depth <= 0:
        return None
    cls = test.__class__
    if cls is ast.UnaryOp and test.op.__class__ is ast.Not:
        inner = _value_of(ctx, test.operand, fixed, depth - 1)
        return None if inner is None else not inner
    if cls is ast.BoolOp:
        parts = [_value_of(ctx, v, fixed, depth - 1) for v in test.values]
        decisive = test.op.__class__ is ast.Or  # or: one True decides; and: one False decides
        if decisive in parts:
            return decisive
        return (not decisive) if all(p is not None for p in parts) else None
    if cls is ast.Name:
        b = ctx.binding_at(test.id, test)
        return _value_of(ctx, b.value, fixed, depth - 1) if b is not None and b.kind == "assign" and b.value is not None else None
    if cls is ast.Attribute and test.value.__class__ is ast.Name:
        assigned = _attribute_values(ctx, test.value.id, test.attr)
        if assigned:
            values = {_value_of(ctx, v, fixed, depth - 1) for v in assigned}
            return values.pop() if len(values) == 1 else None
        return fixed.get(test.attr)
    return None


def _attribute_values(ctx: Context, base: str, attr: str) -> list[AST]:
    """The values assigned to ``base.attr`` in the file (``args.cuda = ...``)."""
    return [node.value for node in ctx.nodes.get(ast.Assign, ()) for t in node.targets
            if t.__class__ is ast.Attribute and t.attr == attr and t.value.__class__ is ast.Name and t.value.id == base]


def _cuda_mentions(ctx: Context) -> list[AST]:
    """Every place the file picks CUDA: a ``"cuda..."`` string, ``.cuda()``, ``torch.cuda.*`` (not
    the availability queries)."""
    out: list[AST] = []
    for node in ctx.nodes.get(ast.Constant, ()):
        if isinstance(node.value, str) and node.value.startswith("cuda") and not _described(ctx, node):
            out.append(node)
    for node in ctx.nodes.get(ast.Attribute, ()):
        if node.attr == "cuda":
            parent = ctx.parent(node)
            if parent.__class__ is ast.Call and parent.func is node:
                out.append(node)  # x.cuda()
            elif parent.__class__ is ast.Attribute and parent.attr not in _QUERIES:
                out.append(node)  # torch.cuda.manual_seed(...), torch.cuda.FloatTensor
    return out


def _described(ctx: Context, node: AST) -> bool:
    """A help text or label (``help="cuda is not used"``), no device."""
    parent = ctx.parent(node)
    return parent.__class__ is ast.keyword and parent.arg in ("help", "metavar", "description")


def _in_unrun_arm(ctx: Context, node: AST, fixed: dict[str, bool]) -> bool:
    return any(_value_of(ctx, branch.test, fixed) is (not in_body) for branch, in_body in _arms(ctx, node))


def _arms(ctx: Context, node: AST) -> list[tuple[AST, bool]]:
    """The ``if`` statements and conditional expressions around ``node``, across function bounds."""
    out, child = [], node
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.If, ast.IfExp):
            field = getattr(child, "_tw_field", "")
            if field in ("body", "orelse"):
                out.append((anc, field == "body"))
        child = anc
    return out


def _imported_device(ctx: Context) -> bool:
    """A ``.to(name)`` whose name another module binds: the device may come from there."""
    for call in ctx.calls_named("to"):
        for arg in call.args[:1]:
            if arg.__class__ is ast.Name:
                b = ctx.binding_at(arg.id, call)
                if b is not None and b.kind == "import":
                    return True
    return False


__all__ = ["runs_only_on_cpu"]

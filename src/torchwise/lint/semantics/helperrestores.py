"""A checkpoint handed to a restoring helper of the project (TW402).

``checkpoint = torch.load(args.checkpoint_path)`` then ``load_state(net, checkpoint)``, where the
project's ``def load_state(net, checkpoint)`` copies the checkpoint's entries into the model it is
given (``net.load_state_dict(new_state)``, the new state built from ``checkpoint["state_dict"]``):
the load restores a model as surely as ``net.load_state_dict(torch.load(p))`` does. The helper is
one of this file or a module-level function of the project module it is imported from; the model
must be another parameter of it (not a model the helper builds: that is a loader, not a restore)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.projecthelpers import project_function


def restored_by_helper(ctx: Context, load: ast.Call) -> bool:
    """The loaded object (directly, or through the name it is bound to in the same scope) is an
    argument of a project helper that restores it into a model passed beside it."""
    key = ("helperrestores", id(load))
    if key not in ctx._cache:
        ctx._cache[key] = any(_restores(ctx, call, index) for call, index in _handed_to(ctx, load))
    return ctx._cache[key]


def _handed_to(ctx: Context, load: ast.Call):
    """(call, position) of each call that takes the loaded object as a positional argument."""
    parent = ctx.parent(load)
    if parent.__class__ is ast.Call and load in parent.args:
        yield parent, parent.args.index(load)
        return
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return
    name = parent.targets[0].id
    scope = ctx.scope_of(load)
    for call in ctx.walk_body(getattr(scope, "body", [])):
        if call.__class__ is ast.Call and call.lineno > load.lineno and len(call.args) >= 2:
            for i, arg in enumerate(call.args):
                if arg.__class__ is ast.Name and arg.id == name:
                    yield call, i


def _restores(ctx: Context, call: ast.Call, index: int) -> bool:
    if call.func.__class__ is not ast.Name or len(call.args) < 2:
        return False  # (a plain function of the project: `load_state(net, ckpt)`)
    found = project_function(ctx, call)
    if found is None:
        return False
    _, func = found
    params = [a.arg for a in func.args.posonlyargs + func.args.args] if func.__class__ is not ast.Lambda else []
    if index >= len(params) or len(params) < 2:
        return False
    source, models = params[index], set(params) - {params[index]}
    tainted = _derived(func, source)
    for node in ast.walk(func):
        if node.__class__ is ast.Call and last_name(node.func) == "load_state_dict" and node.args \
                and node.func.__class__ is ast.Attribute and last_name(node.func.value) in models \
                and any(n.__class__ is ast.Name and n.id in tainted for n in ast.walk(node.args[0])):
            return True
    return False


def _derived(func: AST, source: str) -> set[str]:
    """The names the function builds from ``source``: assigned from it, filled with its entries
    (``new[k] = state[k]``) or updated with it (``new.update(state)``)."""
    tainted = {source}
    assigns = [n for n in ast.walk(func) if n.__class__ is ast.Assign]
    updates = [n for n in ast.walk(func) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
               and n.func.attr == "update" and n.func.value.__class__ is ast.Name]
    for _ in range(4):
        before = len(tainted)
        for a in assigns:
            if any(n.__class__ is ast.Name and n.id in tainted for n in ast.walk(a.value)):
                for t in a.targets:
                    root = t.value if t.__class__ is ast.Subscript else t
                    if root.__class__ is ast.Name:
                        tainted.add(root.id)
        for u in updates:
            if any(n.__class__ is ast.Name and n.id in tainted for arg in u.args for n in ast.walk(arg)):
                tainted.add(u.func.value.id)
        if len(tainted) == before:
            break
    return tainted

"""Names and values: what a call or a name evidently is, and the local code a call runs.

``producing_call`` follows a name back to the call it was assigned from; ``local_function`` finds
the function of this file a call runs; ``body_nodes`` collects what a body executes, through
the local functions it calls.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, DEF_TYPES, Context


def producing_call(ctx: Context, expr: AST | None, use: AST | None = None, depth: int = 4) -> ast.Call | None:
    """The call whose result ``expr`` evidently is: ``expr`` itself, or the call a name was last
    assigned from (following up to ``depth - 1`` plain assignments back from ``use``)."""
    use = use or expr
    while expr is not None and depth > 0:
        if expr.__class__ is ast.Call:
            return expr  # type: ignore[return-value]
        if expr.__class__ is not ast.Name:
            return None
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind not in ("assign", "walrus"):
            return None
        expr, use, depth = b.value, b.node, depth - 1
    return None


def local_function(ctx: Context, call: ast.Call) -> AST | None:
    """The function defined in this file that ``call`` calls (by simple or ``self.`` name)."""
    func = call.func
    name = None
    if func.__class__ is ast.Name:
        name = func.id
    elif func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id in ("self", "cls"):
        name = func.attr
    if name is None:
        return None
    defs = functions_by_name(ctx).get(name)
    return defs[0] if defs and len(defs) == 1 else None


def functions_by_name(ctx: Context) -> dict[str, list[AST]]:
    """Every function and method defined in this file, by name (built once per file)."""
    table = ctx._cache.get("sem:funcs")
    if table is None:
        table = {}
        for cls in (ast.FunctionDef, ast.AsyncFunctionDef):
            for f in ctx.nodes.get(cls, ()):
                table.setdefault(f.name, []).append(f)
        ctx._cache["sem:funcs"] = table
    return table


def body_nodes(ctx: Context, node: AST, follow_calls: int = 1) -> list[AST]:
    """Nodes executed by ``node``'s body, including nested defs (closures run there too) and the
    bodies of local functions it calls (``follow_calls`` levels deep)."""
    out: list[AST] = []
    seen: set[int] = set()
    todo: list[tuple[AST, int]] = [(node, follow_calls)]
    while todo:
        current, level = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for sub in ast.walk(current):
            out.append(sub)
            if level > 0 and sub.__class__ is ast.Call:
                target = local_function(ctx, sub)
                if target is not None:
                    todo.append((target, level - 1))
    return out


def is_def(node: AST) -> bool:
    return isinstance(node, DEF_TYPES)

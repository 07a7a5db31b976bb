"""Which of several objects a name holds at a use, told by the option branches around both.

A training script often builds one of several objects by an option and uses it under the same
test later::

    if args.scheduler == 'cosine':
        scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, args.max_step)
    elif args.scheduler == 'dev_perf':
        scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer)
    ...
    if args.scheduler == 'cosine':
        scheduler.step(train_step)        # only ever the cosine schedule

:func:`branch_kinds` keeps the bindings whose tests of an option (``X == 'const'``,
``X in ('a', 'b')``, and the ``else`` of such a test) agree with the tests around the use, and
names what built each of them.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

# option text -> (allowed values or None, excluded values)
Guards = dict[str, tuple[frozenset | None, frozenset]]


def _tested(ctx: Context, test: AST) -> list[tuple[str, frozenset]]:
    """``(option text, values)`` a test requires: ``X == 'a'``, ``X in ['a', 'b']``, joined by ``and``."""
    if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And:
        return [t for v in test.values for t in _tested(ctx, v)]
    if test.__class__ is not ast.Compare or len(test.ops) != 1:
        return []
    op, right = test.ops[0].__class__, test.comparators[0]
    if op is ast.Eq and right.__class__ is ast.Constant:
        return [(ctx.text(test.left), frozenset({right.value}))]
    if op is ast.In and right.__class__ in (ast.List, ast.Tuple, ast.Set) and right.elts \
            and all(e.__class__ is ast.Constant for e in right.elts):
        return [(ctx.text(test.left), frozenset(e.value for e in right.elts))]
    return []


def guards(ctx: Context, node: AST) -> Guards:
    """The option values under which ``node`` runs, from the ``if``/``elif``/``else`` around it."""
    out: Guards = {}
    child = node
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.If:
            field = getattr(child, "_tw_field", "")
            tests = _tested(ctx, anc.test)
            if field == "body":
                for key, values in tests:
                    allowed, excluded = out.get(key, (None, frozenset()))
                    out[key] = (values if allowed is None else allowed & values, excluded)
            elif field == "orelse" and len(tests) == 1:  # not (a and b) says nothing of a alone
                key, values = tests[0]
                allowed, excluded = out.get(key, (None, frozenset()))
                out[key] = (allowed, excluded | values)
        child = anc
    return out


def _agree(a: Guards, b: Guards) -> bool:
    for key in a.keys() & b.keys():
        allowed_a, excluded_a = a[key]
        allowed_b, excluded_b = b[key]
        if allowed_a is not None and (allowed_a <= excluded_b or allowed_b is not None and not allowed_a & allowed_b):
            return False
        if allowed_b is not None and allowed_b <= excluded_a:
            return False
    return True


def _values(ctx: Context, expr: AST, use: AST) -> list[AST]:
    """Every value the file assigns to the name (in the scope the use sees) or ``self`` attribute."""
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None:
            return []
        chain = ctx.bindings(ctx.scope_of(b.node)).get(expr.id, [])
        if not all(c.kind == "assign" and c.value is not None for c in chain):
            return []
        values = [c.value for c in chain]
    elif expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        cls = ctx.class_of(use)
        values = list(ctx.self_attr_values(cls, expr.attr)) if cls is not None else []
    else:
        return []
    return [v for v in values if not (v.__class__ is ast.Constant and v.value is None)]  # x = None: no object yet


def branch_kinds(ctx: Context, expr: AST, use: AST) -> set[str | None] | None:
    """What built each object ``expr`` (a name or ``self.x``) may hold at ``use``, when the file
    assigns it more than once: the bindings whose option tests contradict the use's are left out.
    None when it is assigned once or not at all (ask ``ctx.constructed_from``)."""
    values = _values(ctx, expr, use)
    if len(values) < 2:
        return None
    here = guards(ctx, use)
    return {ctx.constructed_from(v, v, 0) for v in values if _agree(here, guards(ctx, v))}

"""Getters that read a module's own buffer on the host: ``model.get_step()`` where every
definition of ``get_step`` in the project is a method returning ``self.step.data.item()`` of a
buffer or parameter its class registers (``register_buffer("step", ...)``, ``self.step =
nn.Parameter(...)``). The buffer lives where the model lives, so the call waits for the GPU (TW207)."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.facts import FunctionBlock, ProjectFacts
from torchwise.lint.semantics.projectcode import parsed

_READS = frozenset({"item", "tolist"})


def buffer_getter(ctx: Context, call: ast.Call) -> str | None:
    """``"path:line"`` of the read when ``call`` (``model.get_step()``, no arguments, on an object
    other than ``self``) is a getter of the project that reads a registered buffer or parameter
    on the host; else None."""
    func = call.func
    if call.args or call.keywords or func.__class__ is not ast.Attribute or ctx.qualname(func) is not None:
        return None
    return getter_read(ctx.project, func.attr)


def getter_names(facts: ProjectFacts) -> frozenset[str]:
    """Names of the project's buffer getters (looked at once per process)."""
    found = facts.answers.get("getters:names")
    if found is None:
        found = facts.answers["getters:names"] = frozenset(
            name for name, blocks in facts.host_read_blocks.items()
            if len(blocks) == facts.definitions.get(name, 0) and getter_read(facts, name))
    return found


def getter_read(facts: ProjectFacts, name: str) -> str | None:
    key = ("getters:read", name)
    if key not in facts.answers:
        blocks = facts.host_read_blocks.get(name, ())
        found = [_read_line(facts, b) for b in blocks] if len(blocks) == facts.definitions.get(name, 0) else []
        facts.answers[key] = found[0] if found and all(found) else None
    return facts.answers[key]


def _read_line(facts: ProjectFacts, block: FunctionBlock) -> str | None:
    func = parsed(block)
    if func is None or [a.arg for a in func.args.args] != ["self"] or func.decorator_list:
        return None
    body = [s for s in func.body if not (s.__class__ is ast.Expr and s.value.__class__ is ast.Constant)]
    if len(body) != 1 or body[0].__class__ is not ast.Return or body[0].value is None:
        return None
    attr = _buffer_read(body[0].value)
    if attr is None:
        return None
    text = next((t for p, t in facts.files if p == block.path), "")
    registered = re.search(rf"register_buffer\(\s*['\"]{attr}['\"]|self\.{attr}\s*=\s*(?:\w+\.)*Parameter\(", text)
    return f"{block.path}:{block.line + body[0].lineno - 1}" if registered else None


def _buffer_read(expr: AST) -> str | None:
    """``self.step.data.item()``, ``self.step.item()``, ``int(self.step)``: the attribute read."""
    if expr.__class__ is not ast.Call:
        return None
    func = expr.func
    if func.__class__ is ast.Attribute and func.attr in _READS and not expr.args:
        target = func.value
    elif func.__class__ is ast.Name and func.id in ("int", "float") and len(expr.args) == 1:
        target = expr.args[0]
    else:
        return None
    if target.__class__ is ast.Attribute and target.attr == "data":
        target = target.value
    if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name and target.value.id == "self":
        return target.attr
    return None


__all__ = ["buffer_getter", "getter_names", "getter_read"]

"""Whether the code around a node evidently runs on an accelerator (TW207): its function moves
data to a device, or it only receives its data in a file that targets a GPU or in a module that
a file of the project moving data to a device imports. A CPU-only helper module of a course,
imported by nothing that uses a GPU, a function that names a ``"cpu"`` device and a script that
can only run on the CPU (semantics.cpuonly) do not."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.cpuonly import runs_only_on_cpu
from torchwise.lint.semantics.devices import gpu_evident, scope_moves_to_device
from torchwise.lint.semantics.reach import on_a_mover_path


def on_accelerator(ctx: Context, node: AST) -> bool:
    """Is the code around ``node`` evidently on an accelerator? Its function (or script) moves
    data to a device; or it only receives its data (a method such as ``update(self, rollouts)``)
    in a file that targets a GPU, or in a module that a file moving data to a device imports."""
    if runs_only_on_cpu(ctx):
        return False  # every CUDA choice of the script is behind an option no run turns on
    scope = ctx.scope_of(node)
    if scope_moves_to_device(ctx, scope):
        return True
    if scope.__class__ is ast.Module or _names_cpu(ctx, scope):
        return False
    return gpu_evident(ctx) or (ctx.project.moves_to_device and (on_a_mover_path(ctx.project, ctx.path) or _base_moves(ctx, scope)))


def _base_moves(ctx: Context, scope: AST) -> bool:
    """The method's class derives from a class of another module of the project whose methods
    move data to the device (``class DDPM(BaseModel)``, with ``BaseModel.set_device(x)`` doing
    ``x.to(self.device)``), and the class calls one of its own methods on ``self`` it does not
    define (the base's helpers): its data goes through them."""
    klass = ctx.parent(scope)
    if klass.__class__ is not ast.ClassDef:
        return False
    bases = [b.id if b.__class__ is ast.Name else b.attr for b in klass.bases if b.__class__ in (ast.Name, ast.Attribute)]
    movers = [b for b in bases if b not in ctx.local_classes and _moving_class(ctx, b)]
    if not movers:
        return False
    own = {f.name for f in klass.body if f.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)}
    return any(c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name and c.func.value.id == "self"
               and c.func.attr not in own for c in ast.walk(klass) if c.__class__ is ast.Call)


_MOVES = lazy_compile(r"\.to\([ \t]*self\.device|\.cuda\(")


def _moving_class(ctx: Context, name: str) -> bool:
    """A class ``name`` defined in a file of the project whose body moves data (``.to(self.device)``,
    ``.cuda()``)."""
    key = ("ondevice:moving-class", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = False
        head = re.compile(r"^class[ \t]+" + re.escape(name) + r"\b[^\n]*:[ \t]*$", re.M)
        for path, text in ctx.project.files:
            m = head.search(text) if f"class {name}" in text else None
            if m is None or path == ctx.path:
                continue
            end = re.search(r"^\S", text[m.end() + 1:], re.M)
            body = text[m.end():m.end() + 1 + end.start()] if end else text[m.end():]
            if _MOVES.search(body):
                found = True
                break
        ctx.project.answers[key] = found
    return found


def _names_cpu(ctx: Context, scope: AST) -> bool:
    """A ``"cpu"`` device named in the function: it runs on the CPU on purpose."""
    return any(n.__class__ is ast.Constant and n.value == "cpu" for n in ctx.walk_body(scope.body))

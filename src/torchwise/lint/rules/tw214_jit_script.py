"""TW214: ``torch.jit.script`` used to speed code up, where ``torch.compile`` is the successor."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule

JIT_SCRIPT = "torch.jit.script"


_OPT_IN = lazy_compile(r"script|jit|export|trace|onnx", re.I)
_TORCHSCRIPT_FILE = lazy_compile(r"(^|/)(jit|torchscript|scripting)(/|[_.])", re.I)
_ARTIFACT_ATTRS = frozenset({"graph", "code", "inlined_graph", "save", "code_with_constants", "_c"})


class JitScriptForSpeed(Rule):
    code = "TW214"
    name = "jit-script-for-speed"
    per_call = True  # speed advice: only where the code runs (R5)
    triggers = ("script",)
    doc = """\
What it flags
  `@torch.jit.script` on a function, and `torch.jit.script(obj)` whose result this file does
  not save (`torch.jit.save(...)` or `.save(...)`); scripting for export to C++/mobile is a
  different use and is left alone, as are scripting under an opt-in option (`if
  args.torchscript:`), a scripted module whose graph or code is inspected, a call whose result
  is thrown away (`_ = torch.jit.script(cls)`: scripted to register it with TorchScript, not
  run), test files (which check that a model *can* be scripted), and files whose folder or name
  says they are about TorchScript (`examples/jit/gcn.py`, `torchscript_export.py`).

Why it matters
  TorchScript's fuser was the way to fuse chains of pointwise operations, but TorchScript is
  in maintenance mode: it supports a subset of Python, breaks on many modern constructs and
  its fusion is not developed further. `torch.compile` traces ordinary Python, fuses pointwise
  and reduction chains into generated kernels and is where speed work in PyTorch happens.

Example
  @torch.jit.script
  def gelu_bias(x, b):                         # TW214
      return torch.nn.functional.gelu(x + b)

Fix
  `@torch.compile` (or `model = torch.compile(model)`); `torchwise tune` measures whether
  compiling pays off for your model.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if _TORCHSCRIPT_FILE.search(ctx.path.replace("\\", "/")):
            return  # a file or folder about TorchScript itself (examples/jit/gcn.py): scripting is its subject
        for kind in (ast.FunctionDef, ast.AsyncFunctionDef):
            for func in ctx.nodes.get(kind, ()):
                for deco in func.decorator_list:
                    target = deco.func if deco.__class__ is ast.Call else deco
                    if ctx.qualname(target) == JIT_SCRIPT:
                        yield ctx.finding(
                            self.code, deco,
                            f"@torch.jit.script on {func.name}(): torch.compile is the maintained way to fuse these ops",
                            suggestion="use @torch.compile instead",
                        )
        saved = self._saved_names(ctx)
        for call in ctx.calls_to(JIT_SCRIPT):
            parent = ctx.parent(call)
            if parent.__class__ is ast.Attribute and parent.attr == "save":
                continue  # torch.jit.script(m).save(path)
            if any(d is call for f in ctx.nodes.get(ast.FunctionDef, ()) for d in f.decorator_list):
                continue
            if parent.__class__ is ast.Assign:
                names = {last_name(t) for t in parent.targets}
                if names & saved:
                    continue
            if parent.__class__ is ast.Call and last_name(parent.func) == "save":
                continue
            if parent.__class__ is ast.Expr or (
                parent.__class__ is ast.Assign and all(t.__class__ is ast.Name and t.id == "_" for t in parent.targets)
            ):
                continue  # result thrown away: scripted to register or check it, not to run it faster
            if parent.__class__ is ast.Return or self._returned(ctx, parent):
                continue  # handed to the caller, probably for export
            if any(_OPT_IN.search(ctx.text(if_node.test)) for if_node, _ in ctx.enclosing_ifs(call)):
                continue  # an opt-in option (`if args.torchscript:`), beside whatever else is offered
            if parent.__class__ is ast.Assign and self._artifact_used(ctx, parent):
                continue  # its TorchScript graph/code is inspected or exported: scripting is the point
            yield ctx.finding(
                self.code, call,
                "torch.jit.script for speed: torch.compile is the maintained way to fuse operations",
                suggestion="use torch.compile(...) unless you export the scripted module",
                end_node=call.func,
            )

    @staticmethod
    def _artifact_used(ctx: Context, assign: ast.Assign) -> bool:
        names = {t.id for t in assign.targets if t.__class__ is ast.Name}
        names |= {t.attr for t in assign.targets if t.__class__ is ast.Attribute}
        if not names:
            return False
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.attr in _ARTIFACT_ATTRS and last_name(node.value) in names:
                return True
        for call in ctx.nodes.get(ast.Call, ()):
            q = ctx.qualname(call.func) or ""
            if q == JIT_SCRIPT:
                continue
            if q.startswith(("torch.jit.", "torch.onnx.")) and any(last_name(a) in names for a in call.args):
                return True
        return False

    @staticmethod
    def _returned(ctx: Context, parent: ast.AST) -> bool:
        if parent.__class__ is not ast.Assign:
            return False
        names = {t.id for t in parent.targets if t.__class__ is ast.Name}
        scope = ctx.scope_of(parent)
        for node in ctx.walk_body(getattr(scope, "body", [])):
            if node.__class__ is ast.Return and node.value is not None:
                if any(n.__class__ is ast.Name and n.id in names for n in ast.walk(node.value)):
                    return True
        return False

    @staticmethod
    def _saved_names(ctx: Context) -> set[str]:
        out: set[str] = set()
        for call in ctx.calls_named("save"):
            func = call.func
            if func.__class__ is ast.Attribute:
                q = ctx.qualname(func)
                if q is None:
                    n = last_name(func.value)
                    if n:
                        out.add(n)
                elif call.args:
                    n = last_name(call.args[0])
                    if n:
                        out.add(n)
        return out


RULE = JitScriptForSpeed()

"""TW220: ``torch.cuda.amp``/``torch.cpu.amp`` and NVIDIA apex ``amp``, superseded by ``torch.amp``."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Edit
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.files import in_compat_fallback

OLD = {
    "torch.cuda.amp.autocast": ("autocast", "cuda"),
    "torch.cuda.amp.GradScaler": ("GradScaler", "cuda"),
    "torch.cpu.amp.autocast": ("autocast", "cpu"),
    "torch.cpu.amp.GradScaler": ("GradScaler", "cpu"),
    "torch.cuda.amp.custom_fwd": ("custom_fwd", "cuda"),
    "torch.cuda.amp.custom_bwd": ("custom_bwd", "cuda"),
}
_OLD_MODULES = ("torch.cuda.amp", "torch.cpu.amp")


# apex amp's entry points: what each does, and its native replacement
_APEX_CALLS = {"apex.amp.initialize": "patches the model and optimizer for mixed precision",
               "apex.amp.scale_loss": "scales the loss for backward",
               "apex.amp.master_params": "walks apex's fp32 master copies of the parameters",
               "apex.amp.state_dict": "keeps apex's loss-scaler state",
               "apex.amp.load_state_dict": "keeps apex's loss-scaler state"}
_APEX_NEW = {"patches the model and optimizer for mixed precision": 'run the forward under torch.autocast("cuda", ...) (no patching)',
             "scales the loss for backward": 'scaler = torch.amp.GradScaler("cuda"); scaler.scale(loss).backward()',
             "walks apex's fp32 master copies of the parameters": "under torch.autocast the model's own parameters stay fp32: "
             "clip model.parameters() after scaler.unscale_(optimizer)",
             "keeps apex's loss-scaler state": "save and restore scaler.state_dict() of a torch.amp.GradScaler"}

# apex's older mixed precision (fp16 model, fp32 master weights, loss scaling by hand), deprecated
# in apex itself for apex.amp: its entry points
_FP16_ENTRY = frozenset({"FP16_Optimizer", "network_to_half", "convert_network", "FP16Model", "prep_param_lists",
                         "master_params_to_model_params", "model_grads_to_master_grads"})
_APEX_FP16 = frozenset({"apex.optimizers.FP16_Optimizer", *(f"apex.fp16_utils.{n}" for n in _FP16_ENTRY)})
_FP16_MESSAGE = "apex.fp16_utils (FP16_Optimizer, network_to_half) is apex's legacy mixed precision, unmaintained; native torch.amp replaces it"
_FP16_SUGGESTION = 'keep the model in fp32, run the forward under torch.autocast("cuda", ...) and scale with torch.amp.GradScaler("cuda")'

_NEW_API = lazy_compile(r"torch\.amp\.|torch\.autocast|\bamp\.GradScaler\(\s*['\"]|device_type")


class LegacyAmp(Rule):
    code = "TW220"
    name = "legacy-amp"
    triggers = ("amp", "fp16_utils", "FP16_Optimizer")
    fixable = True
    doc = """\
What it flags
  Uses of `torch.cuda.amp.autocast`, `torch.cuda.amp.GradScaler`, `torch.cpu.amp.autocast`
  (and `custom_fwd`/`custom_bwd`), however imported, the `from torch.cuda.amp import ...` line
  itself (once), a name bound to one of them and called in the file (`autocast =
  torch.cuda.amp.autocast`, also inside `try:` with a dummy class as the fallback; reported at
  the assignment), and of NVIDIA apex's `amp`
  (`from apex import amp`, and its calls `amp.initialize(model, optimizer, opt_level=...)` and
  `with amp.scale_loss(loss, optimizer) as scaled:`, `amp.master_params(optimizer)` for clipping,
  `amp.state_dict()`/`amp.load_state_dict(...)` in checkpoints, and any other use of the module,
  once per statement: its internal loss scaler set by hand, `amp._amp_state.loss_scalers[0]._loss_scale = 2**20`,
  `amp.register_float_function(torch, "sigmoid")`, also written through the package,
  `apex.amp.register_half_function(torch, "einsum")`); the module imported under a name of its
  own (`import torch.cuda.amp as amp`, the line, when `amp.GradScaler()`... is used); apex's older
  `apex.fp16_utils`: the calls `FP16_Optimizer(optimizer, ...)`, `network_to_half(model)`,
  `convert_network(...)`, `prep_param_lists(...)`..., and the line importing them (a star import
  `from apex.fp16_utils import *` when the file calls one of them; not an import of its helpers
  only, such as `to_python_float`). The old-torch branch of version-dependent
  code is left alone: inside `except AttributeError/ImportError`, or in an `if`/conditional
  expression that tests a version or whose other branch uses `torch.amp`.

Why it matters
  The device-specific AMP entry points are deprecated aliases of the device-generic
  `torch.amp` API and emit warnings; apex `amp` is unmaintained and replaced by native mixed
  precision, which is better integrated (autocast caching, GradScaler with any optimizer,
  bf16, torch.compile support).

Example
  scaler = torch.cuda.amp.GradScaler()                  # TW220
  with torch.cuda.amp.autocast(dtype=torch.float16):    # TW220
      loss = model(x)

Fix
  `torch.amp.GradScaler("cuda")` and `torch.autocast("cuda", dtype=torch.float16)` (or
  `torch.amp.autocast("cuda", ...)`). `torchwise lint --fix` rewrites calls written as
  `torch.cuda.amp.X(...)` and calls of names imported `from torch.cuda.amp import X` when
  they pass keyword arguments only (the positional order of the new API differs).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        torch_local = "torch" if "torch" in ctx.import_aliases.get("torch", []) else None
        imported = self._imported_old(ctx)
        for q, (new, device) in OLD.items():
            for call in ctx.calls_to(q):
                func = call.func
                if in_compat_fallback(ctx, call, _NEW_API):
                    continue  # the old-torch branch of version-dependent code
                fix = None
                positional_ok = not call.args and not any(k.arg is None for k in call.keywords)
                if new in ("autocast", "GradScaler") and positional_ok:
                    if func.__class__ is ast.Attribute and torch_local:
                        fix = Fix(
                            f"use torch.amp.{new}({device!r}, ...)",
                            (ctx.replace(func, f"torch.amp.{new}"), self._device_edit(ctx, call, device)),
                        )
                    elif func.__class__ is ast.Name:
                        fix = self._import_fix(ctx, func.id, imported, new, device)
                if fix is not None and any(e is None for e in fix.edits):
                    fix = None
                yield ctx.finding(
                    self.code, call,
                    f"{q} is deprecated; use torch.amp.{new}(\"{device}\", ...)" if new in ("autocast", "GradScaler") else f"{q} is deprecated; use torch.amp.{new}(device_type=\"{device}\")",
                    suggestion=f'torch.amp.{new}("{device}", ...)' if new in ("autocast", "GradScaler") else f'torch.amp.{new}(device_type="{device}")',
                    fix=fix,
                    end_node=func,
                )
        yield from self._old_imports(ctx)
        yield from self._aliases(ctx)
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.module == "apex" and any(a.name == "amp" for a in node.names):
                yield ctx.finding(
                    self.code, node,
                    "NVIDIA apex amp is unmaintained; native torch.amp replaces it",
                    suggestion='use torch.autocast("cuda", ...) and torch.amp.GradScaler("cuda")',
                )
        for node in ctx.nodes.get(ast.Import, ()):
            if any(a.name == "apex.amp" for a in node.names):
                yield ctx.finding(
                    self.code, node,
                    "NVIDIA apex amp is unmaintained; native torch.amp replaces it",
                    suggestion='use torch.autocast("cuda", ...) and torch.amp.GradScaler("cuda")',
                )
        yield from self._apex_fp16(ctx)
        if any(q.startswith("apex") for q in ctx.imports.values()):
            for call in ctx.calls_to(*_APEX_CALLS):
                what = _APEX_CALLS[ctx.qualname(call.func)]
                yield ctx.finding(self.code, call, f"apex amp.{call.func.attr if call.func.__class__ is ast.Attribute else call.func.id}"
                                  f"(...) {what}: apex amp is unmaintained, native torch.amp replaces it",
                                  suggestion=_APEX_NEW[what], end_node=call.func)
            yield from self._apex_other_uses(ctx)

    def _apex_other_uses(self, ctx: Context) -> Iterator[Finding]:
        """Any other use of apex amp's module: its internals set by hand
        (``amp._amp_state.loss_scalers[0]._loss_scale = 2**20``), ``amp.register_half_function(...)``,
        ``amp.init()``: once per statement, where the calls above are not."""
        seen: set[int] = set()
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.value.__class__ is ast.Attribute:  # import apex; apex.amp.register_half_function(torch, "einsum")
                if node.value.value.__class__ is not ast.Name or node.value.value.id not in ctx.imports or ctx.qualname(node.value) != "apex.amp":
                    continue
            elif node.value.__class__ is not ast.Name or node.value.id not in ctx.imports:
                continue
            q = ctx.qualname(node)
            if q is None or not q.startswith("apex.amp.") or q in _APEX_CALLS:
                continue
            stmt = ctx.statement_of(node)
            if id(stmt) not in seen:
                seen.add(id(stmt))
                yield ctx.finding(self.code, node, f"{'' if ctx.text(node).startswith('apex.') else 'apex '}{ctx.text(node)} is part of apex amp, which is unmaintained; "
                                  "native torch.amp replaces it", suggestion='use torch.autocast("cuda", ...) and '
                                  'torch.amp.GradScaler("cuda") (its loss scale: GradScaler(init_scale=...))')

    def _apex_fp16(self, ctx: Context) -> Iterator[Finding]:
        """apex's legacy mixed precision: the calls of its entry points (``optimizer =
        FP16_Optimizer(optimizer, dynamic_loss_scale=True)``, ``network_to_half(model)``) and, once, the
        line importing one of them (``from apex.fp16_utils import FP16_Optimizer``; a star import or a
        module import when the file calls an entry point through it). An import of its helpers only
        (``to_python_float``) is not mixed precision."""
        if "fp16_utils" not in ctx.source and "FP16_Optimizer" not in ctx.source:
            return
        calls = ctx.calls_to(*_APEX_FP16)
        bare = {c.func.id for c in ctx.calls_named(*_FP16_ENTRY) if c.func.__class__ is ast.Name}
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.level or node.module not in ("apex.fp16_utils", "apex.optimizers", "apex"):
                continue
            names = {a.name for a in node.names}
            if node.module == "apex.fp16_utils" and (names & _FP16_ENTRY or "*" in names and bare) \
                    or node.module == "apex.optimizers" and "FP16_Optimizer" in names \
                    or node.module == "apex" and "fp16_utils" in names and calls:
                yield ctx.finding(self.code, node, _FP16_MESSAGE, suggestion=_FP16_SUGGESTION)
        for node in ctx.nodes.get(ast.Import, ()):
            if calls and any(a.name == "apex.fp16_utils" for a in node.names):
                yield ctx.finding(self.code, node, _FP16_MESSAGE, suggestion=_FP16_SUGGESTION)
        for call in calls:
            what = ctx.qualname(call.func).rsplit(".", 1)[1]
            yield ctx.finding(self.code, call, f"apex {what}(...) is apex's legacy mixed precision (fp16 weights, "
                              "hand-made loss scaling), unmaintained: native torch.amp replaces it",
                              suggestion=_FP16_SUGGESTION, end_node=call.func)

    def _aliases(self, ctx: Context) -> Iterator[Finding]:
        """``autocast = torch.cuda.amp.autocast`` (also inside ``try:`` with a dummy class as the
        fallback), reported at the assignment when the name is called somewhere in the file."""
        for node in ctx.nodes.get(ast.Assign, ()):
            value = node.value
            if len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name or value.__class__ is not ast.Attribute:
                continue
            q = ctx.qualname(value)
            if q not in OLD or in_compat_fallback(ctx, node, _NEW_API):
                continue
            local = node.targets[0].id
            if not any(c.func.__class__ is ast.Name and c.func.id == local for c in ctx.calls_named(local)):
                continue
            new, device = OLD[q]
            yield ctx.finding(self.code, node, f"{local} is an alias of the deprecated {q}; use torch.amp.{new}(\"{device}\", ...)"
                              if new in ("autocast", "GradScaler") else f"{local} is an alias of the deprecated {q}",
                              suggestion=f'{local} = functools.partial(torch.amp.{new}, "{device}")' if new in ("autocast", "GradScaler")
                              else f'torch.amp.{new}(device_type="{device}")')

    def _old_imports(self, ctx: Context) -> Iterator[Finding]:
        """``from torch.cuda.amp import autocast, GradScaler``: the import line itself, once (the
        uses are reported above; a fix of the uses rewrites this line too)."""
        for node in ctx.nodes.get(ast.Import, ()):  # import torch.cuda.amp as amp; amp.GradScaler()
            alias = next((a for a in node.names if a.name in _OLD_MODULES and a.asname), None)
            if alias is not None and not in_compat_fallback(ctx, node, _NEW_API) and any(
                    c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name and c.func.value.id == alias.asname
                    and ctx.qualname(c.func) in OLD for c in ctx.calls_named(*(q.rsplit(".", 1)[1] for q in OLD))):
                yield ctx.finding(self.code, node, f"the deprecated {alias.name} imported as {alias.asname}; "
                                  "its autocast and GradScaler are torch.amp's with the device passed",
                                  suggestion=f"import torch.amp as {alias.asname} and pass the device: "
                                  f"{alias.asname}.GradScaler(\"cuda\")")
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.module not in _OLD_MODULES or node.level or in_compat_fallback(ctx, node, _NEW_API):
                continue
            names = [a.name for a in node.names if f"{node.module}.{a.name}" in OLD]
            if names:
                fix = None
                if len(node.names) == 1 and OLD[f"{node.module}.{names[0]}"][0] in ("autocast", "GradScaler"):
                    new, device = OLD[f"{node.module}.{names[0]}"]
                    alias = node.names[0]
                    fix = self._import_fix(ctx, alias.asname or alias.name, {alias.asname or alias.name: (node, alias)}, new, device)
                listed = ", ".join(names)
                yield ctx.finding(self.code, node, f"{listed} imported from the deprecated {node.module}; "
                                  f"import {listed} from torch.amp and pass the device",
                                  suggestion=f"from torch.amp import {listed}", fix=fix)

    @staticmethod
    def _device_edit(ctx: Context, call: ast.Call, device: str) -> Edit | None:
        if not call.keywords:
            return ctx.add_keyword(call, f'"{device}"')
        first = min(call.keywords, key=lambda k: (k.lineno, k.col_offset))
        start = ctx.offset(first.lineno, first.col_offset)
        return Edit(start, start, f'"{device}", ')

    @staticmethod
    def _imported_old(ctx: Context) -> dict[str, tuple[ast.ImportFrom, ast.alias]]:
        out = {}
        for node in ctx.nodes.get(ast.ImportFrom, ()):
            if node.module in _OLD_MODULES and not node.level:
                for alias in node.names:
                    out[alias.asname or alias.name] = (node, alias)
        return out

    def _import_fix(self, ctx: Context, local: str, imported: dict, new: str, device: str) -> Fix | None:
        """``from torch.cuda.amp import autocast`` + ``autocast(...)``: fix the import line and
        every call of that name together, or nothing (every use must be a fixable call)."""
        entry = imported.get(local)
        if entry is None:
            return None
        node, alias = entry
        if len(node.names) != 1:
            return None  # several names on one import line: leave the rewrite to the author
        uses = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == local]
        edits: list[Edit] = []
        for use in uses:
            parent = ctx.parent(use)
            if parent.__class__ is not ast.Call or parent.func is not use or parent.args or any(k.arg is None for k in parent.keywords):
                return None
            e = self._device_edit(ctx, parent, device)
            if e is None:
                return None
            edits.append(e)
        if "#" in ctx.text(node) or "\\" in ctx.text(node):
            return None
        text = f"from torch.amp import {alias.name}" + (f" as {alias.asname}" if alias.asname else "")
        edits.append(ctx.replace(node, text))
        return Fix(f"import {alias.name} from torch.amp and pass the device", tuple(edits))


RULE = LegacyAmp()

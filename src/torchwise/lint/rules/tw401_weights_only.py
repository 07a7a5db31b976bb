"""TW401: ``torch.load`` that may unpickle arbitrary objects (no ``weights_only=True``)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.loadkwargs import visible_keys
from torchwise.lint.semantics.starnames import star_names, star_qualname


def _feeds_load_state_dict(ctx: Context, call: ast.Call) -> bool:
    """``model.load_state_dict(torch.load(p))``: the file is a state dict, plain tensors, which
    weights_only=True loads exactly as before."""
    parent = ctx.parent(call)
    return (
        parent.__class__ is ast.Call and call in parent.args and parent.func.__class__ is ast.Attribute
        and parent.func.attr == "load_state_dict"
    )


def _own_buffer(ctx: Context, call: ast.Call) -> bool:
    """``torch.save(obj, buf); buf.seek(0); torch.load(buf)``: bytes this function has just written
    into an in-memory buffer (a deep copy through serialisation), not a file from elsewhere."""
    arg = argument(call, "f", 0)
    if arg is None or arg.__class__ is not ast.Name:
        return False
    made = ctx.binding_at(arg.id, call)
    if made is None or made.value is None or made.value.__class__ is not ast.Call:
        return False
    if ctx.qualname(made.value.func) != "io.BytesIO" or made.value.args or made.value.keywords:
        return False  # io.BytesIO(data): bytes that came from somewhere else
    scope = ctx.scope_of(call)
    for save in ctx.calls_to("torch.save"):
        target = argument(save, "f", 1)
        if (
            target.__class__ is ast.Name and target.id == arg.id and ctx.scope_of(save) is scope
            and (save.lineno, save.col_offset) < (call.lineno, call.col_offset)
        ):
            return True
    return False


def _loads(ctx: Context) -> list[ast.Call]:
    """The calls of torch.load: through the file's imports, or through ``torch`` received from a
    star import of the project's own module (``from model import *``, whose module imports torch)."""
    calls = ctx.calls_to("torch.load")
    if star_names(ctx):
        seen = {id(c) for c in calls}
        calls = calls + [c for c in ctx.calls_named("load") if id(c) not in seen and c.func.__class__ is ast.Attribute
                         and star_qualname(ctx, c.func) == "torch.load"]
    return calls


def _star_name(call: ast.Call) -> str:
    return next((k.value.id for k in call.keywords if k.arg is None and k.value.__class__ is ast.Name), "kwargs")


class UnsafeTorchLoad(Rule):
    code = "TW401"
    name = "torch-load-unsafe"
    triggers = ("load",)
    fixable = True
    doc = """\
What it flags
  `torch.load(...)` (under any import alias, also with `torch` received from a star import of a
  project module: `from model import *`) without `weights_only=True`: the argument is
  missing, or it is `weights_only=False`, or a custom `pickle_module` is passed (which turns
  the safe mode off). Calls passing `**kwargs` are left alone, since the value may be there,
  unless the code shows every key they can carry and none is `weights_only`: a dict the function
  builds itself (`kw = {}; kw['map_location'] = 'cpu'; torch.load(path, **kw)`), or the
  `**kwargs` of a loading helper whose every caller in the project passes plain keywords
  (`load_state_dict(path, map_location="cpu")`). Also left alone: test files, which load what
  they have just written themselves, and a load from an empty `io.BytesIO()` that the same
  function has just filled with `torch.save` (a deep copy through serialisation).

Why it matters
  A checkpoint is a pickle, and unpickling can import and call anything: a file downloaded
  from the internet or shared by a colleague can run arbitrary code on your machine when
  loaded. With `weights_only=True`, `torch.load` accepts only tensors, primitive types and
  containers of them (and classes you allow explicitly). PyTorch 2.6 made it the default; code
  that also runs on older versions, or that turns it off, is exposed.

Example
  state = torch.load("model.pt")                          # TW401

Fix
  `torch.load("model.pt", weights_only=True)`; load plain state dicts rather than pickled
  objects, and allow the few extra classes you need with
  `torch.serialization.add_safe_globals`. `torchwise lint --fix` adds `weights_only=True` where
  the result goes straight into `load_state_dict` (a state dict: plain tensors, loads the same);
  elsewhere the file may hold pickled objects that the safe mode refuses, so the same edit is
  only an unsafe fix (`--unsafe-fixes`). An explicit `False` or a custom pickle module is never
  overruled.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in _loads(ctx):
            if _own_buffer(ctx, call):
                continue  # a round trip through memory this code wrote itself: nothing foreign is unpickled
            value = argument(call, "weights_only", 3)
            custom_pickle = argument(call, "pickle_module", 2) is not None
            if value is None and custom_pickle:
                yield ctx.finding(
                    self.code, call,
                    "torch.load with a custom pickle_module unpickles arbitrary objects and can run code from the file",
                    suggestion="save and load a plain state dict with weights_only=True instead",
                    end_node=call.func,
                )
                continue
            if value is None:
                if has_star_args(call):
                    keys = visible_keys(ctx, call)
                    if keys is not None and not keys & {"weights_only", "pickle_module"}:
                        yield ctx.finding(
                            self.code, call, "torch.load without weights_only=True (its **" + _star_name(call) + " carries only "
                            + (", ".join(sorted(keys)) or "nothing") + ") runs arbitrary code from the file on PyTorch < 2.6",
                            suggestion="pass weights_only=True", end_node=call.func)
                    continue
                edit = ctx.add_keyword(call, "weights_only=True")
                safe = _feeds_load_state_dict(ctx, call)
                fix = None
                if edit is not None:
                    fix = Fix("add weights_only=True", (edit,), safe=safe, why_unsafe="" if safe else (
                        "the file may hold more than tensors (a whole pickled model, NumPy arrays, an "
                        "argparse.Namespace in the checkpoint), which weights_only=True refuses to load"))
                yield ctx.finding(
                    self.code, call,
                    "torch.load without weights_only=True runs arbitrary code from the file on PyTorch < 2.6 (and wherever the default is changed)",
                    suggestion="pass weights_only=True",
                    fix=fix,
                    end_node=call.func,
                )
            elif value.__class__ is ast.Constant and value.value is False:
                yield ctx.finding(
                    self.code, call,
                    "torch.load with weights_only=False can run arbitrary code from the file",
                    suggestion="load a plain state dict with weights_only=True; allow extra classes with torch.serialization.add_safe_globals",
                    end_node=call.func,
                )


RULE = UnsafeTorchLoad()

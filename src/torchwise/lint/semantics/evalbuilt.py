"""A model put in evaluation mode where it is built: ``self.model = Model(path, is_eval=True)``
in a class's constructor (the model class calls ``.eval()`` on its parts), then run by the
class's other methods. Those methods are evaluation (a decoder, an evaluator) although none of
them calls ``.eval()`` or is named for it."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad

_ON = frozenset({"is_eval", "eval", "eval_mode", "evaluation", "inference", "is_inference"})
_OFF = frozenset({"is_train", "train", "training", "is_training", "train_mode"})
# methods of a model object that run no forward pass
_NOT_RUNS = frozenset({"state_dict", "load_state_dict", "parameters", "named_parameters", "modules", "children", "eval", "train",
                       "to", "cuda", "cpu", "half", "float", "zero_grad", "save", "load", "requires_grad_", "apply", "register_buffer"})
_GRAD_WORDS = ("backward(", "no_grad", "inference_mode", "set_grad_enabled", "enable_grad", ".step(")


def _eval_built(call: ast.AST) -> bool:
    """``Model(path, is_eval=True)``, ``Net(training=False)``: built in evaluation mode."""
    if call.__class__ is not ast.Call:
        return False
    return any(k.value.__class__ is ast.Constant and (k.arg in _ON and k.value.value is True or k.arg in _OFF and k.value.value is False)
               for k in call.keywords)


def _model_attrs(cls: ast.ClassDef) -> dict[str, str]:
    """``self.<attr>`` bound to a model built in evaluation mode, with the flag as written."""
    out = {}
    for node in ast.walk(cls):
        if node.__class__ is ast.Assign and _eval_built(node.value):
            for t in node.targets:
                if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self":
                    flag = next(k for k in node.value.keywords if k.arg in _ON | _OFF)
                    out[t.attr] = f"{flag.arg}={flag.value.value}"
    return out


def _runs(call: ast.Call, attr: str) -> bool:
    """``self.<attr>(...)``, ``self.<attr>.forward(...)`` or ``self.<attr>.encoder(...)``."""
    func = call.func
    if func.__class__ is ast.Attribute and func.attr not in _NOT_RUNS and func.value.__class__ is ast.Attribute:
        func = func.value
    return func.__class__ is ast.Attribute and func.attr == attr and func.value.__class__ is ast.Name and func.value.id == "self"


def eval_built_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """The first forward pass, outside no_grad, of each method that runs a model its class built
    in evaluation mode - in a class with no backward pass, optimizer step or grad switch, and
    unless every call of the method in the file is under no_grad."""
    built = [n for n in ctx.nodes.get(ast.Assign, ()) if _eval_built(n.value)]
    if not built:
        return  # nothing in the file is built in evaluation mode: no class is walked
    holders = {id(a) for n in built for a in ctx.ancestors(n) if a.__class__ is ast.ClassDef}
    for cls in ctx.nodes.get(ast.ClassDef, ()):
        attrs = _model_attrs(cls) if id(cls) in holders else {}
        if not attrs or any(w in ctx.text(cls) for w in _GRAD_WORDS):
            continue
        for method in cls.body:
            if method.__class__ is not ast.FunctionDef or method.name == "__init__":
                continue
            callers = [c for c in ctx.calls_named(method.name) if c.func.__class__ is ast.Attribute]
            if callers and all(under_no_grad(ctx, c) for c in callers):
                continue
            for node in ast.walk(method):
                attr = next((a for a in attrs if node.__class__ is ast.Call and _runs(node, a)), None)
                if attr is not None and not under_no_grad(ctx, node):
                    yield node, (f"{method.name}() runs self.{attr} (built with {attrs[attr]}: evaluation mode) with autograd "
                                 "recording; evaluation needs no graph")
                    break

"""Methods of the project's model classes that run the network (TW104): ``model.calculate_loss(x)``,
``model.reconstruct_x(x)`` after ``model.eval()`` on a model handed in from another module. The
class is not in view, so the name alone cannot say whether the method runs the network; the
project's own definitions can: every method of that name in an ``nn.Module`` class of the project
calls ``self(...)``, ``self.forward(...)`` or a submodule the class's ``__init__`` assigns
(``self.encoder(x)``) - or a sibling method that does (``calculate_lower_bound`` calling
``self.calculate_loss``) - and switches autograd neither off nor on (no ``no_grad``,
``inference_mode``, ``set_grad_enabled``, ``backward``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.models import _NOT_FORWARD, _NOT_FORWARD_PREFIXES
from torchwise.lint.semantics.projectclasses import is_module_class_def

_SWITCHES = ("no_grad", "inference_mode", "set_grad_enabled", "enable_grad", "backward(", "autograd.grad")


def project_method_runs(ctx: Context, name: str) -> bool:
    """Every ``def name(`` of the project's module classes runs the network with autograd as the
    caller left it; there is one at least, and no ``def name(`` outside such a class."""
    if not ctx.project.files or name in _NOT_FORWARD or name.startswith(_NOT_FORWARD_PREFIXES):
        return False  # (`model.to(device)`, `model.load_state_dict(sd)`: nn.Module's own methods, no run)
    key = ("modelmethods", name)
    found = ctx.project.answers.get(key)
    if found is None:
        found = ctx.project.answers[key] = _runs(ctx, name)
    return found


def is_module_method(ctx: Context, func: ast.AST) -> bool:
    """A method of an ``nn.Module`` class (or of a library model class built on one, transformers'
    ``PreTrainedModel``; also through a module class of another file: ``class S3Rec(SequentialModel)``)."""
    cls = ctx.parent(func)
    if cls.__class__ is not ast.ClassDef:
        return False
    bases = ctx.local_class_bases(cls.name)
    return any(b.startswith("torch.nn.") or b.rsplit(".", 1)[-1].endswith("PreTrainedModel") for b in bases) \
        or is_module_class_def(ctx, cls)


def _runs(ctx: Context, name: str) -> bool:
    needle = f"def {name}("
    seen = 0
    for path, text in ctx.project.files:
        if needle not in text:
            continue
        other = ctx if path == ctx.path else parsed_file(ctx.project, path, text)
        if other is None:
            return False
        defs = [f for kind in (ast.FunctionDef, ast.AsyncFunctionDef) for f in other.nodes.get(kind, ()) if f.name == name]
        for method in defs:
            klass = other.parent(method)
            if klass.__class__ is not ast.ClassDef or not _torch_base(other, klass) and not is_module_class_def(other, klass):
                return False  # a function of that name, or a method of no model class: no evidence either way
            if _stub(method):
                continue  # the base class's `def calculate_loss(self): return 0.` that every model overrides
            if any(w in other.text(method) for w in _SWITCHES) or method.decorator_list:
                return False
            if not _runs_network(other, klass, method, 1):
                return False
            seen += 1
    return seen > 0


def _torch_base(ctx: Context, klass: ast.ClassDef) -> bool:
    return any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))  # (before the project-wide look-up)


def _loss_name(attr: str) -> bool:
    """``self.loss(input, output)``, ``self.criterion(...)``: a loss on outputs, no network run."""
    low = attr.lower()
    return "loss" in low or "criterion" in low


def _stub(method: ast.AST) -> bool:
    """``pass``, ``return 0.``, ``raise NotImplementedError``, a docstring: an interface, no code."""
    return all(st.__class__ in (ast.Pass, ast.Raise) or st.__class__ in (ast.Expr, ast.Return) and (
        st.value is None or st.value.__class__ is ast.Constant) for st in method.body)


def _submodules(klass: ast.ClassDef) -> set[str]:
    """``self.encoder = nn.Sequential(...)`` in ``__init__``: attributes assigned a call."""
    init = next((m for m in klass.body if m.__class__ is ast.FunctionDef and m.name == "__init__"), None)
    out: set[str] = set()
    for node in ast.walk(init) if init is not None else ():
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Call:
            out.update(t.attr for t in node.targets if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name
                       and t.value.id == "self")
    return out


def _runs_network(ctx: Context, klass: ast.ClassDef, method: ast.AST, hops: int) -> bool:
    methods = {m.name: m for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)}
    subs = _submodules(klass)
    for node in ast.walk(method):
        if node.__class__ is not ast.Call:
            continue
        func = node.func
        if func.__class__ is ast.Name and func.id == "self":
            return True
        if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == "self":
            if func.attr == "forward" or func.attr in subs and func.attr not in methods and not _loss_name(func.attr):
                return True
            sibling = methods.get(func.attr)
            if hops and sibling is not None and sibling is not method and not sibling.decorator_list and not any(
                    w in ctx.text(sibling) for w in _SWITCHES) and _runs_network(ctx, klass, sibling, hops - 1):
                return True
    return False


__all__ = ["is_module_method", "project_method_runs"]

"""A model put in evaluation mode by one function and run by others (TW104): an inference API.

A synthesizer class loads its model in ``load()`` (``self._model.load(path); self._model.eval()``)
and runs it in ``synthesize_spectrograms()``; a speaker encoder's inference module loads a global
model in ``load_model()`` (``global _model; ...; _model.eval()``) and runs it in
``embed_frames_batch()``, returning ``.detach().cpu().numpy()``. The mode set once persists: the
other functions are evaluation, although none of them calls ``.eval()`` or is named for it.
Also a model a method of the class puts in eval mode and returns (``model.eval(); return model``
in ``init_model(self)``), bound by the class (``self.model = self.init_model()``).

Only where nothing trains the model there: no ``.train()`` call on it, no backward pass, optimizer
step or grad switch in the class (or the running function), and a class that is no ``nn.Module``
(a module's forward is part of some other pass). Reported once per function, at its first run of
the model outside no_grad, unless every call of that function in the file is under no_grad.
"""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import runs_forward
from torchwise.lint.semantics.projectcode import def_bodies
from torchwise.lint.semantics.steps import training_calls

_GRAD_WORDS = ("backward(", "no_grad", "inference_mode", "set_grad_enabled", "enable_grad", ".step(")
_SKIP = frozenset({"__init__", "forward", "__call__"})


def _switched(ctx: Context, holder: ast.AST, base: str) -> dict[str, str]:
    """Names (``self.<attr>`` attributes, or globals) that a function of ``holder`` puts in eval
    mode (``x.eval()``) and that nothing puts back in training mode: name -> that function."""
    on: dict[str, str] = {}
    off: set[str] = set()
    inside = (lambda c: True) if holder is ctx.tree else (lambda c: ctx.contains(holder, c))
    for call in ctx.calls_named("eval", "train"):
        if call.func.__class__ is not ast.Attribute or not inside(call):
            continue
        target = call.func.value
        if base == "self":
            name = target.attr if target.__class__ is ast.Attribute and target.value.__class__ is ast.Name \
                and target.value.id == "self" else None
        else:
            name = target.id if target.__class__ is ast.Name else None
        if name is None:
            continue
        if call.func.attr == "eval" and not call.args:
            func = ctx.function_of(call)
            if func is not None and func.__class__ is not ast.Lambda:
                on.setdefault(name, func.name)
        else:
            off.add(name)
    if base == "self":
        for attr, func in _loaded_in_eval(ctx, holder).items():
            on.setdefault(attr, func)
    return {n: f for n, f in on.items() if n not in off}


def _returns_in_eval(ctx: Context, call: ast.Call) -> ast.FunctionDef | None:
    """The method of a class that puts a local model in eval mode and returns it (``model.eval();
    return model`` in ``init_model(self)``), for that ``.eval()`` call."""
    target = call.func.value
    func = ctx.function_of(call)
    if target.__class__ is not ast.Name or func is None or ctx.parent(func).__class__ is not ast.ClassDef:
        return None
    returned = any(n.__class__ is ast.Return and n.value.__class__ is ast.Name and n.value.id == target.id
                   for n in ctx.walk_body(func.body))
    return func if returned else None


def _loaded_in_eval(ctx: Context, cls: ast.AST) -> dict[str, str]:
    """``self.<attr>`` bound from such a method (``self.model = self.init_model()``): attr -> method."""
    methods = {f.name for c in ctx.calls_named("eval") if c.func.__class__ is ast.Attribute and not c.args
               and ctx.contains(cls, c) and (f := _returns_in_eval(ctx, c)) is not None}
    out: dict[str, str] = {}
    for node in ctx.walk_body(cls.body, into_defs=True) if methods else ():
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Call and node.value.func.__class__ is ast.Attribute \
                and node.value.func.attr in methods and ctx.text(node.value.func.value) == "self":
            for t in node.targets:
                if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self":
                    out.setdefault(t.attr, node.value.func.attr)
    return out


def _global_models(ctx: Context) -> dict[str, str]:
    """Globals a function declares ``global``, binds and puts in eval mode (``load_model()``)."""
    declared = {n for g in ctx.nodes.get(ast.Global, ()) for n in g.names}
    if not declared:
        return {}
    return {n: f for n, f in _switched(ctx, ctx.tree, "global").items() if n in declared}


def _run_of(ctx: Context, call: ast.Call, name: str, base: str) -> bool:
    """``model(x)``, ``model.forward(x)``, ``model.generate(x)`` (a method that runs the forward
    pass) for the model ``name`` (``self.name`` in a class)."""
    func = call.func

    def is_model(node: ast.AST) -> bool:
        if base == "self":
            return node.__class__ is ast.Attribute and node.attr == name and node.value.__class__ is ast.Name \
                and node.value.id == "self"
        return node.__class__ is ast.Name and node.id == name

    if is_model(func):
        return True
    return func.__class__ is ast.Attribute and is_model(func.value) and (func.attr == "forward" or runs_forward(ctx, func, call))


def _built_from(ctx: Context, holder: ast.AST, name: str, base: str) -> str | None:
    """The dotted class name the model was built from (``_model = WaveRNN(...)`` with
    ``from vocoder.models.fatchord_version import WaveRNN``: ``vocoder.models.fatchord_version.WaveRNN``)."""
    for node in ctx.nodes.get(ast.Assign, ()):
        if node.value.__class__ is not ast.Call or not (last_name(node.value.func) or "")[:1].isupper() \
                or holder is not ctx.tree and not ctx.contains(holder, node):
            continue  # (a constructor: `_model = WaveRNN(...)`, not `_model = _model.cuda()`)
        for t in node.targets:
            if (base == "self" and t.__class__ is ast.Attribute and t.attr == name and t.value.__class__ is ast.Name
                    and t.value.id == "self") or (base != "self" and t.__class__ is ast.Name and t.id == name):
                return ctx.qualname(node.value.func) or ctx.text(node.value.func)
    return None


def _method_without_grad(ctx: Context, klass: str | None, method: str) -> bool:
    """The class the model was built from runs ``method`` under no_grad itself (a vocoder's
    ``generate()`` wrapping its loop in ``with torch.no_grad():``); the class is looked up in the
    project module its import names, or in any file that defines it once."""
    if not klass or not ctx.project.files:
        return False
    module, _, cls = klass.rpartition(".")
    tail = module.replace(".", "/") + ".py" if module else None
    texts = [t for p, t in ctx.project.files if f"class {cls}" in t and (tail is None or p.replace("\\", "/").endswith(tail))]
    if len(texts) != 1:
        return False
    body = _class_block(texts[0], cls)
    bodies = def_bodies(body, method, method=True) if body else []
    return bool(bodies) and all("no_grad()" in b or "inference_mode()" in b for b in bodies)


def _class_block(text: str, cls: str) -> str | None:
    m = re.search(r"^class[ \t]+" + re.escape(cls) + r"\b[^\n]*\n", text, re.M)
    if m is None:
        return None
    end = re.compile(r"^\S", re.M).search(text, m.end())
    return text[m.end():end.start() if end else len(text)]


def _first_run(ctx: Context, func: ast.AST, name: str, base: str, klass: str | None) -> ast.Call | None:
    if func.name in _SKIP:
        return None
    node = next((n for n in ctx.walk_body(func.body) if n.__class__ is ast.Call and (n.args or n.keywords) and _run_of(ctx, n, name, base)
                 and not under_no_grad(ctx, n)), None)
    if node is None or any(w in ctx.text(func) for w in _GRAD_WORDS):
        return None
    callers = ctx.calls_named(func.name)
    if callers and all(under_no_grad(ctx, c) for c in callers):
        return None
    if node.func.__class__ is ast.Attribute and (_method_without_grad(ctx, klass, node.func.attr)
                                                 or _lacks_method(ctx, klass, node.func.attr)):
        return None  # the model's own method switches autograd off; or the model has no such method (it fails first)
    return node


def _lacks_method(ctx: Context, klass: str | None, method: str) -> bool:
    """The model's class, defined once in the project as a direct ``nn.Module`` subclass, has no
    method ``method`` (a predictor calling ``self.model.decode(...)`` of a model that lost it):
    the call fails before any graph is recorded."""
    if not klass or not ctx.project.files or method == "forward":
        return False
    module, _, cls = klass.rpartition(".")
    texts = [t for _, t in ctx.project.files if f"class {cls}(" in t]
    if len(texts) != 1:
        return False
    head = re.search(r"^class[ \t]+" + re.escape(cls) + r"\(([^)]*)\)", texts[0], re.M)
    body = _class_block(texts[0], cls)
    return head is not None and head.group(1).strip() in ("nn.Module", "torch.nn.Module", "Module") and body is not None \
        and f"def {method}(" not in body


def eval_state_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(call, message)``: the first run of such a model in each other function (see the module doc)."""
    evals = [c for c in ctx.calls_named("eval") if c.func.__class__ is ast.Attribute and not c.args]
    on_self = [c for c in evals if c.func.value.__class__ is ast.Attribute and c.func.value.value.__class__ is ast.Name
               and c.func.value.value.id == "self"]
    on_self += [c for c in evals if _returns_in_eval(ctx, c) is not None]  # (model.eval(); return model)
    on_globals = ctx.nodes.get(ast.Global) and any(c.func.value.__class__ is ast.Name for c in evals)
    if not (on_self or on_globals) or training_calls(ctx):
        return
    switching = {id(ctx.class_of(c)) for c in on_self}
    for cls in ctx.nodes.get(ast.ClassDef, ()):
        if id(cls) not in switching or any(b.startswith("torch.nn.") for b in ctx.local_class_bases(cls.name)):
            continue
        models = _switched(ctx, cls, "self")
        if not models or any(w in ctx.text(cls) for w in _GRAD_WORDS):
            continue
        built = {name: _built_from(ctx, cls, name, "self") for name in models}
        for method in cls.body:
            if method.__class__ is not ast.FunctionDef:
                continue
            for name, where in models.items():
                if method.name == where:
                    continue  # the function that switches the mode is checked as an evaluation scope of its own
                node = _first_run(ctx, method, name, "self", built[name])
                if node is not None:
                    yield node, (f"{method.name}() runs self.{name} (put in eval mode by {where}(): inference) with autograd "
                                 "recording; evaluation needs no graph")
                    break
    models = _global_models(ctx) if on_globals else {}
    built = {name: _built_from(ctx, ctx.tree, name, "global") for name in models}
    for func in ctx.tree.body if models else ():
        if func.__class__ is not ast.FunctionDef:
            continue
        for name, where in models.items():
            if func.name == where:
                continue
            node = _first_run(ctx, func, name, "global", built[name])
            if node is not None:
                yield node, (f"{func.name}() runs {name} (put in eval mode by {where}(): inference) with autograd "
                             "recording; evaluation needs no graph")
                break

"""TW103: ``module.forward(x)`` called directly, skipping the module's hooks."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.boundforward import bound_forwards
from torchwise.lint.semantics.callers import project_arguments, project_calls
from torchwise.lint.semantics.models import is_module_class, is_module_instance
from torchwise.lint.semantics.projectclasses import inherited_classes, is_module_class_def, project_kind
from torchwise.lint.semantics.subclassparts import lower_module_class, subclass_parts


def _plain_class_instance(ctx: Context, recv: ast.AST) -> bool:
    """The name (``model``) is bound in this file to an instance of a plain class - one defined
    here or in the project with no base but ``object`` (``model = KEModel(args)``): its
    ``forward`` is an ordinary method, there are no hooks to skip."""
    name = last_name(recv)
    if name is None:
        return False
    for node in ctx.nodes.get(ast.Assign, ()):
        value = node.value
        if value.__class__ is not ast.Call or not any(last_name(t) == name for t in node.targets):
            continue
        cls = last_name(value.func) or ""
        klass = ctx.local_classes.get(cls)
        if klass is not None:
            if not klass.bases or all(last_name(b) == "object" for b in klass.bases):
                return True
        elif cls in ctx.project.plain_classes or project_kind(ctx, value.func) == "plain":
            return True  # also a subclass of the project's plain classes (DistModel(BaseModel))
    return False


def _project_submodule(ctx: Context, recv: ast.AST, call: ast.Call) -> bool:
    """``self.rank_loss.forward(...)`` / ``crit.forward(...)`` where every value the attribute or
    name is given is an instance of a module class: torch.nn's, or one another module of the
    project defines as an ``nn.Module`` (``self.rank_loss = networks.BCERankingLoss()``), even in a
    plain wrapper class or a method other than ``__init__``."""
    values = _values(ctx, recv, call)
    return bool(values) and all(
        v.__class__ is ast.Call and (project_kind(ctx, v.func) == "module" or is_module_class(ctx, ctx.qualname(v.func))
                                     or lower_module_class(ctx, v.func) or _module_builder(ctx, v))
        for v in values)


def _module_builder(ctx: Context, value: ast.Call) -> bool:
    """``self.stage_1 = self.block(...)`` where the class's own ``block`` method returns only a
    module it builds (``block = nn.Sequential()``, ``block.add_module(...)``, ``return block``)."""
    func = value.func
    klass = ctx.class_of(value) if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name \
        and func.value.id == "self" else None
    method = next((n for n in klass.body if n.__class__ is ast.FunctionDef and n.name == func.attr), None) \
        if klass is not None else None
    returns = [n for n in ctx.walk_body(method.body) if n.__class__ is ast.Return] if method is not None else []
    return bool(returns) and all(r.value is not None and is_module_instance(ctx, r.value, r) for r in returns)


def _values(ctx: Context, recv: ast.AST, call: ast.Call) -> list[ast.AST]:
    if recv.__class__ is ast.Name:
        b = ctx.binding_at(recv.id, call)
        return [b.value] if b is not None and b.kind == "assign" and b.value is not None else []
    if recv.__class__ is ast.Attribute and recv.value.__class__ is ast.Name and recv.value.id == "self":
        klass = _method_class(ctx, call)
        values = ctx.self_attr_values(klass, recv.attr) if klass is not None else []
        # self.rank_loss = self.rank_loss.to(device): the same object moved
        return [v for v in values if not (v.__class__ is ast.Call and v.func.__class__ is ast.Attribute
                                          and v.func.attr in _MOVES and ctx.text(v.func.value) == ctx.text(recv))]
    return []


_MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "double", "train", "eval"})


def _method_class(ctx: Context, node: ast.AST) -> ast.ClassDef | None:
    """The class whose method (or a lambda inside it) contains ``node``."""
    func = next((a for a in ctx.ancestors(node) if a.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)), None)
    klass = ctx.parent(func) if func is not None else None
    return klass if klass.__class__ is ast.ClassDef else None


def _passed_in_submodule(ctx: Context, recv: ast.AST, call: ast.Call) -> bool:
    """In a method of an ``nn.Module`` class: ``self.feature.forward(x)`` where ``self.feature`` is
    built by a factory handed to the constructor (``self.feature = model_func()``) or is the module
    the constructor wraps (``self.module = module``) - also when a base class of another module of
    the project assigns it. A module's part with a ``forward`` is a module."""
    if recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name or recv.value.id != "self":
        return False
    klass = _method_class(ctx, call)
    if klass is None or not is_module_class_def(ctx, klass):
        return False
    for other, cls in [(ctx, klass), *inherited_classes(ctx, klass)]:
        values = other.self_attr_values(cls, recv.attr)
        if values:
            return all(_from_parameter(other, v, recv.attr) for v in values)
    return False


# what a wrapper calls the module it keeps (``self.module = module``); other names (a
# ``remote_emb_module`` whose forward() is its RPC interface) are left alone
_WRAPPED = frozenset({"module", "layer", "block", "inner", "wrapped", "submodule", "base_module", "inner_module",
                      "wrapped_module"})


def _from_parameter(ctx: Context, value: ast.AST, attr: str) -> bool:
    """``model_func()`` (a parameter called) or ``module`` (a parameter of ``__init__`` kept as is,
    under a wrapper's name for it)."""
    called = value.__class__ is ast.Call and not value.args and not value.keywords
    name = value.func if called else value
    if name.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(name.id, value)
    if b is None or b.kind != "param":
        return False
    func = ctx.function_of(value)
    annotation = getattr(b.node, "annotation", None)
    if annotation is not None and "Module" not in ctx.text(annotation) and not called:
        return False  # a parameter declared as something else
    return called or (func is not None and func.name == "__init__" and attr.lstrip("_") in _WRAPPED)


def _submodule_in_module(ctx: Context, recv: ast.AST, call: ast.Call) -> bool:
    """In a method of an ``nn.Module`` class of this file: ``self.attention.forward(...)`` (also in
    a lambda) where ``__init__`` built ``self.attention`` from a class, or ``block.forward(...)`` on
    the loop variable of ``for block in self.transformer_blocks:`` (a ModuleList): submodules."""
    func = next((a for a in ctx.ancestors(call) if a.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)), None)
    klass = ctx.parent(func) if func is not None else None
    if klass is None or klass.__class__ is not ast.ClassDef or not any(
            b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)):
        return False
    if recv.__class__ is ast.Name:
        b = ctx.binding_at(recv.id, call)
        if b is None or b.kind != "for" or b.value is None:
            return False
        recv = _iterated(b.value, b.index)  # for block in self.blocks; for fc, gate in zip(self.fcs, self.gates)
        if recv is None:
            return False
    if recv.__class__ is not ast.Attribute or recv.value.__class__ is not ast.Name or recv.value.id != "self":
        return False
    for node in ast.walk(klass):
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Call and any(
                t.__class__ is ast.Attribute and ctx.text(t) == ctx.text(recv) for t in node.targets):
            name = last_name(node.value.func) or ""
            return name[:1].isupper()  # built from a class: MultiHeadedAttention(...), nn.ModuleList([...])
    if ctx.self_attr_values(klass, recv.attr):
        return False
    # an abstract base whose subclasses of this file supply the part (self.layers = nn.Sequential(...))
    parts = subclass_parts(ctx, klass, recv.attr)
    return bool(parts) and all(v.__class__ is ast.Call and (last_name(v.func) or "")[:1].isupper() for v in parts)


def _iterated(it: ast.AST, index: int) -> ast.AST | None:
    """What a loop variable runs over: ``self.blocks`` itself, the ``index``-th sequence of
    ``zip(self.linears, self.gates)``, or the items of ``enumerate(self.blocks)`` (index 1)."""
    if index == -1:
        return it
    if it.__class__ is not ast.Call or it.func.__class__ is not ast.Name or it.keywords:
        return None
    if it.func.id == "zip" and 0 <= index < len(it.args) and not any(a.__class__ is ast.Starred for a in it.args):
        return it.args[index]
    if it.func.id == "enumerate" and index == 1 and len(it.args) == 1:
        return it.args[0]
    return None


def _module_part(ctx: Context, recv: ast.AST, call: ast.Call) -> bool:
    """``self.generator.forward(x)`` where ``self.generator = self.model.generator`` (or the chain
    written out, ``model.decoder.forward(x)``): a part of a module that has a ``forward`` is a
    submodule."""
    values = [recv] if recv.__class__ is ast.Attribute and not (recv.value.__class__ is ast.Name
                                                                and recv.value.id == "self") else _values(ctx, recv, call)
    return bool(values) and all(v.__class__ is ast.Attribute and v.value.__class__ in (ast.Name, ast.Attribute)
                                and is_module_instance(ctx, v.value, call) for v in values)


def _filled_with_modules(ctx: Context, recv: ast.AST, call: ast.Call) -> bool:
    """``policy.forward(state)`` where ``policy`` is a parameter of the function and every call of
    that function in this file passes a module for it (``self.pick_action(self.local_model, s)``,
    ``self.log_probs(self.policy_new, ...)`` with ``self.policy_new.parameters()`` given to the
    optimizer; a torch loss module, ``train(model, loss, ...)`` with ``loss = nn.MSELoss()``): a
    module under a neutral name."""
    if recv.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(recv.id, call)
    if b is None or b.kind != "param":
        return False
    func = ctx.parent(ctx.parent(b.node))
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    method = ctx.parent(func).__class__ is ast.ClassDef and bool(params) and params[0] in ("self", "cls")
    index = params.index(recv.id) if recv.id in params else None
    calls = [c for c in ctx.calls_named(func.name) if (c.func.__class__ is ast.Attribute) == method
             and (not method or c.func.value.__class__ is ast.Name and c.func.value.id in ("self", "cls"))]
    if not calls and not method:
        # a module-level function of a utilities module: what the other modules of the project pass
        passed = [p for p in project_arguments(ctx, func, recv.id) if not _unknown_or_none(*p)]
        return bool(passed) and len(passed) <= 20 and all(
            _module_or_loss(other, value, call) or _modules_in_branches(other, value, call) for other, value, call in passed)
    if not calls or len(calls) > 20:
        return False
    for c in calls:
        value = next((k.value for k in c.keywords if k.arg == recv.id), None)
        if value is None and index is not None:
            pos = index - method
            if 0 <= pos < len(c.args) and not any(a.__class__ is ast.Starred for a in c.args[: pos + 1]):
                value = c.args[pos]
        if value is None or not (_module_or_loss(ctx, value, c) or _kept_module(ctx, value, c)):
            return False
    return True


def _modules_in_branches(ctx: Context, value: ast.AST, use: ast.AST) -> bool:
    """``train_loss = eval_loss`` or ``train_loss = SmoothCrossEntropyLoss(...)``, one per branch of
    an ``if``: a name whose every assignment in the function is a module (directly, or another
    name that is one)."""
    if value.__class__ is not ast.Name:
        return False
    func = ctx.function_of(use)
    made = [n.value for n in ctx.nodes.get(ast.Assign, ()) if len(n.targets) == 1 and n.targets[0].__class__ is ast.Name
            and n.targets[0].id == value.id and ctx.function_of(n) is func and not _is_none(n.value)]
    return bool(made) and all(_module_or_loss(ctx, v, use) if v.__class__ is ast.Name
                              else v.__class__ is ast.Call and (project_kind(ctx, v.func) == "module"
                                                                or _module_or_loss(ctx, v, v))
                              for v in made)


def _is_none(node: ast.AST) -> bool:
    return node.__class__ is ast.Constant and node.value is None


def _unknown_or_none(ctx: Context, value: ast.AST, call: ast.AST) -> bool:
    """A value passed that says nothing against a module: ``None`` (the branch where the optional
    module is off: ``forward`` is not called on it) or a parameter of the caller handed on as is
    (``train(args, model, ad_net, random_layer, ...)`` passing ``random_layer`` along)."""
    if _is_none(value):
        return True
    if value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(value.id, call)
    return b is not None and b.kind == "param"


def _module_or_loss(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """An ``nn.Module``, a torch loss module among them (``nn.CrossEntropyLoss()``: a module
    whose hooks ``forward`` skips like any other's)."""
    if is_module_instance(ctx, expr, use):
        return True
    built = ctx.constructed_from(expr, use) or ""
    return built.startswith("torch.nn.") and built.count(".") == 2 and built.endswith("Loss")


def _kept_module(ctx: Context, value: ast.AST, use: ast.AST) -> bool:
    """``self.policy`` kept as is from a parameter of ``__init__`` (``self.policy = policy``), where
    every construction of the class in the project's other modules passes a module
    (``Parallel_Experience_Generator(self.environment, self.policy_new, ...)``)."""
    if value.__class__ is not ast.Attribute or value.value.__class__ is not ast.Name or value.value.id != "self":
        return False
    klass = ctx.class_of(use)
    kept = ctx.self_attr_values(klass, value.attr) if klass is not None and ctx.parent(klass) is ctx.tree else []
    if len(kept) != 1 or kept[0].__class__ is not ast.Name:
        return False
    init = ctx.function_of(kept[0])
    b = ctx.binding_at(kept[0].id, kept[0])
    if init is None or init.name != "__init__" or b is None or b.kind != "param":
        return False
    params = [a.arg for a in [*init.args.posonlyargs, *init.args.args]][1:]
    index = params.index(kept[0].id) if kept[0].id in params else None
    passed = [(other, argument(call, kept[0].id, index), call) for other, call in project_calls(ctx, klass.name)]
    return bool(passed) and all(v is not None and is_module_instance(other, v, call) for other, v, call in passed)


class ForwardCalledDirectly(Rule):
    code = "TW103"
    per_call = True
    name = "forward-called-directly"
    triggers = ("forward",)
    skip_tests = True  # tests call forward() directly on purpose, to check it
    doc = """\
What it flags
  `something.forward(...)` where `something` evidently is an `nn.Module`: it was built from a
  torch.nn class or a module class defined in the file (also `self.encoder` assigned so in
  `__init__`), or it is named like a model (`model`, `net`, `*_model`, `*_net`); in a method of
  an `nn.Module` class, also a submodule built from any class in `__init__`
  (`self.attention.forward(...)`, inside a lambda too) and the loop variable over one
  (`for block in self.transformer_blocks: x = block.forward(x, mask)`; also the parts of
  `zip(self.linears, self.gates)` and the items of `enumerate(self.blocks)`; in an abstract base,
  `self.layers.forward(x)` where the class itself never assigns `self.layers` and every subclass
  in the file that does builds it from a class: `self.layers = nn.Sequential(*layers)`), and a part built by a
  factory handed to the constructor (`self.feature = model_func()`) or the module a wrapper
  keeps under a wrapper's name for it (`self.module = module`, `self.layer`, `self.inner`...),
  also when a base class in another module assigns it; in any class, a torch loss module
  (`crit = nn.CrossEntropyLoss()`, then `crit.forward(out, y)`), and an attribute or name whose
  every value is an instance of a module class of another module of the project
  (`self.rank_loss = networks.BCERankingLoss()`, set in any method, or `self.stage_1 =
  self.block(...)` where the class's `block` method returns only a module it builds; also a module class under a
  lower-case name, `crit = silog_loss(...)` with `class silog_loss(nn.Module)` in the project and
  no function of that name).
  Also such a module's `forward` bound to a name that the same function calls or hands on
  (`forward_func = self._chop_forward if chop else self.model.forward`, then `forward_func(x)`
  or `self.forward_x8(x, forward_func)`; not in a file that patches some `X.forward = ...`).
  `super().forward(...)` and `self.forward(...)` are left alone, and so is `forward()` of an
  instance of a plain class (no base, or `object`: `class KEModel(object)`, or only plain
  classes of the project as bases: `class DistModel(BaseModel)`), here or in another module of
  the project: it has no hooks to bypass. Also a part of an evident module, under any name
  (`model.decoder.forward(h)`, or `self.generator.forward(h)` after `self.generator =
  self.model.generator`), and a parameter under any name
  (`policy.forward(state)`) when every call of its function in the file passes a module for it
  (`self.pick_action(self.local_model, state)`, or an attribute whose `.parameters()` go to an
  optimizer, or a torch loss: `train(model, loss, opt)` with `loss = nn.MSELoss()`; for a
  module-level function nothing in its file calls, every call from the other
  modules of the project: `train_epoch(..., loss_func, ...)` with `loss_func =
  nn.CrossEntropyLoss()` or a loss class of the project, one per branch of an `if`; a `None`
  passed in the branch where the optional module is off, or a caller's parameter handed on as is,
  speaks neither way: `random_layer.forward([f, p])` under `if random_layer is not None`); or
  `self.policy` kept from the constructor, when every construction of the class in the
  project's other modules passes a module for it). A `net` named like a model in a file that imports another framework
  and nothing of torch (`import caffe`: `app.clf.net.forward()` is Caffe's) is left alone too.
  The `__main__` smoke test of a model file (`net = C3D(); print(net.forward(torch.rand(1, 3,
  16, 112, 112)).size())`) is live code and is reported (ruling R15 of issue 22).
  Linted with its project, code that nothing runs is left alone: a function or class
  nothing calls or names (not even a config, a shell script or a notebook), and a left-over module
  that no file imports, runs or names beside siblings the project does import.

Why it matters
  Calling the module (`model(x)`) runs `__call__`, which wraps `forward` with the forward
  pre-hooks, forward hooks and backward hooks registered on it and its children. Calling
  `forward` directly bypasses all of them, so tools built on hooks (profilers, activation
  capture, quantisation observers, parallel wrappers, torchwise's own doctor) see nothing and
  give wrong answers without any error.

Example
  logits = model.forward(images)      # TW103

Fix
  Call the module itself: `logits = model(images)`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call in ctx.calls_named("forward"):
            func = call.func
            if func.__class__ is not ast.Attribute:
                continue
            recv = func.value
            if recv.__class__ is ast.Call:  # super().forward(...), make().forward(...)
                continue
            if recv.__class__ is ast.Name and recv.id in ("self", "cls", "super"):
                continue
            if not _module_receiver(ctx, recv, call):
                continue
            shown = ctx.text(recv)
            yield ctx.finding(
                self.code, call,
                f"{shown}.forward(...) skips the hooks registered on the module",
                suggestion=f"call the module instead: {shown}(...)",
                end_node=func,
            )
        for attr in bound_forwards(ctx):
            recv = attr.value
            if recv.__class__ is ast.Name and recv.id in ("self", "cls") or recv.__class__ is ast.Call \
                    or not _module_receiver(ctx, recv, attr):
                continue
            shown = ctx.text(recv)
            yield ctx.finding(self.code, attr, f"{shown}.forward is bound to a name and called: each call skips the "
                              "hooks registered on the module", suggestion=f"bind the module itself: {shown}")


def _module_receiver(ctx: Context, recv: ast.AST, use: ast.AST) -> bool:
    return (_module_or_loss(ctx, recv, use) or _submodule_in_module(ctx, recv, use) or _project_submodule(ctx, recv, use)
            or _passed_in_submodule(ctx, recv, use) or _filled_with_modules(ctx, recv, use)
            or _module_part(ctx, recv, use)) and not _plain_class_instance(ctx, recv)


RULE = ForwardCalledDirectly()

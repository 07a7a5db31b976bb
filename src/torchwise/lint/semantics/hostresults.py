"""Forward passes whose graph nobody can use (TW104): a function that runs a network with autograd
on and hands back only values that carry no graph - NumPy arrays, Python numbers and text, detached
tensors - and keeps nothing else of what it computed. Whatever calls it, in training or in
evaluation, the graph is dropped on return: a model's ``predict(self, data)`` returning
``score.cpu().data.numpy()`` (a link-prediction tester calls it per batch), an agent's
``compute_intrinsic_reward(obs)`` returning ``reward.data.cpu().numpy()``, a WaveNet's
``generate_fast()`` returning the NumPy samples it built step by step, a ``beam_search(src,
model, ...)`` returning the decoded sentence.

The values are followed through the function's own names: a name bound from a network run (or from
a value made from one) carries the graph until ``.numpy()``, ``.item()``, ``.tolist()``,
``.detach()``, ``.data`` or a NumPy function cuts it. The function must not let such a value out
any other way: no store on an attribute (``self.last = out``), no hand-over to another object
(``self.saved_log_probs.append(lp)`` - REINFORCE keeps its log-probabilities -,
``buffer.push(out)``), no ``yield``; and it takes no gradients and switches no grad mode
(``backward``, ``autograd``, ``requires_grad``, ``no_grad``, ``volatile``, an optimizer step).

A helper of the file that only such functions call (``init_vars(src, model, ...)`` of a beam
search, returning the encoder's output to it) is reported at its own runs; a helper that other code
calls too (the WaveNet's ``wavenet()`` that ``forward`` uses) is reported at the call.
"""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.actions import host_helper
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.evalpaths import action_method, method_calls
from torchwise.lint.semantics.models import FORWARD_VERBS, is_model_name, is_module_class, is_module_instance
from torchwise.lint.semantics.projectclasses import is_module_class_def
from torchwise.lint.semantics.projectlayers import project_class

_GRAD_WORDS = ("backward", "autograd", "requires_grad", "no_grad", "inference_mode", "set_grad_enabled", "enable_grad",
               "volatile", "zero_grad", ".step(", "retain_graph", "optim")
_HOST_WORDS = (".numpy()", ".item()", ".tolist()", "np.", ".join(")
_CUTS = frozenset({"numpy", "item", "tolist", "detach",  # and results that never require grad: indices, sizes, masks
                   "nonzero", "argmax", "argmin", "argsort", "size", "dim", "numel", "long", "int", "bool", "eq", "ne"})
_PURE = frozenset({"print", "len", "isinstance", "float", "int", "bool", "str", "max", "min", "sum", "abs", "round",
                   "range", "enumerate", "zip", "sorted", "tuple", "list", "repr", "format", "type", "getattr", "hasattr"})
_TO_HOST = frozenset({"float", "int", "bool", "str", "len", "repr", "format", "round"})
_NOT_RUNS = frozenset({"eval", "train", "to", "cuda", "cpu", "half", "float", "double", "state_dict", "load_state_dict",
                       "parameters", "named_parameters", "modules", "children", "apply", "zero_grad", "requires_grad_",
                       "register_buffer", "add_module", "type", "reset", "reset_noise", "reset_parameters"})
_NOT_MODEL_SUFFIXES = ("_path", "_name", "_dir", "_file", "_type", "_cfg", "_config", "_args", "_id", "_names")
_STR_METHODS = frozenset({"split", "join", "replace", "format", "strip", "startswith", "endswith", "lower", "upper", "get"})
_NOT_RUN_PREFIXES = ("save", "load", "register", "print", "set_", "get_num", "num_", "named_", "init", "reset", "_")


def host_result_runs(ctx: Context) -> Iterator[tuple[ast.Call, str]]:
    """``(network run, message)`` for the runs of functions whose every return carries no graph."""
    src = ctx.source
    if "return" not in src or "torch" not in src or not any(w in src for w in _HOST_WORDS):
        return
    funcs = [f for f in ctx.nodes.get(ast.FunctionDef, ()) if ctx.parent(f) is ctx.tree or ctx.parent(f).__class__ is ast.ClassDef]
    found: dict[int, tuple[ast.FunctionDef, list[ast.Call]]] = {}
    for func in funcs:
        if not _candidate(ctx, func):
            continue
        text = ctx.text(func)
        if not any(w in text for w in _HOST_WORDS) or any(w in text for w in _GRAD_WORDS):
            continue  # (cheap: no host value to return, or gradients taken)
        runs = _analyse(ctx, func, funcs)
        if runs and not _reached_without_grad(ctx, func):
            found[id(func)] = (func, runs)
    if not found:
        return
    hosts = {id(f) for f, _ in found.values()}
    for func, runs in found.values():
        for run in runs[:1] if action_method(func) else runs:  # (one finding per action choice, as evalpaths)
            helper = _helper(ctx, run, funcs)
            if helper is not None and _only_called_from(ctx, helper, hosts):
                inner = _analyse(ctx, helper, funcs, need_host=False) or []
                for node in inner:
                    yield node, (f"{helper.name}() runs {ctx.text(node.func)} with autograd recording for {func.name}(), "
                                 "which returns only host data: the graph is never used")
                continue
            yield run, (f"{func.name}() runs {ctx.text(run.func)} with autograd recording but returns only host data "
                        "(nothing keeps the graph); run it under `torch.no_grad()`")


def _candidate(ctx: Context, func: ast.FunctionDef) -> bool:
    parent = ctx.parent(func)
    if parent.__class__ is not ast.ClassDef and (parent is not ctx.tree or not any(
            is_model_name(a.arg) and not a.arg.endswith(_NOT_MODEL_SUFFIXES) for a in func.args.args)):
        return False  # (a module-level function is handed its network: `beam_search(src, model, ...)`)
    if func.name in ("forward", "__call__", "__init__") or func.name.lstrip("_").startswith("test"):
        return False
    if parent.__class__ is ast.ClassDef and parent.name.endswith("Loss"):
        return False  # a loss module's methods score given outputs: no network of their own
    return all(last_name(d) in ("staticmethod", "classmethod") for d in func.decorator_list)


def _clean(ctx: Context, func: ast.FunctionDef) -> bool:
    text = ctx.text(func)
    return not any(w in text for w in _GRAD_WORDS) and not any(w in text for w in ("yield", "global ", "nonlocal "))


class _Flow:
    """Which names of one function carry a network's graph, and whether one escapes."""

    def __init__(self, ctx: Context, func: ast.FunctionDef, funcs: list[ast.FunctionDef]):
        self.ctx, self.func, self.funcs = ctx, func, funcs
        self.klass = ctx.parent(func) if ctx.parent(func).__class__ is ast.ClassDef else None
        self.params = {a.arg for a in func.args.args}
        self.derived: set[str] = set()
        self.runs: list[ast.Call] = []
        self.leak = False

    def carries(self, e: AST | None) -> bool:
        if e is None or e.__class__ in (ast.Constant, ast.JoinedStr, ast.Lambda, ast.Compare):
            return False
        if e.__class__ is ast.Name:
            return e.id in self.derived
        if e.__class__ is ast.Attribute:
            return e.attr != "data" and self.carries(e.value)
        if e.__class__ is ast.Call:
            return self.call(e)
        return any(self.carries(c) for c in ast.iter_child_nodes(e) if isinstance(c, ast.expr))

    def call(self, c: ast.Call) -> bool:
        f = c.func
        args = [*c.args, *(k.value for k in c.keywords)]
        carried = [a for a in args if self.carries(a)]
        name = last_name(f)
        if self.is_run(c):
            if c not in self.runs:
                self.runs.append(c)
            return True
        q = self.ctx.qualname(f) or ""
        if name in _CUTS or host_helper(name) or q.startswith(("numpy.", "math.")) or (
                f.__class__ is ast.Name and name in _TO_HOST):
            return False
        if f.__class__ is ast.Attribute:
            recv = f.value
            if self.carries(recv):
                if name.endswith("_") and recv.__class__ is ast.Name:
                    self.derived.add(recv.id)
                return True
            if recv.__class__ is ast.Constant:  # ' '.join(words)
                return False
            if not carried:
                return False
            if q.startswith("torch."):
                return True
            if recv.__class__ is ast.Name and recv.id not in self.params and recv.id != "self" \
                    and self.ctx.binding_at(recv.id, c) is not None and self.ctx.binding_at(recv.id, c).kind == "assign":
                self.derived.add(recv.id)  # a local list or tensor that takes the value: it carries now
                return True
            if self._pure_helper(c):
                return True
            self.leak = True  # handed to another object: it may keep it
            return True
        if not carried:
            return False
        if q.startswith("torch.") or (f.__class__ is ast.Name and f.id in _PURE) or self._pure_helper(c):
            return True
        self.leak = True
        return True

    def _pure_helper(self, c: ast.Call) -> bool:
        helper = _local(self.ctx, c, self.funcs)
        return helper is not None and _clean(self.ctx, helper) and not _stores(helper)

    def is_run(self, c: ast.Call) -> bool:
        return _network_run(self.ctx, self.func, self.klass, self.params, c, self.funcs)


def _stores(func: ast.FunctionDef) -> bool:
    return any(n.__class__ is ast.Attribute and n.ctx.__class__ is ast.Store for n in ast.walk(func))


def _analyse(ctx: Context, func: ast.FunctionDef, funcs: list[ast.FunctionDef], need_host: bool = True,
             any_flow: bool = False) -> list[ast.Call] | None:
    """The network runs of ``func`` when it qualifies (see the module doc), else None; with
    ``any_flow``, whatever it does with their values (a helper run for its result)."""
    key = ("tw104:host-results", id(func), need_host, any_flow)
    cache = ctx._cache.setdefault("tw104:host-results", {})
    if key in cache:
        return cache[key]
    cache[key] = None  # (recursion guard)
    out = None
    stmts = [n for n in ctx.walk_body(func.body) if isinstance(n, ast.stmt)] if _clean(ctx, func) else []
    returns = [n for n in stmts if n.__class__ is ast.Return]
    if stmts and (any_flow or not _stored(stmts)) and (not need_host or _maybe_host(ctx, returns)):
        flow = _Flow(ctx, func, funcs)
        for _ in range(2 if any(n.__class__ in (ast.For, ast.While) for n in stmts) else 1):  # loops feed back
            for s in stmts:
                value = getattr(s, "value", None) if s.__class__ in (ast.Assign, ast.AugAssign, ast.AnnAssign) else (
                    s.iter if s.__class__ is ast.For else s.value if s.__class__ is ast.Expr else None)
                if value is None or not flow.carries(value):
                    continue
                targets = s.targets if s.__class__ is ast.Assign else [s.target] if hasattr(s, "target") else []
                for t in targets:
                    flow.derived |= {n.id for n in ast.walk(t) if n.__class__ is ast.Name}
        host = bool(returns) and all(r.value is not None and not flow.carries(r.value) for r in returns)
        runs = [r for r in flow.runs if not under_no_grad(ctx, r)]
        if runs and (any_flow or not flow.leak and (host or not need_host)):
            out = sorted({r.lineno: r for r in sorted(runs, key=lambda r: -r.col_offset)}.values(), key=lambda r: r.lineno)
    cache[key] = out
    return out


def _stored(stmts: list[ast.stmt]) -> bool:
    """An assignment to an attribute (``self.last = out``, ``self.buf[i] = out``)."""
    for s in stmts:
        if s.__class__ in (ast.Assign, ast.AugAssign, ast.AnnAssign):
            for t in s.targets if s.__class__ is ast.Assign else [s.target]:
                if any(n.__class__ is ast.Attribute for n in ast.walk(t)) and t.__class__ is not ast.Name:
                    return True
    return False


def _maybe_host(ctx: Context, returns: list[ast.Return]) -> bool:
    """Cheap test before the flow: every return has a value, and one looks like host data (text
    with ``.numpy()``/``.item()``/``np.``/``.join(``, or names, a tuple, a call of a plain function)."""
    return bool(returns) and all(r.value is not None for r in returns) and any(
        r.value.__class__ in (ast.Name, ast.Tuple, ast.List, ast.BinOp) or r.value.__class__ is ast.Call
        and r.value.func.__class__ is ast.Name or any(w in ctx.text(r.value) for w in _HOST_WORDS) for r in returns)


def _local(ctx: Context, call: ast.Call, funcs: list[ast.FunctionDef]) -> ast.FunctionDef | None:
    """The function of this file ``call`` names: ``helper(x)`` (module level) or ``self.helper(x)``."""
    f = call.func
    if f.__class__ is ast.Name:
        return next((g for g in funcs if g.name == f.id and ctx.parent(g) is ctx.tree), None)
    if f.__class__ is ast.Attribute and f.value.__class__ is ast.Name and f.value.id == "self":
        klass = ctx.class_of(call)
        return next((g for g in funcs if g.name == f.attr and ctx.parent(g) is klass), None)
    return None


def _network_run(ctx: Context, func: ast.FunctionDef, klass: ast.ClassDef | None, params: set[str], c: ast.Call,
                 funcs: list[ast.FunctionDef]) -> bool:
    f = c.func
    if not c.args:
        return False
    module_class = klass is not None and _module_class(ctx, klass)
    if f.__class__ is ast.Name:
        if f.id == "self":
            return module_class
        helper = _local(ctx, c, funcs)
        if helper is not None:
            return helper is not func and _analyse(ctx, helper, funcs, need_host=False, any_flow=True) is not None
        return False
    if f.__class__ is not ast.Attribute:
        return False
    owner, name = f.value, f.attr
    if owner.__class__ is ast.Name and owner.id in params and owner.id != "self" and name == "forward":
        return False  # model.forward(x) of a model handed in: its callers are reported (see evalpaths)
    if owner.__class__ is ast.Name and owner.id == "self" and klass is not None:
        if name == "forward":
            return module_class
        methods = {m.name: m for m in klass.body if m.__class__ is ast.FunctionDef}
        if name in methods:
            helper = methods[name]
            return helper is not func and _local(ctx, c, funcs) is not None and not helper.decorator_list \
                and _analyse(ctx, helper, funcs, need_host=False, any_flow=True) is not None
        return _module_attr(ctx, f, c)
    if name in _NOT_RUNS or name.startswith(_NOT_RUN_PREFIXES):
        return False
    if owner.__class__ is ast.Attribute and owner.value.__class__ is ast.Name and owner.value.id == "self":
        # self.rnd.target(obs), self.model.predict(x) - not a network the class puts back in training mode
        return _module_attr(ctx, owner, c) and _method_runs(ctx, f, c) and not any(
            ctx.text(t.func.value) == ctx.text(owner) for t in ctx.calls_named("train") if t.func.__class__ is ast.Attribute)
    return owner.__class__ is ast.Name and owner.id in params and not owner.id.endswith(_NOT_MODEL_SUFFIXES) \
        and is_module_instance(ctx, owner, c) and _method_runs(ctx, f, c)  # (model(x) of a model handed in: its callers are reported, see evalpaths)


def _method_runs(ctx: Context, f: ast.Attribute, c: ast.Call) -> bool:
    """``net.encoder(x)``: a submodule - a name no function of the project defines, not a library
    model's generate()/predict() -, run on tensors (not on ``x.numpy()``: a scikit-learn model)."""
    if f.attr in FORWARD_VERBS or f.attr.startswith("fit") or f.attr in _STR_METHODS:
        return False
    if any(a.__class__ is ast.Call and last_name(a.func) in ("numpy", "tolist", "values") for a in c.args):
        return False
    key = ("tw104:project-def", f.attr)
    found = ctx.project.answers.get(key)
    if found is None:
        needle = f"def {f.attr}("
        found = ctx.project.answers[key] = any(needle in t for _, t in ctx.project.files or ((ctx.path, ctx.source),))
    return not found


def _module_attr(ctx: Context, attr: ast.Attribute, use: ast.Call) -> bool:
    """``self.x`` is a network: built from a module class (of torch, of this file or of another
    module of the project), or named like a model and built from nothing known."""
    built = ctx.constructed_from(attr, use)
    if built is None:
        return is_module_instance(ctx, attr, use)
    if is_module_class(ctx, built):
        return True
    if built.startswith("local:"):
        klass = ctx.local_classes.get(built[6:])
        return klass is not None and is_module_class_def(ctx, klass)
    call = _built_by(ctx, attr)
    found = project_class(ctx, call.func) if call is not None else None
    return found is not None and _module_class(*found)


def _built_by(ctx: Context, attr: ast.Attribute) -> ast.Call | None:
    """The constructor call of ``self.x = Net(...)`` in the class of ``attr``."""
    klass = ctx.class_of(attr)
    for node in ast.walk(klass) if klass is not None else ():
        if node.__class__ is ast.Assign and node.value.__class__ is ast.Call and any(
                t.__class__ is ast.Attribute and t.attr == attr.attr and t.value.__class__ is ast.Name
                and t.value.id == "self" for t in node.targets):
            return node.value
    return None


def _module_class(ctx: Context, klass: ast.ClassDef) -> bool:
    return any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name)) or is_module_class_def(ctx, klass)


def _helper(ctx: Context, run: ast.Call, funcs: list[ast.FunctionDef]) -> ast.FunctionDef | None:
    helper = _local(ctx, run, funcs)  # (not a module's forward: `self(x)` and every caller of the module run it too)
    return None if helper is None or helper.name in ("forward", "__call__") else helper


def _only_called_from(ctx: Context, helper: ast.FunctionDef, hosts: set[int]) -> bool:
    """Every call of ``helper`` in this file sits in one of the functions ``hosts``, and no other
    module calls it."""
    name = helper.name
    calls = [c for c in ctx.calls_named(name) if c.func.__class__ is ast.Name or ctx.text(c.func) == f"self.{name}"]
    if not calls or any(id(ctx.function_of(c)) not in hosts for c in calls):
        return False
    return ctx.parent(helper) is not ctx.tree or not any(True for _ in project_calls(ctx, name))


def _reached_without_grad(ctx: Context, func: ast.FunctionDef) -> bool:
    """Every call of the module-level ``func`` in the project sits under no_grad; for a method, some
    call of its name does (the author switches grad mode at the call sites), or one sits in a
    ``__call__`` (an object called as a function: its callers are not followed)."""
    if ctx.parent(func) is ctx.tree:
        calls = [(ctx, c) for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
        calls += list(project_calls(ctx, func.name))
        return bool(calls) and all(under_no_grad(w, c) for w, c in calls)
    return any(under_no_grad(w, c) or (g := w.function_of(c)) is not None and g.name == "__call__"
               for w, c in method_calls(ctx, func.name))

"""Host reads in what every forward pass runs (a module's ``forward``, a loss module's
``forward``, a helper they call): ``if``/``while``/``assert`` tests of a device tensor
(``if positive_indices.sum() > 0:``, ``assert not torch.isnan(h).any()``), ``nonzero()``
(``edge = adj.nonzero().t()``), whose result size has to reach the host, and ``torch.equal(query,
key)``, a Python bool of two of the forward's tensors (TW207)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.forwardpath import batch_function, takes_batch
from torchwise.lint.semantics.hostbuilt import moved_in_function, moves_host_build
from torchwise.lint.semantics.hostreads import tensor_test
from torchwise.lint.semantics.once import forward_path_function, sampler_off_step
from torchwise.lint.semantics.rarely import algorithm_stop
from torchwise.lint.semantics.steps import hot_region_of, is_eval_name


def forward_reads(ctx: Context) -> list[tuple[AST, AST, str]]:
    """``(node, function, description)`` of each such read outside the training loop itself
    (reads there are the rule's own loop checks)."""
    key = ("sem:forward-reads",)
    found = ctx._cache.get(key)
    if found is not None:
        return found
    found = []
    for kind in (ast.If, ast.While, ast.Assert):
        for node in ctx.nodes.get(kind, ()):
            func = _forward_function(ctx, node) if not algorithm_stop(node) else None
            if func is None or hot_region_of(ctx, node) is not None or sampler_off_step(ctx, func):
                continue  # (a generate()/sample() method that only inference calls: no forward pass of a step)
            if tensor_test(ctx, node.test, node.test) is not None or (
                    _reduced_test(ctx, node.test, func) and takes_batch(ctx, func)):
                found.append((node.test, func, "an assert of a tensor condition" if kind is ast.Assert else "a tensor condition"))
    if "nonzero" in ctx.source:
        for call in ctx.calls_named("nonzero"):
            func = ctx.function_of(call)
            subject = call.func.value if call.func.__class__ is ast.Attribute and ctx.qualname(call.func) is None else (
                call.args[0] if call.args and ctx.qualname(call.func) == "torch.nonzero" else None)
            if subject is None or func is None or _forward_function(ctx, call) is None or hot_region_of(ctx, call) is not None \
                    or sampler_off_step(ctx, func):
                continue
            if is_device_tensor(ctx, subject, call) or (from_inputs(ctx, subject, func) and takes_batch(ctx, func)):
                found.append((call, func, "nonzero()"))
    if "torch.equal(" in ctx.source:  # qkv_same = torch.equal(query, key): a Python bool of two tensors
        lines = set()  # (one finding per statement: qkv_same = torch.equal(q, k) and torch.equal(k, v))
        for call in ctx.calls_named("equal"):
            func = _forward_function(ctx, call) if len(call.args) == 2 and ctx.qualname(call.func) == "torch.equal" \
                and id(ctx.statement_of(call)) not in lines else None
            if func is not None and hot_region_of(ctx, call) is None and not sampler_off_step(ctx, func) \
                    and all(from_inputs(ctx, a, func) for a in call.args) and func.name not in ("__call__", "__getitem__") \
                    and (forward_path_function(ctx, call) is not None or takes_batch(ctx, func)):
                lines.add(id(ctx.statement_of(call)))
                found.append((call, func, "torch.equal() of two tensors"))
    if ".numpy()" in ctx.source:
        found += _host_copies(ctx)
    ctx._cache[key] = found
    return found


def _forward_function(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs on every forward pass: asked of this file first,
    and of the project (:func:`batch_function`) only for a test that reduces a tensor (a call of
    a reduction method in its text)."""
    func = forward_path_function(ctx, node)
    if func is not None:
        return None if is_eval_name(func.name) else func
    func = ctx.function_of(node)
    if func is None:
        return None
    key = ("sem:reduces-in", id(func))
    reduces = ctx._cache.get(key)
    if reduces is None:  # (once per function: its text calls a reduction)
        reduces = ctx._cache[key] = _REDUCING.search(ctx.text(func)) is not None
    if not reduces:
        return None
    text = ctx.text(node.test if node.__class__ is not ast.Call else node)
    return batch_function(ctx, node) if _REDUCING.search(text) else None


_REDUCING = lazy_compile(r"\.(?:sum|mean|max|min|any|all|prod|norm|item|equal|allclose)\(|nonzero")


def _host_copies(ctx: Context) -> list[tuple[AST, AST, str]]:
    """``offsets.cpu().data.numpy()`` (also ``.cpu().detach().numpy()``) in an ``nn.Module``'s
    ``forward`` on the training path, outside any ``if``: a copy to the host every forward pass."""
    out = []
    for call in ctx.calls_named("numpy"):
        node = call.func.value if call.func.__class__ is ast.Attribute else None
        while node is not None and node.__class__ is ast.Attribute and node.attr == "data" or (
                node.__class__ is ast.Call and last_name(node.func) == "detach"):
            node = node.value if node.__class__ is ast.Attribute else node.func.value
        if node.__class__ is not ast.Call or last_name(node.func) != "cpu" or ctx.enclosing_ifs(call):
            continue
        func = ctx.function_of(call)
        if func is None or forward_path_function(ctx, call) is None or hot_region_of(ctx, call) is not None:
            continue
        if not (_module_forward(ctx, func) and not _handed_in(ctx, node)) and not (
                _module_method(ctx, func) and from_inputs(ctx, node, func) and moves_host_build(ctx, func)
                and not (node.func.value.__class__ is ast.Name and moved_in_function(ctx, node.func.value.id, func))):
            continue  # (a method that moves back what it built from the copy: semantics.hostbuilt)
        out.append((call, func, "a copy to the host (.cpu() ... .numpy())"))
    return out


def _handed_in(ctx: Context, cpu: ast.Call) -> bool:
    """``labels.cpu()`` on a parameter of the forward as it was handed in (labels may well be on
    the host already): only a tensor the forward computed is evidently on the device."""
    base = cpu.func.value if cpu.func.__class__ is ast.Attribute else None
    while base is not None and base.__class__ in (ast.Call, ast.Attribute):
        base = base.func.value if base.__class__ is ast.Call and base.func.__class__ is ast.Attribute else (
            base.value if base.__class__ is ast.Attribute else None)
    if base is None or base.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(base.id, cpu)
    return b is not None and b.kind == "param"


def _module_forward(ctx: Context, func: AST) -> bool:
    """``forward`` of an ``nn.Module`` class of this file: its parameters are the tensors of the
    batch (a NumPy transform's ``__call__`` is not)."""
    return func.name == "forward" and _module_method(ctx, func)


def _module_method(ctx: Context, func: AST) -> bool:
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))


_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "any", "all", "prod", "norm", "item", "equal", "allclose"})
_TENSOR_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "any", "all", "prod", "norm"})  # (a 0-dim tensor)


def _reduced_test(ctx: Context, test: AST, func: AST, depth: int = 1) -> bool:
    """A test that reduces a tensor computed from the forward's inputs to a Python bool:
    ``positive_indices.sum() > 0``, ``not torch.isnan(h).any()``, ``torch.all(mask)`` (shape
    questions - ``x.size(0) > 0``, ``x.dim()`` - are no reads)."""
    for node in ast.walk(test):
        if node.__class__ is ast.Compare and depth > 0:  # n = torch.sum(obj_mask); if n != 0:
            for side in (node.left, *node.comparators):
                b = ctx.binding_at(side.id, side) if side.__class__ is ast.Name else None
                value = b.value if b is not None and b.kind == "assign" and ctx.function_of(b.node) is func else None
                if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in _TENSOR_REDUCTIONS \
                        and _reduced_test(ctx, value, func, depth - 1):
                    return True  # (not n = int(x.sum().item()): the read is at the assignment, the test is on a number)
        if node.__class__ is not ast.Call:
            continue
        f = node.func
        if f.__class__ is not ast.Attribute or f.attr not in _REDUCTIONS:
            continue
        q = ctx.qualname(f)
        subject = node.args[0] if q is not None and q.startswith("torch.") and node.args else (f.value if q is None else None)
        if subject is not None and from_inputs(ctx, subject, func):
            return True
    return False


def from_inputs(ctx: Context, expr: AST, func: AST, depth: int = 10, seen: set[int] | None = None) -> bool:
    """Is ``expr`` computed from the tensors the forward pass was given (its parameters other than
    ``self``), directly or through names bound in it (``h = torch.mm(input, self.W)``)?"""
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]} - {"self", "cls"}
    seen = set() if seen is None else seen  # bindings already followed (each is asked once)
    for node in ast.walk(expr):
        if node.__class__ is not ast.Name:
            continue
        b = ctx.binding_at(node.id, expr)
        if b is None:
            continue
        if b.kind == "param" and node.id in params:
            return True
        if depth > 0 and b.kind in ("assign", "unpack") and b.value is not None and id(b.value) not in seen \
                and ctx.function_of(b.node) is func and b.value is not expr and not host_array(ctx, b.value):
            seen.add(id(b.value))
            if from_inputs(ctx, b.value, func, depth - 1, seen):
                return True
    return False


def host_array(ctx: Context, value: AST) -> bool:
    """``value`` is a NumPy array (or a number of one) by its own text: a chain of methods, indexings and
    comparisons that meets ``.numpy()`` or a NumPy function before any move back to a device
    (``target.data.cpu().numpy().ravel()``, ``np.rollaxis(p.cpu().numpy(), 1)``, ``arr != ignore``):
    what is computed from it is on the host, whatever tensor it was copied from."""
    node = value
    while True:
        cls = node.__class__
        if cls is ast.Compare and len(node.comparators) == 1:
            node = node.left
        elif cls is ast.Subscript or cls is ast.Attribute:
            node = node.value
        elif cls is ast.Call:
            q = ctx.qualname(node.func)
            if q is not None:
                return q.startswith("numpy.")
            if node.func.__class__ is not ast.Attribute or node.func.attr in ("cuda", "to", "from_numpy", "tensor", "as_tensor"):
                return False
            if node.func.attr == "numpy":
                return True
            node = node.func.value
        else:
            return False

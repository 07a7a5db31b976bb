"""What checkpoints hold: data evidently on the host (``.cpu()`` tensors, NumPy, tensors built
from NumPy in code that never touches a device), objects that are no tensors at all (a pickled
``args``), the keys of saved dicts, and the file names a ``torch.save`` writes and a
``torch.load`` reads - in one file, or, through the project facts, across the project."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, argument, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.devices import file_moves_to_device, gpu_evident, is_device_tensor, scope_moves_to_device
from torchwise.lint.semantics.models import is_model_name
from torchwise.lint.semantics.values import local_function
from torchwise.lint.semantics.uncalledsaves import uncalled_forwarder
from torchwise.lint.semantics.movedsaves import saved_after_self_to_host


# optimizer, optim, g_optimizer, optimizer_d: an optimizer handed in (not optimizer_name)
_OPTIMIZER_NAME = lazy_compile(r"^_?(?:[a-z0-9]+_)?optim(?:izer)?s?(?:_[a-z0-9])?$", re.I)
_CPU_MARKS = frozenset({"cpu", "numpy", "item", "tolist"})


def is_host_data(ctx: Context, expr: AST | None, use: AST, depth: int = 3) -> bool:
    """Data evidently on the host: built with ``.cpu()``/``.to("cpu")``/``.numpy()``/``.item()``/
    ``.tolist()`` or NumPy (also by a helper of this file that returns only such data), directly or through the names and containers it is made of
    (``{k: v.cpu() for k, v in sd.items()}``, ``{"mu": np.mean(a, 0)}``); a dict whose tensor
    values all are."""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Call:
        node: AST = expr
        while True:  # model.cpu().state_dict(): a .cpu() anywhere down the chain
            if node.__class__ is ast.Call:
                if last_name(node.func) in _CPU_MARKS or (ctx.qualname(node.func) or "").startswith("numpy.") or _to_cpu(node):
                    return True  # (also ``.to("cpu")``)
                node = node.func
            elif node.__class__ in (ast.Attribute, ast.Subscript):
                node = node.value
            else:
                return _returns_host_data(ctx, expr)
    if cls in (ast.DictComp, ast.ListComp):
        return is_host_data(ctx, expr.value if cls is ast.DictComp else expr.elt, use, depth)
    if cls is ast.Dict:
        values = [v for v in expr.values if v is not None and v.__class__ is not ast.Constant]
        return bool(values) and all(is_host_data(ctx, v, use, depth) or _plain_number(ctx, v, use) for v in values)
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and (
            is_host_data(ctx, b.value, b.node, depth - 1) or _moved_entrywise(ctx, expr.id, b.node, use))
    return False


def _returns_host_data(ctx: Context, call: ast.Call) -> bool:
    """``data = self._generate_trajectories(n)`` where that method of this file returns host data
    only (``data = np.zeros(...)``, filled in, returned): a helper that builds NumPy arrays."""
    func = local_function(ctx, call)
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    key = ("ckpt:returns-host", id(func))
    if key not in ctx._cache:
        ctx._cache[key] = False  # (a helper that calls itself settles nothing)
        returns = [n for n in ast.walk(func) if n.__class__ is ast.Return and n.value is not None]
        ctx._cache[key] = bool(returns) and all(is_host_data(ctx, r.value, r) for r in returns)
    return ctx._cache[key]


def _to_cpu(expr: AST) -> bool:
    """``t.cpu()``, ``t.to("cpu")``, ``t.to(torch.device("cpu"))``."""
    if expr.__class__ is not ast.Call or expr.func.__class__ is not ast.Attribute:
        return False
    if expr.func.attr == "cpu":
        return True
    arg = expr.args[0] if expr.func.attr == "to" and len(expr.args) == 1 else None
    if arg is not None and arg.__class__ is ast.Call and last_name(arg.func) == "device" and len(arg.args) == 1:
        arg = arg.args[0]
    return arg.__class__ is ast.Constant and arg.value == "cpu"


def _moved_entrywise(ctx: Context, name: str, bound: AST, use: AST) -> bool:
    """``for k in sd.keys(): sd[k] = sd[k].to(torch.device("cpu"))`` between the binding of
    ``sd`` and its use: every entry of the dict is moved to the host."""
    scope = ctx.scope_of(use)
    for loop in ctx.walk_body(scope.body) if hasattr(scope, "body") else ():
        if loop.__class__ is not ast.For or not bound.lineno < loop.lineno < use.lineno:
            continue
        for stmt in loop.body:
            if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Subscript \
                    and last_name(stmt.targets[0].value) == name and _to_cpu(stmt.value):
                return True
    return False


def _plain_number(ctx: Context, expr: AST, use: AST) -> bool:
    """``epoch``, ``args.lr``, ``best_acc``: metadata saved next to the tensors, not a tensor. Not a
    parameter named for a model or an optimizer (``def save_checkpoint(epoch, model, optimizer)``
    saving ``{"model": model, "optimizer": optimizer}``: whole objects, with their device tensors)."""
    if expr.__class__ is ast.Attribute:
        return True
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind == "param" and (is_model_name(expr.id) or _OPTIMIZER_NAME.match(expr.id)):
            return False
        return b is None or b.kind in ("param", "for") or b.kind == "assign" and b.value.__class__ in (ast.Constant, ast.BinOp)
    return False


def saves_on_host(ctx: Context) -> bool | None:
    """True when every ``torch.save`` of the file saves host data, False when one does not,
    None when the file saves nothing."""
    saves = [c for c in ctx.calls_to("torch.save") if not uncalled_forwarder(ctx, c)]
    if not saves:
        return None
    return all(is_host_data(ctx, argument(call, "obj", 0), call) or _fresh_model_state(ctx, argument(call, "obj", 0), call)
               or saved_after_self_to_host(ctx, call) for call in saves)


def _dict_items(ctx: Context, expr: AST | None, use: AST) -> list[tuple[str, AST]] | None:
    """``(key, value)`` of a dict with constant string keys: a literal, ``dict(k=v)``, or a name
    bound to one."""
    if expr is None:
        return None
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.kind != "assign":
            return None
        expr, use = b.value, b.node
    if expr.__class__ is ast.Dict:
        if not all(k.__class__ is ast.Constant and isinstance(k.value, str) for k in expr.keys):
            return None
        return [(k.value, v) for k, v in zip(expr.keys, expr.values)]
    if expr.__class__ is ast.Call and last_name(expr.func) == "dict" and not expr.args:
        return [(k.arg, k.value) for k in expr.keywords if k.arg is not None]
    return None


def saved_keys(ctx: Context) -> tuple[set[str], set[str]]:
    """The keys of the dicts this file saves with ``torch.save``: those whose value is host data
    (or a plain number, string, name), and those that may hold device tensors."""
    host: set[str] = set()
    device: set[str] = set()
    for call in ctx.calls_to("torch.save"):
        items = _dict_items(ctx, argument(call, "obj", 0), call)
        moved = bool(items) and saved_after_self_to_host(ctx, call)  # (the object moved itself to the host first)
        for key, value in items or ():
            plain = moved or value.__class__ is ast.Constant or _plain_number(ctx, value, call)
            (host if plain or is_host_data(ctx, value, call) else device).add(key)
    return host, device


def saved_dict_keys(ctx: Context) -> tuple[set[str], set[str]]:
    """The keys of the dicts this file saves that hold a device entry beside them (every key of
    such a dict: ``{"epoch": n, "optimizer": optimizer}``), and those of dicts of host data only."""
    mixed: set[str] = set()
    plain: set[str] = set()
    for call in ctx.calls_to("torch.save"):
        items = _dict_items(ctx, argument(call, "obj", 0), call)
        if items:
            device = any(not (v.__class__ is ast.Constant or _plain_number(ctx, v, call) or is_host_data(ctx, v, call))
                         for _, v in items)
            (mixed if device else plain).update(k for k, _ in items)
    return mixed, plain


def loaded_keys(ctx: Context, load: ast.Call) -> set[str]:
    """The constant keys read from what ``load`` returns: ``torch.load(p)["mean"]``, or
    ``stats = torch.load(p); stats["mean"]``."""
    parent = ctx.parent(load)
    if parent.__class__ is ast.Subscript and parent.value is load:
        s = parent.slice
        return {s.value} if s.__class__ is ast.Constant and isinstance(s.value, str) else set()
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return set()
    name = parent.targets[0].id
    keys = set()
    for node in ctx.walk_body(getattr(ctx.scope_of(load), "body", [])):
        if node.__class__ is ast.Subscript and node.value.__class__ is ast.Name and node.value.id == name:
            s = node.slice
            if not (s.__class__ is ast.Constant and isinstance(s.value, str)):
                return set()  # some key we cannot read
            keys.add(s.value)
    return keys


def handed_on_whole(ctx: Context, load: ast.Call) -> bool:
    """``status = torch.load(p)`` and then ``status`` itself passed to a call in the same scope
    (``train(model, params, status)``): the keys read there are not the ones read here."""
    parent = ctx.parent(load)
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    for node in ctx.walk_body(getattr(ctx.scope_of(load), "body", [])):
        if node.__class__ is ast.Call and node.lineno > load.lineno and any(
                a.__class__ is ast.Name and a.id == name for a in [*node.args, *(k.value for k in node.keywords)]):
            return True
    return False


# names of saved objects that hold settings, not tensors (``torch.save(self.args, ".../training_args.bin")``)
_SETTINGS = frozenset({"args", "config", "cfg", "conf", "opt", "opts", "options", "hparams", "hyperparams",
                       "settings", "training_args", "train_args", "arguments"})
_HOST_MAKERS = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.tensor", "torch.Tensor", "torch.LongTensor",
                          "torch.FloatTensor"})
_MODULE_STATE = frozenset({"state_dict", "parameters", "named_parameters", "buffers"})


def holds_no_tensors(expr: AST | None) -> bool:
    """A settings object saved with ``torch.save`` (``args``, ``self.config``): no tensors in it."""
    name = last_name(expr) if expr is not None and expr.__class__ in (ast.Name, ast.Attribute) else None
    return name is not None and name in _SETTINGS


def built_on_host(ctx: Context, expr: AST | None, use: AST, depth: int = 12) -> bool:
    """Tensors made here from host data, in a function that puts nothing on a device: NumPy
    arrays turned into tensors (``torch.from_numpy``), structures built from them
    (``SparseTensor(row=edge_index[0], ...)``), dicts of them. Not a parameter, an attribute
    of ``self``, a model's ``state_dict()``, a model output or anything moved to a device."""
    if expr is None:
        return False
    scope = ctx.scope_of(use)
    if scope_moves_to_device(ctx, scope, 0):
        return False
    return _host_value(ctx, expr, use, scope, depth, {})


def _host_value(ctx: Context, expr: AST, use: AST, scope: AST, depth: int, seen: dict[int, bool]) -> bool:
    cls = expr.__class__
    if depth <= 0:
        return False
    if cls is ast.Constant or cls is ast.JoinedStr:
        return True
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is not None and b.kind == "import":
            return expr.id.isupper()  # from root import ROOT: a constant by convention
        if b is not None and b.kind == "assign" and ctx.scope_of(b.node) is ctx.tree and scope is not ctx.tree:
            return b.value.__class__ in (ast.Constant, ast.JoinedStr)  # ROOT = "/data": a module-level setting
        if b is None or b.kind not in ("assign", "unpack", "aug", "for") or b.value is None or ctx.scope_of(b.node) is not scope:
            return False
        key = id(b.node)
        if key not in seen:
            seen[key] = True  # a cycle through loop-carried names adds nothing: assume it holds
            at = b.node if b.kind != "for" else b.value  # a comprehension's clause has no position
            seen[key] = _host_value(ctx, b.value, at, scope, depth - 1, seen)
        return seen[key]
    parts: list[AST]
    if cls in (ast.Tuple, ast.List):
        parts = list(expr.elts)
    elif cls is ast.Dict:
        parts = [v for v in expr.values if v is not None]
    elif cls is ast.Attribute and ctx.qualname(expr) is not None:
        return True  # torch.int8, np.float32: a library constant
    elif cls in (ast.Subscript, ast.Attribute):
        root = expr.value
        if root.__class__ is ast.Name and root.id in ("self", "cls"):
            return cls is ast.Attribute and _setting(expr)
        parts = [root]
    elif cls is ast.BinOp:
        parts = [expr.left, expr.right]
    elif cls in (ast.ListComp, ast.GeneratorExp):
        return _host_value(ctx, expr.elt, expr.elt, scope, depth, seen)  # its names are bound by its for clauses
    elif cls is ast.Call:
        if is_device_tensor(ctx, expr, use):
            return False
        if is_host_data(ctx, expr, use) or (ctx.qualname(expr.func) or "") in _HOST_MAKERS:
            return True  # .cpu(), .numpy(), NumPy calls; tensors made from host data
        func = expr.func
        if func.__class__ is ast.Attribute and ctx.qualname(func) is None:
            if func.attr in _MODULE_STATE:
                return False
            parts = [func.value]
        else:
            parts = []
        parts += [*expr.args, *(k.value for k in expr.keywords)]
    else:
        return False
    return all(_host_value(ctx, p, use, scope, depth, seen) for p in parts)


def _setting(expr: AST) -> bool:
    """``self.n``, ``self.data_dir``: a size or a path (not a tensor of the model), by its name."""
    name = last_name(expr) or ""
    return name.startswith(("num_", "n_")) or name.endswith(("_dir", "_path", "_size", "_len")) or name in ("n", "dir", "root")


def saved_on_host(ctx: Context, save: ast.Call) -> bool:
    """Does this ``torch.save`` write host data or no tensors at all?"""
    obj = argument(save, "obj", 0)
    return holds_no_tensors(obj) or is_host_data(ctx, obj, save) or built_on_host(ctx, obj, save) \
        or _fresh_model_state(ctx, obj, save) or _moved_to_host_first(ctx, obj, save) or saved_after_self_to_host(ctx, save)


def _moved_to_host_first(ctx: Context, obj: AST | None, save: ast.Call) -> bool:
    """``net.cpu()`` (or ``net = net.to("cpu")``) as a statement before ``torch.save(net.state_dict(),
    f)`` in the same scope, with no later move of ``net`` before the save: a module moved to the
    host in place writes host tensors. Also through the wrapped module and a name bound in the
    same scope (``state = net.module.state_dict() if hasattr(net, "module") else net.state_dict()``)."""
    name, scope = _state_owner(ctx, obj, save), ctx.scope_of(save)
    if name is None:
        return False
    moves = [c for c in ctx.calls_named("cpu", "cuda", "to") if c.func.__class__ is ast.Attribute
             and c.func.value.__class__ is ast.Name and c.func.value.id == name and ctx.scope_of(c) is scope
             and (c.lineno, c.col_offset) < (save.lineno, save.col_offset)]
    if not moves:
        return False
    last = max(moves, key=lambda c: (c.lineno, c.col_offset))
    to_cpu = last.func.attr == "cpu" or last.func.attr == "to" and bool(last.args) and ctx.text(last.args[0]) in ('"cpu"', "'cpu'")
    stmt = ctx.parent(last)
    return to_cpu and (stmt.__class__ is ast.Expr or stmt.__class__ is ast.Assign and ctx.text(stmt.targets[0]) == name)


def _state_owner(ctx: Context, obj: AST | None, save: ast.Call) -> str | None:
    """The one name whose state ``obj`` is: ``net`` for ``net.state_dict()``, ``net.module.state_dict()``,
    or a name bound to such an expression in the save's scope (a conditional of both included)."""
    if obj is not None and obj.__class__ is ast.Name:
        b = ctx.binding_at(obj.id, save)
        if b is None or b.kind != "assign" or b.value is None or ctx.scope_of(b.node) is not ctx.scope_of(save):
            return None
        obj = b.value
    if obj is None or obj.__class__ not in (ast.Call, ast.IfExp):
        return None
    roots = set()
    for call in (obj.body, obj.orelse) if obj.__class__ is ast.IfExp else (obj,):
        if call.__class__ is not ast.Call or call.func.__class__ is not ast.Attribute or call.func.attr != "state_dict":
            return None
        owner = call.func.value
        if owner.__class__ is ast.Attribute and owner.attr == "module":
            owner = owner.value
        if owner.__class__ is not ast.Name:
            return None
        roots.add(owner.id)
    return roots.pop() if len(roots) == 1 else None


def _fresh_model_state(ctx: Context, obj: AST | None, save: ast.Call) -> bool:
    """``n = nn.Sequential(); ...; torch.save(n.state_dict(), ...)`` in a file with no device
    code at all (a weight-conversion script): the model is built here, on the CPU."""
    if obj is None or obj.__class__ is not ast.Call or obj.func.__class__ is not ast.Attribute \
            or obj.func.attr != "state_dict" or obj.func.value.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(obj.func.value.id, save)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call or ctx.scope_of(b.node) is not ctx.scope_of(save):
        return False
    return not gpu_evident(ctx) and not file_moves_to_device(ctx)


_FILE_NAME = lazy_compile(r"[\w\-]+(?:\.[\w\-]+)*\.[A-Za-z0-9]{1,8}$")


def file_names(ctx: Context, expr: AST | None, use: AST, depth: int = 2) -> set[str]:
    """The file names a path expression evidently ends with: ``"ckpt/best.pth"``,
    ``os.path.join(d, "training_args.bin")``, ``f"{root}/adj_t.pt"``, ``path + "/" + "checkpoint.pth"``,
    also through a name bound to one (``best_model_path = path + "/" + "checkpoint.pth"``) or to a
    file opened on one (``with open(os.path.join(d, "model.pt"), "rb") as f``)."""
    out: set[str] = set()
    if expr is None or depth <= 0:
        return out
    for node in ast.walk(expr):
        if node.__class__ is ast.Constant and isinstance(node.value, str):
            tail = node.value.replace("\\", "/").rsplit("/", 1)[-1]
            if _FILE_NAME.fullmatch(tail) and not tail.startswith("."):
                out.add(tail)
        elif node.__class__ is ast.Name:
            b = ctx.binding_at(node.id, use)
            if b is not None and b.kind == "assign" and b.value is not None:
                out |= file_names(ctx, b.value, b.node, depth - 1)
            elif b is not None and b.kind == "with" and b.value.__class__ is ast.Call and b.value.args \
                    and b.value.func.__class__ is ast.Name and b.value.func.id == "open":
                out |= file_names(ctx, b.value.args[0], b.node, depth - 1)  # with open(path, "rb") as f: torch.load(f)
    return out

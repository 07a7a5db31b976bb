"""Reads of tensor values on the host: functions that read their arguments that way (a
``reduce_loss_dict`` calling ``.item()`` on every loss, ``SummaryWriter.add_scalar``), values
that hold device tensors or losses, and reads whose value must reach the host anyway (the
action an environment steps with)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, last_name, root_name
from torchwise.lint.semantics.devices import SYNC_METHODS, is_device_tensor
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.projectcode import function_verdict
from torchwise.lint.semantics.steps import is_eval_name, is_optimizer_step, names_feeding_backward
from torchwise.lint.semantics.values import local_function

# logging calls that read a tensor argument on the host: method name -> index of that argument
LOGGING_READERS = {"add_scalar": 1, "add_scalars": 1, "add_histogram": 1}
_WRITER_HINTS = ("writer", "summary", "tb", "logger", "board")
_READS = SYNC_METHODS - {"cpu"}  # .cpu() alone may move a module; .item()/.tolist()/.numpy() read values


def _derived(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Names that carry (part of) the function's arguments: the parameters, and names assigned
    or looped over from them (``for name, value in loss_dict.items()``)."""
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]]
    derived = {p for p in params if p not in ("self", "cls")}
    flows = []  # (names read, names bound) of each binding statement
    for node in ast.walk(func):
        cls = node.__class__
        if cls in (ast.Assign, ast.For, ast.comprehension, ast.AugAssign):
            source = node.iter if cls in (ast.For, ast.comprehension) else node.value
            targets = node.targets if cls is ast.Assign else [node.target]
            reads = {n.id for n in ast.walk(source) if n.__class__ is ast.Name}
            binds = {n.id for t in targets for n in ast.walk(t) if n.__class__ is ast.Name}
            flows.append((reads, binds))
    for _ in range(3):  # a few passes reach names bound from names bound from parameters
        before = len(derived)
        for reads, binds in flows:
            if reads & derived:
                derived |= binds
        if len(derived) == before:
            break
    return derived


def host_read_of_arguments(func: AST) -> ast.Call | None:
    """The first ``.item()``/``.tolist()``/``.numpy()`` in ``func`` on a value that comes from
    its arguments (not from ``self``): ``func`` reads what it is given on the host."""
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return None
    derived = _derived(func)
    for node in ast.walk(func):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr in _READS:
            root = root_name(node.func.value)
            if root is not None and root.id in derived:
                return node
    return None


def host_reader(ctx: Context, call: ast.Call) -> str | None:
    """How ``call`` reads its tensor arguments on the host, said for a message (``"it calls
    .item() on line 12"``, ``"... at models/base_model.py:318"``, ``"it reads the tensor on the host"``);
    None when it evidently does not. Evaluation helpers (``test()``, ``evaluate()``) are left
    out: reading their results is what they are for, whatever runs them."""
    func = call.func
    name = last_name(func)
    if not name or is_eval_name(name):
        return None
    if func.__class__ is ast.Attribute and name in LOGGING_READERS and ctx.qualname(func) is None:
        owner = (last_name(func.value) or "").lower()
        built = ctx.constructed_from(func.value, call) or ""
        writer = any(h in owner for h in _WRITER_HINTS) or built.endswith("SummaryWriter")
        return "it reads the tensor on the host" if writer else None
    target = local_function(ctx, call)
    if target is not None:
        read = _cached_host_read(ctx, target)
        return f"it calls .{read.func.attr}() on line {read.lineno}" if read is not None else None
    where = function_verdict(ctx.project, "host_read_blocks", name, _host_read_line)
    return f"it reads its arguments with .item() or the like at {where}" if where else None


def _host_read_line(func: AST) -> int | None:
    read = host_read_of_arguments(func)
    return read.lineno if read is not None else None


def _cached_host_read(ctx: Context, func: AST) -> ast.Call | None:
    key = ("sem:hostread", id(func))
    if key not in ctx._cache:
        ctx._cache[key] = host_read_of_arguments(func)
    return ctx._cache[key]


def read_arguments(ctx: Context, call: ast.Call) -> list[AST]:
    """The arguments of ``call`` that its host read applies to."""
    index = LOGGING_READERS.get(last_name(call.func) or "")
    if index is not None and local_function(ctx, call) is None:
        return [call.args[index]] if len(call.args) > index else [k.value for k in call.keywords if k.arg == "scalar_value"]
    return [*call.args, *(k.value for k in call.keywords)]


def holds_device_values(ctx: Context, expr: AST, use: AST) -> bool:
    """A device tensor or a loss, or a dict/list that collects them (``loss_dict["l_pix"] = l_pix``,
    ``{"ce": loss}``)."""
    if _device_value(ctx, expr, use):
        return True
    if expr.__class__ is ast.Dict:
        return any(v is not None and _device_value(ctx, v, use) for v in expr.values)
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, use)
    if b is None or b.kind != "assign":
        return False
    if b.value.__class__ is ast.Dict and holds_device_values(ctx, b.value, b.node):
        return True
    scope = ctx.scope_of(use)
    for node in ctx.walk_body(getattr(scope, "body", [])):
        if node.__class__ is ast.Assign and any(
            t.__class__ is ast.Subscript and t.value.__class__ is ast.Name and t.value.id == expr.id for t in node.targets
        ):  # loss_dict[key] = value
            if _device_value(ctx, node.value, node):
                return True
        elif node.__class__ is ast.Call and last_name(node.func) == "append" and node.func.__class__ is ast.Attribute:
            if node.func.value.__class__ is ast.Name and node.func.value.id == expr.id and node.args:
                if _device_value(ctx, node.args[0], node):
                    return True
    return False


def _device_value(ctx: Context, expr: AST, use: AST) -> bool:
    if is_device_tensor(ctx, expr, use) or is_loss_value(ctx, expr, use):
        return True
    # a term of the loss that is backpropagated in this function (l_total += l_pix)
    return expr.__class__ is ast.Name and expr.id in names_feeding_backward(ctx, ctx.scope_of(use))


def is_loop_counter(ctx: Context, expr: AST) -> bool:
    """A Python int counting passes: the target of ``for i in range(...)`` or the index of
    ``for i, x in enumerate(...)``."""
    if expr.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(expr.id, expr)
    if b is None or b.kind != "for" or b.value.__class__ is not ast.Call:
        return False
    name = last_name(b.value.func)
    return (name in ("range", "trange") and b.index == -1) or (name == "enumerate" and b.index == 0)


def _environment_step(ctx: Context, call: ast.Call) -> bool:
    """``env.step(action)``, ``envs.step(...)``: a step that is not an optimizer's, scheduler's or scaler's."""
    func = call.func
    if func.__class__ is not ast.Attribute or func.attr != "step" or not (call.args or call.keywords):
        return False
    owner = (last_name(func.value) or "").lower()
    if any(w in owner for w in ("optim", "sched", "scaler", "opt")) or is_optimizer_step(ctx, call):
        return False
    return True


def feeds_environment(ctx: Context, node: AST, loop: AST) -> bool:
    """Does the value read at ``node`` go to an environment's ``step()`` in this loop (directly,
    or through names assigned from it)? The environment runs on the host: the read is needed."""
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Call and _environment_step(ctx, anc):
            return True
        if isinstance(anc, ast.stmt):
            stmt = anc
            break
    else:
        return False
    if stmt.__class__ is not ast.Assign:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name}
    later = [n for n in ctx.walk_body(loop.body) if getattr(n, "lineno", 0) > (stmt.end_lineno or stmt.lineno)]
    for n in later:
        if n.__class__ is ast.Assign and any(m.__class__ is ast.Name and m.id in names for m in ast.walk(n.value)):
            names |= {m.id for t in n.targets for m in ast.walk(t) if m.__class__ is ast.Name}
        elif n.__class__ is ast.Call and _environment_step(ctx, n):
            if any(m.__class__ is ast.Name and m.id in names for a in n.args for m in ast.walk(a)):
                return True
    return False


_CPU_MARKS = frozenset({"cpu", "numpy", "item", "tolist"})


def is_host_data(ctx: Context, expr: AST | None, use: AST, depth: int = 3) -> bool:
    """Data evidently on the host: built with ``.cpu()``/``.numpy()``/``.item()``/``.tolist()``
    or NumPy, directly or through the names and containers it is made of
    (``{k: v.cpu() for k, v in sd.items()}``, ``{"mu": np.mean(a, 0)}``); a dict whose tensor
    values all are."""
    if expr is None or depth <= 0:
        return False
    cls = expr.__class__
    if cls is ast.Call:
        node: AST = expr
        while True:  # model.cpu().state_dict(): a .cpu() anywhere down the chain
            if node.__class__ is ast.Call:
                if last_name(node.func) in _CPU_MARKS or (ctx.qualname(node.func) or "").startswith("numpy."):
                    return True
                node = node.func
            elif node.__class__ in (ast.Attribute, ast.Subscript):
                node = node.value
            else:
                return False
    if cls in (ast.DictComp, ast.ListComp):
        return is_host_data(ctx, expr.value if cls is ast.DictComp else expr.elt, use, depth)
    if cls is ast.Dict:
        values = [v for v in expr.values if v is not None and v.__class__ is not ast.Constant]
        return bool(values) and all(is_host_data(ctx, v, use, depth) or _plain_number(ctx, v, use) for v in values)
    if cls is ast.Name:
        b = ctx.binding_at(expr.id, use)
        return b is not None and b.kind == "assign" and is_host_data(ctx, b.value, b.node, depth - 1)
    return False


def _plain_number(ctx: Context, expr: AST, use: AST) -> bool:
    """``epoch``, ``args.lr``, ``best_acc``: metadata saved next to the tensors, not a tensor."""
    if expr.__class__ is ast.Attribute:
        return True
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        return b is None or b.kind in ("param", "for") or b.kind == "assign" and b.value.__class__ in (ast.Constant, ast.BinOp)
    return False


def saves_on_host(ctx: Context) -> bool | None:
    """True when every ``torch.save`` of the file saves host data, False when one does not,
    None when the file saves nothing."""
    saves = ctx.calls_to("torch.save")
    if not saves:
        return None
    return all(is_host_data(ctx, argument(call, "obj", 0), call) for call in saves)


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
        for key, value in items or ():
            plain = value.__class__ is ast.Constant or _plain_number(ctx, value, call)
            (host if plain or is_host_data(ctx, value, call) else device).add(key)
    return host, device


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


def _leaves_graph(expr: AST) -> bool:
    """``q.argmax(1).cpu().numpy()``, ``a.detach()``, ``a.item()``: the value no longer carries a graph."""
    return any(n.__class__ is ast.Call and last_name(n.func) in ("cpu", "numpy", "item", "tolist", "detach")
               for n in ast.walk(expr))


def only_acts(ctx: Context, stmt: ast.stmt, loop: AST) -> bool:
    """Does what ``stmt`` binds only become an action for an environment in ``loop``: it reaches
    an environment's ``step()`` (through ``argmax``, ``.cpu().numpy()``...) and is not collected
    (``.append``, ``+=``), returned, or summed into a backward pass while it still carries its
    graph? Then the model call that made it needed no autograd graph."""
    if stmt.__class__ is not ast.Assign:
        return False
    names = {n.id for t in stmt.targets for n in ast.walk(t) if n.__class__ is ast.Name and n.id != "_"}
    if not names or names & names_feeding_backward(ctx, ctx.scope_of(stmt)):
        return False
    end = stmt.end_lineno or stmt.lineno
    stepped = False
    released: set[str] = set()  # host data made from it (.cpu().numpy()): used anywhere, it needs no graph
    for node in ctx.walk_body(loop.body):
        if not isinstance(node, ast.stmt) or node.lineno <= end or node.__class__ in (ast.For, ast.While, ast.If, ast.With):
            continue  # compound statements: their inner statements are looked at one by one
        reads = {n.id for n in ast.walk(node) if n.__class__ is ast.Name and n.ctx.__class__ is ast.Load}
        if not reads & (names | released):
            continue
        value = node.value if node.__class__ in (ast.Assign, ast.Expr) else None
        if value is not None and any(c.__class__ is ast.Call and _environment_step(ctx, c) for c in ast.walk(value)):
            stepped = True  # the environment takes it; what it returns is new data
        elif not reads & names:
            continue
        elif node.__class__ is ast.Assign and _leaves_graph(node.value):
            bound = {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
            released |= bound
            names -= bound  # actions = actions.detach().cpu().numpy(): the name now holds host data
        elif node.__class__ is ast.Assign:
            names |= {n.id for t in node.targets for n in ast.walk(t) if n.__class__ is ast.Name}
        else:
            return False  # collected, returned, logged as a tensor...: it may need its graph
    return stepped


def checkpoint_facts(facts) -> tuple[bool, frozenset[str], frozenset[str]]:
    """What the project's ``torch.save`` calls write (read on demand from ``facts.save_files``,
    once per process): whether there is one and every one saves host data; the keys of saved
    dicts whose values are host data; the keys that may hold device tensors."""
    found = facts.answers.get("checkpoints")
    if found is None:
        every, seen = True, False
        host: set[str] = set()
        device: set[str] = set()
        for path, text in facts.save_files:
            try:
                ctx = Context(text, path, ast.parse(text, filename=path))
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
            verdict = saves_on_host(ctx)
            every = every and verdict is not False
            seen = seen or verdict is True
            h, d = saved_keys(ctx)
            host |= h
            device |= d
        found = (every and seen, frozenset(host), frozenset(device))
        facts.answers["checkpoints"] = found
    return found

"""New tensors handed from where they are made to where they are moved (TW205): returned by a
helper of the file (``t = diffusion.sample_timesteps(n).to(device)``), passed to a helper that
moves its argument (``self.to_gpu(torch.randn(b, d))`` where ``to_gpu`` does ``Variable(x).cuda()``),
wrapped in ``Variable(z)`` at the move, or reshaped under the same name first
(``eta = eta.expand(...)``); and the branches where such a move is rare (once per interval, once
per evaluation)."""

from __future__ import annotations

import ast
from typing import Callable, Iterator, TypeVar

from torchwise.lint.engine import AST, DEF_TYPES, Context, last_name
from torchwise.lint.semantics.appendedjoins import appended_parts, reset_attribute
from torchwise.lint.semantics.devices import is_device_tensor
from torchwise.lint.semantics.meshgrids import meshgrid_part
from torchwise.lint.semantics.once import forward_path_function
from torchwise.lint.semantics.steps import is_eval_name, training_calls
from torchwise.lint.semantics.stored import joined_names, stored_then_moved
from torchwise.lint.semantics.values import functions_by_name, local_function

T = TypeVar("T")
Made = Callable[[AST | None], "T | None"]


def unwrap_variable(expr: AST) -> AST:
    """``Variable(z)`` / ``autograd.Variable(z)`` of a name: the name (the wrapper copies nothing)."""
    if expr.__class__ is ast.Call and last_name(expr.func) == "Variable" and len(expr.args) == 1 \
            and expr.args[0].__class__ is ast.Name:
        return expr.args[0]
    return expr


def called_helper(ctx: Context, call: ast.Call) -> AST | None:
    """The one function of this file that ``call`` runs: by plain or ``self.`` name, or a method
    called on an object (``diffusion.sample_timesteps(n)``) whose name no other def shares."""
    found = local_function(ctx, call)
    if found is None and call.func.__class__ is ast.Attribute:
        defs = functions_by_name(ctx).get(call.func.attr)
        found = defs[0] if defs and len(defs) == 1 and ctx.parent(defs[0]).__class__ is ast.ClassDef else None
    return found


def _returns(func: AST) -> Iterator[ast.Return]:
    todo = list(func.body)
    while todo:
        node = todo.pop()
        if isinstance(node, DEF_TYPES) or node.__class__ is ast.Lambda:
            continue
        if node.__class__ is ast.Return:
            yield node
        todo.extend(ast.iter_child_nodes(node))


def returned_new(ctx: Context, recv: AST, made: Made) -> T | None:
    """``recv`` is a call of a helper of this file every ``return`` of which gives a new CPU
    tensor (``return torch.randint(1, steps, size=(n,))``): what ``made`` says of the first."""
    if recv.__class__ is not ast.Call:
        return None
    func = called_helper(ctx, recv)
    if func is None or func.__class__ is ast.Lambda:
        return None
    results = []
    for ret in _returns(func):
        value = ret.value
        if value is not None and value.__class__ is ast.Name:
            value = ctx.resolve(value, ret)
        results.append(made(value) if value is not None else None)
    return results[0] if results and all(r is not None for r in results) else None


def moved_parameter(ctx: Context, recv: AST) -> tuple[AST, int] | None:
    """``recv`` (through ``Variable(...)``) is a parameter of the function around it, which
    moves it (``def to_gpu(self, x): return Variable(x).cuda()``): that function and the
    parameter's position among the arguments its callers pass."""
    recv = unwrap_variable(recv)
    if recv.__class__ is not ast.Name:
        return None
    b = ctx.binding_at(recv.id, recv)
    func = ctx.function_of(recv)
    if b is None or b.kind != "param" or func is None or func.__class__ is ast.Lambda:
        return None
    names = [a.arg for a in func.args.args]
    if recv.id not in names or recv.id in ("self", "cls"):
        return None
    index = names.index(recv.id)
    if ctx.parent(func).__class__ is ast.ClassDef:
        index -= 1  # called as self.helper(x) / obj.helper(x)
    return (func, index) if index >= 0 else None


def passed_new(ctx: Context, func: AST, index: int, made: Made) -> Iterator[tuple[ast.Call, T]]:
    """Calls of ``func`` in this file that pass it a new CPU tensor at ``index``: made right
    there (``to_gpu(torch.randn(b, d))``) or stored just before and passed next (``z =
    torch.randn(...); z = self.to_gpu(z)``)."""
    for call in ctx.calls_named(func.name):
        if called_helper(ctx, call) is not func or len(call.args) <= index:
            continue
        arg = call.args[index]
        found = made(arg)
        if found is None and arg.__class__ is ast.Name and stored_then_moved(ctx, arg, call):
            found = made(ctx.resolve(arg, call))
        if found is not None:
            yield call, found


def reshaped_source(ctx: Context, recv: ast.Name, use: AST, methods: frozenset[str], depth: int = 3) -> AST | None:
    """``eta = torch.FloatTensor(b, 1).uniform_(0, 1); eta = eta.expand(...); eta.cuda()`` (also
    reshapes chained, ``m = m.view(-1, 1).repeat(1, d)``): the
    value ``recv`` was made from through reshapes stored under names, each used next by the
    following one; None when it was not reshaped that way."""
    for _ in range(depth):
        b = ctx.binding_at(recv.id, use)
        value = b.value if b is not None and b.kind == "assign" else None
        base = _reshaped_name(value, methods)
        if base is None or not stored_then_moved(ctx, recv, use):
            return None
        recv, use = base, value
        if not stored_then_moved(ctx, recv, use):
            return None
        source = ctx.resolve(recv, use)
        if _reshaped_name(source, methods) is None:
            return source
    return None


def _reshaped_name(value: AST | None, methods: frozenset[str]) -> ast.Name | None:
    """The name under ``m.view(-1, 1).repeat(1, d).view(n, -1)`` (reshapes chained on a name)."""
    if value.__class__ is not ast.Call or value.func.__class__ is not ast.Attribute or value.func.attr not in methods:
        return None
    while value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in methods:
        value = value.func.value
    return value if value.__class__ is ast.Name else None


def rarely_moved(ctx: Context, node: AST) -> bool:
    """Under ``if step % interval == 0:`` (an interval of 10 or more, or one held in a name: a
    sample grid, a log) or in an evaluation function outside its loops that no loop of the file
    calls (``evaluate()`` drawing one grid of samples): made once per interval or per evaluation,
    not every step."""
    for if_node, in_body in ctx.enclosing_ifs(node):
        if in_body and _interval_test(if_node.test) and not any(ctx.contains(if_node, c) for c in training_calls(ctx)):
            return True  # not a gradient-accumulation branch (if step % accum == 0: opt.step())
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or not is_eval_name(func.name) or ctx.enclosing_loops(node):
        return False
    if any(ctx.enclosing_loops(c) for c in ctx.calls_named(func.name)):
        return False  # validate_batch(...) called for every batch of a loop here
    return forward_path_function(ctx, node) is None


def _interval_test(test: AST) -> bool:
    """``i % 100 == 0``, ``(i + 1) % args.log_every == 0``: not ``i % 2`` (every other step)."""
    for n in ast.walk(test):
        if n.__class__ is ast.Compare and len(n.ops) == 1 and n.ops[0].__class__ is ast.Eq:
            for side in (n.left, n.comparators[0]):
                if side.__class__ is ast.BinOp and side.op.__class__ is ast.Mod:
                    every = side.right
                    if every.__class__ is ast.Constant:
                        if isinstance(every.value, int) and every.value >= 10:
                            return True
                    elif every.__class__ in (ast.Name, ast.Attribute):
                        return True
    return False


def moved_sources(ctx: Context, call: ast.Call, made_by: Made, methods: frozenset[str]) -> Iterator[tuple[ast.Call, T, bool, str]]:
    """The new CPU tensors ``call`` moves (``made_by`` says what a factory expression made;
    ``methods`` only reshape or retype): (where to report, what was made, whether in an earlier
    statement or a helper, the helper as " by name()" / " (made in name())" or "")."""
    recv = call.func.value
    made = made_by(recv)
    if made is not None:
        yield call, made, False, ""
        return
    name = unwrap_variable(recv)  # Variable(z).cuda(i): the wrapper copies nothing
    while name.__class__ is ast.Call and name.func.__class__ is ast.Attribute and name.func.attr in methods \
            and ctx.qualname(name.func) is None:
        name = name.func.value  # m = torch.linspace(...); m.expand(b, k).to(x): reshaped as it is moved
    if name.__class__ is ast.Name:
        made = made_by(ctx.resolve(name, call))  # m = torch.ones(n); m = m.cuda()
        if made is None:
            made = made_by(reshaped_source(ctx, name, call, methods))  # m = m.expand(...) first
        elif not stored_then_moved(ctx, name, call):
            made = None
        if made is not None:
            yield call, made, True, ""
            return
        made = meshgrid_part(ctx, name, call, made_by)  # yy, xx = torch.meshgrid(torch.arange(h), ...); xx.cuda()
        if made is not None:
            yield made[0], made, True, f" (a grid of torch.meshgrid, moved at line {call.lineno})"
            return
    for part, use in _join_parts(ctx, recv, call, methods):
        made = made_by(ctx.resolve(part, use))  # m = torch.zeros(s); torch.cat([y, m]).to(dev)
        if made is not None and stored_then_moved(ctx, part, use):
            yield call, made, True, ""
            return
        made = meshgrid_part(ctx, part, use, made_by)  # torch.stack((xx, yy), 2) of meshgrid's grids, moved
        if made is not None:
            yield made[0], made, True, f" (a grid of torch.meshgrid, joined and moved at line {call.lineno})"
            return
    joined = False
    # inputs.append(torch.eye(n)); inputs = torch.cat(inputs, 1), moved here or by the caller of the helper returning it
    for site, made in appended_parts(ctx, recv, call, made_by, methods, lambda c: called_helper(ctx, c)):
        joined = True
        yield site, made, True, f" (appended to a list joined on the CPU and moved at line {call.lineno})"
    for site, made in reset_attribute(ctx, recv, call, made_by):  # def init_hidden(self): self.h = torch.zeros(...)
        joined = True
        yield site, made, True, f" (stored in {ctx.text(recv)}, moved at line {call.lineno})"
    if joined:
        return
    made = returned_new(ctx, recv, made_by)  # t = diffusion.sample_timesteps(n).to(device)
    if made is not None:
        yield call, made, True, f" (made in {last_name(recv.func)}())"
        return
    kept = kept_attribute(ctx, recv, call, made_by)  # self.pe made in __init__, moved in forward
    if kept is not None:
        yield call, kept, True, f" every call ({ctx.text(_unwrap_attribute(recv))} is a plain attribute; a buffer moves with the model)"
        return
    helper = moved_parameter(ctx, recv)  # def to_gpu(self, x): return Variable(x).cuda()
    if helper is not None:
        for site, made in passed_new(ctx, helper[0], helper[1], made_by):
            yield site, made, True, f" by {helper[0].name}()"


def _join_parts(ctx: Context, recv: AST, call: ast.Call, methods: frozenset[str]) -> list[tuple[ast.Name, AST]]:
    """The names joined in the moved expression (``torch.cat([y, m]).to(dev)``), or in the join
    stored under the moved name just before (``grid = torch.cat([h, w], 1)``, then
    ``if use_cuda: grid = grid.cuda()``), each with the join that uses it."""
    parts = joined_names(ctx, recv, methods)
    if parts or recv.__class__ is not ast.Name or not stored_then_moved(ctx, recv, call):
        return [(p, call) for p in parts]
    b = ctx.binding_at(recv.id, call)
    return [(p, b.value) for p in joined_names(ctx, b.value, methods)]


_WRAPPERS = frozenset({"Variable", "Parameter"})


def _unwrap_attribute(expr: AST) -> AST:
    if expr.__class__ is ast.Call and last_name(expr.func) in _WRAPPERS and expr.args:
        return expr.args[0]
    return expr


def kept_attribute(ctx: Context, recv: AST, use: AST, made_by: Made) -> T | None:
    """``self.pe`` (also through ``nn.Parameter(self.pe, requires_grad=False)``/``Variable``)
    assigned once, in ``__init__``, from a new CPU tensor and moved where it is used: a constant
    table that is not a buffer, copied again on every call."""
    value = ctx.init_self_value(_unwrap_attribute(recv), use)
    return made_by(value) if value is not None else None


def host_round_trip(ctx: Context, array: AST, use: AST, depth: int = 2) -> bool:
    """``array`` comes from a device tensor pulled to NumPy right here (``np.flip(out.cpu().numpy(), 3)``,
    ``flip_back(model(x).cpu().numpy(), pairs)``, through names bound in this function): converting it
    back and moving it makes the tensor cross the bus twice for work torch does on the device."""
    for node in ast.walk(array):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "numpy" \
                and _through_cpu(ctx, node.func.value, use):
            return True
        if node.__class__ is ast.Name and depth > 0:
            b = ctx.binding_at(node.id, use)
            if b is not None and b.kind == "assign" and b.value is not None and ctx.scope_of(b.node) is ctx.scope_of(use) \
                    and host_round_trip(ctx, b.value, b.node, depth - 1):
                return True
    return False


def _through_cpu(ctx: Context, expr: AST, use: AST) -> bool:
    """``out.cpu()`` (through ``.detach()``/``.data``) of a tensor computed on the device (a model's
    output), or of a batch that the same function also feeds to the model (``model(x)``, then
    ``np.flip(x.cpu().numpy(), 3)``: its flip crosses a second time). Data that only crosses in
    its converted form (``ndimage.zoom`` of an image at each scale) is left alone."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute:
        if expr.func.attr == "cpu":
            inner = expr.func.value
            return is_device_tensor(ctx, inner, use) or (inner.__class__ is ast.Name and _fed_to_model(ctx, inner, use))
        expr = expr.func.value
    return False


def _fed_to_model(ctx: Context, name: ast.Name, use: AST) -> bool:
    func = ctx.function_of(use)
    if func is None or func.__class__ is ast.Lambda:
        return False
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Call and any(a.__class__ is ast.Name and a.id == name.id for a in node.args) \
                and is_device_tensor(ctx, node, node):
            return True
    return False


def copied_by_new_tensor(ctx: Context, made: Callable[[AST], T | None]) -> Iterator[tuple[ast.Call, AST, T]]:
    """``frame = torch.arange(n).unfold(...); frame = signal.new_tensor(frame)``: a tensor built
    on the host (``made`` says so of the bound value) copied to another tensor's device with
    ``x.new_tensor(name)``. Yields the ``new_tensor`` call, its receiver and what ``made`` found."""
    if "new_tensor(" not in ctx.source:
        return
    for call in ctx.calls_named("new_tensor"):
        if call.func.__class__ is not ast.Attribute or len(call.args) != 1 or call.args[0].__class__ is not ast.Name:
            continue
        b = ctx.binding_at(call.args[0].id, call)
        if b is None or b.kind != "assign" or b.value is None:
            continue
        found = made(b.value)
        if found is not None:
            yield call, call.func.value, found


"""Device values of a training step that :func:`~torchwise.lint.semantics.devices.is_device_tensor`
does not follow (TW207): the losses a step collects in a dict or a list and hands to a helper
(``loss_reduced = reduce_loss_dict(loss_dict)``; ``loss_reduced["d"].mean().item()``), their sum
(``sum(loss_dict.values())``, ``sum(pred_losses)``), a dict comprehension over them
(``{k: v * w[k] for k, v in losses.items()}``), a tensor made like a device tensor
(``target.new_tensor([n])``), and the terms of the backward pass through weights and
conditional expressions (``loss_cur = self.lamda_rcl * reconL + self.lamda_vl * variatL``;
``loss_total = loss_replay if x is None else loss_cur``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Binding, Context, last_name
from torchwise.lint.semantics.devices import is_cpu_device, is_device_expr, is_device_tensor
from torchwise.lint.semantics.forwardpath import project_module_method
from torchwise.lint.semantics.handedvalues import param_from_callers, returned_tensor, self_device_attr
from torchwise.lint.semantics.hostinputs import from_host_inputs
from torchwise.lint.semantics.hostnumbers import host_number
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.projectcode import project_modules
from torchwise.lint.semantics.returnkinds import returned_kind
from torchwise.lint.semantics.steps import backwarded_names, summed_loss_terms
from torchwise.lint.semantics.unpackednames import unpacked_value
from torchwise.lint.semantics.values import local_function

# methods whose result stays on the receiver's device (a reduction, a view, a new tensor like it)
_KEEPING = frozenset({"mean", "sum", "detach", "float", "double", "half", "clone", "view", "reshape", "squeeze",
                      "unsqueeze", "abs", "max", "min", "norm", "flatten", "contiguous", "long", "int", "clamp",
                      "new_tensor", "new_zeros", "new_ones", "new_full", "new_empty", "values", "items",
                      "exp", "exp_", "mul", "mul_", "sqrt", "pow",  # z_lsgms.mul(0.5).exp_(): tensor arithmetic
                      "log_prob", "entropy"})  # of a distribution a model returned: dist = self.actor(obs)
# libraries whose functions named like a reduction are not collectives over tensors
_NOT_COLLECTIVES = ("functools.", "operator.", "numpy.", "builtins.", "math.", "statistics.")


def step_subject(ctx: Context, subject: AST | None, node: AST) -> bool:
    """Is the value read at ``node`` a device tensor of the step: a device tensor, a term summed
    into the backward pass (``loss = loss + regularization``; ``regularization.item()``), or one
    seen through the step's loss dicts, lists, sums and weighted terms?"""
    if from_host_inputs(ctx, subject, node):
        return False  # loss, eer = model.loss(embeds.to(cpu_device)): computed on the CPU by design
    if is_device_tensor(ctx, subject, node):
        return True
    if subject.__class__ is ast.Name and subject.id in summed_loss_terms(ctx, ctx.scope_of(node)):
        return True
    return step_device_value(ctx, subject, node) or _gradient(ctx, subject)


def _gradient(ctx: Context, expr: AST | None) -> bool:
    """``torch.norm(named_params[i][1].grad)``, ``p.grad.data.norm()``: a parameter's gradient (or
    a reduction of one), which lives where the parameter does - read every step in the loop."""
    while expr is not None:
        if expr.__class__ is ast.Attribute:
            if expr.attr == "grad":
                return True
            expr = expr.value if expr.attr == "data" else None
        elif expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _KEEPING:
            q = ctx.qualname(expr.func)
            expr = expr.func.value if q is None else (expr.args[0] if q.startswith("torch.") and expr.args else None)
        else:
            return False
    return False


def step_device_value(ctx: Context, expr: AST | None, use: AST, depth: int = 6) -> bool:
    """Does ``expr`` hold a device tensor of the step, seen through containers and helpers?
    ``depth`` bounds the bindings followed back from names."""
    if expr is None or depth <= 0:
        return False
    return is_device_tensor(ctx, expr, use) or _beyond(ctx, expr, use, depth)


def _beyond(ctx: Context, expr: AST, use: AST, depth: int) -> bool:
    """What :func:`is_device_tensor` (already asked of ``expr``, and so of the parts of a
    subscript, an arithmetic or a comparison) does not follow."""
    cls = expr.__class__
    if cls is ast.Call:
        return _call_value(ctx, expr, use, depth)
    if cls is ast.Subscript:
        if expr.value.__class__ is ast.Name and f"{expr.value.id}[]" in step_loss_terms(ctx, ctx.scope_of(use)):
            return True  # update_loss = losses[0] beside loss = w * losses[0] + ...: an element the backward pass sums
        return _beyond(ctx, expr.value, use, depth) and not host_number(ctx, expr, use)
    if cls is ast.Attribute and expr.attr == "data":  # acc.data: the same tensor
        return _beyond(ctx, expr.value, use, depth)
    if cls is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        return self_device_attr(ctx, expr, use)  # self.alpha = self.log_alpha.exp().detach()
    if cls is ast.BinOp:
        return _beyond(ctx, expr.left, use, depth) or _beyond(ctx, expr.right, use, depth)
    if cls is ast.Compare:  # (y == pred).sum()
        return any(_beyond(ctx, side, use, depth) for side in (expr.left, *expr.comparators))
    if cls is ast.DictComp:  # (the element sees the comprehension's own names)
        return step_device_value(ctx, expr.value, expr.value, depth)
    if cls in (ast.ListComp, ast.GeneratorExp):
        return step_device_value(ctx, expr.elt, expr.elt, depth)
    if cls is ast.Name:
        return _name_value(ctx, expr, use, depth)
    return False


def _call_value(ctx: Context, call: ast.Call, use: AST, depth: int) -> bool:
    func = call.func
    q = ctx.qualname(func)
    if func.__class__ is ast.Attribute and func.attr in ("to", "cuda") and q is None and call.args \
            and call.args[0].__class__ is ast.Call and _names_device(call.args[0].func):
        return True  # y.to(self._device()), x.to(get_device(t)): a device a helper of the project names
    if func.__class__ is ast.Name and func.id == "self" and _in_module_class(ctx, call):
        return True  # self(x) in a model's own method: its forward pass
    if func.__class__ is ast.Attribute and func.attr == "to" and q is None and call.args and all(
            (ctx.qualname(a) or "").startswith("torch.") and ctx.qualname(a) in _DTYPES for a in call.args):
        return step_device_value(ctx, func.value, use, depth)  # acc.to(torch.float32): a dtype change
    if func.__class__ is ast.Attribute and func.attr in _KEEPING and (q is None or q.startswith("torch.")):
        target = func.value if q is None else (call.args[0] if call.args else None)
        return step_device_value(ctx, target, use, depth)
    if q in _PACKING and call.args:  # pad_packed_sequence(pack_padded_sequence(z, lens))[0]: the same tensors, packed or padded
        return step_device_value(ctx, call.args[0], use, depth)
    if q in ("torch.cat", "torch.stack", "torch.concat") and call.args and call.args[0].__class__ in (ast.Tuple, ast.List):
        return any(step_device_value(ctx, e, use, depth) for e in call.args[0].elts)  # torch.cat((lbox, lobj, lcls))
    if func.__class__ is ast.Name and func.id == "sum" and call.args and q in (None, "builtins.sum", "sum"):
        return step_device_value(ctx, call.args[0], use, depth)  # sum(losses), sum(d.values())
    name = (last_name(func) or "").lower()
    if ("reduce" in name or "gather" in name) and not (q or "").startswith(_NOT_COLLECTIVES) and call.args:
        return step_device_value(ctx, call.args[0], use, depth) or _placed_by_helper(ctx, call)  # reduce_loss_dict(loss_dict);
        # ddp_reduce(batch.ntokens, self.device, torch.long): a count made a tensor on the device to be summed
    if (kind := returned_kind(ctx, call, None, step_device_value, depth)) is not None:
        return kind  # calc_accuracy(out, y): a tensor the helper computes from the step's, or a number it reads
    if _project_callable(ctx, func, q) and any(step_device_value(ctx, a, use, depth - 1) for a in call.args[:3]):
        return True  # util.masked_mape(predict, real), model.discriminator(emb, summary): computed from the step's tensors
    return False


_PACKING = frozenset(f"torch.nn.utils.rnn.{f}" for f in ("pack_padded_sequence", "pad_packed_sequence", "pack_sequence", "pad_sequence"))
# calls that hand back no tensor computed from their arguments: builtins, and the methods of
# containers, strings, loggers and meters
_HOST_CALLS = frozenset({
    "len", "str", "repr", "format", "isinstance", "type", "id", "hash", "print", "list", "dict", "tuple", "set",
    "sorted", "enumerate", "zip", "range", "round", "getattr", "hasattr", "append", "extend", "update", "join",
    "get", "pop", "add", "insert", "write", "log", "info", "debug", "warning", "error", "keys", "values", "items",
    "copy", "deepcopy", "size", "dim", "numel", "item", "tolist", "cpu", "numpy", "asarray", "array", "to",
})


def _project_callable(ctx: Context, func: AST, q: str | None) -> bool:
    """A function or method of the project (not of a library, not a builtin or a container's or
    logger's method): what it computes from device tensors it is handed stays on the device."""
    if q is not None and q.split(".", 1)[0] not in project_modules(ctx.project):
        return False
    name = last_name(func)
    return name is not None and name not in _HOST_CALLS and not name.startswith(("_", "log", "print", "save")) \
        and not any(w in name.lower() for w in _TO_HOST)


# helpers named for taking a value to the host (to_cpu(loss), to_numpy(x), at.scalar(v)): what they return is not on the device
_TO_HOST = ("cpu", "numpy", "np", "host", "scalar", "float", "item", "list", "array")


def _name_value(ctx: Context, expr: ast.Name, use: AST, depth: int) -> bool:
    if expr.id in step_loss_terms(ctx, ctx.scope_of(use)):
        return True  # summed into the backward pass of this function
    b = ctx.binding_at(expr.id, use)
    if b is None:
        return False
    if _all_reduced(ctx, expr, use):
        return True  # dist.all_reduce(acc1, op=dist.ReduceOp.SUM): a tensor the collective sums on the GPU
    if b.kind == "param":  # def _q_loss(self, obs, ..., alpha): handed the step's alpha by every call
        return param_from_callers(ctx, expr, use, step_device_value, depth)
    if b.kind in ("assign", "walrus") and b.value is not None:
        if _container(b.value) and _collects_device_values(ctx, expr.id, b.node, depth):
            return True  # loss_dict = {} ... loss_dict["d"] = d_loss; predL_r = [None] * n ... predL_r[i] = loss
        return step_device_value(ctx, b.value, b.node, depth - 1)
    if b.kind == "aug" and b.node.target.__class__ is ast.Name:  # lbox *= 0.05: what lbox held before, or what is added
        return step_device_value(ctx, b.node.target, b.node, depth - 1) or step_device_value(ctx, b.value, b.node, depth - 1)
    if b.kind == "for" and b.value is not None:  # for k, v in loss_dict.items(): the loop takes the container's values
        return step_device_value(ctx, b.value, b.value, depth - 1)
    if b.kind == "unpack" and b.value is not None:
        value = unpacked_value(ctx, b)  # (output, z, q = model_output: semantics.unpackednames)
        if value.__class__ in (ast.Tuple, ast.List) and 0 <= b.index < len(value.elts):
            return step_device_value(ctx, value.elts[b.index], b.node, depth - 1)  # x, y = x.to(d()), y.to(d())
        if value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr in _SPLITS:
            q = ctx.qualname(value.func)  # _, pred = y_hat.max(1); w, pred = torch.max(probs, 1)
            target = value.func.value if q is None else (value.args[0] if q.startswith("torch.") and value.args else None)
            return step_device_value(ctx, target, b.node, depth - 1)
        if value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "self":
            return _in_module_class(ctx, value)  # recon, y_hat, mu = self(x): the model's outputs
        if value.__class__ is ast.Call and value is b.value and _beside_loss(ctx, b, use):
            return True  # loss, acc = segmentation_module(batch): made by the forward that made the loss
        if value.__class__ is ast.Call and (kind := returned_kind(ctx, value, b.index, step_device_value, depth)) is not None:
            return kind  # top1, top5 = calc_topk_accuracy(out, y, (1, 5)): what the helper's returns are (semantics.returnkinds)
        if value.__class__ is ast.Call and _project_callable(ctx, value.func, ctx.qualname(value.func)) \
                and not any(w in (last_name(value.func) or "").lower() for w in _STATISTICS_MAKERS) \
                and any(step_device_value(ctx, a, b.node, depth - 1) for a in value.args[:3]):
            return True  # inter, union, target = intersectionAndUnionGPU(output, target, n): tensors made from the step's
        if value.__class__ is ast.Call and returned_tensor(ctx, value, b.index, step_device_value, depth):
            return True  # alpha, alpha_loss = self._alpha_and_alpha_loss(obs, log_pi): a tensor it returns
        if value.__class__ is ast.Call and _placed_by_helper(ctx, value):
            return True  # obs, action, reward = utils.to_torch(batch, self.device)
    return False


def _placed_by_helper(ctx: Context, call: ast.Call) -> bool:
    """A function of the project handed the device (``utils.to_torch(batch, self.device)``,
    ``prepare(batch, device=device)``): the tensors it hands back are made there."""
    func = call.func
    name = (last_name(func) or "").lower()
    return _project_callable(ctx, func, ctx.qualname(func)) and not any(w in name for w in _STATISTICS_MAKERS) \
        and any(is_device_expr(ctx, a, call) and not is_cpu_device(ctx, a, call) for a in [*call.args, *(k.value for k in call.keywords)])


_COLLECTIVES = frozenset({"torch.distributed.all_reduce", "torch.distributed.reduce", "torch.distributed.broadcast"})


def _all_reduced(ctx: Context, name: ast.Name, use: AST) -> bool:
    """The function hands ``name`` to a collective (``dist.all_reduce(acc1, op=dist.ReduceOp.SUM)``,
    a helper of the project that reduces across processes, ``acc = dist_utils.reduce_tensor(acc,
    args)``): in a training loop on the GPU, a device tensor."""
    if "reduce" not in ctx.source and "broadcast" not in ctx.source:
        return False
    reduced = ctx._cache.get("sem:all-reduced")
    if reduced is None:  # (scope id, name) of every first argument of a collective, once per file
        reduced = ctx._cache["sem:all-reduced"] = set()
        for c in ctx.calls_named("all_reduce", "reduce", "broadcast", *(n for n in ctx.calls_by_name if "reduce" in n.lower())):
            if not c.args or c.args[0].__class__ is not ast.Name:
                continue
            q = ctx.qualname(c.func)
            callee = (last_name(c.func) or "").lower()
            if q in _COLLECTIVES or (q is None or not q.startswith(_NOT_COLLECTIVES)) and "reduce" in callee and "tensor" in callee:
                reduced.add((id(ctx.scope_of(c)), c.args[0].id))
    return bool(reduced) and (id(ctx.scope_of(use)), name.id) in reduced


def _beside_loss(ctx: Context, b: Binding, use: AST) -> bool:
    """Is another name the same call of a module object unpacks into (``loss, acc = module(batch)``)
    summed into this scope's backward pass? The call is the step's forward, and its other outputs
    are its tensors. Not a function's results: ``loss, items = compute_loss(...)`` may hand its
    statistics back on the host."""
    node = b.node
    if node.__class__ is not ast.Assign or len(node.targets) != 1 or node.targets[0].__class__ is not ast.Tuple:
        return False
    if ctx.qualname(node.value.func) is not None or local_function(ctx, node.value) is not None \
            or any(w in (last_name(node.value.func) or "").lower() for w in _STATISTICS_MAKERS):
        return False  # a function (compute_loss may hand its statistics back on the host), not a module's forward
    terms = step_loss_terms(ctx, ctx.scope_of(use))
    return any(e.__class__ is ast.Name and e.id != b.name and e.id in terms for e in node.targets[0].elts)


# callees that may hand statistics back as numbers beside the loss (self.loss_function(...))
_STATISTICS_MAKERS = ("loss", "crit", "compute", "calc", "get", "metric", "stat", "eval")
_DTYPES = frozenset(f"torch.{t}" for t in (
    "float", "float32", "float64", "float16", "bfloat16", "half", "double", "int", "int32", "int64", "long", "bool", "uint8"))


# methods that return a tuple of tensors on the receiver's device
_SPLITS = frozenset({"max", "min", "topk", "sort", "kthvalue", "median", "mode", "chunk", "split", "unbind"})


def _in_module_class(ctx: Context, node: AST) -> bool:
    klass = ctx.class_of(node)
    return klass is not None and (any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))
                                  or project_module_method(ctx, ctx.function_of(node)))


def _names_device(func: AST) -> bool:
    """``self._device()``, ``get_device(x)``, ``dist_util.dev()``: a helper that returns the device."""
    name = (last_name(func) or "").lower()
    return "device" in name or name == "dev"


def round_trip(ctx: Context, read: ast.Call) -> bool:
    """``to_one_hot(y.cpu(), n).to(y.device)``: the value read with ``.cpu()`` comes back to its own
    device in the same expression - the code expects it on an accelerator."""
    subject = read.func.value if read.__class__ is ast.Call and read.func.__class__ is ast.Attribute else None
    if subject is None or read.func.attr != "cpu":
        return False
    text = ast.dump(subject)
    node = read
    for _ in range(4):
        node = ctx.parent(node)
        if node is None or isinstance(node, ast.stmt):
            return False
        if node.__class__ is ast.Call and node.func.__class__ is ast.Attribute and node.func.attr == "to" and node.args:
            dev = node.args[0]
            return dev.__class__ is ast.Attribute and dev.attr == "device" and ast.dump(dev.value) == text
    return False


def _collects_device_values(ctx: Context, name: str, bound: AST, depth: int) -> bool:
    """Does the scope store device values into ``name`` (``name[k] = v``, ``name.append(v)``)?"""
    key = ("sem:collects-device", id(bound), name)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = False  # (a value stored from the container itself)
        for node, value in _stores(ctx, ctx.scope_of(bound)).get(name, ()):
            if is_loss_value(ctx, value, node) or step_device_value(ctx, value, node, depth - 1):
                found = ctx._cache[key] = True
                break
    return found


def _stores(ctx: Context, scope: AST) -> dict[str, list[tuple[AST, AST]]]:
    """Container name -> ``(statement, value)`` of what the scope stores into it by subscript or
    ``append`` (one walk per scope)."""
    key = ("sem:container-stores", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = {}
        for node in ctx.nodes.get(ast.Assign, ()):
            names = [n for t in node.targets for n in _stored_names(t)]
            if names and ctx.scope_of(node) is scope:
                for name in names:
                    found.setdefault(name, []).append((node, node.value))
        for node in ctx.calls_named("append"):
            if node.func.__class__ is ast.Attribute and node.func.value.__class__ is ast.Name and len(node.args) == 1 \
                    and ctx.scope_of(node) is scope:
                found.setdefault(node.func.value.id, []).append((node, node.args[0]))
    return found


def _container(value: AST) -> bool:
    """``{}``, ``[]``, ``{"d": 0}``, ``[None] * n``: a dict or list the code fills later."""
    cls = value.__class__
    return cls in (ast.Dict, ast.List) or cls is ast.BinOp and value.op.__class__ is ast.Mult and ast.List in (
        value.left.__class__, value.right.__class__)


def _stored_names(target: AST) -> list[str]:
    """``name`` of ``name[k] = ...``, also as parts of a tuple target (``a[i], b[i] = loss_function(...)``)."""
    if target.__class__ in (ast.Tuple, ast.List):
        return [n for t in target.elts for n in _stored_names(t)]
    return [target.value.id] if target.__class__ is ast.Subscript and target.value.__class__ is ast.Name else []


def step_loss_terms(ctx: Context, scope: AST) -> frozenset[str]:
    """Names summed into a backward pass of ``scope``, through assignments, weights by a
    coefficient (``self.lamda * reconL``, ``args.w * loss_x``, ``0.5 * loss``) and both arms of a
    conditional expression (``loss_replay if x is None else loss_cur``)."""
    key = ("sem:step-terms", id(scope))
    found = ctx._cache.get(key)
    if found is None:
        names = set(backwarded_names(ctx, scope))
        todo = list(names)
        bindings = ctx.bindings(scope) if names else {}
        while todo:
            for b in bindings.get(todo.pop(), ()):
                if b.value is not None and (b.kind == "assign" or b.kind == "aug" and b.node.op.__class__ in (ast.Add, ast.Sub)):
                    for term in _terms(b.value):
                        if term not in names and term not in ctx.imports:  # (torch.sum(x): no term named torch)
                            names.add(term)
                            todo.append(term)
        found = ctx._cache[key] = frozenset(names)
    return found


_COEFFICIENTS = (ast.Attribute, ast.Constant)
_TERM_VIEWS = frozenset({"clamp", "mean", "sum", "squeeze", "view", "reshape", "float"})


def _terms(expr: AST, depth: int = 8) -> list[str]:
    """The names a loss expression sums: ``a * 0.5 + self.w * b - c`` -> a, b, c."""
    if depth <= 0:
        return []
    cls = expr.__class__
    if cls is ast.Name:
        return [expr.id]
    if cls is ast.UnaryOp and expr.op.__class__ is ast.USub:
        return _terms(expr.operand, depth - 1)
    if cls is ast.IfExp:
        return _terms(expr.body, depth - 1) + _terms(expr.orelse, depth - 1)
    if cls is ast.Subscript and expr.value.__class__ is ast.Name:
        return [f"{expr.value.id}[]"]  # losses[0]: an element of the container (never a name of the scope)
    if cls is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _TERM_VIEWS and expr.func.value.__class__ is ast.Name:
        return [expr.func.value.id]  # consistency_loss.clamp(max=1e4), loss_map.mean(): the same tensor, reduced
    if cls is not ast.BinOp:
        return []
    op = expr.op.__class__
    if op in (ast.Add, ast.Sub):
        return _terms(expr.left, depth - 1) + _terms(expr.right, depth - 1)
    if op in (ast.Mult, ast.Div):
        left, right = expr.left, expr.right
        if op is ast.Mult and _coefficient(left):
            return _terms(right, depth - 1)  # self.lamda * loss, 0.5 * loss, (1 - rnt) * loss_replay
        if _coefficient(right) or op is ast.Div:
            return _terms(left, depth - 1)  # loss * 0.5, loss / accum_steps
    return []


def _coefficient(expr: AST) -> bool:
    """A weight rather than a loss: a number, an attribute (``self.lamda``, ``args.w``), or
    arithmetic with a number (``1 - rnt``, ``1 / n``)."""
    cls = expr.__class__
    if cls in _COEFFICIENTS:
        return True
    if cls is ast.UnaryOp:
        return _coefficient(expr.operand)
    return cls is ast.BinOp and (expr.left.__class__ is ast.Constant or expr.right.__class__ is ast.Constant)

"""TW104's eval-mode paths that no evaluation function shows: the switches to eval mode
(``.eval()``, ``.train(False)``), a frozen pretrained network (a distillation teacher, a
captioning model's image encoder) run with autograd on in every training step, a model run
through a helper of the same file, and parameters switched off by hand (no graph recorded)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name, target_names
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.models import is_module_instance, runs_forward
from torchwise.lint.semantics.steps import backward_calls, is_eval_name, optimizer_steps
from torchwise.lint.semantics.values import local_function

_SWITCHES = frozenset({"no_grad", "enable_grad", "set_grad_enabled", "inference_mode"})
_GRAD_TEXT = ("no_grad", "set_grad_enabled", "inference_mode", "enable_grad", "backward", ".eval()", "requires_grad")


def is_eval_switch(call: ast.Call) -> bool:
    """``model.train(False)`` / ``model.train(mode=False)``: the other spelling of ``model.eval()``."""
    if call.func.__class__ is not ast.Attribute or call.func.attr != "train":
        return False
    args = list(call.args) + [k.value for k in call.keywords if k.arg == "mode"]
    return len(args) == 1 and len(call.args) + len(call.keywords) == 1 and args[0].__class__ is ast.Constant \
        and args[0].value is False


def eval_calls(ctx: Context, nodes: list[ast.AST]) -> list[ast.Call]:
    """``model.eval()`` calls (no arguments) on something that evidently is a module, or an
    instance of an imported class (``netG = Generator(); netG.eval()``), or a name the same function
    also calls (``net_g.eval()`` then ``net_g(data)``: only a module is both), or the variable of a
    loop over modules (``[x.eval() for x in (embedding_net, cls_head)]``)."""
    out = []
    for node in nodes:
        if node.__class__ is ast.Call and (not node.args and not node.keywords or is_eval_switch(node)):
            func = node.func
            if (
                func.__class__ is ast.Attribute and (func.attr == "eval" or is_eval_switch(node))
                and func.value.__class__ in (ast.Name, ast.Attribute)
                and (is_module_instance(ctx, func.value, node) or _class_instance(ctx, func.value, node)
                     or _called_here(ctx, func.value, node) or _looped_modules(ctx, func.value, node))
            ):
                out.append(node)
    return out


def eval_receivers(ctx: Context, evals: list[ast.Call]) -> set[str]:
    """What ``evals`` put in eval mode, as written: the receivers, and the modules a loop variable
    runs over (``embedding_net`` and ``cls_head`` for ``[x.eval() for x in (embedding_net, cls_head)]``)."""
    out = set()
    for call in evals:
        out.add(ctx.text(call.func.value))
        out.update(ctx.text(e) for e in _looped_over(ctx, call.func.value, call))
    return out


def _called_here(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """``net_g`` of ``net_g.eval()`` is also called by the same function: ``net_g(data)``; likewise
    an attribute of ``self`` (``self.generator.eval()``, then ``self.generator(z, y)``)."""
    scope = ctx.function_of(use)
    if scope is None:
        return False
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        return any(c.func.__class__ is ast.Attribute and c.func.value.__class__ is ast.Name and c.func.value.id == "self"
                   and (c.args or c.keywords) and ctx.function_of(c) is scope for c in ctx.calls_named(expr.attr))
    if expr.__class__ is not ast.Name:
        return False
    return any(c.func.__class__ is ast.Name and (c.args or c.keywords) and ctx.function_of(c) is scope
               for c in ctx.calls_named(expr.id))


def _looped_over(ctx: Context, expr: ast.AST, use: ast.AST) -> list[ast.AST]:
    """The names a ``for``/comprehension variable ``expr`` takes, when it runs over a literal tuple
    or list of names (``for m in (encoder, decoder)``)."""
    if expr.__class__ is not ast.Name:
        return []
    for anc in ctx.ancestors(use):
        gens = anc.generators if anc.__class__ in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp) else \
            [anc] if anc.__class__ is ast.For else []
        for gen in gens:
            if gen.target.__class__ is ast.Name and gen.target.id == expr.id:
                items = gen.iter.elts if gen.iter.__class__ in (ast.Tuple, ast.List) else []
                named = [e for e in items if e.__class__ in (ast.Name, ast.Attribute)]
                return named if len(named) == len(items) else []
        if isinstance(anc, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            break
    return []


def _looped_modules(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    items = _looped_over(ctx, expr, use)
    return bool(items) and any(is_module_instance(ctx, e, use) or _class_instance(ctx, e, use) or _called_here(ctx, e, use)
                               for e in items)


def _class_instance(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """Built by calling a class of the project (a CamelCase name imported from elsewhere)."""
    built = ctx.constructed_from(expr, use)
    if built is None or built.startswith("local:") or "." not in built:
        return False
    root, last = built.split(".", 1)[0], built.rsplit(".", 1)[-1]
    return last[:1].isupper() and root not in ("torch", "numpy", "pandas", "sympy", "sklearn", "cv2")


def local_helper_runs(ctx: Context, call: ast.Call, receivers: set[str]) -> ast.Call | None:
    """``get_pred(batch)`` (a nested function that calls ``inception_model``) or
    ``generate_caption(encoder, decoder, path)`` (a function of this file that calls the model it
    is handed) after ``model.eval()``: the helper switches autograd neither off nor on itself and is
    not named for evaluation (then its own forward pass is reported there). Returns the helper's
    call of the model."""
    if call.func.__class__ is not ast.Name:
        return None
    func = local_function(ctx, call)
    if func is None or func.__class__ is not ast.FunctionDef or is_eval_name(func.name) or ctx.contains(func, call):
        return None
    key = ("tw104:local-helper", id(func))
    text = ctx._cache.get(key)
    if text is None:
        text = ctx._cache[key] = "".join(ctx.text(d) for d in func.decorator_list) + ctx.text(func)  # @torch.no_grad() too
    if any(w in text for w in _GRAD_TEXT):
        return None
    params = [a.arg for a in func.args.args]
    handed = {params[i] for i, a in enumerate(call.args[:len(params)]) if ctx.text(a) in receivers}
    closure = {r for r in receivers if "." not in r and r not in params}
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Call and node.func.__class__ is ast.Name and (node.func.id in handed or node.func.id in closure):
            return node
    return None


def params_frozen(ctx: Context, scope: AST, func: AST, use: AST) -> bool:
    """Before ``use`` the scope turns off every parameter of the model it runs
    (``for p in crnn.parameters(): p.requires_grad = False`` or ``crnn.requires_grad_(False)``):
    with inputs that need no gradient, no graph is recorded."""
    owner = ctx.text(func.value if func.__class__ is ast.Attribute and runs_forward(ctx, func, use) else func)
    for node in ctx.walk_body(getattr(scope, "body", [])):
        if node.__class__ not in (ast.For, ast.Call) or (node.lineno, node.col_offset) >= (use.lineno, use.col_offset):
            continue
        if node.__class__ is ast.For and node.iter.__class__ is ast.Call and last_name(node.iter.func) == "parameters" \
                and node.iter.func.__class__ is ast.Attribute and ctx.text(node.iter.func.value) == owner:
            if any(s.__class__ is ast.Assign and s.targets[0].__class__ is ast.Attribute and s.targets[0].attr == "requires_grad"
                   and s.value.__class__ is ast.Constant and s.value.value is False for s in node.body):
                return True
        elif node.__class__ is ast.Call and last_name(node.func) == "requires_grad_" and node.func.__class__ is ast.Attribute \
                and ctx.text(node.func.value) == owner and node.args and node.args[0].__class__ is ast.Constant \
                and node.args[0].value is False:
            return True
    return False


def frozen_forwards(ctx: Context, scope: AST) -> Iterator[tuple[ast.Call, str]]:
    """``(forward, receiver)``: in a training function or script, a network put in eval mode and
    never back in training mode (``teacher.eval()``, ``encoder.eval()``) that no optimizer holds
    (its ``.parameters()`` are named nowhere in the file) and whose ``requires_grad`` is left on,
    run on the batch (inputs no other network computed) in the loop that backpropagates, outside
    no_grad: its output needs no gradient, yet every step records its graph."""
    trains = [c for c in backward_calls(ctx) + optimizer_steps(ctx) if ctx.contains(scope, c) and ctx.scope_of(c) is scope]
    if not trains:
        return
    body = list(ctx.walk_body(scope.body))
    trained = {ctx.text(n.func.value) for n in body if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
               and n.func.attr == "train" and not is_eval_switch(n)}
    if any(_wants_grad(n) or n.__class__ is ast.Call and last_name(n.func) in _SWITCHES for n in body):
        return  # inputs made to need gradients (adversarial examples), or grad mode chosen by hand (train_val())
    evals = [n for n in body if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
             and _moved_base(n.func.value).__class__ in (ast.Name, ast.Attribute) and (
                 n.func.attr == "eval" and not n.args and not n.keywords or is_eval_switch(n))]
    for ev in evals:
        receiver = ctx.text(_moved_base(ev.func.value))  # (`flow_net.cuda().eval()`: flow_net)
        if f"{receiver}.parameters(" in ctx.source or f"{receiver}.named_parameters(" in ctx.source \
                or f"{receiver}.requires_grad_(" in ctx.source:
            continue  # optimized (or frozen by hand) somewhere in the file
        start = (ev.lineno, ev.col_offset)
        if receiver in trained:
            continue  # also put in training mode here (net.train() if is_train else net.eval()): not frozen
        for node in body:
            if node.__class__ is not ast.Call or not node.args or (node.lineno, node.col_offset) <= start or under_no_grad(ctx, node):
                continue
            detached = _detached(ctx, node)  # `net(x).detach()`, `(net(x * 255.) / 255.).detach()`: no gradient wanted
            if ctx.text(node.func) != receiver and not (detached and node.func.__class__ is ast.Attribute and ctx.text(
                    node.func.value) == receiver and node.func.attr not in _NOT_RUNS):
                continue  # (a method of it whose result is cut off at once: `flow_net.batch_estimate(x).detach()`)
            loops = ctx.enclosing_loops(node)
            if loops and any(ctx.contains(loops[0], t) for t in trains) and (detached or _batch_inputs(ctx, body, node, trained)) \
                    and _trains_another(ctx, loops[0], receiver, trained):
                yield node, receiver
                if not detached:
                    break


_MOVES = frozenset({"cuda", "to", "cpu", "float", "half", "double"})
_NOT_RUNS = frozenset({"parameters", "state_dict", "load_state_dict", "named_parameters", "modules", "children", *_MOVES})


def _moved_base(expr: AST) -> AST:
    """``flow_net`` of ``flow_net.cuda()`` / ``flow_net.to(device)``: the network a move returns."""
    while expr.__class__ is ast.Call and expr.func.__class__ is ast.Attribute and expr.func.attr in _MOVES:
        expr = expr.func.value
    return expr


def _detached(ctx: Context, call: ast.Call) -> bool:
    """The result of ``call`` is ``.detach()``ed at once, through arithmetic at most."""
    node, parent = call, ctx.parent(call)
    while parent.__class__ in (ast.BinOp, ast.UnaryOp):
        node, parent = parent, ctx.parent(parent)
    return parent.__class__ is ast.Attribute and parent.attr == "detach" and parent.value is node \
        and ctx.parent(parent).__class__ is ast.Call


def _trains_another(ctx: Context, loop: AST, receiver: str, trained: set[str]) -> bool:
    """The loop also runs the network being trained (``model(data)``, ``decoder(features, caps)``
    after ``decoder.train()``): an eval-mode network that is the only one in the step is being
    fine-tuned with frozen BatchNorm statistics, not frozen."""
    for node in ctx.walk_body(loop.body):
        if node.__class__ is ast.Call and node.args and node.func.__class__ in (ast.Name, ast.Attribute):
            name = ctx.text(node.func)
            built = ctx.constructed_from(node.func, node) or ""
            if name != receiver and not built.endswith("Loss") and (name in trained or is_module_instance(ctx, node.func, node)):
                return True
    return False


def _wants_grad(node: AST) -> bool:
    """``requires_grad=True``, ``x.requires_grad_()``, ``x.requires_grad = True``."""
    if node.__class__ is ast.keyword:
        return node.arg == "requires_grad" and not (node.value.__class__ is ast.Constant and node.value.value is False)
    if node.__class__ is ast.Call:
        return last_name(node.func) == "requires_grad_"
    return node.__class__ is ast.Assign and any(t.__class__ is ast.Attribute and t.attr == "requires_grad" for t in node.targets)


def _batch_inputs(ctx: Context, body: list[AST], call: ast.Call, trained: set[str]) -> bool:
    """The call's inputs come from the data, not from another network's output (a perceptual
    loss on a generator's images needs the gradient through the frozen network)."""
    names = {n.id for a in call.args for n in ast.walk(a) if n.__class__ is ast.Name}
    seen: set[str] = set()
    for _ in range(4):
        fresh = names - seen
        if not fresh:
            return True
        seen |= fresh
        for node in body:
            if node.__class__ is not ast.Assign or (node.lineno, node.col_offset) >= (call.lineno, call.col_offset):
                continue
            targets = {n.id for t in node.targets for n, _ in target_names(t)}
            if not targets & fresh:
                continue
            for inner in ast.walk(node.value):
                if inner.__class__ is ast.Call and (ctx.text(inner.func) in trained or is_module_instance(ctx, inner.func, inner) or (
                        inner.func.__class__ is ast.Attribute and is_module_instance(ctx, inner.func.value, inner, by_name=False))):
                    return False
            names |= {n.id for n in ast.walk(node.value) if n.__class__ is ast.Name}
    return True

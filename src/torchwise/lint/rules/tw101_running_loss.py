"""TW101: a running loss total that adds the loss tensor itself."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, root_name
from torchwise.lint.findings import Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.losses import is_loss_value
from torchwise.lint.semantics.meteradds import folding_call
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.steps import names_feeding_backward, was_backwarded


def _returned_names(ctx: Context, scope: ast.AST) -> set[str]:
    """Names whose value is returned or yielded, also through a few assignments
    (``mean = total / n; return mean``) and containers (``losses["mask"] = total; return losses``)."""
    key = ("tw101:returned", id(scope))
    out = ctx._cache.get(key)
    if out is None:
        out = set()
        body = list(ctx.walk_body(getattr(scope, "body", []) if not isinstance(scope, ast.Lambda) else [scope.body]))
        todo: list[tuple[ast.AST, int]] = []
        for node in body:
            if node.__class__ in (ast.Return, ast.Yield, ast.YieldFrom) and node.value is not None:
                todo.append((node.value, 3))
        stores = [n for n in body if n.__class__ is ast.Assign and n.targets[0].__class__ is ast.Subscript]
        while todo:
            expr, depth = todo.pop()
            for sub in ast.walk(expr):
                if sub.__class__ is not ast.Name or sub.id in out:
                    continue
                out.add(sub.id)
                if depth <= 0:
                    continue
                for b in ctx.bindings(scope).get(sub.id, ()):
                    if b.value is not None and b.kind in ("assign", "aug", "walrus"):
                        todo.append((b.value, depth - 1))
                for st in stores:  # losses[key] = value, then losses is returned
                    if root_name(st.targets[0]) is not None and root_name(st.targets[0]).id == sub.id:
                        todo.append((st.value, depth - 1))
        ctx._cache[key] = out
    return out


def _fresh_each_iteration(ctx: Context, name: str, node: ast.AST) -> bool:
    """Is ``name`` bound afresh (not from itself) earlier in the same pass of the innermost loop?"""
    loops = ctx.enclosing_loops(node)
    if not loops:
        return False
    pos = (node.lineno, node.col_offset)
    for sub in ctx.walk_body(loops[0].body):
        if sub.__class__ is ast.Assign and (sub.lineno, sub.col_offset) < pos and any(
            t.__class__ is ast.Name and t.id == name for t in sub.targets
        ) and not any(n.__class__ is ast.Name and n.id == name for n in ast.walk(sub.value)):
            return True
    return False


def _reset_in_loop(ctx: Context, name: str, node: ast.AST) -> bool:
    """Is ``name`` re-bound to a fresh value (``running_loss = 0``) inside the innermost loop
    around ``node`` (every step or every few: gradient accumulation)? A reset in an outer loop
    (once per epoch) still lets a whole epoch of graphs pile up."""
    for loop in ctx.enclosing_loops(node)[:1]:
        for sub in ctx.walk_body(loop.body):
            if sub.__class__ is ast.Assign and sub is not node and any(
                t.__class__ is ast.Name and t.id == name for t in sub.targets
            ) and not any(n.__class__ is ast.Name and n.id == name for n in ast.walk(sub.value)) \
                    and not _log_interval_reset(ctx, name, sub, loop):
                return True
    return False


def _log_interval_reset(ctx: Context, name: str, reset: ast.AST, loop: ast.AST) -> bool:
    """``if i % args.log_interval == 0: print(total.item() / n); total = 0``: the total restarts
    only when it is logged, every so many steps, in a branch that takes no optimizer step (not
    gradient accumulation's restart at each step): the graphs of all the steps between pile up."""
    branch = next((a for a, _ in ctx.enclosing_ifs(reset) if ctx.contains(loop, a)), None)
    if branch is None or not any(n.__class__ is ast.BinOp and n.op.__class__ is ast.Mod for n in ast.walk(branch.test)):
        return False
    body = list(ctx.walk_body(branch.body))
    if any(n.__class__ is ast.Call and n.func.__class__ is ast.Attribute and n.func.attr == "step" for n in body):
        return False
    return any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Load for n in body)


def _summed_without_grad(ctx: Context, value: ast.AST, node: ast.AST) -> bool:
    """``test_losses.append(test_loss / n)`` where every ``test_loss += ...`` of the function ran
    under no_grad: a total of evaluation losses, with no graph behind it."""
    names = {n.id for n in ast.walk(value) if n.__class__ is ast.Name}
    scope = ctx.scope_of(node)
    sums = [a for a in ctx.nodes.get(ast.AugAssign, ()) if a.target.__class__ is ast.Name and a.target.id in names
            and ctx.scope_of(a) is scope]
    return bool(sums) and all(under_no_grad(ctx, a) for a in sums)


def _loss_part(ctx: Context, value: ast.AST, node: ast.AST) -> bool:
    """``batch_mf_loss`` of ``batch_loss, batch_mf_loss, batch_emb_loss = model.create_bpr_loss(...)``
    where the step backpropagates ``batch_loss``: a named part of the loss, unpacked beside it from
    the same call, carries the same graph."""
    if value.__class__ is not ast.Name or "loss" not in value.id.lower():
        return False
    b = ctx.binding_at(value.id, node)
    if b is None or b.kind != "unpack" or b.node.__class__ is not ast.Assign:
        return False
    siblings = [n for t in b.node.targets for n in ast.walk(t) if n.__class__ is ast.Name and n.id != value.id]
    return any(was_backwarded(ctx, n, node) for n in siblings)


def _model_output_reduction(ctx: Context, target: ast.AST, value: ast.AST, node: ast.AST) -> bool:
    """``total_loss += (rnn_outs[1:] - rnn_outs[:-1]).pow(2).mean()``: a total named for a loss takes
    a reduction (``.mean()``/``.sum()``) of what a network returned in this scope (``scores, rnn_outs
    = self.model(x)``) - a loss term written by hand, with the network's graph behind it."""
    acc = root_name(target)
    if acc is None or "loss" not in acc.id.lower() or value.__class__ is not ast.Call \
            or value.func.__class__ is not ast.Attribute or value.func.attr not in ("mean", "sum") or value.args:
        return False
    for name in {n.id for n in ast.walk(value.func.value) if n.__class__ is ast.Name}:
        b = ctx.binding_at(name, node)
        if b is not None and b.kind in ("assign", "unpack") and b.value is not None and b.value.__class__ is ast.Call \
                and b.value.func.__class__ in (ast.Name, ast.Attribute) and is_module_instance(ctx, b.value.func, b.value):
            return True
    return False


# array libraries whose values carry no torch graph
_OTHER_ARRAYS = ("caffe2", "numpy", "tensorflow", "jax", "mxnet", "paddle", "onnxruntime")


def _torch_file(ctx: Context) -> bool:
    """Does the file import torch (or take names through a star import)?"""
    return ctx.imports_module("torch") or any(a.name == "*" for n in ctx.nodes.get(ast.ImportFrom, ()) for a in n.names)


def _evaluating(ctx: Context, scope: ast.AST, node: ast.AST) -> bool:
    """The scope put a model in eval mode before ``node`` (``self.model.eval()``) and never back in
    training mode: an evaluation pass, whose returned total nobody backpropagates."""
    if ".eval()" not in ctx.source or scope.__class__ is ast.Module:
        return False
    calls = [n for n in ctx.walk_body(scope.body) if n.__class__ is ast.Call and n.func.__class__ is ast.Attribute
             and n.func.attr in ("eval", "train")]
    return any(c.func.attr == "eval" and not c.args and (c.lineno, c.col_offset) < (node.lineno, node.col_offset) for c in calls) \
        and not any(c.func.attr == "train" for c in calls)


class RunningLossTensor(Rule):
    code = "TW101"
    per_call = True
    name = "running-loss-tensor"
    triggers = ("loss", "backward", "criterion")
    fixable = True
    skip_tests = True  # a test sums a few losses as a reference value; nothing runs long enough to leak
    doc = """\
What it flags
  Inside a loop (and not under no_grad), a running total or a list that collects the loss
  tensor itself: `total += loss`, `total = total + loss`, `losses.append(loss)`, where `loss`
  evidently is a loss - `backward()` was called on it, or it comes from a loss function or
  criterion and the total is not itself used for a backward pass or returned (summing losses
  for one backward pass is legitimate; a total returned by a function that put the model in eval
  mode first is an evaluation's, which nobody backpropagates). A named part of the loss unpacked beside the one that
  is backpropagated (`loss, mf_loss, emb_loss = model.bpr_loss(...)`, `loss.backward()`, then
  `mf_loss_sum += mf_loss`) counts as a loss, and so does a reduction of a network's output
  added to a total named for a loss (`total_loss += (rnn_outs[1:] - rnn_outs[:-1]).pow(2).mean()`
  after `scores, rnn_outs = self.model(x)`, outside no_grad). A list that collects a total summed under no_grad
  (`test_losses.append(test_loss / n)` after `with torch.no_grad(): test_loss += ...`) holds no
  graph and is left alone, and so is a loss known only by its name (`L = net.get_loss()`) in a
  file that imports Caffe2, NumPy or another array library but not torch, and runs no backward
  pass (no autograd graph); so is a backpropagated loss summed into a total that restarts every
  step, or at each optimizer step of gradient accumulation. A total that restarts only where it
  is logged (`if i % args.log_interval == 0: print(total.item() / n); total = 0`, no optimizer step
  in that branch) keeps the graphs of every step in between and is flagged.

Why it matters
  A loss tensor carries its autograd graph, and the graph holds on to the activations of the
  step. Adding it to a total links every step's graph into one that never gets freed, so memory
  grows with each iteration until the process runs out of it. A log or an average needs only
  the number.

Example
  for x, y in loader:
      loss = criterion(model(x), y)
      loss.backward()
      optimizer.step()
      running_loss += loss          # TW101

Fix
  Accumulate `loss.detach()` (no host sync, convert once per log interval) or `loss.item()`.
  `torchwise lint --fix` rewrites `+= loss` to `+= loss.detach()` when `loss` is evidently a
  tensor (a torch loss, or `backward()` was called on it).

Lint and the doctor
  Lint finds the shapes it can read in one file: a total or list in a loop that takes the loss
  tensor itself (`+=`, `total = total + loss`, `.append(loss)`), reset per epoch or never.
  The doctor (run time) watches what real steps keep: memory that grows step after step
  because loss tensors and their graphs are held, wherever the code holds them (a logger of
  another module, a metrics object).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for node in ctx.nodes.get(ast.AugAssign, ()):
            if node.op.__class__ is ast.Add:
                yield from self._check(ctx, node, node.target, node.value)
        for node in ctx.nodes.get(ast.Assign, ()):
            if len(node.targets) != 1 or node.targets[0].__class__ is not ast.Name:
                continue
            value = node.value
            if value.__class__ is not ast.BinOp or value.op.__class__ is not ast.Add:
                continue
            acc = node.targets[0].id
            if value.left.__class__ is ast.Name and value.left.id == acc:
                yield from self._check(ctx, node, node.targets[0], value.right)
            elif value.right.__class__ is ast.Name and value.right.id == acc:
                yield from self._check(ctx, node, node.targets[0], value.left)
        for call in ctx.calls_named("append"):
            func = call.func
            if func.__class__ is ast.Attribute and len(call.args) == 1 and not call.keywords:
                yield from self._check(ctx, call, func.value, call.args[0])
        for call in ctx.nodes.get(ast.Call, ()):
            func = call.func  # tl.add(loss) on a running-mean object of the project (semantics/meteradds.py)
            if func.__class__ is ast.Attribute and func.attr != "append" and func.value.__class__ is ast.Name and call.args \
                    and call.args[0].__class__ is ast.Name and ctx.enclosing_loops(call) \
                    and is_loss_value(ctx, call.args[0], call) and (via := folding_call(ctx, call)) is not None:
                yield from self._check(ctx, call, func.value, call.args[0], via)

    def _check(self, ctx: Context, node: ast.AST, target: ast.AST, value: ast.AST, via: str | None = None) -> Iterator[Finding]:
        if not ctx.enclosing_loops(node):
            return
        if not (is_loss_value(ctx, value, node) or _loss_part(ctx, value, node) or _model_output_reduction(ctx, target, value, node)):
            return
        if under_no_grad(ctx, node) or _summed_without_grad(ctx, value, node):
            return
        if not _torch_file(ctx) and "backward(" not in ctx.source and any(ctx.imports_module(m) for m in _OTHER_ARRAYS):
            return  # L = dlrm.get_loss() in a Caffe2/NumPy script: a loss by name, but no torch graph behind it
        acc = root_name(target)
        if acc is None:
            return
        scope = ctx.scope_of(node)
        if _fresh_each_iteration(ctx, acc.id, node):
            return  # loss = a + b: the parts of one step's loss, rebound every iteration, not a running total
        if acc.id in names_feeding_backward(ctx, scope):
            return  # the graphs are kept on purpose: a later backward pass runs through them
        if was_backwarded(ctx, value, node) and _reset_in_loop(ctx, acc.id, node):
            return  # backward freed the buffers and the total restarts every step: nothing piles up
        if acc.id in _returned_names(ctx, scope) and not was_backwarded(ctx, value, node) and not _evaluating(ctx, scope, node):
            return  # handing the losses to the caller, who runs the backward pass (no evaluation's caller does)
        fix = None
        if value.__class__ is ast.Name and is_loss_value(ctx, value, node, heuristic=False):
            fix = Fix(f"accumulate {value.id}.detach()", (ctx.replace(value, f"{value.id}.detach()"),))
        shown = ctx.text(value) if value.__class__ is ast.Name else "the loss"
        what = f"the loss tensor {shown}" if value.__class__ is ast.Name else "the loss tensor"
        yield ctx.finding(
            self.code,
            node,
            f"{via}() folds {what} itself into a running value, keeping every step's autograd graph alive" if via else
            f"{ctx.text(target)} collects {what} itself, keeping every step's autograd graph alive",
            suggestion=f"accumulate {shown}.detach() or {shown}.item() instead"
            if value.__class__ is ast.Name
            else "accumulate loss.detach() or loss.item() instead",
            fix=fix,
        )


RULE = RunningLossTensor()

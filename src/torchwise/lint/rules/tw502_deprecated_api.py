"""TW502: calls or imports of deprecated PyTorch functions (and functorch)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.semantics.api_symbols import DEPRECATED, symbol_calls, symbol_imports
from torchwise.lint.semantics.deprecated_usages import deprecated_usages
from torchwise.lint.semantics.optionbranch import branch_kinds
from torchwise.lint.semantics.schedulerparams import epoch_like, handed_scheduler
from torchwise.lint.semantics.warmupsteps import handed_on_epochs
from torchwise.lint.semantics.starnames import star_names, star_qualname
from torchwise.lint.semantics.files import in_compat_fallback
from torchwise.lint.engine import Context, canonical
from torchwise.lint.findings import Edit, Finding, Fix
from torchwise.lint.rule import Rule

_LAST_NAMES = frozenset(q.rsplit(".", 1)[1] for q in DEPRECATED)
_INIT_NAMES = frozenset(q.rsplit(".", 1)[1] for q in DEPRECATED if q.startswith("torch.nn.init."))


class DeprecatedApi(Rule):
    code = "TW502"
    name = "deprecated-api"
    triggers = ("torch", "functorch", "import *")  # star imports may hand on torch (semantics.starnames)
    fixable = True
    doc = """\
What it flags
  A call of, or `from ... import` of, a deprecated function: the old linear-algebra functions
  (`torch.qr`, `torch.svd`, `torch.cholesky`, `torch.lu`, `torch.norm`, `torch.chain_matmul`,
  `torch.ger`, and its method form `a.ger(b)`...), `torch.range`, `nn.UpsamplingNearest2d`/`UpsamplingBilinear2d`,
  `torch.testing.assert_allclose`, `torch.cuda.memory_cached`/`max_memory_cached` (renamed
  `memory_reserved`/`max_memory_reserved`), `nn.utils.weight_norm` (and its module's `WeightNorm` class; also
  each call through `import torch.nn.utils.weight_norm as weightNorm`), `nn.utils.clip_grad_norm`
  (`clip_grad_norm_`), `torch.backends.cuda.sdp_kernel`,
  `F.upsample`/`F.upsample_bilinear`/`F.upsample_nearest` (`F.interpolate`; also named without a
  call, as in `self.up = F.upsample`), `nn.NLLLoss2d` (`nn.NLLLoss`), the `nn.init` functions without the
  trailing underscore (`init.xavier_uniform` -> `init.xavier_uniform_`; also on a name `init`
  that a torch file uses but never binds, as when a sibling module did `from torch.nn import init`), the
  `torch.distributed.reduce_op` alias of `ReduceOp`, and the `functorch` transforms that moved
  to `torch.func`; `scheduler.step(epoch)` on a scheduler of `torch.optim.lr_scheduler` (not
  `ReduceLROnPlateau.step(metric)`, not `step(None)`; a scheduler built by an option, one class
  per branch, is told by the option tests around the call: `if args.scheduler == 'cosine':
  scheduler.step(train_step)` is the cosine schedule's; a scheduler handed in as a parameter or
  `self.` attribute named for one, `scheduler.step(checkpoint['scheduler_iter'])` in a
  `load_checkpoint(..., scheduler, ...)` helper, counts where the project builds only torch's
  epoch schedulers - no `ReduceLROnPlateau`, no scheduler library or class of its own - and the
  argument does not read as a metric); in a warm-up scheduler derived from
  torch's `_LRScheduler` that wraps another, `self.after_scheduler.step(epoch - self.total_epoch)`
  (an argument naming an epoch, in the branch of `if type(self.after_scheduler) !=
  ReduceLROnPlateau:` - a plateau scheduler takes its one argument as the metric) and
  `self.after_scheduler.step(metrics, epoch)` (a plateau scheduler given an epoch; not the
  method's own `epoch=None` handed on unchecked), not `self.after_scheduler.step(metrics)`; an
  import of several of them (`from torch.nn.init import normal, constant`) is reported once per
  deprecated name, and each call of a name such an import binds is reported as well
  (`from torch.nn.utils.weight_norm import weight_norm`, then `weight_norm(nn.Linear(a, b))`:
  every call warns; not where the file binds the name again). (`torch.cuda.amp.*` is TW220.) Names a module gets only
  through star imports of the project's own modules are followed (`from ..network import *`
  handing on that module's `import torch.nn.functional as F`: `F.upsample(x, ...)`,
  `torch.optim.lr_scheduler` there too). Not flagged: `F.sigmoid`/`F.tanh`, which warned in
  PyTorch 0.4-1.x but are plain aliases of `torch.sigmoid`/`torch.tanh` again and warn no more.
  Deprecated usages of current functions, which warn when they run: `F.softmax`/`F.log_softmax`/
  `F.softmin` without `dim` (or `dim=None`) and `nn.Softmax()`/`nn.LogSoftmax()`/`nn.Softmin()`
  built without it; the `size_average=`/`reduce=` arguments of a torch loss and
  `reduction='elementwise_mean'`; the `verbose=` argument of torch's LR schedulers
  (`ReduceLROnPlateau(opt, verbose=True)`, `StepLR(..., verbose=...)`: deprecated in PyTorch 2.2,
  it warns when the scheduler is built; not a scheduler class of another library or the
  project's own); the scalar-first overloads `t.add_(alpha, other)`,
  `t.sub_(alpha, other)`, `t.addcmul_(value, a, b)`, `t.addcdiv_(value, a, b)` (also
  `addcmul`/`addcdiv` and `torch.add(x, alpha, y)`), told by their extra positional argument;
  the scales-first overloads of the products that add to a tensor, `d.addmm_(1, -2, x, y.t())`
  and `d.addmm_(beta, x, y)` (also `addbmm`, `baddbmm`, `addmv`, `addr`, `sspaddmm`, in place or
  not) and `torch.addmm(beta, d, alpha, x, y)`, told by one or two extra positional arguments
  led by a number (a project's own `addmm(key, left, right)` method, whose first argument is no
  number, is left alone);
  the same with `t.add(alpha, other)`/`t.sub(alpha, other)` inside an optimizer's loop over
  `group['params']` or `optimizer.param_groups` (`grad = grad.add(group['weight_decay'], p.data)`).
  Not flagged: `add(a, b)` methods of other objects (meters, sets) elsewhere, `dim` passed positionally.
  Also the pre-0.4 argument `async=True` of `.cuda()`/`.to()`/`.copy_()`/`.type()` (now
  `non_blocking=True`): since Python 3.7 `async` is a reserved word, so such a file does not
  even parse; lint reads the rest of the file as if the argument were renamed, and reports each
  one. An `async=` keyword of another callable (a project's own `ReplayWrapper(..., async=True)`)
  is not torch's and is left alone. The `volatile=` argument of torch's `Variable`
  (`Variable(x, volatile=True)`, removed in PyTorch 0.4: it warns and no longer turns autograd off;
  one finding per call) - not a project helper's own `to_var(x, volatile=True)` or another
  library's `Variable`. And `ctx.saved_variables` (`self.saved_variables` in an
  old-style Function) on the first parameter of a function, the deprecated alias of
  `saved_tensors`.

Why it matters
  Deprecated functions warn on every call and are removed in a later release; several of
  them also differ subtly from their replacements (`torch.range` includes its end point,
  `torch.svd` returns V rather than V^H), so moving early, with tests, is cheaper than moving
  when an upgrade breaks the code.

Example
  outer = torch.ger(a, b)                              # TW502

Fix
  Use the replacement named in the finding. `torchwise lint --fix` rewrites the cases where the
  new name is the very same function: `torch.ger` -> `torch.outer`, `a.ger(b)` -> `a.outer(b)`, and
  `from functorch import vmap` -> `from torch.func import vmap` (likewise grad, vjp, jvp,
  jacrev, jacfwd, hessian, functionalize), and `x.cuda(async=True)` -> `x.cuda(non_blocking=True)`
  (every such argument of the file in one edit, so that the file parses again). For the
  deprecated usages: pass `dim=`, `reduction=`, and the scale by keyword
  (`exp_avg.add_(grad, alpha=1 - beta1)`, `v.addcmul_(grad, grad, value=1 - beta2)`); drop
  `volatile=` and run the inference under `with torch.no_grad():`.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        for call, q in symbol_calls(ctx, DEPRECATED):
            new, same = DEPRECATED[q]
            fix = None
            func = call.func
            if same and q.startswith("torch.") and func.__class__ is ast.Attribute and func.value.__class__ is ast.Name \
                    and ctx.imports.get(func.value.id) == "torch":
                edit = ctx.replace_attr(func, new.rsplit(".", 1)[1])
                fix = Fix(f"use {new}", (edit,)) if edit is not None and new.count(".") == 1 else None
            yield ctx.finding(self.code, call, f"{q} is deprecated; use {new}", suggestion=f"use {new}",
                              fix=fix, end_node=call.func)
        yield from self._method_forms(ctx)
        yield from _module_path_aliases(ctx)
        yield from _from_import_calls(ctx)
        yield from _async_arguments(ctx)
        stars = star_names(ctx)
        if "lr_scheduler" in ctx.source or "sched" in ctx.source:
            yield from _scheduler_epochs(ctx, bool(stars))
            for call, attr in handed_on_epochs(ctx):
                yield ctx.finding("TW502", call, f"self.{attr}.step() is given an epoch: the epoch argument of "
                                  "lr_scheduler.step is deprecated (it switches to a closed form that ignores other "
                                  "changes to the rate)", suggestion="step the wrapped scheduler without an epoch",
                                  end_node=call.func)
        if stars:
            yield from self._star_uses(ctx, stars)
        resolve = (lambda node: star_qualname(ctx, node)) if stars else ctx.qualname
        for node, message, suggestion in deprecated_usages(ctx, resolve):
            if not in_compat_fallback(ctx, node):
                yield ctx.finding(self.code, node, message, suggestion=suggestion,
                                  end_node=node.func if node.__class__ is ast.Call else None)
        yield from self._references(ctx)
        yield from self._unbound_init(ctx)
        if "saved_variables" in ctx.source:
            yield from _saved_variables(ctx)
        if "reduce_op" in ctx.source:
            for node in ctx.nodes.get(ast.Attribute, ()):
                if node.attr == "reduce_op" and ctx.qualname(node) == "torch.distributed.reduce_op":
                    yield ctx.finding(self.code, node, "torch.distributed.reduce_op is deprecated; use torch.distributed.ReduceOp",
                                      suggestion="use torch.distributed.ReduceOp")
        for node, alias, q in symbol_imports(ctx, DEPRECATED):
            new = DEPRECATED[q][0]
            fix = _import_fix(ctx, node, alias, q)
            where = alias if len(node.names) > 1 and getattr(alias, "lineno", None) else node  # each name of the line
            yield ctx.finding(self.code, where, f"import of {q}, which is deprecated; use {new}",
                              suggestion=f"use {new}", fix=fix)

    def _references(self, ctx: Context) -> Iterator[Finding]:
        """A deprecated function named without a call: ``self.up = F.upsample``, a dict of
        initialisers, ``map(init.orthogonal, ws)`` - each call through the reference warns as well."""
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.attr not in _LAST_NAMES:
                continue
            parent = ctx.parent(node)
            if parent.__class__ is ast.Call and parent.func is node or parent.__class__ is ast.Attribute:
                continue
            q = ctx.qualname(node)
            if q in DEPRECATED and not in_compat_fallback(ctx, node):
                new = DEPRECATED[q][0]
                yield ctx.finding(self.code, node, f"{q} is deprecated; use {new}", suggestion=f"use {new}")

    def _star_uses(self, ctx: Context, stars: dict[str, str]) -> Iterator[Finding]:
        """``F.upsample(x, ...)`` / ``nn.init.orthogonal`` in a module that gets ``F`` only from ``from ..network import *``
        (a package whose modules hand their torch imports on through star imports)."""
        for node in ctx.nodes.get(ast.Attribute, ()):
            if node.attr not in _LAST_NAMES or ctx.parent(node).__class__ is ast.Attribute:
                continue
            root = node.value
            while root.__class__ is ast.Attribute:
                root = root.value
            if root.__class__ is not ast.Name or root.id not in stars:
                continue
            q = star_qualname(ctx, node)
            if q in DEPRECATED and not in_compat_fallback(ctx, node):
                new = DEPRECATED[q][0]
                parent = ctx.parent(node)
                at = parent if parent.__class__ is ast.Call and parent.func is node else node
                yield ctx.finding(self.code, at, f"{q} is deprecated; use {new}", suggestion=f"use {new}", end_node=node)

    def _unbound_init(self, ctx: Context) -> Iterator[Finding]:
        """``init.xavier_uniform(w)`` in a torch file that never binds ``init`` (no import, assignment,
        parameter or star import): code copied from a module that did ``from torch.nn import init``."""
        if "init." not in ctx.source or not any(q.split(".", 1)[0] == "torch" for q in ctx.imports.values()):
            return
        uses = [call for call in ctx.calls_named(*_INIT_NAMES) if call.func.__class__ is ast.Attribute
                and call.func.value.__class__ is ast.Name and call.func.value.id == "init"]
        if not uses or _binds(ctx, "init"):
            return
        for call in uses:
            q = f"torch.nn.init.{call.func.attr}"
            new = DEPRECATED[q][0]
            yield ctx.finding(self.code, call, f"{q} is deprecated; use {new}", suggestion=f"use {new}",
                              end_node=call.func)

    def _method_forms(self, ctx: Context) -> Iterator[Finding]:
        """``epsilon_out.ger(epsilon_in)``: Tensor.ger, the method of the deprecated torch.ger (a call on an
        imported module's name is the function form, reported above or not torch's)."""
        for call in ctx.calls_named("ger"):
            func = call.func
            if func.__class__ is not ast.Attribute or len(call.args) != 1 or call.keywords:
                continue
            if func.value.__class__ is ast.Name and func.value.id in ctx.imports:
                continue
            edit = ctx.replace_attr(func, "outer")
            fix = Fix("use Tensor.outer", (edit,)) if edit is not None else None
            yield ctx.finding(self.code, call, "Tensor.ger is deprecated; use Tensor.outer",
                              suggestion="use Tensor.outer", fix=fix, end_node=call.func)


def _saved_variables(ctx: Context) -> Iterator[Finding]:
    """``l, = ctx.saved_variables`` in an autograd Function's ``backward``: the deprecated alias of
    ``saved_tensors`` (a DeprecationWarning each call), read on the function's first parameter."""
    for node in ctx.nodes.get(ast.Attribute, ()):
        if node.attr != "saved_variables" or node.value.__class__ is not ast.Name:
            continue
        func = ctx.function_of(node)
        params = [*func.args.posonlyargs, *func.args.args] if func is not None and func.__class__ is not ast.Lambda else []
        if params and params[0].arg == node.value.id:
            yield ctx.finding("TW502", node, f"{node.value.id}.saved_variables is deprecated; use {node.value.id}.saved_tensors",
                              suggestion="use saved_tensors")


def _import_fix(ctx: Context, node: ast.ImportFrom, alias: ast.alias, q: str) -> Fix | None:
    """The rewrite of a one-name import of an exact alias (``from functorch import vmap``), which
    also fixes every call through the name."""
    new, same = DEPRECATED[q]
    if same and len(node.names) == 1 and "#" not in ctx.text(node) and "\\" not in ctx.text(node):
        module, name = new.rsplit(".", 1)
        text = f"from {module} import {name}" + (f" as {alias.asname}" if alias.asname else "")
        if alias.name == name:
            return Fix(f"import {name} from {module}", (ctx.replace(node, text),))
    return None


def _from_import_calls(ctx: Context) -> Iterator[Finding]:
    """``from torch.nn.utils.weight_norm import weight_norm``, then ``weight_norm(layer)``: each call
    through the imported name warns when it runs, like a call through the module (the import line
    is reported too, with the fix). A name the file binds again before the call is not torch's."""
    for node, alias, q in symbol_imports(ctx, DEPRECATED):
        local = alias.asname or alias.name
        new = DEPRECATED[q][0]
        fix = _import_fix(ctx, node, alias, q)  # shared with the import line's finding
        for call in ctx.calls_named(local):
            if call.func.__class__ is ast.Name:
                bound = ctx.binding_at(local, call)
                if bound is not None and bound.node is node:
                    yield ctx.finding("TW502", call, f"{q} is deprecated; use {new}", suggestion=f"use {new}",
                                      fix=fix, end_node=call.func)


def _module_path_aliases(ctx: Context) -> Iterator[Finding]:
    """``import torch.nn.utils.weight_norm as weightNorm``, then ``weightNorm(layer)``: the dotted
    import names the deprecated function (the package attribute shadows its module), and each
    call through the alias is a call of it."""
    for node in ctx.nodes.get(ast.Import, ()):
        for alias in node.names:
            q = canonical(alias.name) if alias.asname and "." in alias.name else None
            if q not in DEPRECATED or in_compat_fallback(ctx, node):
                continue
            new = DEPRECATED[q][0]
            for call in ctx.calls_named(alias.asname):
                if call.func.__class__ is ast.Name and ctx.qualname(call.func) == q:
                    yield ctx.finding("TW502", call, f"{q} (imported as {alias.asname}) is deprecated; use {new}",
                                      suggestion=f"use {new}", end_node=call.func)


# the tensor methods whose async= argument became non_blocking= in PyTorch 0.4
_ASYNC_METHODS = frozenset({"cuda", "to", "copy_", "type"})


def _async_arguments(ctx: Context) -> Iterator[Finding]:
    """``x.cuda(async=True)``: the parser read ``async=`` as ``non_blocking=`` (engine.legacy); the
    text still says ``async``. One fix renames them all. An ``async=`` keyword of another callable
    (the project's own ``ReplayWrapper(..., async=True)``) is no torch argument: not reported, not renamed."""
    if "async" not in ctx.source:
        return
    olds = []
    for node in ctx.nodes.get(ast.keyword, ()):
        if node.arg == "non_blocking":
            start = ctx.offset(node.lineno, node.col_offset)
            call = ctx.parent(node)
            if ctx.source.startswith("async", start) and call.__class__ is ast.Call and \
                    call.func.__class__ is ast.Attribute and call.func.attr in _ASYNC_METHODS:
                olds.append((node, start))
    if not olds:
        return
    fix = Fix("rename async= to non_blocking=", tuple(Edit(start, start + 5, "non_blocking") for _, start in olds))
    for node, _ in olds:
        yield ctx.finding("TW502", node, "the async= argument was renamed non_blocking= in PyTorch 0.4, and async is "
                          "a reserved word since Python 3.7: this file does not parse", suggestion="use non_blocking=True",
                          fix=fix)


def _scheduler_epochs(ctx: Context, stars: bool = False) -> Iterator[Finding]:
    """``scheduler.step(epoch)`` on a scheduler of torch.optim.lr_scheduler (not
    ReduceLROnPlateau, whose argument is the metric): the epoch argument is deprecated, and with
    it the chainable schedulers fall back to a closed form that ignores any earlier changes."""
    for call in ctx.calls_named("step"):
        func = call.func
        epoch = call.args[0] if len(call.args) == 1 and not call.keywords else next(
            (k.value for k in call.keywords if k.arg == "epoch"), None) if not call.args else None
        if epoch is None or func.__class__ is not ast.Attribute or (epoch.__class__ is ast.Constant and epoch.value is None):
            continue
        kinds = branch_kinds(ctx, func.value, call)  # built by an option, used under the same option
        if kinds is None:
            kinds = {ctx.constructed_from(func.value, call) or (_star_built(ctx, func.value, call) if stars else None)}
        if kinds == {None} and handed_scheduler(ctx, func.value, call) and epoch_like(ctx, epoch):
            kinds = {"torch.optim.lr_scheduler.LRScheduler"}  # handed in; the project builds only torch's epoch schedulers
        if kinds and all(k is not None and k.startswith("torch.optim.lr_scheduler.") and not k.endswith("ReduceLROnPlateau")
                         for k in kinds):
            built = min(kinds) if len(kinds) == 1 else "scheduler.LRScheduler"
            yield ctx.finding("TW502", call, f"{built.rsplit('.', 1)[1]}.step(epoch) is deprecated: the epoch argument "
                              "switches to a closed form that ignores other changes to the rate",
                              suggestion="call scheduler.step() once per epoch, after optimizer.step()", end_node=func)


def _star_built(ctx: Context, expr: ast.AST, use: ast.AST) -> str | None:
    """The torch class that built ``self.lr_scheduler`` (or a name) when the file names torch only
    through a star import: ``self.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(...)``."""
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        cls = ctx.class_of(use)
        values = ctx.self_attr_values(cls, expr.attr) if cls is not None else []
    elif expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        values = [b.value] if b is not None and b.kind == "assign" else []
    else:
        values = []
    kinds = {star_qualname(ctx, v.func) if v.__class__ is ast.Call else None for v in values}
    return kinds.pop() if len(kinds) == 1 else None


def _binds(ctx: Context, name: str) -> bool:
    """Whether the file could bind ``name`` anywhere (an import, a star import, an assignment, a
    parameter, a def or class)."""
    for node in ctx.nodes.get(ast.ImportFrom, ()):
        if any(a.name == "*" for a in node.names):
            return True
    for cls in (ast.Import, ast.ImportFrom):
        for node in ctx.nodes.get(cls, ()):
            if any((a.asname or a.name.split(".", 1)[0]) == name for a in node.names):
                return True
    for node in ctx.nodes.get(ast.Name, ()):
        if node.id == name and node.ctx.__class__ is not ast.Load:
            return True
    for cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        if any(node.name == name for node in ctx.nodes.get(cls, ())):
            return True
    for node in ctx.nodes.get(ast.arg, ()):
        if node.arg == name:
            return True
    return False


RULE = DeprecatedApi()

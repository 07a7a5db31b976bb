"""TW201: ``nn.DataParallel`` instead of ``DistributedDataParallel``."""

from __future__ import annotations

import ast
import re
from typing import Iterator

from torchwise.lint.engine import Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.builtwrappers import returned_for_inference
from torchwise.lint.semantics.dpcontainer import container_only
from torchwise.lint.semantics.dpmodes import frozen_inference_only, mode_call, names_of, receiver
from torchwise.lint.semantics.dataparallel import dataparallel_classes, trains_through
from torchwise.lint.semantics.handdp import hand_dp_steps
from torchwise.lint.semantics.values import local_function
from torchwise.lint.semantics.steps import is_eval_name, training_calls


def _wraps_for_caller(ctx: Context, call: ast.Call) -> bool:
    """``def wrap(module): return DataParallel(module, ...)``: the module comes from the caller."""
    parent = ctx.parent(call)
    returned_name = None
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
        returned_name = parent.targets[0].id  # model = DataParallel(model) ... return model
    elif parent.__class__ is not ast.Return:
        return False
    func = ctx.scope_of(call)
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return False
    if _own_step(ctx, func):
        return False  # self.model = self._init_model(model): the class wraps the model it trains itself
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    if first is None or first.__class__ is not ast.Name or first.id not in params:
        return False
    if returned_name is None:
        return True
    return any(
        n.__class__ is ast.Return and n.value is not None and n.value.__class__ is ast.Name and n.value.id == returned_name
        for n in ctx.walk_body(func.body)
    )


def _own_step(ctx: Context, func: ast.AST) -> bool:
    """A method of a class whose result the class stores on itself in another of its methods
    (``self.model = self._init_model(model)`` in a trainer's ``__init__``): a step of the class's own
    set-up, not a helper that offers DataParallel to callers who choose."""
    klass = ctx.parent(func)
    if klass.__class__ is not ast.ClassDef:
        return False
    for c in ctx.calls_named(func.name):
        stmt = ctx.parent(c)
        if c.func.__class__ is ast.Attribute and ctx.text(c.func.value) == "self" and ctx.contains(klass, c) \
                and ctx.function_of(c) is not func and stmt.__class__ is ast.Assign and len(stmt.targets) == 1 \
                and stmt.targets[0].__class__ is ast.Attribute and ctx.text(stmt.targets[0].value) == "self":
            return True
    return False


def _function_only_evaluates(ctx: Context, call: ast.Call) -> bool:
    """The function that wraps a local module puts it in eval mode and never trains (a sampling
    method beside a ``train()`` method of the same class): the wrapper runs inference only."""
    func = ctx.function_of(call)
    names = {n for n in names_of(ctx, call) if "." not in n}
    trainers = {id(ctx.function_of(c)) for c in training_calls(ctx)}
    if func is None or not names or id(func) in trainers:
        return False
    if any(id(local_function(ctx, c)) in trainers for c in ctx.walk_body(func.body) if c.__class__ is ast.Call):
        return False  # it calls the file's training function (train_epoch(model, ...)): the wrapper trains
    modes = [mode_call(c) for c in ctx.calls_named("eval", "train", "requires_grad_")
             if ctx.function_of(c) is func and c.func.__class__ is ast.Attribute and ctx.text(receiver(c.func.value)) in names]
    return "frozen" in modes and "trains" not in modes


def _shadow_copy(ctx: Context, call: ast.Call) -> bool:
    """An EMA or shadow copy: the wrapped module is loaded from another module's ``state_dict()``
    (or made with ``copy.deepcopy``) in a file that never trains: copies like that are evaluated."""
    if training_calls(ctx):
        return False
    first = call.args[0] if call.args else None
    if first is None or first.__class__ is not ast.Name:
        return False
    func = ctx.function_of(call)
    for c in ctx.calls_named("load_state_dict", "deepcopy"):
        if ctx.function_of(c) is not func:
            continue
        if last_name(c.func) == "deepcopy":
            parent = ctx.parent(c)
            if parent.__class__ is ast.Assign and any(t.__class__ is ast.Name and t.id == first.id for t in parent.targets):
                return True
        elif c.func.__class__ is ast.Attribute and ctx.text(c.func.value) == first.id and c.args and \
                last_name(c.args[0]) == "state_dict":
            return True
    return False


def _runs_under_no_grad(ctx: Context, call: ast.Call) -> bool:
    """Every use of the wrapper is a call under ``torch.no_grad()`` - directly (``x_0 =
    ema_sampler(x_T)`` in a ``with torch.no_grad():`` of the training loop) or inside a function
    of the file it is handed to (``evaluate(net_sampler, net_model)``): a diffusion sampler, a
    generator drawn from for figures. No gradient flows through it, so DDP has nothing to offer."""
    parent = ctx.parent(call)
    while parent.__class__ is ast.Attribute and parent.attr in _PLACING and ctx.parent(parent).__class__ is ast.Call:
        parent = ctx.parent(ctx.parent(parent))  # t_net = DataParallel(t_net).cuda()
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    return _name_calls_no_grad(ctx, parent.targets[0].id, ctx.scope_of(call), (parent.end_lineno, parent.end_col_offset), 1)


def _name_calls_no_grad(ctx: Context, name: str, scope: ast.AST, after: tuple[int, int], depth: int) -> bool:
    uses = [n for n in ctx.walk_body(scope.body, into_defs=True) if n.__class__ is ast.Name and n.id == name
            and n.ctx.__class__ is ast.Load and (n.lineno, n.col_offset) > after]  # (closures too: an evaluator's step)
    runs = 0
    for use in uses:
        parent = ctx.parent(use)
        if parent.__class__ is ast.Attribute and parent.attr in _PLACING and ctx.parent(parent).__class__ is ast.Call \
                and ctx.parent(ctx.parent(parent)).__class__ is ast.Expr:
            continue  # model.to(device), model.eval() as statements (not `return model.cuda()`)
        if parent.__class__ is ast.Attribute and (parent.attr == "module" or parent.attr in _HELD and ctx.parent(parent).__class__ is ast.Call):
            continue  # s_net.parameters() for an optimizer, s_net.state_dict() saved: the wrapper does not run there
        if parent.__class__ is not ast.Call:
            return False  # return net, self.net = net...: used otherwise
        if parent.func is use:
            if not under_no_grad(ctx, use):
                return False
            runs += 1
            continue
        if use in parent.args and under_no_grad(ctx, parent):
            runs += 1  # evaluate(model, batch) inside `with torch.no_grad():` - whatever evaluate is
            continue
        callee = local_function(ctx, parent)
        if depth <= 0 or callee is None or use not in parent.args:
            return False
        params = [a.arg for a in [*callee.args.posonlyargs, *callee.args.args]]
        index = parent.args.index(use) + (1 if params[:1] == ["self"] else 0)
        if index >= len(params) or not _name_calls_no_grad(ctx, params[index], callee, (0, 0), depth - 1):
            return False
        runs += 1
    return runs > 0  # (a wrapper only moved, never run, is a template's: the training it prepares is elsewhere)


_PLACING = frozenset({"to", "cuda", "eval", "half", "float"})
# uses of a wrapper that do not run it: its parameters handed to an optimizer (trained through
# another wrapper, a distiller's), its weights saved or loaded
_HELD = frozenset({"parameters", "named_parameters", "state_dict", "load_state_dict", "train"})
_GPU_FLAGS = frozenset({"cuda", "use_cuda", "gpu", "use_gpu", "with_cuda", "on_gpu"})
_CPU_FLAGS = frozenset({"cpu", "use_cpu", "no_cuda", "no_gpu", "disable_cuda"})


def _without_cuda(ctx: Context, call: ast.Call) -> bool:
    """In the branch taken when there is no GPU (``else`` of ``if torch.cuda.is_available():``,
    of ``if cuda:`` / ``if args.use_gpu:``, the body of ``if args.no_cuda:``): there
    DataParallel wraps nothing and DDP would not run either."""
    for if_node, in_body in ctx.enclosing_ifs(call):
        test = if_node.test
        negated = test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not
        inner = test.operand if negated else test
        if inner.__class__ is ast.Call and ctx.qualname(inner.func) == "torch.cuda.is_available" and in_body == negated:
            return True
        flag = last_name(inner) if inner.__class__ in (ast.Name, ast.Attribute) else None
        if flag is not None and (flag.lower() in _GPU_FLAGS and in_body == negated or flag.lower() in _CPU_FLAGS and in_body != negated):
            return True
    return False


_EXITS = frozenset({"exit", "quit", "_exit"})


def _evaluating_branch_that_exits(ctx: Context, call: ast.Call) -> bool:
    """In the body of an ``if`` that ends the program (``if args.testOnly: ...; sys.exit(0)``),
    puts a model in eval mode and trains nothing (no backward, no step, no call of the file's
    training function): an evaluation-only path of a training script."""
    trainers = {id(ctx.function_of(c)) for c in training_calls(ctx)}
    for if_node, in_body in ctx.enclosing_ifs(call):
        if not in_body or not if_node.body:
            continue
        last = if_node.body[-1]
        if not (last.__class__ is ast.Expr and last.value.__class__ is ast.Call and last_name(last.value.func) in _EXITS):
            continue
        calls = [n for n in ctx.walk_body(if_node.body) if n.__class__ is ast.Call]
        if any(last_name(c.func) in ("backward", "step", "train") or id(local_function(ctx, c)) in trainers for c in calls):
            return False
        return any(last_name(c.func) == "eval" and not c.args for c in calls)
    return False


def _evaluation_script(ctx: Context, call: ast.Call) -> bool:
    """A script (``if __name__ == "__main__":``) that trains nothing - no backward, no optimizer
    step, no optimizer built, no ``train(...)``/``fit(...)`` call - and hands the wrapped model to
    an evaluation function (``validate(config, loader, model, ...)``): a ``valid.py`` beside the
    training script."""
    if "__main__" not in ctx.source or training_calls(ctx):
        return False
    parent = ctx.parent(call)
    while parent.__class__ is ast.Attribute and ctx.parent(parent).__class__ is ast.Call:
        parent = ctx.parent(ctx.parent(parent))  # DataParallel(model, ...).cuda()
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    name = parent.targets[0].id
    handed = False
    for c in ctx.nodes.get(ast.Call, ()):
        callee = last_name(c.func) or ""
        low = callee.lower()
        if "optim" in low or (ctx.qualname(c.func) or "").startswith("torch.optim.") or (
                low.startswith(("train", "fit")) and (c.args or c.keywords)):
            return False  # it builds an optimizer or runs a training function
        if is_eval_name(callee) and any(a.__class__ is ast.Name and a.id == name for a in c.args):
            handed = True
    return handed


_LOSS_WORDS = lazy_compile(r"(?:^|_|(?<=[a-z]))(?:loss|losses|criterion|criterions|crit)(?:$|_|(?=[A-Z0-9]))", re.I)


def _loss_beside_model(ctx: Context, call: ast.Call, reported: list[ast.Call]) -> bool:
    """A loss module wrapped too (``criterion = DataParallel(criterion)``, the module built from a
    ``...Loss`` class or named for a loss) in the scope that also wraps the model: one training
    setup, reported once, at the model's wrapper (moving to DDP removes both)."""
    scope = ctx.scope_of(call)
    others = [c for c in reported if c is not call and ctx.scope_of(c) is scope]
    return bool(others) and _wraps_loss(ctx, call) and not all(_wraps_loss(ctx, c) for c in others)


def _wraps_loss(ctx: Context, call: ast.Call) -> bool:
    names = [n.rsplit(".", 1)[-1] for n in names_of(ctx, call)]
    if any("model" in n.lower() or "net" in n.lower() for n in names):
        return False  # model_with_loss = DataParallel(ModelWithLoss(model, loss)): the model itself
    first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "module"), None)
    built = ctx.constructed_from(first, call) if first is not None else None
    if built is not None and built.rsplit(".", 1)[-1].rsplit(":", 1)[-1].endswith(("Loss", "Criterion")):
        return True
    return any(_LOSS_WORDS.search(n) for n in names)


_INFERENCE_METHODS = ("test", "evaluate", "predict", "sample", "inference", "infer")


def _inference_class(ctx: Context, call: ast.Call) -> bool:
    """A method of a class that evaluates (``test()``, ``predict()``) and has no training method,
    in a file that runs no training step: a test-only experiment."""
    klass = ctx.class_of(call)
    if klass is None or training_calls(ctx):
        return False
    methods = [m.name.lower().lstrip("_") for m in klass.body if m.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)]
    if any(m.startswith(("train", "fit")) for m in methods):
        return False
    return any(m.startswith(_INFERENCE_METHODS) for m in methods)


class DataParallelUsed(Rule):
    code = "TW201"
    per_call = True
    name = "data-parallel"
    triggers = ("DataParallel", "data_parallel", "parallel_apply", "device_count")
    doc = """\
What it flags
  Wrapping a model in `torch.nn.DataParallel` (however it was imported: `nn.DataParallel`,
  `from torch.nn.parallel import DataParallel as DP`, `nn` from a project module's `import *`) and calls of the functional
  `torch.nn.parallel.data_parallel` (also imported from its module: `from
  torch.nn.parallel.data_parallel import data_parallel`), and the project's own subclasses of `nn.DataParallel`
  (`class BalancedDataParallel(DataParallel)`, also through a chain of project classes). Only
  where the code around it trains: the file runs a backward pass or an optimizer step, the
  wrapper is made in a function or class named for training (`def
  train(args)`, `class BaseTrainer`) or handed to a call named for it
  (`GAN_training_function(G, D, GD, ...)`, `trainer_dict[cfg.name](run, model, ...)`), its parameters go to an optimizer that is handed to
  such a call (`optimizer = lib.make_optimizer(..., model.parameters())`, then
  `lib.train_with_auto_virtual_batch(optimizer, ...)` or `learn_with_auto_virtual_batch(...)`:
  not an optimizer built only to load its state), or the module-level function or class that makes it
  is called by another file of the project that trains (a model builder in a utils module; also
  through a function of another module that returns what the builder gives, `return
  build_model(...)`, called by a script that builds an optimizer and runs a training function:
  `run_training(model=model, optimizer=optimizer)`, or a trainer object's method given the model and
  more: `Trainer().train(model, loader, opt, ...)`, not `model.train(False)`), or
  the class that makes it is a base of a class of the project that trains, directly or through
  other classes (`class IO` wrapping `self.model`, `class Processor(IO)`, `class
  REC_Processor(Processor)` with the backward pass). A
  prediction script, an inference app or a metric's helper that trains nothing is left alone
  (a file linted on its own, whose callers lint cannot see, is still checked). The functional
  `data_parallel(G, inputs)` under `torch.no_grad()` is a forward pass for sampling: not
  flagged. A function that wraps the module it is handed and returns it (`def wrap(m): return
  DataParallel(m)`) offers DataParallel to its callers and is not flagged - unless it is a method
  whose class stores the result on itself (`self.model = self._init_model(model)` in a trainer's
  `__init__`): the class wraps the model it trains. `isinstance` checks are not flagged, nor a network that
  only runs inference - put in eval mode or with its parameters frozen (also through a move or an
  index: `model.cuda().eval()`, `scores[i].eval()` of `scores = [DataParallel(s) for s in
  scores]`), never back in training
  mode and never given to an optimizer (a metric's feature extractor, a frozen teacher; a
  local name counts only in the function that wraps it: `model.eval()` in another function's
  `predict(model)` is another model), a
  wrapper made in a function that puts it in eval mode (sampling), an EMA copy loaded from the
  live model, an experiment class with no training in its file (a test-only experiment), a
  wrapper only ever called under `torch.no_grad()` - its parameters may go to an optimizer and its
  weights be saved, trained through another wrapper (a distiller's `d_net` beside `s_net =
  DataParallel(s_net).cuda()` that only `validate()` runs) - (here, in a closure such as an evaluator
  factory's step `def _inference(engine, batch)`, besides `.to(device)`/`.eval()`, or in the function of the file it is
  handed to: a diffusion sampler; or handed to any call made under `torch.no_grad()`: a
  trainer's `eval()` method running `evaluate(model, batch)` there; or, for a wrapper a builder method returns and
  its class stores, `self.model = self.load_model()`, at every use of `self.model` in the class: a metric's
  feature extractor run under `torch.inference_mode()`), one made in the branch without a GPU (`else` of
  `if torch.cuda.is_available():`) or in an evaluation-only branch that ends the program
  (`if args.testOnly: ... net.eval() ... sys.exit(0)`, training nothing), or in an evaluation
  script (a `__main__` script with no backward, optimizer or `train(...)` call that hands the
  wrapper to `validate(...)`/`evaluate(...)`): DistributedDataParallel
  only speeds up training. A loss module wrapped beside the model in the same function or
  script (`criterion = DataParallel(SpatialLoss(...))` after `model = DataParallel(model)`) is
  the same training setup: reported once, at the model's wrapper.
  Also DataParallel written by hand: a function of the file or of the project that calls
  `torch.nn.parallel.replicate` and `parallel_apply` (with `scatter`/`gather`), called in a
  function or script that trains (`y_hat = data_parallel_workaround(model, x, m)` when several
  GPUs are visible); reported at the call.

  DataParallel used only as a container for a checkpoint's `module.` keys is left alone: the
  wrapper is loaded (`enc.load_state_dict(torch.load(p))`) and then only unwrapped (`enc =
  next(enc.children()).encoder`, `self.v = enc.module.v`), never called nor handed on.

Why it matters
  DataParallel runs one Python process that drives every GPU from threads: the GIL
  serialises the work, inputs are scattered and outputs gathered through GPU 0 on every
  step, and the model is replicated each step. GPU 0 runs out of memory first and scaling
  stops after a few devices. DistributedDataParallel runs one process per GPU, overlaps the
  gradient all-reduce with the backward pass and is faster even on a single machine.

Example
  model = nn.DataParallel(model)                    # TW201

Fix
  Launch with `torchrun --nproc_per_node=N train.py`, call
  `torch.distributed.init_process_group()` and wrap with
  `DistributedDataParallel(model, device_ids=[local_rank])` (the torchwise Trainer does this).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        reported: list[ast.Call] = []
        for call in self._wrappers(ctx):
            if _wraps_for_caller(ctx, call):
                continue  # a library helper that offers DataParallel to its caller, who chooses
            if not trains_through(ctx, call):
                continue  # nothing around it trains (a prediction script, an inference app): no gradients to gather
            if under_no_grad(ctx, call) and ctx.qualname(call.func) == "torch.nn.parallel.data_parallel":
                continue  # the functional form is the forward pass itself: sampling under no_grad
            if frozen_inference_only(ctx, call) or _function_only_evaluates(ctx, call) or _shadow_copy(ctx, call) or (
                    _inference_class(ctx, call)) or _runs_under_no_grad(ctx, call) or _without_cuda(ctx, call) or (
                    _evaluating_branch_that_exits(ctx, call)) or _evaluation_script(ctx, call) or returned_for_inference(ctx, call) or (
                    container_only(ctx, call)):
                continue  # no gradients to synchronise: DDP has nothing to offer
            reported.append(call)
        for call in reported:
            if not _loss_beside_model(ctx, call, reported):
                yield self._finding(ctx, call, "nn.DataParallel drives all GPUs from one process")
        for call in hand_dp_steps(ctx, _without_cuda):
            yield self._finding(ctx, call, f"{ctx.text(call.func)}() is DataParallel written by hand (replicate/scatter/"
                                "parallel_apply/gather): one process drives all GPUs every step")

    @staticmethod
    def _wrappers(ctx: Context) -> list[ast.Call]:
        """Calls of ``nn.DataParallel``, the functional ``data_parallel`` and the project's own
        subclasses of ``nn.DataParallel`` (``UserScatteredDataParallel(net, device_ids=gpus)``)."""
        calls = list(ctx.calls_to("torch.nn.DataParallel", "torch.nn.parallel.data_parallel"))
        own = dataparallel_classes(ctx.project) if ctx.project.files and "DataParallel" in ctx.source else ()
        if own:
            seen = {id(c) for c in calls}
            for c in ctx.calls_named(*own):
                q = ctx.qualname(c.func)
                if id(c) not in seen and (q is None or not q.startswith("torch.") and q.rsplit(".", 1)[-1] == last_name(c.func)):
                    calls.append(c)
        return calls

    def _finding(self, ctx: Context, call: ast.Call, what: str) -> Finding:
        return ctx.finding(self.code, call, f"{what}; DistributedDataParallel is faster and scales",
                           suggestion="use DistributedDataParallel with one process per GPU (torchrun)", end_node=call.func)


RULE = DataParallelUsed()

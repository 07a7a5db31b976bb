"""DataParallel and the code that trains through it (TW201).

- :func:`dataparallel_classes`: the project's own subclasses of ``nn.DataParallel``, through
  chains of project classes (``class DictGatherDataParallel(nn.DataParallel)``, ``class
  UserScatteredDataParallel(DictGatherDataParallel)``): wrapping a model in one of them is
  DataParallel. Worked out from the text of the project's files once per process.
- :func:`trains_through`: whether the code around a wrapper trains at all. DataParallel's cost is
  a training cost (gradients gathered on one device, one process driving every GPU); code that
  runs a network only for inference - a prediction script, an inference app, a metric's
  feature extractor, a checkpoint converter that builds an optimizer only to load its state -
  has no gradients to synchronise. The evidence is positive: the file runs a backward pass or an
  optimizer step; the wrapper is made in a method of an ``nn.Module`` (the model's own forward
  path, run by whatever trains it) or in a function or class named for training (``def
  train(args)``, ``class BaseTrainer``); it is handed to a call named for training
  (``GAN_training_function(G, D, GD, ...)``, ``Trainer(model, ...)``, a trainer looked up in a
  registry, ``trainer_dict[cfg.TRAINER](name, model, loader)``); its parameters go to an
  optimizer that is handed to such a call (``lib.train_with_auto_virtual_batch(optimizer, ...)``,
  ``learn_with_auto_virtual_batch(model, optimizer, ...)``); or the module-level
  function or class that makes it is called by another file of the project that trains (a model
  builder of a utils module), or the class that makes it is a base of a class of the project that
  trains (a processor's ``IO`` base wrapping ``self.model`` for its recognition subclass). A file linted on its own cannot show its callers: there the
  wrapper counts as training.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.projectclasses import is_module_class_def
from torchwise.lint.semantics.steps import training_calls

_DP_BASE = lazy_compile(r"^(?:torch\.)?(?:nn\.)?(?:parallel\.)?(?:data_parallel\.)?DataParallel$")
_CLASS = lazy_compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)[ \t]*:", re.M)
_TRAIN_WORDS = ("train", "fit", "finetune", "fine_tune")
_TRAINS = lazy_compile(r"\.backward\(|\boptim(?:izer)?\.step\(|\.fit\(")


def dataparallel_classes(facts: ProjectFacts) -> frozenset[str]:
    """Names of the classes the project defines as subclasses of ``nn.DataParallel`` (directly or
    through other classes of the project)."""
    found = facts.answers.get("dataparallel:classes")
    if found is not None:
        return found
    bases: dict[str, list[str]] = {}
    for _, text in facts.files:
        if "DataParallel" not in text:
            continue
        for m in _CLASS.finditer(text):
            bases.setdefault(m.group(1), []).extend(b.strip() for b in m.group(2).split(",") if b.strip())
    names: set[str] = set()
    for _ in range(4):  # through chains of project classes
        grown = {n for n, bs in bases.items() if n not in names and any(
            _DP_BASE.match(b) or b.rsplit(".", 1)[-1] in names for b in bs)}
        if not grown:
            break
        names |= grown
    found = frozenset(n for n in names if n != "DataParallel")
    facts.answers["dataparallel:classes"] = found
    return found


def _training_name(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _TRAIN_WORDS)


def _stepping_name(name: str) -> bool:
    """A call that steps an optimizer it is handed: named for training or learning
    (``train_with_auto_virtual_batch``, ``learn_with_auto_virtual_batch``)."""
    return _training_name(name) or name.lower().lstrip("_").startswith("learn")


def _stored_name(ctx: Context, call: ast.Call) -> str | None:
    """What the wrapper is stored under (``model``, ``self.net``), through chained calls
    (``DataParallel(net).cuda()``)."""
    node: AST = call
    while ctx.parent(node).__class__ is ast.Attribute and ctx.parent(ctx.parent(node)).__class__ is ast.Call:
        node = ctx.parent(ctx.parent(node))
    parent = ctx.parent(node)
    if parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ in (ast.Name, ast.Attribute):
        return ctx.text(parent.targets[0])
    return None


def trains_through(ctx: Context, call: ast.Call) -> bool:
    """Is there evidence that the code around this DataParallel trains (see the module doc)?"""
    if training_calls(ctx):
        return True
    for anc in ctx.ancestors(call):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef) and _training_name(anc.name):
            return True
        if anc.__class__ is ast.ClassDef and is_module_class_def(ctx, anc):
            return True  # a model's own forward path (`data_parallel(self.encoder, ...)`) runs in its callers' training
    stored = _stored_name(ctx, call)
    if stored is not None:
        for other in ctx.nodes.get(ast.Call, ()):
            func = other.func.value if other.func.__class__ is ast.Subscript else other.func  # trainer_dict[cfg.name](...)
            callee = last_name(func) or ""
            if _training_name(callee) and any(ctx.text(a) == stored for a in [*other.args, *(k.value for k in other.keywords)]):
                return True  # handed to a training function or a trainer
        if _optimized(ctx, stored):
            return True  # its optimizer is handed to a training helper (`lib.train_with_auto_virtual_batch(optimizer, ...)`)
    if len(ctx.project.files) <= 1:
        return True  # linted alone (or a project of one file): its callers are not known
    return _called_by_trainer(ctx, call)


def _optimized(ctx: Context, stored: str) -> bool:
    """``stored.parameters()`` go to an optimizer (``torch.optim.AdamW(model.parameters())``, a
    helper named for it: ``lib.make_optimizer(cfg, param_groups, ...)`` with the groups built from
    ``model.named_parameters()``) that is handed to a call named for training
    (``lib.train_with_auto_virtual_batch(optimizer, loss_fn, step, batch)``, ``learn_*``): it trains. (An
    optimizer built only to load its state, in a checkpoint converter, trains nothing.)"""
    optimizers = [c for c in ctx.nodes.get(ast.Call, ()) if "optim" in (ctx.qualname(c.func) or last_name(c.func) or "").lower()]
    if not optimizers:
        return False
    used = set()
    for c in ctx.calls_named("parameters", "named_parameters"):
        if c.func.__class__ is not ast.Attribute or ctx.text(c.func.value) != stored:
            continue
        used |= {id(o) for o in optimizers if ctx.contains(o, c)}
        stmt = ctx.statement_of(c)  # params = [v for k, v in model.named_parameters() if ...], then optim(params)
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name:
            name = stmt.targets[0].id
            used |= {id(o) for o in optimizers if any(n.__class__ is ast.Name and n.id == name for n in ast.walk(o))}
    names = set()
    for o in optimizers:
        parent = ctx.parent(o)
        if id(o) in used and parent.__class__ is ast.Assign and len(parent.targets) == 1 and parent.targets[0].__class__ is ast.Name:
            names.add(parent.targets[0].id)
    return bool(names) and any(_stepping_name(last_name(c.func) or "") and any(
        a.__class__ is ast.Name and a.id in names for a in [*c.args, *(k.value for k in c.keywords)])
        for c in ctx.nodes.get(ast.Call, ()))


def _called_by_trainer(ctx: Context, call: ast.Call) -> bool:
    """The module-level function or class around the wrapper is used by another file of the
    project that trains (``net = build_network(cfg)`` in ``train.py``, which backpropagates):
    a model builder of a utils module."""
    top = next((a for a in ctx.ancestors(call) if ctx.parent(a) is ctx.tree), None)
    if top is None or top.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
        return False
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    needle = f"{top.name}("
    callers = [(p, t) for p, t in ctx.project.files if p != ctx.path and needle in t and stem in t]
    if any(_trains_text(t) for _, t in callers):
        return True
    if top.__class__ is ast.ClassDef:
        return _subclassed_by_trainer(ctx.project, top.name)
    for path, text in callers:  # build_or_load_model_from_config(...) returning build_or_load_model(...): one more module
        other = parsed_file(ctx.project, path, text)
        if other is None:
            continue
        outer_stem = os.path.splitext(os.path.basename(path))[0]
        for outer in _returning_callers(other, top.name):
            if any(q not in (path, ctx.path) and f"{outer}(" in u and outer_stem in u and _trains_text(u)
                   for q, u in ctx.project.files):
                return True
    return False


# a script that builds an optimizer and hands its model to a training function: run_training(model=model, ...)
# or a trainer object's method given the model and more (`trainer.train(model, train_loader, ...)`; not `model.train(False)`)
_TRAINING_CALL = lazy_compile(r"(?<![.\w])(?:run_|start_|do_)?train(?:ing)?\(|\.train\(\s*[\w.]+\s*,")


def _trains_text(text: str) -> bool:
    """The text of a file that trains: a backward pass or an optimizer step, or an optimizer built
    beside a call of a training function (``run_training(model=model, optimizer=optimizer)``)."""
    return _TRAINS.search(text) is not None or "optim" in text and _TRAINING_CALL.search(text) is not None


def _returning_callers(ctx: Context, name: str) -> list[str]:
    """Module-level functions of ``ctx`` that return what a call of ``name`` gives (``return
    build_or_load_model(...)``): thin wrappers of a model builder."""
    out = []
    for call in ctx.calls_named(name):
        func = ctx.function_of(call)
        if func is not None and ctx.parent(func) is ctx.tree and ctx.parent(call).__class__ is ast.Return:
            out.append(func.name)
    return out


def _subclassed_by_trainer(facts: ProjectFacts, name: str, depth: int = 3) -> bool:
    """A class of the project that trains derives from ``name``, directly or through other classes
    of the project (``class REC_Processor(Processor)``, ``class Processor(IO)``): the base's
    ``self.model = nn.DataParallel(self.model)`` wraps the model its subclass trains."""
    names, seen = {name}, {name}
    for _ in range(depth):
        grown: set[str] = set()
        for _, text in facts.files:
            if "class " not in text or not any(n in text for n in names):
                continue
            subs = {m.group(1) for m in _CLASS.finditer(text) if any(
                b.strip().rsplit(".", 1)[-1] in names for b in m.group(2).split(","))}
            if subs and _TRAINS.search(text) is not None:
                return True
            grown |= subs - seen
        if not grown:
            return False
        names, seen = grown, seen | grown
    return False

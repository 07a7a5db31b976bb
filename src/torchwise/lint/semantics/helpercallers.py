"""Loads in a checkpoint helper judged by the files that call it (TW402).

A helper module with no device code of its own (``utils/checkpoint.py``: ``def
load_checkpoint(model, path): ckpt = torch.load(path); model.load_state_dict(ckpt["state_dict"])``,
a model's ``def load_param(self, path)``) runs wherever its callers do. When a caller in another
module moves models to the GPU and is an evaluation or inference script (it trains nothing: R2
counts those also in GPU-only projects) - or, in a project that offers a CPU path, any caller that
uses the GPU - the helper restores what a GPU run of the project saved, without ``map_location``.
Callers are found by name: a top-level function imported from the helper's module, or a method
whose name no other module of the project defines (``self.model.load_param(path)``)."""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import AST, Context, argument, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.checkpoints import file_names, loaded_keys
from torchwise.lint.semantics.callers import parsed_file, project_calls, star_calls
from torchwise.lint.semantics.devices import gpu_evident
from torchwise.lint.semantics.loadsites import evaluation_script, restored_into
from torchwise.lint.semantics.savefacts import device_savers, save_index
from torchwise.lint.semantics.steps import training_calls

# a method called from more files than this is a library entry point: its callers tell little
_MAX_FILES = 8
# methods of torch and of common libraries: a call of one names no helper of the project
_LIBRARY_METHODS = frozenset({"load", "load_state_dict", "from_pretrained", "restore", "__init__", "forward", "__call__"})


def helper_reached_from_gpu(ctx: Context, load: ast.Call) -> bool:
    """The load sits in a helper of a device-free module that a GPU-using caller reaches: an
    evaluation or inference script, or (in a project with a CPU path) any caller on the GPU."""
    func = ctx.function_of(load)
    if func is None or gpu_evident(ctx) or not ctx.project.files or not ctx.project.targets_gpu \
            or not device_savers(ctx.project) or not _checkpoint_like(ctx, load):
        return False
    if _gpu_branch(ctx, load) or _shipped_file(ctx, load):
        return False
    cpu_path = not ctx.project.gpu_only and ctx.project.cpu_path_files > 0
    key = ("tw402:helpercallers", ctx.path, func.lineno)
    found = ctx.project.answers.get(key)
    if found is None:
        found = ctx.project.answers[key] = _caller_verdict(ctx, func)
    kind, on_gpu = found
    return (kind == "eval" or kind == "gpu" and cpu_path) and (on_gpu or _saved_from_gpu(ctx))


_LIBRARY_MODELS = ("torchvision.", "timm.", "transformers.", "torch.hub.", "torch.nn.")


def helper_for_evaluation(ctx: Context, load: ast.Call) -> bool:
    """The load sits in a helper of a module that uses the GPU itself (``def load_model(path):
    checkpoint = torch.load(path); ...; if args.cuda: model = model.cuda()``) and an evaluation or
    inference script of another module calls it (``model, ... = load_model(args.continue_from)`` in
    ``test.py``): an evaluation load of what the project's training saved (R2), also in a GPU-only
    project. Not a file name or entries no save of the project writes, nor the GPU side of a choice."""
    func = ctx.function_of(load)
    if func is None or not gpu_evident(ctx) or not ctx.project.files or not device_savers(ctx.project) \
            or not _checkpoint_like(ctx, load) or _gpu_branch(ctx, load) or _shipped_file(ctx, load):
        return False
    parent = ctx.parent(load)
    parent = ctx.parent(parent) if parent.__class__ is ast.Subscript else parent
    if parent.__class__ is ast.Assign and all(t.__class__ is ast.Subscript for t in parent.targets):
        return False  # (entries copied into a dict of settings: `state[item] = torch.load(p)[item]`)
    into = restored_into(ctx, load)
    if into is None and not _returns_state(ctx, load, func):
        return False  # (data read from the file and used here: latent codes moved one by one)
    owner = into.func.value if into is not None and into.func.__class__ is ast.Attribute else None
    if owner is not None and _library_network(ctx, owner, into):
        return False  # (a library's network, `inception_v3(...)`: weights from elsewhere, for a metric)
    if func.name.lower().startswith(("train", "fit")) or any(ctx.function_of(c) is func for c in training_calls(ctx)):
        return False  # (the training function itself, which a script with no step of its own calls)
    key = ("tw402:evalcallers", ctx.path, func.lineno)
    found = ctx.project.answers.get(key)
    if found is None:
        found = ctx.project.answers[key] = [call for other, call in _callers(ctx, func)
                                            if other.path != ctx.path and evaluation_script(other) and not _calls_training(other)]
    return any(_reaches(ctx, func, load, call) for call in found)


def _reaches(ctx: Context, func: AST, load: ast.Call, call: ast.Call) -> bool:
    """The call runs the load: no ``if D is not None:`` / ``if load_optim:`` around it, inside the
    helper, on a parameter the call fills with ``None`` or ``False`` (or leaves at such a default):
    ``load_weights(G, None, state, root, load_optim=False)`` restores G, not D or the optimizers."""
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults))
    if ctx.parent(func).__class__ is ast.ClassDef and params:
        params = params[1:]  # (self)

    def passed(name: str) -> AST | None:
        kw = next((k.value for k in call.keywords if k.arg == name), None)
        if kw is not None:
            return kw
        i = params.index(name) if name in params else -1
        return call.args[i] if 0 <= i < len(call.args) and call.args[i].__class__ is not ast.Starred else defaults.get(name)

    for node, in_body in ctx.enclosing_ifs(load):
        if ctx.function_of(node) is not func:
            continue
        test, name, when_none = node.test, None, in_body
        if test.__class__ is ast.Name:
            name = test.id
        elif test.__class__ is ast.Compare and len(test.ops) == 1 and test.left.__class__ is ast.Name \
                and test.comparators[0].__class__ is ast.Constant and test.comparators[0].value is None:
            name = test.left.id
            when_none = in_body if test.ops[0].__class__ is ast.IsNot else not in_body
        value = passed(name) if name is not None and when_none else None
        if value.__class__ is ast.Constant and value.value in (None, False, 0):
            return False
    return True


def _returns_state(ctx: Context, load: ast.Call, func: AST) -> bool:
    """The helper hands the loaded object, or its model state, back to its caller:
    ``weights = torch.load(p); state = weights["state_dict"]; return epoch, state``. Not other
    entries (``return data["latent_codes"]["weight"]``: data the caller uses as such)."""
    parent = ctx.parent(load)
    if parent.__class__ is ast.Return:
        return True
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return False
    loaded = parent.targets[0].id
    names = {loaded}
    for node in ast.walk(func):
        value = node.value if node.__class__ is ast.Assign else None
        if value.__class__ is ast.Subscript and value.value.__class__ is ast.Name and value.value.id == loaded \
                and _STATE_KEY.search(ctx.text(value.slice)) and node.lineno > load.lineno:
            names |= {t.id for t in node.targets if t.__class__ is ast.Name}
    for r in ast.walk(func):
        if r.__class__ is ast.Return and r.value is not None:
            parts = r.value.elts if r.value.__class__ is ast.Tuple else [r.value]
            if any(p.__class__ is ast.Name and p.id in names for p in parts):
                return True
    return False


_STATE_KEY = lazy_compile(r"state|model|net|weight", re.I)


def _library_network(ctx: Context, owner: AST, into: ast.Call) -> bool:
    """The restored model is a library's, built in the helper (``model = inception_v3(...)``, imported
    from torchvision or not defined in the project at all; a bare ``torch.nn`` layer)."""
    if owner.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(owner.id, into)
    if b is None or b.kind != "assign" or b.value.__class__ is not ast.Call:
        return False
    q = ctx.qualname(b.value.func) or ""
    if q.startswith(_LIBRARY_MODELS):
        return True  # (also a bare torch layer built here to read a table: `torch.nn.Embedding(n, d)`)
    if b.value.func.__class__ is not ast.Name:
        return False
    name = b.value.func.id
    return q in ("", name) and name not in ctx.imports and not any(
        n.name == name for n in ctx.tree.body if n.__class__ in (ast.FunctionDef, ast.ClassDef))


def _calls_training(ctx: Context) -> bool:
    """The script calls a training function of the project (``train(args, loader, model)``)."""
    return any((last_name(c.func) or "").lower().startswith(("train", "fit")) for c in ctx.nodes.get(ast.Call, ()))


def _saved_from_gpu(ctx: Context) -> bool:
    """The project's training evidently runs on the GPU: a file that saves model state names a
    device, a file that trains (``.backward(``) names CUDA, or several files do - not a project
    whose only CUDA line is a benchmark's while its trained model never moves."""
    key = "tw402:trains-on-gpu"
    found = ctx.project.answers.get(key)
    if found is None:
        savers = set(device_savers(ctx.project))
        cuda = [(p, t) for p, t in ctx.project.files if ".cuda(" in t or "'cuda" in t or '"cuda' in t]
        found = ctx.project.answers[key] = len(cuda) > 1 or any(".backward(" in t for _, t in cuda) or any(
            p in savers and "device" in t for p, t in ctx.project.save_files)
    return found


_CHECKPOINT_WORDS = lazy_compile(r"ckpt|checkpoint|state|model|param|weight|pretrain|snapshot|resume|payload|\.pth?\b", re.I)


def _gpu_branch(ctx: Context, load: ast.Call) -> bool:
    """``if use_cuda: model = torch.load(f)`` / ``else: model = load_to_cpu(f)``: the GPU side of a
    choice whose other side reads onto the host."""
    for node, in_body in ctx.enclosing_ifs(load):
        orelse = node.orelse if node.orelse.__class__ is list else [node.orelse]
        if in_body and orelse and any("cpu" in ctx.text(n).lower() for n in orelse):
            return True
    return False


def _shipped_file(ctx: Context, load: ast.Call) -> bool:
    """A file name written in the code (``"model_data/backbone_weights.pth"``), or entries read
    (``ckpt["base"]``), that no save of the project writes: pretrained weights shipped or
    downloaded with it, not a checkpoint of its runs."""
    keys = loaded_keys(ctx, load)
    if keys:  # `backbone_ckpt["base"]` where no save of the project writes a "base" entry: another source's weights
        if not any(f"'{k}'" in t or f'"{k}"' in t or f"{k}=" in t for _, t in ctx.project.save_files for k in keys):
            return True
    names = file_names(ctx, argument(load, "f", 0), load)
    if not names or names & set(save_index(ctx.project)):
        return False
    # a name a saving module spells (`def save_checkpoint(state, filename='checkpoint.pt')`) is written by it
    bases = {os.path.basename(n) for n in names}
    return not any(b and b in t for _, t in ctx.project.save_files for b in bases)


def _checkpoint_like(ctx: Context, load: ast.Call) -> bool:
    """The load reads a model checkpoint: restored into a model, or named so (its path or the
    name it is bound to: ``checkpoint = torch.load(weights)``, ``param_dict = torch.load(path)``)."""
    if restored_into(ctx, load) is not None:
        return True
    parent = ctx.parent(load)
    if parent.__class__ is ast.Return:
        return True  # handed back to the caller (`model.load_state_dict(stopper.load_checkpoint())`)
    texts = [ctx.text(a) for a in load.args[:1]]
    if parent.__class__ is ast.Assign:
        texts += [ctx.text(t) for t in parent.targets]
    return any(_CHECKPOINT_WORDS.search(t) for t in texts)


def _caller_verdict(ctx: Context, func: AST) -> tuple[str, bool]:
    """``"eval"`` when an evaluation or inference script calls the helper (R2), ``"gpu"`` when only
    other live code does, ``""`` when nothing calls it; and whether a caller names the GPU itself."""
    kind, on_gpu = "", False
    for other, call in _callers(ctx, func):
        if other.path == ctx.path:
            if ctx.function_of(call) is func:
                continue  # (recursion)
            other = ctx  # a script's own method, called by its main(): the script is the caller
        on_gpu = on_gpu or gpu_evident(other)
        if kind != "eval":
            kind = "eval" if evaluation_script(other) else "gpu"
    return kind, on_gpu


def _callers(ctx: Context, func: AST):
    name = func.name
    klass = ctx.parent(func) if ctx.parent(func).__class__ is ast.ClassDef else None
    if name.startswith("__") or klass is not None and name in _LIBRARY_METHODS:
        return
    if klass is None:
        if ctx.parent(func) is not ctx.tree:
            return
        yield from project_calls(ctx, name)
        yield from star_calls(ctx, name)
        yield from _package_calls(ctx, name)
        # in the file itself (a script's helper), and one hop: `def _vgg(...)` (the load) behind `def vgg11(...)`
        for c in ctx.calls_named(name):
            if c.func.__class__ is ast.Name:
                yield ctx, c
        for outer in ctx.nodes.get(ast.FunctionDef, ()):
            if outer is func or ctx.parent(outer) is not ctx.tree:
                continue
            if any(c.func.__class__ is ast.Name and c.func.id == name for c in ast.walk(outer) if c.__class__ is ast.Call):
                yield from project_calls(ctx, outer.name)
        return
    definer = re.compile(r"^[ \t]*def[ \t]+" + re.escape(name) + r"[ \t]*\(", re.M)
    if len(definer.findall(ctx.source)) > 1:
        return
    needle = f".{name}("
    files = [(p, t) for p, t in ctx.project.files if p != ctx.path and needle in t]
    if len(files) > _MAX_FILES or any(definer.search(t) for p, t in ctx.project.files if p != ctx.path):
        return  # a method name another module defines too: its calls are not this one's
    yield from ((ctx, c) for c in ctx.calls_named(name) if c.func.__class__ is ast.Attribute)
    for path, text in files:
        other = parsed_file(ctx.project, path, text)
        if other is not None:
            yield from ((other, c) for c in other.calls_named(name) if c.func.__class__ is ast.Attribute)


def _package_calls(ctx: Context, name: str):
    """Calls of ``pkg.name(...)`` where the package's ``__init__.py`` re-exports this module
    (``from .model_utils import *``): ``utils.load_checkpoint(model, args.weights)``."""
    folder = os.path.dirname(ctx.path)
    init = os.path.join(folder, "__init__.py")
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    text = next((t for p, t in ctx.project.files if p == init), None)
    if text is None or not re.search(r"^from[ \t]+\.?" + re.escape(stem) + r"[ \t]+import[ \t]+(\*|.*\b" + re.escape(name) + r"\b)",
                                     text, re.M):
        return
    package = os.path.basename(folder)
    needle = f"{package}.{name}("
    files = [(p, t) for p, t in ctx.project.files if p != ctx.path and needle in t]
    for path, t in files[:_MAX_FILES]:
        other = parsed_file(ctx.project, path, t)
        if other is not None:
            yield from ((other, c) for c in other.calls_named(name) if c.func.__class__ is ast.Attribute
                        and c.func.value.__class__ is ast.Name and c.func.value.id == package)

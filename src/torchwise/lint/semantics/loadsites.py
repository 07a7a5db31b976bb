"""Where a ``torch.load`` runs and what it restores (TW402): a model's weights restored by a script
that trains nothing (an evaluation or inference script), a load that every process of a
distributed run makes, a cache of prepared data read back in the branch beside the one that
builds and saves it, a load helper of a module with no device code that restores what the
project saves from a device, the keys of a checkpoint the project writes with device tensors, and
a training function's resume in a project with no way to run without a GPU."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context, argument, last_name
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.checkpoints import file_names, loaded_keys, saved_keys
from torchwise.lint.semantics.inputgrads import trains_by_gradient
from torchwise.lint.semantics.models import is_module_instance
from torchwise.lint.semantics.savefacts import checkpoint_facts, device_savers
from torchwise.lint.semantics.steps import is_eval_name, training_calls


def restored_into(ctx: Context, load: ast.Call) -> ast.Call | None:
    """The ``X.load_state_dict(...)`` call the loaded object feeds: ``m.load_state_dict(torch.load(p))``,
    or ``ckpt = torch.load(p)`` then ``m.load_state_dict(ckpt["state"])`` in the same scope; also
    through a conversion helper of the project (``sd = convert_old(torch.load(p), name)``)."""
    parent = ctx.parent(load)
    if parent.__class__ is ast.Subscript and parent.value is load:  # m.load_state_dict(torch.load(p)["g_ema"])
        parent = ctx.parent(parent)
    if parent.__class__ is ast.Call and parent.args and parent.args[0] is load and last_name(parent.func) != "load_state_dict" \
            and parent.func.__class__ is ast.Name and ctx.qualname(parent.func) not in (None, parent.func.id) \
            and not (ctx.qualname(parent.func) or "").startswith(("torch.", "builtins.")):
        load, parent = parent, ctx.parent(parent)  # a helper imported from the project converts the state first
    if parent.__class__ is ast.Call and last_name(parent.func) == "load_state_dict":
        return parent
    if parent.__class__ is not ast.Assign or len(parent.targets) != 1 or parent.targets[0].__class__ is not ast.Name:
        return None
    names = {parent.targets[0].id}
    scope = ctx.scope_of(load)
    later = [a for a in ctx.walk_body(getattr(scope, "body", [])) if a.__class__ in (ast.Assign, ast.Call)
             and a.lineno > load.lineno]
    for a in later:  # state = ckpt["state"]; (then its keys renamed in place); model_dict.update(state)
        if a.__class__ is ast.Call:
            if last_name(a.func) == "update" and a.func.__class__ is ast.Attribute and a.func.value.__class__ is ast.Name \
                    and any(n.__class__ is ast.Name and n.id in names for arg in a.args for n in ast.walk(arg)):
                names.add(a.func.value.id)
        elif any(n.__class__ is ast.Name and n.id in names for n in ast.walk(a.value)):
            names |= {t.id for t in a.targets if t.__class__ is ast.Name}
    for call in ctx.calls_named("load_state_dict"):
        if ctx.scope_of(call) is scope and call.lineno > load.lineno and call.args and any(
                n.__class__ is ast.Name and n.id in names for n in ast.walk(call.args[0])):
            return call
    return _restored_from_helper(ctx, scope)


def _restored_from_helper(ctx: Context, scope: AST) -> ast.Call | None:
    """The load sits in a module-level function of the file (``def load_checkpoint(step, name)``
    that strips the ``module.`` prefixes of a DataParallel checkpoint and returns the new dict)
    whose every call in the file is restored: ``m.load_state_dict(load_checkpoint(step))``."""
    if scope.__class__ is not ast.FunctionDef or ctx.parent(scope) is not ctx.tree:
        return None
    uses = [c for c in ctx.calls_named(scope.name) if c.func.__class__ is ast.Name]
    fed = [ctx.parent(c) for c in uses]
    if not uses or not all(p.__class__ is ast.Call and last_name(p.func) == "load_state_dict" and p.args
                           and p.args[0] is c for p, c in zip(fed, uses)):
        return None
    return fed[0]


def gpu_project_load(ctx: Context, load: ast.Call) -> bool:
    """The project is GPU-only by design (TW403's test), or the load resumes the training of its
    own function (``def train(self): ... if resume: ckpt = torch.load(path)``, then the training
    loop) in a project none of whose files has any way to run without a GPU (no GPU check that
    chooses, no device flag or option, no "cpu" device chosen): it restores where it trains; so
    does any load of a single-process training script of such a project."""
    if ctx.project.gpu_only:
        return True
    if len(ctx.project.files) < 2 or ctx.project.cpu_path_files:
        return False
    func = ctx.function_of(load)
    if func is not None and any(ctx.function_of(c) is func for c in training_calls(ctx)):
        return True
    # a single-process training script of such a project: its set-up helpers (the pretrained
    # initialisation of `init_model(args)`) run where it trains (R2)
    src = ctx.source
    return ("__main__" in src or "parse_args(" in src) and not any(w in src for w in _MULTI_PROCESS) \
        and bool(training_calls(ctx))


_MULTI_PROCESS = ("DistributedDataParallel", "init_process_group", "local_rank", "spawn(")


def evaluation_script(ctx: Context) -> bool:
    """A script (``__main__`` or ``parse_args()``) with no training step (no backward, no optimizer
    step; or backward passes only for the gradients of its inputs - a PGD attack's - with no
    optimizer step and no update by hand): it evaluates or runs a model it restores."""
    src = ctx.source
    return ("__main__" in src or "parse_args(" in src) and (not training_calls(ctx) or _optimizes_inputs_only(ctx)
                                                            or not trains_by_gradient(ctx))


_EVAL_FLAGS = frozenset({"test_only", "testonly", "only_test", "eval_only", "evaluate_only", "test_mode", "eval_mode"})
_EXITS = frozenset({"exit", "_exit", "quit"})


def serves_evaluate_mode(ctx: Context, load: ast.Call) -> bool:
    """After the load, the same function (or script) has an evaluation-only branch - ``if
    args.evaluate: validate(val_loader, model, ...); return`` - that runs an evaluation function on
    what it restored and ends without training: the ``--resume`` checkpoint is also the model an
    ``-e`` run evaluates (an evaluation, R2). Also a load inside such a branch (``if args.test:
    checkpoint = torch.load(args.test); ...; test(test_loader, model); sys.exit()``)."""
    scope = ctx.scope_of(load)
    around = [i for i, in_body in ctx.enclosing_ifs(load) if in_body and ctx.scope_of(i) is scope]
    for node in [*around, *ctx.walk_body(getattr(scope, "body", []))]:
        if node.__class__ is not ast.If or node.lineno <= load.lineno and node not in around or not node.body:
            continue
        flags = [n.attr if n.__class__ is ast.Attribute else n.id for n in ast.walk(node.test)
                 if n.__class__ in (ast.Attribute, ast.Name)]
        if not any(is_eval_name(f) or f.lower() in _EVAL_FLAGS for f in flags):
            continue
        last = node.body[-1]
        if not (last.__class__ is ast.Return or last.__class__ is ast.Expr and last.value.__class__ is ast.Call
                and last_name(last.value.func) in _EXITS):
            continue
        calls = [n for n in ctx.walk_body(node.body) if n.__class__ is ast.Call]
        if any(last_name(c.func) in ("backward", "step", "train", "fit") for c in calls):
            continue
        if any(is_eval_name(last_name(c.func) or "") for c in calls):
            return True
    return False


def _optimizes_inputs_only(ctx: Context) -> bool:
    """Every optimizer of the script optimises tensors it made trainable itself - a list literal
    (``optim.Adam([latent_in] + noises, lr=args.lr)`` after ``latent_in.requires_grad = True``),
    no parameters - while the model it restores is in eval mode: a GAN inversion (a projector)
    or an input search, which trains no model."""
    src = ctx.source
    if ".eval()" not in src or "requires_grad" not in src:
        return False
    optimizers = [c for c in ctx.nodes.get(ast.Call, ()) if (ctx.qualname(c.func) or "").startswith("torch.optim.")
                  and not (ctx.qualname(c.func) or "").startswith("torch.optim.lr_scheduler.")]
    return bool(optimizers) and all(_literal_tensors(c.args[0] if c.args else None) and "param" not in ctx.text(c.args[0]).lower()
                                    for c in optimizers)


def _literal_tensors(node: AST | None) -> bool:
    if node.__class__ is ast.List:
        return True
    return node.__class__ is ast.BinOp and (_literal_tensors(node.left) or _literal_tensors(node.right))


_RANK_WORDS = ("rank", "main_process", "is_main", "master", "gpu==0")
_DISTRIBUTED = ("DistributedDataParallel", "init_process_group")


def every_rank_loads(ctx: Context, load: ast.Call) -> bool:
    """A load in a distributed training file (``DistributedDataParallel``, ``init_process_group``)
    inside a function, under no ``if`` on the rank: every process deserializes the checkpoint
    onto the device that saved it (``cuda:0``) - also at the top level of such a script (``__main__``
    or ``parse_args()``: `state = torch.load(cfg.finetune)['model']`), which every process runs."""
    if ctx.function_of(load) is None and not ("__main__" in ctx.source or "parse_args(" in ctx.source) \
            or _per_rank_file(ctx, load):
        return False
    if not any(w in ctx.source for w in _DISTRIBUTED) or not training_calls(ctx):
        return _method_called_by_every_rank(ctx, load)
    return not _under_rank_if(ctx, load)


def _per_rank_file(ctx: Context, load: ast.Call) -> bool:
    """``torch.load(os.path.join(d, "queue" + str(args.rank) + ".pth"))``: each process reads back
    the file it wrote itself from its own GPU (a queue, a memory bank), named by its rank."""
    path = argument(load, "f", 0)
    if path is None:
        return False
    value = ctx.resolve(path, load) if path.__class__ is ast.Name else path
    return any(n.__class__ in (ast.Name, ast.Attribute) and (n.id if n.__class__ is ast.Name else n.attr) in ("rank", "local_rank", "global_rank")
               for n in ast.walk(value if value is not None else path))


def _under_rank_if(ctx: Context, node: AST) -> bool:
    return any(any(w in ctx.text(if_node.test).lower().replace(" ", "") for w in _RANK_WORDS)
               for if_node, _ in ctx.enclosing_ifs(node))


def _method_called_by_every_rank(ctx: Context, load: ast.Call) -> bool:
    """``def load_model_from_ckpt(self, path): ckpt = torch.load(path)``, a method of a model class,
    called (``base_model.load_model_from_ckpt(args.ckpts)``) inside a function of a distributed
    training script of the project, under no ``if`` on the rank: every process restores the
    checkpoint onto the device that saved it. A definition inside a sub-program's folder (a
    folder holding its own ``__main__`` script) counts only callers of that folder."""
    func = ctx.function_of(load)
    if func.__class__ is ast.Lambda or ctx.parent(func).__class__ is not ast.ClassDef or func.name.startswith("__"):
        return False
    needle = f".{func.name}("
    path = ctx.path.replace("\\", "/")
    scope = _program_folder(ctx, path)
    for other_path, text in ctx.project.files:
        other_path = other_path.replace("\\", "/")
        if other_path == path or needle not in text or not other_path.startswith(scope) \
                or not any(w in text for w in _DISTRIBUTED):
            continue
        other = parsed_file(ctx.project, other_path, text)
        if other is None or not training_calls(other):
            continue
        if any(call.func.__class__ is ast.Attribute and other.function_of(call) is not None and not _under_rank_if(other, call)
               for call in other.calls_named(func.name)):
            return True
    return False


def _program_folder(ctx: Context, path: str) -> str:
    """The folder (a path prefix ending in "/", or "") whose scripts import the module at ``path``:
    the nearest folder above it, below the project's top, that holds a ``__main__`` script."""
    folders = {p.replace("\\", "/").rpartition("/")[0] for p, t in ctx.project.files if "__main__" in t}
    top = min((p.replace("\\", "/").count("/") for p, _ in ctx.project.files), default=0)
    folder = path.rpartition("/")[0]
    while folder and folder.count("/") >= top:  # below the project's own folder
        if folder in folders:
            return folder + "/"
        folder = folder.rpartition("/")[0]
    return ""


_EXISTS = frozenset({"exists", "isfile", "is_file"})


def cached_in_branch(ctx: Context, load: ast.Call) -> bool:
    """``if os.path.exists(cache): corpus = torch.load(cache)`` whose other branch builds the object
    and saves it under the same path (``corpus = data.Corpus(path); torch.save(corpus, cache)``)
    without any device code or model: a cache of prepared data, host objects only."""
    path = argument(load, "f", 0)
    if path is None:
        return False
    names = file_names(ctx, path, load)
    for if_node, in_body in ctx.enclosing_ifs(load):
        if not any(n.__class__ is ast.Call and last_name(n.func) in _EXISTS for n in ast.walk(if_node.test)):
            continue
        other = if_node.orelse if in_body else if_node.body
        saves = [n for stmt in other for n in ast.walk(stmt)
                 if n.__class__ is ast.Call and ctx.qualname(n.func) == "torch.save"]
        target = [argument(s, "f", 1) for s in saves]
        if not any(t is not None and (ctx.text(t) == ctx.text(path) or names & file_names(ctx, t, s))
                   for t, s in zip(target, saves)):
            continue
        return not any(_device_or_model(ctx, n) for stmt in other for n in ast.walk(stmt))
    return False


def _device_or_model(ctx: Context, node: AST) -> bool:
    if node.__class__ is ast.Constant:
        return isinstance(node.value, str) and node.value.startswith("cuda")
    if node.__class__ is not ast.Call:
        return False
    if last_name(node.func) in ("cuda", "to") or "device" in ctx.text(node):
        return True
    return is_module_instance(ctx, node.func, node) or any(
        a.__class__ in (ast.Name, ast.Attribute) and is_module_instance(ctx, a, node) for a in node.args)


def reads_device_keys(ctx: Context, load: ast.Call) -> bool:
    """The keys read from the loaded dict (``ckpt["g_ema"]``) include one that the project saves
    with device tensors (``torch.save({"g_ema": g_ema.state_dict(), ...})`` of a GPU model) and
    this file never saves with host data."""
    keys = loaded_keys(ctx, load)
    if not keys:
        return False
    own_host, _ = saved_keys(ctx)
    _, _, device = checkpoint_facts(ctx.project)
    return bool((keys & device) - own_host)


def restores_device_state(ctx: Context, load: ast.Call) -> bool:
    """The load restores what another file of the project saves from a device: a key of the saved
    dict (``checkpoint["state"]``), or the state of the same submodule
    (``self.gnn.load_state_dict(torch.load(f))`` where training saves ``model.gnn.state_dict()``)."""
    into = restored_into(ctx, load)
    if into is None:
        return False
    if reads_device_keys(ctx, load):
        return True
    owner = into.func.value if into.func.__class__ is ast.Attribute else None
    attr = owner.attr if owner is not None and owner.__class__ is ast.Attribute else None
    if attr is None or attr in ("model", "module", "net", "network"):
        return False
    savers = set(device_savers(ctx.project))
    needle = re.compile(r"torch\.save\([^\n]*\." + re.escape(attr) + r"\.state_dict\(\)")
    built = ctx.constructed_from(owner, into) or ""
    klass = built.rsplit(".", 1)[-1].split(":")[-1] if built else ""
    made = re.compile(r"^[ \t]*(\w+)[ \t]*=[ \t]*(?:\w+\.)*" + re.escape(klass) + r"\(", re.M) if klass else None
    for p, t in ctx.project.save_files:
        if p == ctx.path or p not in savers:
            continue
        if needle.search(t):
            return True
        # ``model = GNN(...).to(device)`` ... ``torch.save(model.state_dict(), f)``: the same class's state
        if made is not None and any(f"torch.save({m.group(1)}.state_dict()" in t for m in made.finditer(t)):
            return True
    return False


_TRAINING_METHODS = frozenset({"train", "fit", "train_model", "run_training"})


def reload_after_training_method(ctx: Context, load: ast.Call) -> bool:
    """``def test(self): torch.load(".../best_acc_model.pth")`` in a trainer class whose ``train()``
    writes that best checkpoint, where every call of ``test()`` in the project follows a call of
    ``train()`` on the same object in the same function (``trainer.train(); trainer.test()``): the
    run reloads what it has just written, in the same process and on the same device."""
    func, klass = ctx.function_of(load), ctx.class_of(load)
    path = argument(load, "f", 0)
    if func is None or klass is None or path is None:
        return False
    text = ctx.text(path)
    if path.__class__ is ast.Name:
        b = ctx.binding_at(path.id, load)
        text += " " + (ctx.text(b.value) if b is not None and b.value is not None else "")
    trainers = {f.name for f in klass.body if f.__class__ is ast.FunctionDef} & _TRAINING_METHODS
    if "best" not in text.lower() or not trainers:
        return False
    verdicts = []
    for other_path, other_text in ctx.project.files or ((ctx.path, ctx.source),):
        if f".{func.name}(" not in other_text:
            continue
        other = ctx if other_path == ctx.path else parsed_file(ctx.project, other_path, other_text)
        for call in other.calls_named(func.name) if other is not None else ():
            if call.func.__class__ is not ast.Attribute:
                continue
            receiver, scope = other.text(call.func.value), other.scope_of(call)
            caller = other.function_of(call)
            verdicts.append(receiver == "self" and caller is not None and caller.name in trainers or any(
                c.func.__class__ is ast.Attribute and other.text(c.func.value) == receiver and other.scope_of(c) is scope
                and c.lineno < call.lineno for c in other.calls_named(*trainers)))
    return bool(verdicts) and all(verdicts)

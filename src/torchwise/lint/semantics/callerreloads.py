"""Load helpers that every caller runs right after this run saved the same file (TW402, ruling R2):
``def load_model(args, name): return torch.load(f'models/{name}.pt')`` called only after
``save_model(args, model, name)`` (which writes ``f'models/{name}.pt'``) in the same function;
``predict_main(best_epoch, ...)`` reloading ``'epoch_%s.params' % step`` called only after the
training loop of the function that saved ``'epoch_%s.params' % epoch``; ``net.load_checkpoint(p)``
called only after ``net.save_checkpoint(p)``; ``def test(): torch.load(model_file)`` called only
after the loop of ``train(epoch)``, which saves to the same module-level ``model_file``. The file is read back in the same process, onto the
device that wrote it."""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import Context, argument, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import imports_module, method_call_sites, module_stem, project_calls, star_calls
from torchwise.lint.semantics.values import local_function


def _template(ctx: Context, path: ast.AST | None, at: ast.AST) -> frozenset[str]:
    """The fixed text of a path expression (its string constants, the path variable's value
    looked up once): ``{'epoch_%s.params'}`` for ``os.path.join(d, 'epoch_%s.params' % step)``."""
    if path is None:
        return frozenset()
    if path.__class__ is ast.Name:
        value = ctx.resolve(path, at)
        path = value if value is not None else path
    return frozenset(n.value for n in ast.walk(path) if n.__class__ is ast.Constant and isinstance(n.value, str)
                     and len(n.value.strip("/._")) >= 2)


def _call_sites(ctx: Context, func: ast.AST) -> list[tuple[Context, ast.Call]] | None:
    """Every call of ``func`` in the project, or None when some mention of its name is no call
    found here (a call through another name, a reference handed on): the callers are not known."""
    name = func.name
    method = ctx.parent(func).__class__ is ast.ClassDef
    if method:
        here = [c for c in ctx.calls_named(name) if c.func.__class__ is ast.Attribute]
        sites = [(ctx, c) for c in here] + list(method_call_sites(ctx, name))
    elif ctx.parent(func) is ctx.tree:
        sites = [(ctx, c) for c in ctx.calls_named(name) if local_function(ctx, c) is func]
        sites += [*project_calls(ctx, name), *star_calls(ctx, name)]
    else:
        return None
    mention = re.compile(rf"\b{re.escape(name)}\b")
    define = re.compile(rf"\bdef[ \t]+{re.escape(name)}\(")
    texts = [t for p, t in ctx.project.files if p != ctx.path and name in t
             and (method or imports_module(t, module_stem(ctx.path)) or star_imports(t, ctx.path))]
    texts = [re.sub(r"#[^\n]*", "", t) for t in [ctx.source, *texts]]  # (a call left commented out runs nothing)
    texts = [_STRING.sub(lambda m: m.group(0) if m.group(0)[1:-1] == name else '""', t) for t in texts]
    # (a help text naming the function calls nothing; a string that is its name may: getattr(m, "test"))
    mentions = sum(len(mention.findall(t)) - len(define.findall(t)) for t in texts)
    return sites if sites and len(sites) == mentions else None


_STRING = lazy_compile(r"'[^'\n]*'|\"[^\"\n]*\"")


def _path_param(ctx: Context, load: ast.Call, func: ast.AST) -> tuple[str, int] | None:
    """The parameter of ``func`` the load's path is (``torch.load(path)``, ``torch.load(os.path.join(path))``)
    and its position for a caller (``self`` not counted)."""
    path = argument(load, "f", 0)
    if path is not None and path.__class__ is ast.Call and last_name(path.func) == "join" and len(path.args) == 1:
        path = path.args[0]
    if path is None or path.__class__ is not ast.Name:
        return None
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if path.id not in params or ctx.resolve(path, load) is not path:  # (a parameter rebound in the body is another file)
        return None
    shift = 1 if params[:1] in (["self"], ["cls"]) else 0
    return path.id, params.index(path.id) - shift


def star_imports(text: str, path: str) -> bool:
    """``from <module> import *`` of the module at ``path`` in this text."""
    return "import *" in text and re.search(rf"^from[ \t]+[\w.]*\b{re.escape(module_stem(path))}[ \t]+import[ \t]+\*", text, re.M) is not None


def _saved_before(other: Context, call: ast.Call, template: frozenset[str], param: tuple[str, int] | None,
                  savers: tuple[str, ...], ctx: Context, writers: frozenset[str] = frozenset()) -> bool:
    """Something earlier in the caller's scope wrote the file ``call`` makes the helper read."""
    scope = other.scope_of(call)
    passed = argument(call, *param) if param is not None else None
    passed_text = other.text(passed) if passed is not None else None
    for save in other.calls_named("save", *savers):
        if other.scope_of(save) is not scope or save.lineno >= call.lineno:
            continue
        if other.qualname(save.func) == "torch.save":
            target = argument(save, "f", 1)
            if passed_text is not None and target is not None and other.text(target) == passed_text \
                    or template and _template(other, target, save) == template:
                return True
            continue
        if last_name(save.func) not in savers:
            continue
        if other is ctx and last_name(save.func) in writers:
            return True  # train(epoch) saves to the global `model_file`, then test() reloads `model_file`
        if passed_text is not None and passed_text in {other.text(a) for a in [*save.args, *(k.value for k in save.keywords)]}:
            return True  # net.save_checkpoint(p) ... net.load_checkpoint(p)
        if template and template in _helper_templates(ctx, last_name(save.func)) | _helper_templates(other, last_name(save.func)):
            return True  # save_model(args, model, name) writing f'models/{name}.pt', then load_model(args, name)
    return False


def _saver_names(other: Context, ctx: Context) -> tuple[str, ...]:
    """Names of the save helpers defined in the load's file or the caller's."""
    names = {n.name for c in (ctx, other) for n in c.nodes.get(ast.FunctionDef, ()) if "save" in n.name.lower()
             and any(k.__class__ is ast.Call and c.qualname(k.func) == "torch.save" for k in ast.walk(n))}
    return tuple(sorted(names))


def _helper_templates(ctx: Context, name: str | None) -> set[frozenset[str]]:
    """The path templates the function ``name`` of this file saves to with ``torch.save``."""
    out = set()
    for func in ctx.nodes.get(ast.FunctionDef, ()):
        if func.name != name:
            continue
        for save in ctx.calls_to("torch.save"):
            if ctx.function_of(save) is func:
                template = _template(ctx, argument(save, "f", 1), save)
                if template:
                    out.add(template)
    return out


def _global_path(ctx: Context, load: ast.Call, func: ast.FunctionDef) -> str | None:
    """The module-level variable the load reads (``torch.load(model_file)`` in ``def test():``,
    ``model_file`` bound only at the top level of the script)."""
    path = argument(load, "f", 0)
    if path is None or path.__class__ is not ast.Name or ctx.parent(func) is not ctx.tree:
        return None
    bound = {n.id for n in ast.walk(func) if n.__class__ is ast.Name and n.ctx.__class__ is not ast.Load}
    params = {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}
    return None if path.id in bound | params else path.id


def _global_writers(ctx: Context, name: str | None) -> frozenset[str]:
    """Top-level functions of the file whose ``torch.save(..., <name>)`` writes the module-level
    path variable ``name`` (``def train(epoch): ... torch.save(model.state_dict(), model_file)``)."""
    if name is None:
        return frozenset()
    out = set()
    for save in ctx.calls_to("torch.save"):
        target = argument(save, "f", 1)
        func = ctx.function_of(save)
        if target.__class__ is ast.Name and target.id == name and func is not None and ctx.parent(func) is ctx.tree \
                and name not in {
                    n.id for n in ast.walk(func) if n.__class__ is ast.Name and n.ctx.__class__ is not ast.Load}:
            out.add(func.name)
    return frozenset(out)


def reloaded_after_callers_save(ctx: Context, load: ast.Call) -> bool:
    """The load sits in a helper whose every call in the project comes after the caller saved the
    file it reads, in the same function or script."""
    if "save" not in ctx.source and not ctx.project.save_files:
        return False
    func = ctx.function_of(load)
    if func is None or func.__class__ is not ast.FunctionDef or func.name.startswith("_") and func.name.endswith("__"):
        return False
    param = _path_param(ctx, load, func)
    template = frozenset() if param is not None else _template(ctx, argument(load, "f", 0), load)
    writers = _global_writers(ctx, _global_path(ctx, load, func)) if param is None else frozenset()
    if param is None and not template and not writers:
        return False
    sites = _call_sites(ctx, func)
    if sites is None:
        return False
    return all(_saved_before(o, c, template, param, tuple(sorted({*_saver_names(o, ctx), *writers})), ctx, writers)
               for o, c in sites)

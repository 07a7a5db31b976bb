"""Pinned loaders: whether the DataLoader a loop takes its batches from is built with
``pin_memory`` on - by its own arguments (a literal, an expression such as
``torch.cuda.is_available()``, a ``**kwargs`` dict, also one chosen by ``if cuda``), by a
function of this file or of the project that builds it, or, for a loader handed in as a
parameter, by what the callers pass (in this file, or in the modules that import it)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Binding, Context, argument, keyword, last_name
from torchwise.lint.semantics.callers import project_arguments
from torchwise.lint.semantics.configdefaults import default_off
from torchwise.lint.semantics.flagbranches import call_constants, selected_test, unselected_loaders
from torchwise.lint.semantics.instancecalls import instance_calls
from torchwise.lint.semantics.pinorigin import handed_option_off
from torchwise.lint.semantics.pinchoice import keyed_pin
from torchwise.lint.semantics.projectcode import function_verdict, parsed
from torchwise.lint.semantics.values import local_function

DATALOADER = "torch.utils.data.DataLoader"


def _truthy(node: AST) -> bool:
    """A ``pin_memory`` value: a constant as written; any expression (``torch.cuda.is_available()``,
    ``args.pin_mem``, ``self.pin_memory``) pins where it matters, on a GPU."""
    return bool(node.value) if node.__class__ is ast.Constant else True


def _dict_pin(ctx: Context, expr: AST | None, use: AST, depth: int = 2) -> bool | None:
    """``pin_memory`` in a ``**kwargs`` dict: a literal, ``dict(...)``, a name bound to one, or one
    chosen by a condition (``{"pin_memory": True} if cuda else {}``: pinned when on a GPU).
    None when the dict is not evident, False when it evidently has no ``pin_memory``."""
    value = ctx.resolve(expr, use)
    if value is None or depth <= 0:
        return None
    if value.__class__ is ast.IfExp:
        sides = [_dict_pin(ctx, value.body, use, depth - 1), _dict_pin(ctx, value.orelse, use, depth - 1)]
        return True if True in sides else (False if sides == [False, False] else None)
    if value.__class__ is ast.Call and last_name(value.func) == "dict":
        pin = keyword(value, "pin_memory")
        return _truthy(pin.value) if pin is not None else False
    if value.__class__ is ast.Dict:
        for key, v in zip(value.keys, value.values):
            if key is not None and key.__class__ is ast.Constant and key.value == "pin_memory":
                return _truthy(v)
        return False if all(k is not None for k in value.keys) else None
    return None


def pin_value(ctx: Context, call: ast.Call, depth: int = 3) -> bool | None:
    """True/False for ``DataLoader(..., pin_memory=...)`` (absent: False), also through
    ``**loader_args`` dicts written in the file; None for ``**kwargs`` that are not evident.
    A value that is off on the default path is False: a config default (``config.test.dataloader.
    pin_memory``), an option off unless set (``args.pin_memory``, also handed down through a
    parameter of the loader's builder); ``pin_memory=trn_loader.pin_memory`` is what that loader is."""
    pin = argument(call, "pin_memory", 7)
    if pin is not None:
        if pin.__class__ is ast.Attribute and pin.attr == "pin_memory" and pin.value.__class__ in (ast.Name, ast.Attribute):
            # DataLoader(trn_loader.dataset + extra, ..., pin_memory=trn_loader.pin_memory): a loader rebuilt from
            # another is what that one is (unknown when lint cannot tell, for a *loader name)
            source = loader_pinned(ctx, pin.value, call, depth) if depth > 0 else None
            if source is not None or "loader" in (last_name(pin.value) or "").lower():
                return source
        return _truthy(pin) and not default_off(ctx, pin) and handed_option_off(ctx, pin, call) is None
    for k in call.keywords:
        if k.arg is None:
            found = _dict_pin(ctx, k.value, call)
            if found is not False:
                return found
    return False


def pinned_loaders_line(func: AST, dropped: set[int] | None = None) -> int | None:
    """A function that builds DataLoaders, all with ``pin_memory=True``, and returns something:
    the line of its first loader; else None. ``dropped``: loaders a call rules out (:mod:`flagbranches`)."""
    loaders = [n for n in ast.walk(func) if n.__class__ is ast.Call and last_name(n.func) == "DataLoader"
               and (dropped is None or id(n) not in dropped)]
    if not loaders or not any(n.__class__ is ast.Return and n.value is not None for n in ast.walk(func)):
        return None
    for call in loaders:
        pins = [k.value for k in call.keywords if k.arg == "pin_memory"]
        if not pins:
            pins = next((p for k in call.keywords if k.arg is None for p in [_splat_pins(func, k.value)] if p), [])
        if not pins or any(pin is None or pin.__class__ is ast.Constant and not pin.value for pin in pins):
            return None  # an expression (pin_memory=self.pin_memory, =torch.cuda.is_available()) pins on a GPU
    return loaders[0].lineno


def _splat_pins(func: AST, value: AST) -> list[AST | None]:
    """The ``pin_memory`` values of a ``**`` splat: of the dict written in place, or of each
    ``dict(...)``/``{...}`` the function assigns to ``params`` for ``**params`` (one per branch:
    ``if sampler: kw = {..., 'pin_memory': pin_memory} else: kw = {...}``; None where one has none)."""
    if value.__class__ is not ast.Name:
        return [_star_pin(value)]
    found = [n.value for n in ast.walk(func) if n.__class__ is ast.Assign and len(n.targets) == 1
             and n.targets[0].__class__ is ast.Name and n.targets[0].id == value.id]
    out = []
    for made in found:
        if made.__class__ is ast.Call and last_name(made.func) == "dict" and not made.args:
            made = ast.Dict(keys=[ast.Constant(k.arg) for k in made.keywords if k.arg],
                            values=[k.value for k in made.keywords if k.arg])
        out.append(_star_pin(made))
    return out


def _star_pin(value: AST) -> AST | None:
    """``pin_memory`` in a ``**`` dict written in place: ``**{'pin_memory': True}``, or one
    chosen by a flag, ``**({'num_workers': 2, 'pin_memory': True} if cuda else {})`` (pinned
    when on a GPU)."""
    sides = [value.body, value.orelse] if value.__class__ is ast.IfExp else [value]
    for side in sides:
        if side.__class__ is ast.Dict:
            for key, v in zip(side.keys, side.values):
                if key is not None and key.__class__ is ast.Constant and key.value == "pin_memory":
                    return v
    return None


def _combine(verdicts: list[bool | None]) -> bool | None:
    """One loader unpinned: False; every one pinned: True; else unknown."""
    if False in verdicts:
        return False
    return True if verdicts and all(v is True for v in verdicts) else None


def loader_pinned(ctx: Context, expr: AST | None, use: AST, depth: int = 4) -> bool | None:
    """Is the loader ``expr`` holds (at ``use``) pinned? None when it cannot be told."""
    if expr is None or depth <= 0:
        return None
    cls = expr.__class__
    if cls is ast.Call:
        return _call_pinned(ctx, expr, -1, depth)
    if cls is ast.Subscript:
        return _item_pinned(ctx, expr, use, depth - 1)
    if cls in (ast.List, ast.Tuple) and expr.elts:  # for ds in [self.dv_set, self.tt_set]: every one of them
        return _combine([loader_pinned(ctx, e, use, depth - 1) for e in expr.elts])
    if cls is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        value = ctx.single_self_value(expr, use)
        if value is None:
            unpacked = _self_unpacked(ctx, expr, use)  # self.loader, self.class_num = get_train_loader(conf)
            return _call_pinned(ctx, unpacked[0], unpacked[1], depth - 1) if unpacked is not None else None
        return loader_pinned(ctx, value, value, depth - 1)
    if cls is not ast.Name:
        return None
    b = ctx.binding_at(expr.id, use)
    if b is None:
        return None
    if b.kind in ("assign", "unpack") and b.value is not None:
        if b.value.__class__ is ast.Call:
            return _call_pinned(ctx, b.value, b.index if b.kind == "unpack" else -1, depth)
        if b.kind == "assign":
            return loader_pinned(ctx, b.value, b.node, depth - 1)
    if b.kind == "param":
        return _param_pinned(ctx, b, depth - 1)
    if b.kind == "for" and b.value is not None:
        # for name, loader in zip(names, loaders) / for loader in loaders: an element of a collection
        it = b.value
        if it.__class__ is ast.Call and last_name(it.func) == "zip" and 0 <= b.index < len(it.args):
            it = it.args[b.index]
        elif it.__class__ is ast.Call and last_name(it.func) == "enumerate" and b.index == 1 and it.args:
            it = it.args[0]
        elif b.index != -1:
            return None
        return loader_pinned(ctx, it, b.node if b.node.__class__ is not ast.comprehension else it, depth - 1)
    return None


def _self_unpacked(ctx: Context, expr: ast.Attribute, use: AST) -> tuple[ast.Call, int] | None:
    """``self.<attr>`` assigned in its class only by unpacking a call of one function (``self.loader,
    self.class_num = get_train_loader(conf)``, also again to renew it): the call and the attribute's
    place in the tuple."""
    cls = ctx.class_of(use)
    if cls is None or ctx.self_attr_values(cls, expr.attr):
        return None
    found = []
    methods = [item for item in cls.body if item.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef)]
    for node in (n for m in methods for n in ctx.walk_body(m.body)):
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Tuple \
                and node.value.__class__ is ast.Call:
            for i, t in enumerate(node.targets[0].elts):
                if t.__class__ is ast.Attribute and t.attr == expr.attr and t.value.__class__ is ast.Name and t.value.id == "self":
                    found.append((node.value, i))
    if len(found) > 1 and len({(last_name(c.func), i) for c, i in found}) > 1:
        return None  # (the same builder called again to renew the loader, self.tr_set, ... = load_dataset(...): one answer)
    return found[0] if found else None


def _item_pinned(ctx: Context, expr: ast.Subscript, use: AST, depth: int) -> bool | None:
    """A loader kept in a dict or list: ``dataloaders[phase]`` where ``dataloaders = {x:
    DataLoader(...) for x in splits}`` (or a literal), and items stored into it later
    (``dataloaders['DG'] = DataLoader(...)``). With a constant key, the item stored under that key
    when there is one; else every loader the collection holds."""
    base = expr.value
    key = expr.slice.value if expr.slice.__class__ is ast.Constant else None
    if base.__class__ is ast.Attribute and base.value.__class__ is ast.Name and base.value.id == "self":
        # self.dataloaders['train'] with self.dataloaders = {x: DataLoader(..., pin_memory=(x == 'train')) for x in splits}
        held = ctx.single_self_value(base, use)
        keyed = keyed_pin(ctx, held, key) if key is not None and held is not None else None
        return keyed if keyed is not None or depth <= 0 or held.__class__ is not ast.DictComp else \
            loader_pinned(ctx, held.value, held, depth)
    b = ctx.binding_at(base.id, use) if base.__class__ is ast.Name else None
    if b is None or b.kind != "assign" or b.value is None or depth <= 0:
        return None
    keyed = keyed_pin(ctx, b.value, key) if key is not None else None
    if keyed is not None:
        return keyed
    items: list[tuple[AST | None, AST, AST]] = []  # (key, value, where)
    held = b.value
    if held.__class__ is ast.Call and ctx.qualname(held.func) != DATALOADER:
        return _call_pinned(ctx, held, -1, depth)  # loaders = utils.get_data_loaders(...); loaders[0]
    if held.__class__ is ast.DictComp:
        items.append((None, held.value, b.node))
    elif held.__class__ in (ast.ListComp, ast.GeneratorExp):
        items.append((None, held.elt, b.node))
    elif held.__class__ is ast.Dict:
        items += [(k, v, b.node) for k, v in zip(held.keys, held.values) if k is not None]
    elif held.__class__ in (ast.List, ast.Tuple):
        items += [(None, v, b.node) for v in held.elts]
    for node in ctx.nodes.get(ast.Assign, ()):
        target = node.targets[0]
        if (len(node.targets) == 1 and target.__class__ is ast.Subscript and target.value.__class__ is ast.Name
                and target.value.id == base.id and ctx.binding_at(base.id, node) is b):
            items.append((target.slice, node.value, node))
    if key is not None:
        keyed = [i for i in items if i[0].__class__ is ast.Constant and i[0].value == key]
        items = keyed or items
    return _combine([loader_pinned(ctx, value, where, depth) for _, value, where in items])


def _call_pinned(ctx: Context, call: ast.Call, index: int, depth: int, config: bool = True) -> bool | None:
    """The loader a call returns (element ``index`` of a returned tuple; -1: the whole value)."""
    if ctx.qualname(call.func) == DATALOADER:
        return pin_value(ctx, call, depth - 1)
    target = local_function(ctx, call)
    if target is not None and target.__class__ is not ast.Lambda:
        verdicts = []
        dropped = unselected_loaders(target, call_constants(target, call)) if target.__class__ is ast.FunctionDef else None
        for node in ctx.walk_body(target.body):
            if node.__class__ is ast.Return and node.value is not None and (dropped is None or id(node) not in dropped):
                value = node.value
                if index >= 0 and value.__class__ in (ast.Tuple, ast.List):
                    value = value.elts[index] if index < len(value.elts) else None
                verdicts.append(loader_pinned(ctx, value, node, depth - 1))
        if target.__class__ is ast.FunctionDef and flag_unset(target, call):
            return False  # get_data_loader(ds, 32) of def get_data_loader(ds, bs, cuda=False): pinned only with cuda=True
        verdict = _combine(verdicts)
        return True if verdict is None and handed_pin(ctx, call) else verdict
    func = call.func
    module = func.value.id if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name else None
    if module is not None and ctx.imports.get(module) is not None:
        module = ctx.imports[module].rsplit(".", 1)[-1]  # from pkg import data_setup as ds
    where = function_verdict(ctx.project, "loader_blocks", last_name(func), pinned_loaders_line, module=module)
    if not where and call.keywords or not where and any(a.__class__ is ast.Constant for a in call.args):
        # create_dataloader(hp, args, train=True): the loaders of the branches that call selects
        where = function_verdict(ctx.project, "loader_blocks", last_name(func), selected_test(call, pinned_loaders_line),
                                 module=module, variant=(ctx.path, call.lineno, call.col_offset))
    if where:  # train_loader, val_loader = data_setup.get_loaders(...): a project function that pins them
        return not _flag_left_off(ctx, call, where, last_name(func) or "") and not (
            config and _config_off(ctx, where, last_name(func) or "")) and not _handed_off(ctx, call)
    return True if handed_pin(ctx, call) else None


def handed_pin(ctx: Context, call: ast.Call) -> bool:
    """The call hands the function that builds the loader ``pin_memory`` itself, as a keyword
    (``get_loaders(cfg, pin_memory=True)``) or in a ``**kwargs`` dict (``kwargs = {'num_workers':
    4, 'pin_memory': True}``, ``make_data_loader(args, **kwargs)``): a builder that takes the
    setting passes it on to its DataLoaders."""
    for k in call.keywords:
        if k.arg == "pin_memory":
            return _truthy(k.value) and not default_off(ctx, k.value) and handed_option_off(ctx, k.value, call) is None
        if k.arg is None and _dict_pin(ctx, k.value, call):
            return True
    return False


def _handed_off(ctx: Context, call: ast.Call) -> bool:
    """The call hands the builder ``pin_memory`` off: ``get_loaders(..., pin_memory=False)``, or an
    option that is off unless set (``pin_memory=args.pin_memory``, ``default=False``)."""
    pin = keyword(call, "pin_memory")
    if pin is None:
        return False
    return pin.value.__class__ is ast.Constant and not pin.value.value or handed_option_off(ctx, pin.value, call) is not None


def _config_off(ctx: Context, where: str, name: str) -> bool:
    """The project function pins with a config setting whose default is False
    (``pin_memory=config.test.dataloader.pin_memory``, ``config.test.dataloader.pin_memory = False``)."""
    path = where.rsplit(":", 1)[0]
    for block in ctx.project.loader_blocks.get(name, ()):
        if block.path == path and ".pin_memory" in block.text:
            func = parsed(block)
            return func is not None and any(
                k.arg == "pin_memory" and default_off(ctx, k.value) for n in ast.walk(func) if n.__class__ is ast.Call
                for k in n.keywords)
    return False


def _flag_left_off(ctx: Context, call: ast.Call, where: str, name: str) -> bool:
    """The project function pins only when a flag parameter is set (``**({'pin_memory': True} if
    cuda else {})`` with ``cuda=False`` by default) and ``call`` leaves it at its false default."""
    path = where.rsplit(":", 1)[0]
    for block in ctx.project.loader_blocks.get(name, ()):
        if block.path != path:
            continue
        func = parsed(block)
        return func is not None and func.__class__ is ast.FunctionDef and flag_unset(func, call)
    return False


def flag_unset(func: ast.FunctionDef, call: ast.Call) -> bool:
    """``func`` pins only when a flag parameter with a false default is set, and ``call`` leaves it off."""
    params = [a.arg for a in func.args.args]
    defaults = zip(params[len(params) - len(func.args.defaults):], func.args.defaults)
    shift = 1 if params[:1] == ["self"] else 0
    off = set()
    for name, default in defaults:  # flags left off by this call: the cheap test first
        if default.__class__ is ast.Constant and not default.value:
            given = argument(call, name, params.index(name) - shift)
            if given is None or given.__class__ is ast.Constant and not given.value:
                off.add(name)
    if not off:
        return False
    return any(n.__class__ is ast.IfExp and n.test.__class__ is ast.Name and n.test.id in off and n.body.__class__ is ast.Dict
               and any(k.__class__ is ast.Constant and k.value == "pin_memory" for k in n.body.keys) for n in ast.walk(func))


def _param_pinned(ctx: Context, binding: Binding, depth: int) -> bool | None:
    """A loader handed in as a parameter: what every caller passes (calls of this file, else the
    modules of the project that import this one)."""
    func = ctx.parent(ctx.parent(binding.node)) if ctx.parent(binding.node) is not None else None
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return None
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    method = ctx.parent(func).__class__ is ast.ClassDef and params[:1] in (["self"], ["cls"])
    index = params.index(binding.name) if binding.name in params else None
    verdicts = []
    owner = ctx.parent(func)
    if func.name == "__init__" and owner.__class__ is ast.ClassDef and method:
        # self.train_ds = train_ds in __init__: what the constructor calls of the file hand in
        calls = [c for c in ctx.calls_named(owner.name) if c.func.__class__ is ast.Name and ctx.local_classes.get(owner.name) is owner]
        for call in calls:
            value = argument(call, binding.name, index - 1 if index is not None and index >= 1 else None)
            verdicts.append(loader_pinned(ctx, value, call, depth) if value is not None else None)
    if func.name == "__call__" and owner.__class__ is ast.ClassDef and method and index:
        # evaluator = Evaluator(...); evaluator(net, loader): the calls of the file's instances of the class
        for call in instance_calls(ctx, owner):
            value = argument(call, binding.name, index - 1)
            verdicts.append(loader_pinned(ctx, value, call, depth) if value is not None else None)
    for call in ctx.calls_named(func.name):
        if local_function(ctx, call) is not func:
            continue
        shift = 1 if method and call.func.__class__ is ast.Attribute else 0
        value = argument(call, binding.name, index - shift if index is not None and index >= shift else None)
        verdicts.append(loader_pinned(ctx, value, call, depth) if value is not None else None)
    if not verdicts and depth > 0:
        for other, value, call in project_arguments(ctx, func, binding.name, star=True):
            verdicts.append(loader_pinned(other, value, call, depth))
    # one caller that hands in a pinned loader is enough: non_blocking=True helps it and costs
    # the others nothing (a copy from pageable memory is synchronous either way)
    return True if True in verdicts else _combine(verdicts)


def unpinned_helper_calls(ctx: Context) -> list[ast.Call]:
    """Calls of a loader-building helper (of the file or the project) that pins only when a flag
    parameter is set, which leave that flag at its false default: ``utils.get_data_loader(ds,
    32)`` of ``def get_data_loader(ds, bs, cuda=False)`` building ``DataLoader(..., **({'pin_memory':
    True} if cuda else {}))``."""
    out = []
    names = set(ctx.project.loader_blocks)
    if "pin_memory" in ctx.source:
        names |= {f.name for f in ctx.tree.body if f.__class__ is ast.FunctionDef and "pin_memory" in ctx.text(f)}
    for name in sorted(names):
        for call in ctx.calls_named(name):
            target = local_function(ctx, call)
            if target is not None:
                if target.__class__ is ast.FunctionDef and flag_unset(target, call) and ctx.function_of(call) is not target:
                    out.append(call)
            elif _call_pinned(ctx, call, -1, 2, config=False) is False and not _handed_off(ctx, call):
                # (a config default, an option handed down: TW203 reports them where the loader takes them)
                out.append(call)
    return out

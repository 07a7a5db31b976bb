"""A script that offers a seed option (``--seed``, in its own parser or in a parser function of
another module of the project it calls) and never uses it: no seeding call, no read of the
option, no hand-over of the parsed options to code that could seed."""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.engine.lazyre import lazy_compile

_SEED_OPTION = lazy_compile(r"""add_argument\(\s*['"]--seed['"]""")
OFFERED = "this script offers a seed option but seeds no generator with it: runs differ whatever seed is given"
SEED_FROM_OPTION = ("seed every generator from the option (torch.manual_seed(args.seed), np.random.seed, random.seed) "
                    "or call torchwise.seed_everything")
_PASSES = frozenset({"print", "str", "repr", "format", "info", "debug", "warning", "write", "pprint"})


def _parser_call(ctx: Context) -> ast.Call | None:
    """``parser.add_argument('--seed', ...)`` of this file, or the call of a project module's parser
    function whose text offers ``--seed`` (``args = arg_parse()`` with ``from arguments import arg_parse``)."""
    for call in ctx.calls_named("add_argument"):
        if call.args and call.args[0].__class__ is ast.Constant and call.args[0].value == "--seed":
            return call
    for node in ctx.tree.body:
        if node.__class__ is not ast.ImportFrom or node.level or not node.module:
            continue
        stem = node.module.rsplit(".", 1)[-1]
        for alias in node.names:
            name = alias.asname or alias.name
            calls = [c for c in ctx.calls_named(name) if c.func.__class__ is ast.Name]
            if calls and any(os.path.splitext(os.path.basename(p))[0] == stem and f"def {alias.name}(" in t
                             and _SEED_OPTION.search(t) for p, t in ctx.project.files):
                return calls[0]
    return None


def unused_seed_option(ctx: Context) -> ast.Call | None:
    """The call that offers the unused ``--seed`` of a ``__main__`` script, or None."""
    src = ctx.source
    if "__main__" not in src:
        return None
    if "seed" in src.replace("--seed", "") and not _SEED_OPTION.search(src):
        return None  # (any other mention of a seed - args.seed, config['seed'], a helper - may use it)
    offer = _parser_call(ctx)
    if offer is None or _mentions_seed(src):
        return None  # (beyond the option's own help text: 'random seed (default: 1)')
    names = {t.id for n in ctx.nodes.get(ast.Assign, ()) if n.value.__class__ is ast.Call
             and "arg" in (last_name(n.value.func) or "").lower() for t in n.targets if t.__class__ is ast.Name}
    local = {f.name for f in ctx.nodes.get(ast.FunctionDef, ())}
    for call in ctx.nodes.get(ast.Call, ()):
        handed = [a for a in [*call.args, *(k.value for k in call.keywords)] if _whole(a, names)]
        if handed and last_name(call.func) not in _PASSES and not (call.func.__class__ is ast.Name and call.func.id in local) \
                and not (_project_callee(ctx, call) and not project_names_seed(ctx)):
            return None  # the options go to code that may seed from them (not: project code that never names a seed)
    return offer


def _mentions_seed(text: str) -> bool:
    """``seed`` named in ``text`` beyond its ``add_argument('--seed', ...)`` calls (their help text included)."""
    if "seed" not in text:
        return False
    for match in _SEED_OPTION.finditer(text):
        depth, end = 0, match.end() - 1  # at the "(" of add_argument(
        start = text.index("(", match.start())
        for end in range(start, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                break
        text = text[:match.start()] + " " * (end + 1 - match.start()) + text[end + 1:]
    return "seed" in text.replace("--seed", "")


def project_names_seed(ctx: Context) -> bool:
    """Does a file of the project name a seed beyond its ``--seed`` options? (once per project)"""
    key = ("sem:project-names-seed",)
    found = ctx.project.answers.get(key)
    if found is None:
        found = ctx.project.answers[key] = any(_mentions_seed(t) for _, t in ctx.project.files)
    return found


def _project_callee(ctx: Context, call: ast.Call) -> bool:
    """The call runs a class or function imported from a module of the linted project
    (``Runner(env, args)`` with ``from runner import Runner``)."""
    q = ctx.qualname(call.func)
    if not q or "." not in q or not ctx.project.files:
        return False
    tail = q.rsplit(".", 1)[0].replace(".", "/")
    return any(p.replace(os.sep, "/").endswith((f"/{tail}.py", f"/{tail}/__init__.py")) for p, _ in ctx.project.files)


def _whole(node: AST, names: set[str]) -> bool:
    if node.__class__ is ast.Call and last_name(node.func) == "vars" and node.args:
        node = node.args[0]
    if node.__class__ is ast.Starred:
        node = node.value
    return node.__class__ is ast.Name and node.id in names

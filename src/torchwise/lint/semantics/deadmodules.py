"""Whole modules for the dead-code analysis (:mod:`torchwise.lint.semantics.deadcode`): which modules
nobody imports still run (a script with no ``__main__`` guard: ``print(...)`` or a loop at its top
level), which are named by the project's configuration rather than imported (Hydra's ``_target_:
agent.models.Critic``), and which are left-over modules - not imported, not run, named nowhere -
whose code never runs. And the project's other text files (configs, shell scripts, notebooks,
READMEs), read once and only when a name seems unused, so a class named only in a config is alive.
"""

from __future__ import annotations

import ast
import os
import re

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.deadtext import library_attribute
from torchwise.lint.semantics.stemmentions import may_name_module

# what other than Python may name a module, a class or a function of the project
_REFERENCE_EXT = (".yaml", ".yml", ".json", ".sh", ".bash", ".cfg", ".ini", ".toml", ".txt", ".md", ".rst", ".ipynb",
                  ".gin", ".conf", ".jsonnet", ".slurm", ".job")
_REFERENCE_NAMES = frozenset({"Makefile", "Dockerfile", "Procfile"})
_SKIP = frozenset({".git", "__pycache__", "node_modules", "site-packages", ".venv", "venv", ".tox", "build", "dist"})
_MAX_FILE = 2_000_000
_MAX_FILES = 3000
_MAX_TOTAL = 40_000_000
# an installable package: its modules are an API for code outside the project
_PACKAGE_FILES = ("setup.py", "pyproject.toml", "setup.cfg")


def reference_texts(ctx: Context) -> list[tuple[str, str]] | None:
    """The project's text files that are not Python (configs, scripts, notebooks, docs), as
    ``(path, text)``, read once per project; None when they are too many or too large to read
    (then every name counts as possibly named there)."""
    facts = ctx.project
    if "deadmodules:refs" in facts.answers:
        return facts.answers["deadmodules:refs"]
    found: list[tuple[str, str]] | None = []
    total = 0
    root = facts.root
    if root and os.path.isdir(root):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = [d for d in dirnames if d not in _SKIP and not d.startswith(".")]
            for name in filenames:
                if not (name.endswith(_REFERENCE_EXT) or name in _REFERENCE_NAMES):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    size = os.path.getsize(path)
                    if size > _MAX_FILE:
                        continue  # a data file, not a config
                    total += size
                    if total > _MAX_TOTAL or len(found) >= _MAX_FILES:
                        found = None
                        break
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        found.append((path, fh.read()))
                except OSError:
                    continue
            if found is None:
                break
    facts.answers["deadmodules:refs"] = found
    return found


_DOCS = (".md", ".rst", ".txt")


def named_in_references(ctx: Context, name: str, docs: bool = False, code: bool = False) -> bool:
    """``name`` occurs as a word in a text file of the project that is not Python (or those files
    could not all be read): a config, a shell script, a notebook - with ``docs``, also a README
    or other prose (which names methods, ``DANN``, more often than it calls functions). With
    ``code``, a function of a library module (``np.load(...)`` in a notebook's cell) names no
    function or method of the project."""
    refs = reference_texts(ctx)
    if refs is None:
        return True
    word = None
    for path, text in refs:
        if name in text and (docs or not path.endswith(_DOCS)):
            word = word or re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")
            if any(not (code and m.start() and text[m.start() - 1] == "." and library_attribute(text, m.start() - 1))
                   for m in word.finditer(text)):
                return True
    return False


def configured_module(ctx: Context, stem: str) -> bool:
    """A text file of the project names the module by a dotted path to one of its members
    (``_target_: agent.sac_models.DoubleQCritic``, ``python -m tools.convert``): it is loaded by
    that name, as if imported."""
    refs = reference_texts(ctx)
    if refs is None:
        return True
    pattern = None
    for _, text in refs:
        if stem in text:
            pattern = pattern or re.compile(r"(?<![\w/\\-])(?:[A-Za-z_]\w*\.)*" + re.escape(stem) + r"\.(?!py\b)[A-Za-z_]\w*")
            if pattern.search(text):
                return True
    return False


def runs_as_script(ctx: Context) -> bool:
    """The module does work at its top level, outside any ``if``/``try``: it prints, loops, or
    calls a function or class it defines itself (``main()``, ``cpu_test()``) - a script run by
    name, with no ``__main__`` guard. Set-up calls a library module makes at import
    (``warnings.filterwarnings``, ``sys.path.append``, a registry's ``register(...)``) are none."""
    found = ctx._cache.get("deadmodules:script")
    if found is None:
        own = {s.name for s in ctx.tree.body if s.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)}
        found = False
        for stmt in ctx.tree.body:
            if stmt.__class__ in (ast.For, ast.While) and any(n.__class__ is ast.Call for n in ast.walk(stmt)):
                found = True
            elif stmt.__class__ in (ast.Expr, ast.Assign) and stmt.value.__class__ is ast.Call:
                func = stmt.value.func
                found = func.__class__ is ast.Name and (func.id == "print" or func.id in own)
            if found:
                break
        ctx._cache["deadmodules:script"] = found
    return found


def left_over(ctx: Context) -> bool:
    """No file of the project imports this module (the caller checked), it is no script and no
    package's ``__init__``, no other file of the project names it (no Python file, config, shell
    script or notebook: ``python -m``, a dotted path, a module name in a list; a README only in a
    command or an import), the project
    imports no module by a computed name, it is no installable package (``setup.py`` /
    ``pyproject.toml`` at or above the module's folder: its modules are an API), and another
    module of its folder is imported by the project (``gan_losses`` of a ``functions/`` folder
    whose ``dim_losses`` nobody uses): a left-over module, whose code never runs."""
    found = ctx._cache.get("deadmodules:leftover")
    if found is None:
        found = _left_over(ctx)
        ctx._cache["deadmodules:leftover"] = found
    return found


def _left_over(ctx: Context) -> bool:
    name = os.path.basename(ctx.path)
    stem = name[:-3]
    if name == "__init__.py" or not stem.isidentifier() or "__main__" in ctx.source or not _definitions_only(ctx.tree.body):
        return False
    if any(s.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and s.name in ("main", "run", "cli") for s in ctx.tree.body):
        return False  # an entry point a launcher calls (a console script, `python -c "...main()"`)
    facts = ctx.project
    folder = os.path.dirname(ctx.path)
    if any(os.path.basename(p) in _PACKAGE_FILES and folder.startswith(os.path.dirname(p)) for p, _ in facts.files):
        return False  # an installable package (setup.py above it)
    if any(("import_module(" in t or "__import__(" in t or "run_path(" in t or "exec(" in t) for _, t in facts.files):
        return False  # modules picked by a computed name
    package = os.path.basename(folder)
    if any(p != ctx.path and stem in t and may_name_module(ctx, t, stem, package) for p, t in facts.files):
        return False  # named somewhere (an import, a string, a list of modules; not `vae = ...`, `torch.distributions`)
    if _installable(ctx, folder) or named_in_references(ctx, stem) or _run_in_docs(ctx, stem):
        return False
    siblings = {os.path.basename(p)[:-3] for p, _ in facts.files
                if os.path.dirname(p) == folder and p != ctx.path and not p.endswith("__init__.py")}
    return any(_imported_stem(facts.files, s, ctx.path) for s in siblings)


_QUIET_CALLS = frozenset({"filterwarnings", "simplefilter", "getLogger", "append", "insert", "register", "use", "setdefault",
                          "namedtuple", "TypeVar", "compile", "join", "dirname", "abspath"})


def _run_in_docs(ctx: Context, stem: str) -> bool:
    """A README or other prose of the project runs or imports the module in a command or code
    (``python tools/convert.py``, ``python -m pkg.convert``, ``from convert import x``): its user
    does. A mention in prose (``use auxiliaries_nofaiss.py to replace auxiliaries.py``: a drop-in
    the user would have to wire in by editing the imports) runs nothing."""
    refs = reference_texts(ctx)
    if refs is None:
        return True
    pattern = None
    for path, text in refs:
        if stem in text and path.endswith(_DOCS):
            pattern = pattern or re.compile(r"(?:python[\d.]*[ \t][^\n]*?|-m[ \t]+[\w.]*?|^[ \t>]*(?:from|import)[ \t]+[\w.]*?)\b"
                                            + re.escape(stem) + r"\b", re.M)
            if pattern.search(text):
                return True
    return False


def _definitions_only(body: list[ast.stmt]) -> bool:
    """The statements only import, define and bind (``EPS = 1e-8``, ``logger =
    logging.getLogger(__name__)``; an ``if``/``try`` around imports): a module to import, no
    script - a statement doing anything else (``args = parser.parse_args()``, ``trainer.cuda()``,
    a loop) may be a script run by name."""
    for stmt in body:
        kind = stmt.__class__
        if kind in (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Pass):
            continue
        if kind is ast.Expr and stmt.value.__class__ is ast.Constant:
            continue
        if kind in (ast.Assign, ast.AnnAssign, ast.Expr):
            calls = [n for n in ast.walk(stmt) if n.__class__ is ast.Call]
            if all((c.func.attr if c.func.__class__ is ast.Attribute else getattr(c.func, "id", "")) in _QUIET_CALLS
                   or c.func.__class__ is ast.Name and c.func.id[:1].isupper() for c in calls):
                continue  # constants, a logger, a namedtuple, an object built from a class
            return False
        if kind is ast.Try:
            if _definitions_only(stmt.body) and all(_definitions_only(h.body) for h in stmt.handlers):
                continue
            return False
        if kind is ast.If and _definitions_only(stmt.body) and _definitions_only(stmt.orelse):
            continue
        return False
    return True


def _installable(ctx: Context, folder: str) -> bool:
    refs = reference_texts(ctx) or []
    return any(os.path.basename(p) in _PACKAGE_FILES and os.path.abspath(folder).startswith(os.path.dirname(p)) for p, _ in refs)


def _imported_stem(files: tuple[tuple[str, str], ...], stem: str, own: str, depth: int = 1) -> bool:
    """A file of the project that runs imports a module named ``stem`` (text tests): a script
    (``__main__``, ``parse_args()`` at its top) or, ``depth`` levels up, a module such a file
    imports; never ``own``."""
    pattern = None
    for p, t in files:
        if p != own and stem in t and "import" in t:
            pattern = pattern or re.compile(r"^[ \t]*(?:from[ \t]+(?:\.+[ \t]*)?[\w.]*\b" + re.escape(stem) + r"\b[ \t]+import|(?:from[ \t]+[\w.]+[ \t]+)?"
                                            r"import[ \t][^\n]*\b" + re.escape(stem) + r"\b)", re.M)
            if pattern.search(t) and ("__main__" in t or _TOP_ARGS.search(t) is not None or depth > 0 and _imported_stem(
                    files, os.path.basename(p)[:-3], own, depth - 1)):
                return True
    return False


_TOP_ARGS = lazy_compile(r"^\S[^\n]*\bparse_args\(", re.M)

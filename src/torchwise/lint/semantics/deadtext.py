"""Text tests behind the dead-code analysis (:mod:`torchwise.lint.semantics.deadcode`): whether
another module of the project really uses a name - not only in an import or a comment, not a copy
of its own, not an import that resolves to another file of the same name - read from the source
text, before any module is parsed."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.files import is_test_path

# names a framework calls by itself (a test runner, torch.hub, an entry point): never dead
CALLED_BY_NAME = lazy_compile(r"^(?:test|main$|setup$|run$|cli$)")


def called_by_name(name: str, path: str) -> bool:
    """A framework calls ``name`` by itself: an entry point's name (``main``, ``run``), or a
    ``test*`` function of a test module (``test_*.py``, ``*_test.py``, a ``tests/`` folder) that
    pytest collects. A ``test_vae_epoch`` of a training script is no test: pytest never collects
    it, only a call runs it."""
    if not CALLED_BY_NAME.match(name):
        return False
    if not name.startswith("test") or name in ("main", "setup", "run", "cli"):
        return True
    return is_test_path(path)


def owners_look_local(ctx: Context, path: str, text: str, word: re.Pattern[str]) -> bool:
    """Read from the indentation: every use of the name in ``text`` lies in a module-level ``def``
    or ``class`` (or an ``if __name__`` block) whose own name no other module of the project
    mentions - the only uses that can turn out to be dead code of that module."""
    for m in word.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if text.startswith(("from ", "import "), start) or "#" in text[start:m.start()]:
            continue
        head = column_zero_line(text, start)
        if head.startswith("if __name__"):
            continue
        for kind in ("def ", "async def ", "class "):
            if head.startswith(kind):
                owner = head[len(kind):].split("(")[0].split(":")[0].strip()
                break
        else:
            return False  # module-level code (or unreadable by indentation): a use
        if not owner or called_by_name(owner, path) or any(
                p != path and owner in t and lines_naming(t, owner) for p, t in ctx.project.files):
            return False
    return True


def column_zero_line(text: str, start: int) -> str:
    """The nearest line at or above ``start`` that starts at column 0 with code (a ``def``, a
    ``class``, an ``if``, a statement)."""
    while start > 0:
        line = text[start:text.find("\n", start) if text.find("\n", start) >= 0 else len(text)]
        if line[:1] not in ("", " ", "\t", "#", "@", ")", "]", "}"):
            return line
        start = text.rfind("\n", 0, start - 1) + 1
    return text[:text.find("\n")] if "\n" in text else text


def resolves_elsewhere(ctx: Context, stem: str, m: re.Match[str]) -> bool:
    """The import ``m`` names the module ``stem`` through a package (``from utils import misc``,
    ``from utils.misc import x``, ``import utils.misc``) that is not this file's folder, and another
    file of the project sits at that package path (``utils/misc.py``): it imports that file."""
    if m.group(1) is not None:
        package = m.group(1).rstrip(".")
    elif m.group(2) is not None:
        package = m.group(2)  # from utils import misc
    else:
        head = m.group(3).rstrip().rsplit(" ", 1)[-1].rstrip(",")  # import utils.misc
        package = head.rstrip(".") if head.endswith(".") else ""
    if not package or package.startswith(".") or package.rsplit(".", 1)[-1] == os.path.basename(os.path.dirname(ctx.path)):
        return False
    tail = "/" + package.replace(".", "/") + "/" + stem + ".py"
    return any(("/" + p.replace("\\", "/")).endswith(tail) for p, _ in ctx.project.files if p != ctx.path)


def own_copy(ctx: Context, text: str, name: str, stem: str) -> bool:
    """The other module uses a copy of ``name`` that is not this module's: it defines the name
    itself at its top (``def farthest_point_sample`` copied into three utility modules; ``class
    PointNetSetAbstraction`` in two), or imports it from another module of that name's copies
    (``from pointnet_util import farthest_point_sample`` beside ``pointnet2_utils.py``, the module
    it names defining its own). Never when it reaches the name through a module (``utils.name``)
    or imports it from this one. String tests on the lines that hold the name, no regex."""
    lines = lines_naming(text, name)
    if any(at and line[at - 1] == "." for line, at in lines):
        return False  # utils.name: maybe this module's
    imports = [line.strip() for line, _ in lines if line.lstrip().startswith(("from ", "import "))]
    if any(defines_at_top(line, name) for line, _ in lines):
        return not imports
    sources = {i.split()[1].rsplit(".", 1)[-1] for i in imports if i.startswith("from ") and " import " in i}
    if not sources or stem in sources or len(sources) != len(imports):
        return False
    return all(any(os.path.splitext(os.path.basename(p))[0] == s and any(defines_at_top(line, name) for line, _ in lines_naming(t, name))
                   for p, t in ctx.project.files if name in t) for s in sources)


def others_attribute(text: str, name: str, stem: str, package: str = "") -> bool:
    """Every use of ``name`` in ``text`` is an attribute of another object (``np.argmax(x)``,
    ``scores.argmax()``), never of the module ``stem`` (``test.argmax``), of the package
    ``package`` that holds it (``utils.load_checkpoint``, re-exported by ``utils/__init__.py``)
    nor of an alias a module is imported under (``import test as t``): none is this module's
    function or class."""
    if f"{stem} as " in text or package and f"{package} as " in text:
        return False
    for line, at in lines_naming(text, name):
        if at == 0 or line[at - 1] != ".":
            return False
        owner = line[:at - 1]
        for mod in (stem, package) if package else (stem,):
            if owner.endswith(mod) and not (owner[-len(mod) - 1:-len(mod)].isalnum() or owner[-len(mod) - 1:-len(mod)] == "_"):
                return False  # test.argmax, utils.argmax: maybe this module's
    return True


def defines_at_top(line: str, name: str) -> bool:
    """A module-level ``def name(`` / ``class name`` line."""
    for head in ("def ", "class ", "async def "):
        if line.startswith(head + name):
            rest = line[len(head) + len(name):len(head) + len(name) + 1]
            return not (rest.isalnum() or rest == "_")
    return False


def lines_naming(text: str, name: str) -> list[tuple[str, int]]:
    """``(line, column)`` of each whole-word occurrence of ``name`` in ``text``."""
    out, size = [], len(name)
    pos = text.find(name)
    while pos >= 0:
        before = text[pos - 1] if pos else " "
        after = text[pos + size] if pos + size < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
            start = text.rfind("\n", 0, pos) + 1
            end = text.find("\n", pos)
            out.append((text[start:end if end >= 0 else len(text)], pos - start))
        pos = text.find(name, pos + size)
    return out


IMPORT_STMT = lazy_compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]"
                          r"(?:[^\n\\]|\\\n)*)", re.M)


@lru_cache(maxsize=256)
def import_spans(text: str) -> tuple[tuple[int, int], ...]:
    """Where the import statements of ``text`` lie (found once per text: the dead-code tests ask
    about many names in the same modules)."""
    return tuple(m.span() for m in IMPORT_STMT.finditer(text))


# a module that picks what it imports by a name computed at run time
DYNAMIC = ("eval(", "getattr(", "globals()", "locals()", "__dict__", "vars(")


def used_beyond_import(path: str, text: str, word: re.Pattern[str]) -> bool:
    """The name occurs in ``text`` other than in an import statement or a comment: a module that
    imports a helper whose only call is commented out (``# flops = count_flops(model, n)``) does
    not use it. A package's ``__init__.py`` re-exports what it imports, and a module that picks a
    name at run time (``eval(model_type)``) may use anything it imports."""
    if os.path.basename(path) == "__init__.py":
        return True
    spans = import_spans(text)
    commented_call = False
    for m in word.finditer(text):
        at = m.start()
        if any(a <= at < b for a, b in spans):
            if re.match(r"[ \t]+as[ \t]+\w", text[m.end():m.end() + 40]):
                return True  # from loops import train_vanilla as train: used under another name
            continue
        line_start = text.rfind("\n", 0, at) + 1
        if "#" in text[line_start:at]:  # after a comment sign (a '#' in a string before it counts too: rare)
            commented_call = commented_call or text.startswith("(", m.end())
            continue
        return True
    # eval(model_type) may pick any name the module imports: only a call commented out says it is unused
    return not commented_call and any(d in text for d in DYNAMIC)


def words(text: str, name: str, limit: int, code: bool = False) -> int:
    """How often ``name`` occurs in ``text`` as a whole word (counting stops at ``limit``); with
    ``code``, not in a comment (``# train_graph_completion(args, loader)``: a call commented out
    runs nothing) nor as a function of a library module (``pickle.load(``, ``torch.save(``: no
    method of the project of that name runs there) nor as part of a hyphenated word of prose
    (``help="ckpt to pre-load"``)."""
    n, size = 0, len(name)
    pos = text.find(name)
    while pos >= 0 and n < limit:
        before = text[pos - 1] if pos else " "
        after = text[pos + size] if pos + size < len(text) else " "
        if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_") and not (
                code and (commented(text, pos) or before == "." and library_attribute(text, pos - 1)
                          or before == "-" and pos > 1 and text[pos - 2].isalpha() and after != "(")):  # "pre-load" in a help text
            n += 1
        pos = text.find(name, pos + 1)
    return n


# library modules whose functions share names with the project's methods (`load`, `save`, `dump`)
_LIBRARIES = frozenset({"torch", "pickle", "cPickle", "json", "yaml", "np", "numpy", "librosa", "joblib", "dill",
                        "torchaudio", "soundfile", "sf", "h5py", "imageio", "cv2", "os", "shutil", "scipy", "io"})


def library_attribute(text: str, dot: int) -> bool:
    """The ``.`` at ``dot`` follows the name of a library module (``pickle`` in ``pickle.load``),
    itself no attribute of something else."""
    start = dot
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        start -= 1
    return text[start:dot] in _LIBRARIES and (start == 0 or text[start - 1] != ".")


def only_in_prose(text: str, word: re.Pattern[str]) -> bool:
    """Every mention of the name in ``text`` lies inside a one-line string literal that holds
    prose (a space in it: ``help='prop alpha'``): such a string looks nothing up by name, unlike
    ``'prop'`` or ``'layers.prop'``, which a registry or config lookup may use."""
    for m in word.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line, at = text[start:end if end >= 0 else len(text)], m.start() - start
        head = line[:at]
        quote = next((q for q in ("'", '"') if head.count(q) % 2 == 1), None)
        if quote is None:
            return False
        close = line.find(quote, m.end() - start)
        if close < 0 or " " not in line[head.rfind(quote) + 1:close]:
            return False
    return True


def commented(text: str, pos: int) -> bool:
    """The text at ``pos`` lies in a comment: a ``#`` before it on its line, outside a string
    (quotes counted on the line before the ``#``; a ``#`` in ``"#%d"`` opens no comment)."""
    start = text.rfind("\n", 0, pos) + 1
    hash_at = text.find("#", start, pos)
    while hash_at >= 0:
        head = text[start:hash_at]
        if head.count("'") % 2 == 0 and head.count('"') % 2 == 0:
            return True
        hash_at = text.find("#", hash_at + 1, pos)
    return False

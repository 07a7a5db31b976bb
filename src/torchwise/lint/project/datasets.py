"""Project facts about dataset classes: what the ``__getitem__`` of each dataset class defined
in the project yields (see :class:`~torchwise.lint.facts.DatasetFacts`)."""

from __future__ import annotations

import ast
import re
from bisect import bisect_right

from torchwise.lint.engine import Context, last_name, legacy
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import DatasetFacts
from torchwise.lint.semantics.data import getitem_of, getitem_reads_nothing, getitem_slices_only, moves_to_device
from torchwise.lint.semantics.textitems import getitem_yields_text
from torchwise.lint.semantics.values import body_nodes

_DATASET_HINTS = ("Dataset", "__getitem__")
# Calls in ``__getitem__`` that read, decode or transform an item: per-item CPU work.
_DECODE_CALLS = frozenset({
    "open", "imread", "imdecode", "read_image", "decode_image", "load_image", "pil_loader", "default_loader",
    "accimage_loader", "loader", "load", "loadtxt", "read_csv", "read", "decode", "read_video", "read_file",
    "transform", "transforms", "augment", "augmentation", "tokenizer", "tokenize", "resample",
})


def dataset_facts(texts: list[tuple[str, str]]) -> dict[str, DatasetFacts]:
    """The facts of every dataset class defined in ``(path, text)`` pairs, by class name."""
    collected: dict[str, list[tuple[DatasetFacts, list[str]]]] = {}
    for path, text in texts:
        if "class " not in text or not any(h in text for h in _DATASET_HINTS):
            continue
        excerpt = _dataset_excerpt(text)
        if excerpt is None:
            continue
        try:
            tree = ast.parse(excerpt, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            try:  # the excerpt was cut badly (a multi-line string at column 0): read the whole file
                excerpt = text
                tree = legacy.parse(text, path)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
        try:
            for facts, bases in _dataset_classes(excerpt, path, tree):
                collected.setdefault(facts.name, []).append((facts, bases))
        except RecursionError:
            continue
    return _merge(collected)


_CLASS_LINE = lazy_compile(r"^class[ \t]+(\w+)([^\n]*)", re.M)
_TOP_LINE = lazy_compile(r"^(?=[^\s#)\]}])", re.M)  # a line starting at column 0 (not a comment or a closing bracket)
_IMPORTS = lazy_compile(r"^(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|(?:import|from)[ \t][^\n]*)", re.M)


def _dataset_excerpt(text: str) -> str | None:
    """The file's module-level imports and its top-level classes that look like datasets (a
    name or base mentioning ``Dataset``, or ``__getitem__`` with ``__len__``): parsing this much
    instead of the whole file keeps the first pass cheap. None when there is no such class."""
    tops = [m.start() for m in _TOP_LINE.finditer(text)]
    blocks = []
    for m in _CLASS_LINE.finditer(text):
        start = m.start()
        i = bisect_right(tops, start)
        end = tops[i] if i < len(tops) else len(text)
        block = text[start:end]
        if "Dataset" in m.group(0) or ("__getitem__" in block and "__len__" in block):
            blocks.append(block)
    if not blocks:
        return None
    imports = [m.group(0) for m in _IMPORTS.finditer(text)]
    return "\n".join(imports) + "\n\n" + "\n".join(blocks)


def _dataset_classes(text: str, path: str, tree: ast.Module) -> list[tuple[DatasetFacts, list[str]]]:
    ctx = Context(text, path, tree)
    out = []
    for klass in ctx.nodes.get(ast.ClassDef, ()):
        bases = [last_name(b) or "" for b in klass.bases]
        getitem = getitem_of(klass)
        is_dataset = getitem is not None or klass.name.endswith("Dataset") or any(b.endswith("Dataset") for b in bases)
        if not is_dataset:
            continue
        iterable = any(b.endswith("IterableDataset") for b in ctx.local_class_bases(klass.name) | set(bases))
        if getitem is None:
            out.append((DatasetFacts(klass.name, iterable=iterable), bases))
            continue
        out.append((DatasetFacts(
            klass.name,
            device=moves_to_device(ctx, getitem),
            constant=getitem_reads_nothing(klass),
            in_memory=getitem_slices_only(ctx, klass),
            iterable=iterable,
            decodes=_decodes(ctx, getitem),
            text=getitem_yields_text(ctx, klass),
        ), []))
    return out


def _decodes(ctx: Context, getitem: ast.FunctionDef) -> bool:
    for node in body_nodes(ctx, getitem, follow_calls=1):
        if node.__class__ is ast.Call and last_name(node.func) in _DECODE_CALLS:
            return True
    return False


def _merge(collected: dict[str, list[tuple[DatasetFacts, list[str]]]]) -> dict[str, DatasetFacts]:
    """One entry per class name: classes without ``__getitem__`` take their base's facts (a base
    defined in the project, through up to 4 levels); a name defined twice with different facts
    is dropped (ambiguous)."""
    def resolve(name: str, depth: int) -> DatasetFacts | None:
        entries = collected.get(name)
        if not entries or depth <= 0:
            return None
        results = set()
        for facts, bases in entries:
            if bases:  # no __getitem__ of its own: inherit from the first project base that has facts
                inherited = next((r for b in bases if b != name and (r := resolve(b, depth - 1)) is not None), None)
                if inherited is not None:
                    facts = DatasetFacts(name, inherited.device, inherited.constant, inherited.in_memory,
                                         facts.iterable or inherited.iterable, inherited.decodes, inherited.text)
            results.add(facts)
        return results.pop() if len(results) == 1 else None

    out = {}
    for name in collected:
        facts = resolve(name, 5)
        if facts is not None:
            out[name] = facts
    return out

"""Project facts about functions defined in the project: which read their arguments on the host
(``.item()`` of every loss), which make the program GPU-only (set up NCCL, exit without a GPU),
and which build pinned DataLoaders. Only the functions whose text mentions what is looked for
are cut out and parsed, so the pass stays cheap."""

from __future__ import annotations

import ast
import re
import textwrap
from collections import Counter
from typing import Callable, Iterator

from torchwise.lint.engine import last_name
from torchwise.lint.semantics.hostreads import host_read_of_arguments

_HOST_NEEDLES = (".item()", ".tolist()", ".numpy()")
_GPU_NEEDLES = ("nccl", "is_available")
_EXITS = frozenset({"exit", "_exit", "quit", "abort"})


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _enclosing_defs(text: str, pos: int) -> Iterator[tuple[int, int]]:
    """``(start, indent)`` of each ``def`` line enclosing the text at ``pos``, innermost first
    (found by looking back for less indented ``def`` lines; no regex over the whole file)."""
    line_start = text.rfind("\n", 0, pos) + 1
    limit = _indent(text[line_start:pos].expandtabs())
    cursor = line_start
    while limit > 0:
        at = text.rfind("def ", 0, cursor)
        if at < 0:
            return
        start = text.rfind("\n", 0, at) + 1
        head = text[start:at].expandtabs()
        cursor = start
        if head.strip(" ") not in ("", "async "):
            continue  # "def " inside some other line
        indent = len(head) - len(head.lstrip(" "))
        if indent < limit:
            yield start, indent
            limit = indent


# helpers that read their arguments, set up the GPU or build loaders are short; long functions
# (a whole training loop, a library routine) are not parsed for these facts
MAX_LINES = 80


def function_blocks(text: str, needles: tuple[str, ...], max_lines: int = MAX_LINES) -> Iterator[tuple[str, int, ast.FunctionDef]]:
    """``(name, line of the def, parsed function)`` for every function (at any depth, at most
    ``max_lines`` long) whose text contains one of ``needles``; functions that cannot be cut
    out cleanly are skipped."""
    starts: dict[int, int] = {}
    for needle in needles:
        pos = text.find(needle)
        while pos >= 0:
            for start, indent in _enclosing_defs(text, pos):
                starts.setdefault(start, indent)
            pos = text.find(needle, pos + 1)
    for start, indent in sorted(starts.items()):
        lines = text[start:].split("\n", max_lines + 1)
        keep = 1
        for line in lines[1:]:  # the body ends at the first code line indented no deeper than the def
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and _indent(line.expandtabs()) <= indent and stripped[0] not in ")]}":
                break
            keep += 1
        if keep > max_lines:
            continue
        try:
            tree = ast.parse(textwrap.dedent("\n".join(lines[:keep])))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if tree.body and tree.body[0].__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            yield tree.body[0].name, text.count("\n", 0, start) + 1, tree.body[0]


_DEF_NAME = re.compile(r"def ([A-Za-z_]\w*)\(")


def definition_counts(texts: list[tuple[str, str]]) -> Counter[str]:
    """How many times the project defines a function or method of each name."""
    counts: Counter[str] = Counter()
    for _, text in texts:
        counts.update(_DEF_NAME.findall(text))
    return counts


def _collect(texts: list[tuple[str, str]], needles: tuple[str, ...], test: Callable[[ast.AST], int | None],
             definitions: Counter[str]) -> dict[str, str]:
    """Functions ``test`` accepts, by name -> ``path:line``; a name is kept only when every
    definition of it in the project is accepted (several classes may define ``update``)."""
    found: dict[str, str] = {}
    kinds: Counter[str] = Counter()
    for path, text in texts:
        if not any(n in text for n in needles):
            continue
        for name, line, func in function_blocks(text, needles):
            offset = test(func)
            if offset is not None:
                kinds[name] += 1
                found.setdefault(name, f"{path}:{line + offset - 1}")
    return {name: where for name, where in found.items() if kinds[name] == definitions[name]}


def _host_read_line(func: ast.AST) -> int | None:
    read = host_read_of_arguments(func)
    return read.lineno if read is not None else None


def host_readers(texts: list[tuple[str, str]], definitions: Counter[str]) -> dict[str, str]:
    """Functions that call ``.item()``/``.tolist()``/``.numpy()`` on what they are given
    (``reduce_loss_dict(loss_dict)``), by name -> ``path:line`` of the read."""
    return _collect(texts, _HOST_NEEDLES, _host_read_line, definitions)


def _gpu_only_line(func: ast.AST) -> int | None:
    """The line where ``func`` makes the program GPU-only: ``init_process_group("nccl")``,
    ``assert torch.cuda.is_available()``, or an exit/raise when no GPU is there."""
    for node in ast.walk(func):
        if node.__class__ is ast.Call and last_name(node.func) == "init_process_group":
            if any(n.__class__ is ast.Constant and n.value == "nccl" for n in ast.walk(node)):
                return node.lineno
        if node.__class__ is ast.Assert and _checks_gpu(node.test):
            return node.lineno
        if node.__class__ is ast.If and _checks_gpu(node.test) and node.test.__class__ is ast.UnaryOp:
            if any(_exits(stmt) for stmt in node.body):
                return node.lineno
    return None


def _checks_gpu(test: ast.AST) -> bool:
    return any(n.__class__ is ast.Attribute and n.attr in ("is_available", "device_count") for n in ast.walk(test))


def _exits(stmt: ast.stmt) -> bool:
    if stmt.__class__ is ast.Raise:
        return True
    return stmt.__class__ is ast.Expr and stmt.value.__class__ is ast.Call and last_name(stmt.value.func) in _EXITS


def gpu_only_helpers(texts: list[tuple[str, str]], definitions: Counter[str]) -> dict[str, str]:
    """Functions that make the program GPU-only (NCCL set-up, exit without a GPU), by name."""
    return _collect(texts, _GPU_NEEDLES, _gpu_only_line, definitions)


def _pinned_loaders_line(func: ast.AST) -> int | None:
    """``func`` builds DataLoaders, all with ``pin_memory=True``, and returns something."""
    loaders = [n for n in ast.walk(func) if n.__class__ is ast.Call and last_name(n.func) == "DataLoader"]
    if not loaders or not any(n.__class__ is ast.Return and n.value is not None for n in ast.walk(func)):
        return None
    for call in loaders:
        pin = next((k.value for k in call.keywords if k.arg == "pin_memory"), None)
        if not (pin is not None and pin.__class__ is ast.Constant and pin.value is True):
            return None
    return loaders[0].lineno


def pinned_loader_factories(texts: list[tuple[str, str]], definitions: Counter[str]) -> dict[str, str]:
    """Functions that return pinned DataLoaders (every loader they build has ``pin_memory=True``)."""
    return _collect(texts, ("pin_memory",), _pinned_loaders_line, definitions)

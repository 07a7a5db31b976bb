"""Project facts about functions defined in the project: the source of each short function whose
text mentions what a rule may ask about (a host read such as ``.item()``, a GPU set-up, ``pin_memory``),
cut out by looking back from each mention for its ``def`` (no regex over the whole file, no
parsing here), and how often each such name is defined. Rules read them on demand
(:mod:`torchwise.lint.semantics.projectcode`)."""

from __future__ import annotations

import re
import textwrap
from typing import Iterator

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import FunctionBlock

HOST_NEEDLES = (".item()", ".tolist()", ".numpy()", ".cpu().", ".cpu()\n", ".cpu()\r", "if torch.", ".data[0]")
GPU_NEEDLES = ("nccl", "is_available")
# what semantics.devices.gpu_setup_line can find in a block, as text: NCCL, or a GPU check asserted
# or negated on one line (``if not torch.cuda.is_available():``); the many functions that only
# choose a device (``"cuda" if torch.cuda.is_available() else "cpu"``) are not kept
GPU_SETUP_TEXT = lazy_compile(r"nccl|(?:assert|if\s+not)\b[^\n]*(?:is_available|device_count)")
LOADER_NEEDLES = ("pin_memory",)


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
MAX_LINES = 120


def function_blocks(text: str, needles: tuple[str, ...], max_lines: int = MAX_LINES) -> Iterator[tuple[str, int, str]]:
    """``(name, line of the def, dedented source)`` of every function (at any depth, at most
    ``max_lines`` long) whose text contains one of ``needles``."""
    starts: dict[int, int] = {}
    for needle in needles:
        pos = text.find(needle)
        while pos >= 0:
            for start, indent in _enclosing_defs(text, pos):
                starts.setdefault(start, indent)
            pos = text.find(needle, pos + 1)
    for start, indent in sorted(starts.items()):
        end = start
        for _ in range(max_lines + 2):  # no more than the lines a block may have (not the rest of the file)
            end = text.find("\n", end) + 1
            if end == 0:
                end = len(text)
                break
        lines = [line.rstrip("\r") for line in text[start:end].split("\n")]  # (CRLF files: dedent sees blank lines)
        keep = 1
        for line in lines[1:]:  # the body ends at the first code line indented no deeper than the def
            stripped = line.strip()
            if stripped and not stripped.startswith("#") and _indent(line.expandtabs()) <= indent and stripped[0] not in ")]}":
                break
            keep += 1
        name = _DEF_NAME.search(lines[0])
        if keep <= max_lines and name is not None:
            yield name.group(1), text.count("\n", 0, start) + 1, textwrap.dedent("\n".join(lines[:keep]))


_DEF_NAME = lazy_compile(r"def ([A-Za-z_]\w*)\(")


def candidate_blocks(texts: list[tuple[str, str]], needles: tuple[str, ...],
                     keep: re.Pattern[str] | None = None) -> dict[str, tuple[FunctionBlock, ...]]:
    """Name -> the blocks of the short functions of that name that mention one of ``needles``
    (and, with ``keep``, match it somewhere)."""
    found: dict[str, list[FunctionBlock]] = {}
    for path, text in texts:
        if any(n in text for n in needles):
            for name, line, block in function_blocks(text, needles):
                if keep is None or keep.search(block):
                    found.setdefault(name, []).append(FunctionBlock(path, line, block))
    return {name: tuple(blocks) for name, blocks in found.items()}


def definition_counts(texts: list[tuple[str, str]], names: set[str]) -> dict[str, int]:
    """How many times the project defines a function or method of each of ``names``."""
    counts = dict.fromkeys(names, 0)
    if names:
        for _, text in texts:
            for name in _DEF_NAME.findall(text):
                if name in counts:
                    counts[name] += 1
    return counts

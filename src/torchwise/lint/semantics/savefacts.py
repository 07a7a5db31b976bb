"""What the project's ``torch.save`` calls write, across files (see :mod:`checkpoints` for one
file): each file that saves is summed up once per process - when it is linted, or, for the files
not linted yet when a rule first asks, from a parse that its lint then reuses - and only the
small summaries are kept, not the parsed files."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from torchwise.lint.engine import Context, argument, last_name, legacy
from torchwise.lint.facts import ProjectFacts
from torchwise.lint.semantics.checkpoints import file_names, saved_dict_keys, saved_keys, saved_on_host, saves_on_host
from torchwise.lint.semantics.projectcode import share_context


@dataclass(frozen=True)
class FileSaves:
    """One file's saves: whether they all write host data (None: no tensors seen), the keys of
    saved dicts holding host data and those that may hold device tensors, and file name ->
    whether every save of that name writes host data."""

    host_only: bool | None
    host_keys: frozenset[str]
    device_keys: frozenset[str]
    names: dict[str, bool]
    # whether every model state saved outside any loop (the final weights) is host data (None: none)
    final_host: bool | None = None
    # keys of saved dicts with a device entry among them; keys of saved dicts of host data only
    mixed_keys: frozenset[str] = frozenset()
    plain_keys: frozenset[str] = frozenset()


def summarise(ctx: Context) -> FileSaves:
    names: dict[str, bool] = {}
    final: bool | None = None
    for save in ctx.calls_to("torch.save"):
        written = file_names(ctx, argument(save, "f", 1), save)
        host = saved_on_host(ctx, save) if written else True  # the dearer question, only for a known name
        for name in written:
            names[name] = names.get(name, True) and host
        obj = argument(save, "obj", 0)
        if obj is not None and obj.__class__ is ast.Call and last_name(obj.func) == "state_dict" \
                and not ctx.enclosing_loops(save):
            final = (final is not False) and saved_on_host(ctx, save)
    host_keys, device_keys = saved_keys(ctx)
    mixed, plain = saved_dict_keys(ctx)
    return FileSaves(saves_on_host(ctx), frozenset(host_keys), frozenset(device_keys), names, final,
                     frozenset(mixed), frozenset(plain))


def _known(facts: ProjectFacts) -> dict[str, FileSaves]:
    return facts.answers.setdefault("save_summaries", {})


def _summaries(facts: ProjectFacts) -> list[FileSaves]:
    found = facts.answers.get("save_summaries_all")
    if found is None:
        known = _known(facts)
        for path, text in facts.save_files:
            if path in known:
                continue
            try:
                ctx = Context(text, path, legacy.parse(text, path), facts)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
            known[path] = summarise(ctx)
            share_context(facts, ctx)  # its lint, still to come in this process, reuses it
        found = [known[path] for path, _ in facts.save_files if path in known]
        facts.answers["save_summaries_all"] = found
    return found


def note_linted(facts: ProjectFacts | None, ctx: Context) -> None:
    """Sum up the saves of a file being linted, while no rule has asked for the project's yet."""
    if facts is None or not facts.save_files or "save_summaries_all" in facts.answers or "torch.save(" not in ctx.source:
        return
    paths = facts.answers.get("save_paths")
    if paths is None:
        paths = facts.answers["save_paths"] = frozenset(path for path, _ in facts.save_files)
    known = _known(facts)
    if ctx.path in paths and ctx.path not in known:
        known[ctx.path] = summarise(ctx)


def device_savers(facts: ProjectFacts) -> list[str]:
    """The files of the project whose saves may write device tensors (``torch.save(model.state_dict(), f)``
    of a model that is not moved to the host first)."""
    _summaries(facts)
    known = _known(facts)
    return [path for path, _ in facts.save_files if path in known and known[path].host_only is False]


def folder_save_index(facts: ProjectFacts, folder: str) -> dict[str, bool]:
    """:func:`save_index` of the saves written by the files of one folder only (a sub-project's
    ``train.py`` beside the ``evaluate.py`` that reads its file back)."""
    _summaries(facts)
    known = _known(facts)
    found: dict[str, bool] = {}
    for path, _ in facts.save_files:
        if path in known and os.path.dirname(path) == folder:
            for name, host in known[path].names.items():
                found[name] = found.get(name, True) and host
    return found


def final_weights_on_host(facts: ProjectFacts) -> bool:
    """Every model state the project saves outside a loop (its final weights, not the checkpoints
    written while training) is host data, and there is one (``net.cpu()`` then ``torch.save(net.state_dict(), f)``)."""
    finals = [s.final_host for s in _summaries(facts) if s.final_host is not None]
    return bool(finals) and all(finals)


def save_index(facts: ProjectFacts) -> dict[str, bool]:
    """File name -> whether every ``torch.save`` of the project that writes a file of that name
    writes host data (or no tensors). Read on demand from ``facts.save_files``, once per process."""
    found = facts.answers.get("save_index")
    if found is None:
        found = {}
        for summary in _summaries(facts):
            for name, host in summary.names.items():
                found[name] = found.get(name, True) and host
        facts.answers["save_index"] = found
    return found


def checkpoint_facts(facts: ProjectFacts) -> tuple[bool, frozenset[str], frozenset[str]]:
    """What the project's ``torch.save`` calls write: whether there is one and every one saves
    host data; the keys of saved dicts whose values are host data; the keys that may hold
    device tensors."""
    found = facts.answers.get("checkpoints")
    if found is None:
        every, seen = True, False
        host: set[str] = set()
        device: set[str] = set()
        for summary in _summaries(facts):
            every = every and summary.host_only is not False
            seen = seen or summary.host_only is True
            host |= summary.host_keys
            device |= summary.device_keys
        found = (every and seen, frozenset(host), frozenset(device))
        facts.answers["checkpoints"] = found
    return found


def dict_key_facts(facts: ProjectFacts) -> tuple[frozenset[str], frozenset[str]]:
    """Across the project: the keys of saved dicts that hold a device entry, and the keys of saved
    dicts of host data only (see :func:`checkpoints.saved_dict_keys`)."""
    found = facts.answers.get("save_dict_keys")
    if found is None:
        mixed: set[str] = set()
        plain: set[str] = set()
        for summary in _summaries(facts):
            mixed |= summary.mixed_keys
            plain |= summary.plain_keys
        found = facts.answers["save_dict_keys"] = (frozenset(mixed), frozenset(plain))
    return found

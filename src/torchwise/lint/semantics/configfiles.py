"""Boolean settings of a project's shipped config files: ``PIN_MEMORY: False`` in every YAML file
under ``lib/config/`` (read with ``config = edict(yaml.load(f))``, used as ``config.PIN_MEMORY``),
or ``"pin_memory": true`` in its JSON configs. Only ``key: value`` lines (YAML, any indentation)
and ``"key": value`` pairs (JSON) with a boolean value are read, without a parser; the files are
found once per project (a walk of its folder that skips hidden, virtual-environment and data
folders, at most a few hundred config files) and each key's answer is kept in ``answers``.
"""

from __future__ import annotations

import os
import re

_SUFFIXES = (".yaml", ".yml", ".json")
_SKIP = frozenset({"node_modules", "site-packages", "venv", ".venv", "env", "data", "datasets", "build", "dist", "wandb",
                   "outputs", "output", "logs", "runs", "checkpoints"})
_MAX_FILES = 300
_MAX_CHARS = 200_000


def _config_files(root: str, answers: dict) -> list[tuple[str, str]]:
    key = ("config-files", root)
    if key not in answers:
        found: list[tuple[str, str]] = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.lower() not in _SKIP)
            for name in sorted(files):
                if not name.endswith(_SUFFIXES) or len(found) >= _MAX_FILES:
                    continue
                path = os.path.join(folder, name)
                try:
                    with open(path, encoding="utf-8", errors="replace") as f:
                        found.append((path, f.read(_MAX_CHARS)))
                except OSError:
                    continue
        answers[key] = found
    return answers[key]


def shipped_values(root: str, name: str, answers: dict) -> dict[str, set[bool]]:
    """``{config file: the boolean values it gives the key name}`` for the project's config
    files that set ``name`` (matched without regard to case: ``PIN_MEMORY``, ``pin_memory``)."""
    if not root:
        return {}
    key = ("config-values", root, name.lower())
    if key not in answers:
        line = re.compile(r"""^[ \t]*["']?%s["']?[ \t]*:[ \t]*(True|true|False|false|yes|no)[ \t]*(?:[,#].*)?$""" % re.escape(name),
                          re.M | re.I)
        out: dict[str, set[bool]] = {}
        for path, text in _config_files(root, answers):
            if name.lower() not in text.lower():
                continue
            values = {v.lower() in ("true", "yes") for v in line.findall(text)}
            if values:
                out[os.path.relpath(path, root)] = values
        answers[key] = out
    return answers[key]

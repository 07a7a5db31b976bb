"""Defaults of a Hydra script's options: ``@hydra.main(config_path="conf", config_name="config")``
reads ``conf/config.yaml`` beside the script, whose top-level ``cuda_deterministic: False`` is what
``cfg.cuda_deterministic`` is unless a run overrides it. Only top-level ``key: value`` lines with a
boolean (or 0/1) value are read, without a YAML parser; the file is read once per project.
"""

from __future__ import annotations

import os
import re

from torchwise.lint.engine.lazyre import lazy_compile

_DECORATOR = lazy_compile(r"@hydra\.main\(([^)]*)\)")
_ARG = lazy_compile(r"""(config_path|config_name)\s*=\s*["']([^"']*)["']""")
_LINE = lazy_compile(r"^([A-Za-z_][\w-]*)[ \t]*:[ \t]*(True|true|False|false|yes|no|on|off|0|1)[ \t]*(?:#.*)?$", re.M)
_TRUE = frozenset({"True", "true", "yes", "on", "1"})


def hydra_config(path: str, source: str, answers: dict) -> dict[str, bool] | None:
    """The boolean top-level options of the config a ``@hydra.main`` script at ``path`` reads;
    None when the script has no such decorator or the file cannot be read."""
    if "hydra" not in source:
        return None
    found = _DECORATOR.search(source)
    if found is None:
        return None
    args = dict(_ARG.findall(found.group(1)))
    name = args.get("config_name")
    if not name:
        return None
    folder = os.path.join(os.path.dirname(os.path.abspath(path)), args.get("config_path", ""))
    file = os.path.normpath(os.path.join(folder, name if name.endswith((".yaml", ".yml")) else name + ".yaml"))
    key = ("hydra-config", file)
    if key not in answers:
        try:
            with open(file, encoding="utf-8", errors="replace") as f:
                text = f.read(200_000)
        except OSError:
            answers[key] = None
        else:
            answers[key] = {k: v in _TRUE for k, v in _LINE.findall(text)}
    return answers[key]

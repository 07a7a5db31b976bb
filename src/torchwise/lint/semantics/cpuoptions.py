"""Command-line options that promise a CPU run: ``--no_cuda``, ``--cpu``, a ``--device`` naming a device type.

Text only, shared by the project pass (:mod:`torchwise.lint.project.cpudriven`) and the rules.
"""

from __future__ import annotations

import re

OPTION = re.compile(r"""add_argument\(\s*["'](--?[\w-]+)["']([^)]*)""")
CPU_OPTIONS = frozenset({"--no_cuda", "--no-cuda", "--nocuda", "--cpu", "--use_cpu", "--use-cpu", "--disable_cuda",
                         "--disable-cuda", "--device", "--no_gpu", "--no-gpu", "--cpu_only", "--cpu-only"})
# `--device` whose default names a device type (not a GPU id: `--device 0`)
_DEVICE_DEFAULT = re.compile(r"""default[ \t]*=[ \t]*["'](?:cuda|cpu)(?::\d+)?["']""")


def explicit_cpu_option(text: str) -> bool:
    """The file parses an option whose only purpose is a CPU run (``--no_cuda``, ``--cpu``,
    ``--use_cpu``) or a ``--device`` defaulting to ``"cuda"``/``"cpu"``: its user is promised a CPU run."""
    if "add_argument(" not in text:
        return False
    for m in OPTION.finditer(text):
        name = m.group(1)
        if name in CPU_OPTIONS and (name != "--device" or _DEVICE_DEFAULT.search(m.group(2))):
            return True
    return False


__all__ = ["CPU_OPTIONS", "OPTION", "explicit_cpu_option"]

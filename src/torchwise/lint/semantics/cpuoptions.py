"""Command-line options that promise a CPU run: ``--no_cuda``, ``--cpu``, a ``--device`` naming a device type.

Text only, shared by the project pass (:mod:`torchwise.lint.project.cpudriven`) and the rules.
"""

from __future__ import annotations

from typing import Iterator

from torchwise.lint.engine.lazyre import lazy_compile

CPU_OPTIONS = frozenset({"--no_cuda", "--no-cuda", "--nocuda", "--cpu", "--use_cpu", "--use-cpu", "--disable_cuda",
                         "--disable-cuda", "--device", "--no_gpu", "--no-gpu", "--cpu_only", "--cpu-only"})
# `--device` whose default names a device type (not a GPU id: `--device 0`)
_DEVICE_DEFAULT = lazy_compile(r"""default[ \t]*=[ \t]*["'](?:cuda|cpu)(?::\d+)?["']""")

# `--device` holding GPU ids: `default='0'`, `default=[0, 1]`, `default=0`, `type=int`, `type=list`
_GPU_ID_DEFAULT = lazy_compile(r"""default[ \t]*=[ \t]*(?:["'][\d, ]+["']|\[[\d, ]*\]|\d+\b)|type[ \t]*=[ \t]*(?:int|list)\b""")


def gpu_id_device(body: str) -> bool:
    """A ``--device`` option (the text of its ``add_argument`` call) that holds GPU ids, not a
    device type: ``default='0'`` (written into ``CUDA_VISIBLE_DEVICES``), ``default=[0, 1]``,
    ``type=int`` - unless its help names the CPU (``help='cuda device, i.e. 0 or cpu'``)."""
    return _GPU_ID_DEFAULT.search(body) is not None and "cpu" not in body.lower()


_FLAG = lazy_compile(r"""["'](--?[\w-]+)["']""")


def option_calls(text: str) -> Iterator[tuple[tuple[str, ...], str]]:
    """``(flags, arguments)`` for every ``add_argument(...)`` call of ``text``: every quoted flag
    before the first keyword (``'-c', '--cpu'``), and the text of the whole call (its end found by
    balancing brackets, so ``help='device (cuda/cpu)', default='cuda'`` is part of it)."""
    pos = text.find("add_argument(")
    while pos >= 0:
        start = pos + len("add_argument(")
        depth, end, quote = 1, start, ""
        while end < len(text) and depth:
            ch = text[end]
            if quote:
                quote = "" if ch == quote and text[end - 1] != "\\" else quote
            elif ch in "'\"":
                quote = ch
            elif ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            end += 1
        body = text[start:end - 1]
        head = body.split("=", 1)[0]
        flags = tuple(m.group(1) for m in _FLAG.finditer(head) if head[:m.start()].strip(" \t\n,") == ""
                      or head[:m.start()].rstrip(" \t\n").endswith(","))
        if flags:
            yield flags, body
        pos = text.find("add_argument(", end)


def explicit_cpu_option(text: str) -> bool:
    """The file parses an option whose only purpose is a CPU run (``--no_cuda``, ``--cpu``,
    ``--use_cpu``) or a ``--device`` defaulting to ``"cuda"``/``"cpu"``: its user is promised a CPU run."""
    if "add_argument(" not in text:
        return False
    for flags, body in option_calls(text):
        for name in flags:
            if name in CPU_OPTIONS and (name != "--device" or _DEVICE_DEFAULT.search(body)):
                return True
    return False


__all__ = ["CPU_OPTIONS", "explicit_cpu_option", "gpu_id_device", "option_calls"]

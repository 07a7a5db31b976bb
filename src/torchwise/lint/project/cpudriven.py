"""Files that a CPU run of the project reaches: where hard-coded CUDA breaks a CPU path.

A ``.cuda()`` in a file that offers no CPU path of its own breaks something only when a CPU run
reaches it. Loose evidence somewhere in the project (a ``torch.cuda.is_available()`` anywhere, an
option named ``--cuda`` that holds a GPU id, ``if opt.gpu is not None:``) kept misfiring on
projects written for GPUs. Here the evidence must be *strong* and *linked*:

- strong: a file chooses a ``"cpu"`` device as the alternative of a choice (``"cuda" if c else
  "cpu"``, ``"cpu" if opt.no_cuda else "cuda"``, ``else: device = torch.device("cpu")``,
  ``args.device = "cpu"``), sets a device flag from the GPU check (``use_gpu =
  torch.cuda.is_available()``) or parses an option that asks for the CPU (``--no_cuda``, ``--cpu``,
  ``--use_cpu``, ``--device``) or a boolean GPU switch (``--cuda`` with ``type=str2bool``,
  ``--use_gpu`` with ``action="store_true"``; an option holding a GPU id is none);
- linked: the file is such a file and an entry point (``if __name__ == "__main__":``, a top-level
  ``parse_args(``) or a script no other file imports that runs code at its top level, or an entry point that imports the
  project module defining such an option (the options it parses), and the CPU run reaches every project module such an entry point
  imports, directly or through other project modules (``run.py`` imports ``model_factory``,
  which imports the model).

Text only, matched by module names like :mod:`torchwise.lint.project.extensions` (a name that
several files share counts for each).
"""

from __future__ import annotations

import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.project.dynimports import dynamic_packages, in_packages
from torchwise.lint.project.extensions import imported, module_keys
from torchwise.lint.project.gpucount import gpu_count_gate
from torchwise.lint.project.scripts import entry_point
from torchwise.lint.semantics.cpuoptions import CPU_OPTIONS as _CPU_OPTIONS, explicit_cpu_option, gpu_id_device, option_calls

# a "cpu" device as the other side of a choice
_CPU_CHOICE = lazy_compile(r"""["']cuda(?::\d+)?["'][ \t]+if[ \t][^\n]*?\belse[ \t]+["']cpu["']"""
                         r"""|["']cpu["'][ \t]+if[ \t][^\n]*?\belse[ \t]+["']cuda(?::\d+)?["']""")
# `else:` followed by a "cpu" device assigned (`device = torch.device("cpu")`, `args.device = 'cpu'`)
# (after comments and a warning printed or logged: `print("CUDA unavailable, using CPU")`)
_ELSE_CPU = lazy_compile(r"""^[ \t]*else[ \t]*:[ \t]*(?:#[^\n]*)?\n(?:[ \t]*#[^\n]*\n|[ \t]+(?:print|warnings\.warn|log\w*\.\w+)\([^\n]*\n)*"""
                       r"""[ \t]*[\w.\[\]"']+[ \t]*=[ \t]*"""
                       r"""(?:torch\.device\([ \t]*)?["']cpu["']""", re.M)
_ELSE_CPU_ONE_LINE = lazy_compile(r"""^[ \t]*else[ \t]*:[ \t]*[\w.]+[ \t]*=[ \t]*(?:torch\.device\([ \t]*)?["']cpu["']""", re.M)
# `args.device = "cpu"` / `args.device = torch.device("cpu")` under a GPU check
_AVAILABLE_CPU = lazy_compile(r"""is_available\(\)[^\n]*:[ \t]*\n[ \t]*[\w.]*device[ \t]*=[ \t]*(?:torch\.device\([ \t]*)?["']cpu["']""")
# a device flag set from the GPU check, for the file's moves to test (`use_gpu = torch.cuda.is_available()`)
_FLAG_FROM_CHECK = lazy_compile(r"^[ \t]*[\w.]+[ \t]*=[ \t]*torch\.cuda\.is_available\(\)[ \t]*(?:#[^\n]*)?$", re.M)
# a statement at column 0 that calls something (a script that runs when started), not a def/class/import
_TOP_CALL = lazy_compile(r"^(?!def |class |import |from |if __name__|async def )[A-Za-z_][^\n]*\(", re.M)
_GPU_SWITCHES = frozenset({"--cuda", "--use_cuda", "--use-cuda", "--use_gpu", "--use-gpu", "--gpu", "--with_cuda"})
_BOOLEAN = lazy_compile(r"""store_true|store_false|str2bool|type[ \t]*=[ \t]*bool\b|default[ \t]*=[ \t]*(?:True|False\b|["'](?:yes|no)["'])""")


def cpu_option(text: str) -> bool:
    """The file parses an option that asks for the CPU, or a boolean GPU switch (not a GPU id)."""
    if "add_argument(" not in text:
        return False
    for flags, body in option_calls(text):
        if any(name in _CPU_OPTIONS and (name != "--device" or not gpu_id_device(body))
               or name in _GPU_SWITCHES and _BOOLEAN.search(body) is not None for name in flags):
            return True
    return False


def strong_cpu_path(text: str) -> bool:
    """The file chooses a ``"cpu"`` device as the alternative of a choice or parses a CPU option
    (see the module doc). A GPU check that only guards moves (``if torch.cuda.is_available():
    model.cuda()``) is not enough on its own here: it guards the file's own moves."""
    if "cpu" in text and ("else" in text and (_CPU_CHOICE.search(text) or _ELSE_CPU.search(text)
                                              or _ELSE_CPU_ONE_LINE.search(text))
                          or "is_available" in text and _AVAILABLE_CPU.search(text)):
        return True
    if "is_available" in text and _FLAG_FROM_CHECK.search(text):
        return True
    return cpu_option(text) or gpu_count_gate(text)  # (`if args.ngpu > 0: net.cuda()`: R17)


def cpu_driven(texts: list[tuple[str, str]]) -> frozenset[str]:
    """The files a CPU run of the project reaches (see the module doc)."""
    strong = {p for p, t in texts if strong_cpu_path(t)}
    if not strong:
        return frozenset()
    option_keys: set[str] = set()
    for p, t in texts:
        if p in strong and cpu_option(t):
            option_keys |= module_keys(p)
    names: dict[str, set[str]] = {}

    def imports_of(path: str, text: str) -> set[str]:
        if path not in names:
            names[path] = set().union(*imported(text, anywhere=True)) if "import" in text else set()
        return names[path]

    entries = {p for p, t in texts if entry_point(t)}
    # a strong file that is an entry point, or that no other file imports (a script run at its top level)
    seeds = {p for p, t in texts if p in strong and (p in entries or _TOP_CALL.search(t) and not _imported(p, texts, imports_of))}
    # an entry point importing a module of the project that falls back to the CPU and places the run's model there
    # (a trainer's `device = torch.device("cuda:0" if n_gpu > 0 else "cpu")` ... `self.model = model.to(self.device)`)
    placing = set().union(*(module_keys(p) for p, t in texts if p in strong and p not in entries and _places_model(t)))
    if placing:
        seeds |= {p for p, t in texts if p in entries and imports_of(p, t) & placing}
    if option_keys:
        seeds |= {p for p, t in texts if p in entries and any(k in t for k in option_keys) and imports_of(p, t) & option_keys}
    if not seeds:
        return frozenset()
    reached = set(seeds)
    frontier = set().union(*(imports_of(p, t) for p, t in texts if p in seeds))
    # (packages whose modules a reached file imports by a run-time name: `import_module("approach." + name)`)
    packages = set().union(*(dynamic_packages(t) for p, t in texts if p in seeds))
    while frontier or packages:
        new = [(p, t) for p, t in texts if p not in reached and (module_keys(p) & frontier or packages and in_packages(p, packages))]
        frontier, packages = set(), set()
        for p, t in new:
            reached.add(p)
            frontier |= imports_of(p, t)
            packages |= dynamic_packages(t)
    return frozenset(reached)


# the model of the run placed on the device the file chose (`self.model = model.to(self.device)`)
_MODEL_TO = lazy_compile(r"^[ \t]*(?:self\.)?\w*model\w*[ \t]*=[ \t]*(?:self\.)?\w*model\w*\.to\([ \t]*(?:self\.)?\w*device\w*[ \t]*\)", re.M)


def _places_model(text: str) -> bool:
    """A ``"cpu"`` alternative of a device choice, and the model placed on the chosen device."""
    return ".to(" in text and "model" in text and bool(_CPU_CHOICE.search(text) or _ELSE_CPU.search(text)) \
        and _MODEL_TO.search(text) is not None


def _imported(path: str, texts: list[tuple[str, str]], imports_of) -> bool:
    keys = module_keys(path)
    return any(p != path and any(k in t for k in keys) and imports_of(p, t) & keys for p, t in texts)


__all__ = ["cpu_driven", "cpu_option", "explicit_cpu_option", "strong_cpu_path"]

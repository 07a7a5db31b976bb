"""Project-wide facts: what a per-file rule cannot see in the file it checks.

Lint judges one file at a time, but a few questions are answered in *another* file of the same
project: what a dataset class imported from another module yields per item (tensors already on
the device, stored prompts, slices of an in-memory tensor, or items that are read and decoded);
whether the project as a whole is written for GPUs only (it imports GPU-only kernel libraries
unconditionally more often than it checks for a GPU, or it hard-codes the NCCL backend and never
checks for a GPU, or several files hard-code CUDA and none has any CPU path), or puts anything on a device at all; which
of its entry points are stand-alone GPU scripts (no CPU path of their own nor in what they import); which of its functions read their
arguments on the host, make the program GPU-only, or build pinned loaders; which random
generators it seeds; whether the checkpoints it writes hold host data only. :func:`scan`
answers them with one light pass over the files being linted, before the rules run:

- text tests first: GPU-only imports are import lines at column 0 (module level, not under
  ``try``/``if``); only the module-level imports and the top-level classes that look like
  datasets are parsed; the short functions that mention what rules may ask about, and the files
  that call ``torch.save``, are kept as text and read only when a rule asks, so the pass costs
  a fraction of a lint;
- nothing is imported or executed, neither torch nor the linted code;
- the result, :class:`ProjectFacts`, is small plain data: the runner builds it once in the parent
  process and hands it to every worker, and each file's :class:`~torchwise.lint.engine.Context`
  carries the facts of its project as ``ctx.project``.

A project is a folder given to lint: ``torchwise lint proj_a proj_b`` scans each on its own, so
facts do not mix; a file named on its own is its own project (its own facts only). Code linted
without the runner (``lint_source``, standard input, the flake8 plugin, which sees one file at
a time) gets :data:`NO_FACTS`: file-only behaviour.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right

from typing import Iterable

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import NO_FACTS, DatasetFacts, ProjectFacts
from torchwise.lint.project.cpudriven import cpu_driven
from torchwise.lint.project.datasets import dataset_facts
from torchwise.lint.project.dynimports import in_packages, run_time_packages
from torchwise.lint.project.extensions import cuda_extension_files, kernel_importers, vendored_only
from torchwise.lint.project.fallbackhelpers import helper_callers
from torchwise.lint.project.functions import GPU_NEEDLES, GPU_SETUP_TEXT, HOST_NEEDLES, LOADER_NEEDLES, candidate_blocks, definition_counts
from torchwise.lint.project.scripts import entry_point, gpu_scripts
from torchwise.lint.project.text import GPU_ONLY_LIBS, text_facts
from torchwise.lint.semantics.files import is_test_path

# A project is GPU-only when at least this many of its (non-test) files import a GPU-only library
# at module level, and more files do so than check whether a GPU is there; or when it hard-codes
# the NCCL backend (``init_process_group("nccl")``) and no file of it ever checks for a GPU.
GPU_ONLY_MIN_FILES = 3
# ... or when at least this many files hard-code CUDA and no file has any way to run without a GPU
# (no GPU check, no "cpu" device chosen, no device flag): written for a GPU machine throughout -
# or the only ways are in files that train nothing while the training files hard-code CUDA (a
# vocoder whose inference module falls back to the CPU and whose training script is GPU-only).
# A training file whose GPU check never guards the move of the model it trains has no CPU path
# (project.text.unguarded_model_move).
CUDA_ONLY_MIN_FILES = 2


def scan(files: Iterable[tuple[str, str]]) -> ProjectFacts:
    """Facts from ``(path, source text)`` pairs of one project. Never raises for bad content."""
    every = list(files)
    texts = [(path, text) for path, text in every if not is_test_path(path, text)]
    texts_set = set(texts) if len(texts) < len(every) else ()
    loaders = any("DataLoader" in text for _, text in every)
    # dataset facts serve DataLoader rules only: no loader in the project, no parsing
    datasets = dataset_facts(every) if loaders else {}
    words = text_facts(texts)
    hosts = candidate_blocks(texts, HOST_NEEDLES) if words.moves_to_device else {}
    setups = candidate_blocks(texts, GPU_NEEDLES, GPU_SETUP_TEXT)
    builders = candidate_blocks(texts, LOADER_NEEDLES) if loaders else {}
    saves = tuple((p, t) for p, t in texts if _calls_torch(t, "save")) if any(_calls_torch(t, "load") for _, t in texts) else ()
    # files importing a CUDA-only extension (knn_cuda, the project's own CUDAExtension) are GPU-only files too
    kernels = cuda_extension_files(texts)
    # (every file whose imports reach a kernel cannot run without it: the model stack of a point-cloud project)
    kernel_files = kernel_importers(texts, kernels)
    if not (vendored_only(kernels, kernel_files) and not any(entry_point(t) for p, t in texts if p in kernel_files)):
        # (a vendored kernel package that no script of the project and nothing beside it imports: optional)
        words.gpu_files += [p for p in kernel_files if p not in words.gpu_files]
    libs_only = len(words.gpu_files) >= GPU_ONLY_MIN_FILES and len(words.gpu_files) > words.checks
    nccl_only = words.nccl > 0 and words.checks == 0
    # (GPU-only libraries or NCCL in one sub-project of a collection - the CUDA-extension and the
    # distributed chapters of a book - are those folders' design only)
    confined = confined_sub_projects(words.folders, ({p.replace("\\", "/").rpartition("/")[0] for p in words.gpu_files}
                                                     if libs_only else set()) | (words.nccl_folders if nccl_only else set())) \
        if libs_only or nccl_only else ()
    # files calling a helper of the project that moves to CUDA only when a GPU is there: their CPU path (R17)
    callers = helper_callers(texts) if words.cuda_files and words.checks else frozenset()
    cpu_trainers = words.cpu_trainers + len(callers.intersection(words.cuda_only_trainers))
    gpu_only = (libs_only or nccl_only) and not confined or (words.cuda_files >= CUDA_ONLY_MIN_FILES and (
        words.cpu_paths == 0 or words.cuda_trainers > 0 and cpu_trainers == 0))
    return ProjectFacts(
        "", datasets, gpu_only, tuple(words.gpu_files), words.checks, words.nccl,
        gpu_only_dirs=() if gpu_only else tuple(d for d in dict.fromkeys(gpu_only_folders(words.folders) + confined)
                                                if not in_packages(d + "x.py", run_time_packages(texts, words.cpu_path_files))),
        kernel_files=kernel_files,
        cpu_path_files=words.cpu_paths,
        gpu_scripts=frozenset() if gpu_only or len(texts) < 2 else gpu_scripts(texts, words.cpu_path_files),
        cpu_driven=cpu_driven(texts) | callers if words.cuda_files and not gpu_only else frozenset(),
        moves_to_device=words.moves_to_device,
        targets_gpu=words.targets_gpu,
        host_read_blocks=hosts,
        gpu_setup_blocks=setups,
        loader_blocks=builders,
        definitions=definition_counts(texts, set(hosts) | set(setups) | set(builders)),
        all_loaders_pinned=loaders and _all_pinned(texts),
        pins_memory=loaders and any("pin_memory" in text for _, text in texts),
        seeded=words.seeded,
        seed_files=tuple(words.seed_files),
        seeds_everything=words.seeds_everything,
        save_files=saves,
        files=tuple(texts),
        test_calls=frozenset(name for path, text in every if texts_set and (path, text) not in texts_set for name in _METHOD_CALL.findall(text)),
        no_grad_functions=frozenset(words.no_grad_functions),
        plain_classes=frozenset(words.plain_classes),
    )


def gpu_only_folders(folders: dict[str, list[int]]) -> tuple[str, ...]:
    """The top-level folders of a collection of sub-projects (a language model, an image
    classifier, a translation model side by side) that are GPU-only by themselves: at least
    CUDA_ONLY_MIN_FILES of their files hard-code CUDA, one of them trains, and none of their
    files has a way to run without a GPU. Each is returned as a path prefix ending in "/"."""
    if len(folders) < 2:
        return ()
    _, tops = _top_folders(folders)
    if len(tops) < 2:
        return ()  # one folder holds the whole project: the project-level test decides
    return tuple(top for top, (cuda, cpu, trainers) in tops.items()
                 if cuda >= CUDA_ONLY_MIN_FILES and trainers > 0 and cpu == 0)


def _top_folders(folders: dict[str, list[int]]) -> tuple[str, dict[str, list[int]]]:
    """The common base of ``folders`` and the summed counts of each top-level folder under it
    (a path prefix ending in "/"); files at the top of the project belong to none."""
    base = os.path.commonpath(list(folders)) if all(folders) else ""
    tops: dict[str, list[int]] = {}
    for folder, counts in folders.items():
        rest = folder[len(base):].lstrip("/")
        if rest:
            top = tops.setdefault(f"{base}/{rest.split('/')[0]}/" if base else f"{rest.split('/')[0]}/", [0, 0, 0])
            for i, n in enumerate(counts):
                top[i] += n
    return base, tops


def confined_sub_projects(folders: dict[str, list[int]], evidence: set[str]) -> tuple[str, ...]:
    """In a collection of sub-projects (chapters of a book side by side), the top-level folders
    holding the GPU-only evidence (the folders ``evidence`` of files that hard-code NCCL or import
    GPU-only libraries and kernels), when none of those folders has a CPU path and another folder
    does: the distributed chapter is GPU-only by design, the others are judged by themselves.
    Empty when the project is no such collection (then the evidence makes it GPU-only as a whole)."""
    if len(folders) < 2:
        return ()
    _, tops = _top_folders(folders)
    if len(tops) < 2:
        return ()
    hit = [top for top in tops if any((f + "/").startswith(top) for f in evidence)]
    if not hit or any(tops[t][1] for t in hit) or not any(c[1] for t, c in tops.items() if t not in hit) \
            or any(not any((f + "/").startswith(t) for t in tops) for f in evidence):
        return ()  # (evidence at the top of the project, or in a folder that also falls back: the project's design)
    return tuple(hit)


_METHOD_CALL = lazy_compile(r"\.([A-Za-z_]\w*)[ \t]*\(")  # a method call in a test file
_PINNED = lazy_compile(r"(?:pin_memory[ \t]*=|[\"']pin_memory[\"'][ \t]*:)[ \t]*True")  # (also {'pin_memory': True})
_TORCH_ALIAS = lazy_compile(r"^[ \t]*import[ \t]+torch[ \t]+as[ \t]+(\w+)", re.M)


def _calls_torch(text: str, name: str) -> bool:
    """The text calls ``torch.save(`` (``name``), also through an alias (``import torch as t``: ``t.save(``)."""
    if f"torch.{name}(" in text:
        return True
    return "import torch as" in text and any(f"{a}.{name}(" in text for a in _TORCH_ALIAS.findall(text))
_TOP_CLASS = lazy_compile(r"^class[ \t]+\w+[^\n]*", re.M)
_TOP_CODE = lazy_compile(r"^(?=[^\s#)\]}])", re.M)  # a line starting at column 0


def _all_pinned(texts: list[tuple[str, str]]) -> bool:
    """Every ``DataLoader(`` call of the project's text passes ``pin_memory=True`` (a cheap count;
    ``pin_memory = True`` too). Loaders built inside a dataset class (a class with ``__getitem__``
    that draws each item from per-class sub-loaders, an episodic sampler's set dataset) feed that
    dataset, not the training loop, and do not count."""
    calls = pinned = 0
    for _, text in texts:
        if "DataLoader(" not in text:
            continue
        calls += text.count("DataLoader(") - _nested_loaders(text)
        pinned += len(_PINNED.findall(text))
    return calls > 0 and pinned >= calls


def _nested_loaders(text: str) -> int:
    """``DataLoader(`` calls inside top-level classes that define ``__getitem__``."""
    if "__getitem__" not in text:
        return 0
    tops = [m.start() for m in _TOP_CODE.finditer(text)]
    nested = 0
    for m in _TOP_CLASS.finditer(text):
        i = bisect_right(tops, m.start())
        block = text[m.start():tops[i] if i < len(tops) else len(text)]
        if "def __getitem__" in block:
            nested += block.count("DataLoader(")
    return nested


__all__ = ["GPU_ONLY_LIBS", "GPU_ONLY_MIN_FILES", "gpu_only_folders", "NO_FACTS", "DatasetFacts", "ProjectFacts", "scan"]

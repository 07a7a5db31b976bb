"""Project-wide facts: what a per-file rule cannot see in the file it checks.

Lint judges one file at a time, but a few questions are answered in *another* file of the same
project: what a dataset class imported from another module yields per item (tensors already on
the device, stored prompts, slices of an in-memory tensor, or items that are read and decoded),
and whether the project as a whole is written for GPUs only (it imports GPU-only kernel
libraries unconditionally more often than it checks for a GPU, or it hard-codes the NCCL
backend and never checks for a GPU). :func:`scan` answers them with one light pass over the
files being linted, before the rules run:

- text tests first: GPU-only imports are import lines at column 0 (module level, not under
  ``try``/``if``); only the module-level imports and the top-level classes that look like
  datasets are parsed (not the whole file), so the pass costs a fraction of a lint;
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

import ast
import re
from bisect import bisect_right
from typing import Iterable

from torchwise.lint.engine import Context, last_name
from torchwise.lint.facts import NO_FACTS, DatasetFacts, ProjectFacts
from torchwise.lint.semantics.data import getitem_of, getitem_reads_nothing, getitem_slices_only, moves_to_device
from torchwise.lint.semantics.files import is_test_path
from torchwise.lint.semantics.values import body_nodes

# Libraries whose code runs on NVIDIA (or AMD) GPUs only: kernels, fused ops, GPU-only engines.
GPU_ONLY_LIBS = ("triton", "flash_attn", "apex", "transformer_engine", "xformers", "pycuda", "cupy", "vllm",
                 "deepspeed", "mamba_ssm", "causal_conv1d")
_GPU_IMPORT = re.compile(r"^(?:import|from)[ \t]+(" + "|".join(GPU_ONLY_LIBS) + r")\b", re.M)
_GPU_CHECK = re.compile(r"cuda\.(?:is_available|device_count)\(")
_NCCL_ONLY = re.compile(r"init_process_group\(\s*(?:backend\s*=\s*)?[\"']nccl[\"']|backend\s*=\s*[\"']nccl[\"']")
_DATASET_HINTS = ("Dataset", "__getitem__")
# A project is GPU-only when at least this many of its (non-test) files import a GPU-only library
# at module level, and more files do so than check whether a GPU is there; or when it hard-codes
# the NCCL backend (``init_process_group("nccl")``) and no file of it ever checks for a GPU.
GPU_ONLY_MIN_FILES = 3

# Calls in ``__getitem__`` that read, decode or transform an item: per-item CPU work.
_DECODE_CALLS = frozenset({
    "open", "imread", "imdecode", "read_image", "decode_image", "load_image", "pil_loader", "default_loader",
    "accimage_loader", "loader", "load", "loadtxt", "read_csv", "read", "decode", "read_video", "read_file",
    "transform", "transforms", "augment", "augmentation", "tokenizer", "tokenize", "resample",
})


def scan(files: Iterable[tuple[str, str]]) -> ProjectFacts:
    """Facts from ``(path, source text)`` pairs of one project. Never raises for bad content."""
    collected: dict[str, list[tuple[DatasetFacts, list[str]]]] = {}
    gpu_files: list[str] = []
    checks = nccl = 0
    candidates: list[tuple[str, str]] = []
    loaders = False  # dataset facts serve DataLoader rules only: no loader in the project, no parsing
    for path, text in files:
        test = is_test_path(path)
        if not test and any(lib in text for lib in GPU_ONLY_LIBS) and _GPU_IMPORT.search(text) is not None:
            gpu_files.append(path)  # an import statement at column 0: module level, unconditional
        if not test and "cuda." in text and _GPU_CHECK.search(text):
            checks += 1
        if not test and "nccl" in text and _NCCL_ONLY.search(text):
            nccl += 1
        loaders = loaders or "DataLoader" in text
        if "class " in text and any(h in text for h in _DATASET_HINTS):
            candidates.append((path, text))
    for path, text in candidates if loaders else ():
        excerpt = _dataset_excerpt(text)
        if excerpt is None:
            continue
        try:
            tree = ast.parse(excerpt, filename=path)
        except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
            try:  # the excerpt was cut badly (a multi-line string at column 0): read the whole file
                excerpt = text
                tree = ast.parse(text, filename=path)
            except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError):
                continue
        try:
            for facts, bases in _dataset_classes(excerpt, path, tree):
                collected.setdefault(facts.name, []).append((facts, bases))
        except RecursionError:
            continue
    datasets = _merge(collected)
    gpu_only = (len(gpu_files) >= GPU_ONLY_MIN_FILES and len(gpu_files) > checks) or (nccl > 0 and checks == 0)
    return ProjectFacts("", datasets, gpu_only, tuple(gpu_files), checks, nccl)


_CLASS_LINE = re.compile(r"^class[ \t]+(\w+)([^\n]*)", re.M)
_TOP_LINE = re.compile(r"^(?=[^\s#)\]}])", re.M)  # a line starting at column 0 (not a comment or a closing bracket)
_IMPORTS = re.compile(r"^(?:from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\)|(?:import|from)[ \t][^\n]*)", re.M)


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
                                         facts.iterable or inherited.iterable, inherited.decodes)
            results.add(facts)
        return results.pop() if len(results) == 1 else None

    out = {}
    for name in collected:
        facts = resolve(name, 5)
        if facts is not None:
            out[name] = facts
    return out


__all__ = ["GPU_ONLY_LIBS", "NO_FACTS", "DatasetFacts", "ProjectFacts", "scan"]

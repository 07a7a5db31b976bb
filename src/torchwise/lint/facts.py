"""Project facts as plain data: what a per-file rule cannot see in the file it checks.

:func:`torchwise.lint.project.scan` fills them in with a first pass over the files being
linted; each file's :class:`~torchwise.lint.engine.Context` carries its project's facts as
``ctx.project`` (:data:`NO_FACTS` for code linted alone). Data only: this module imports nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DatasetFacts:
    """What items of one dataset class (defined somewhere in the project) are.

    ``device``: ``__getitem__`` puts them on a device (batches cannot be pinned or built in
    workers). ``constant``: ``__getitem__`` hands back stored constants (prompts), no tensor.
    ``in_memory``: it only slices tensors already in memory. ``iterable``: an
    ``IterableDataset`` (fed by the main process). ``decodes``: it reads, decodes or transforms
    each item (CPU work that loader workers overlap with training). ``text``: it hands back
    entries of stored lists of strings only (batches are lists of strings, nothing to pin).
    """

    name: str
    device: bool = False
    constant: bool = False
    in_memory: bool = False
    iterable: bool = False
    decodes: bool = False
    text: bool = False


@dataclass(frozen=True)
class FunctionBlock:
    """The source of one function of the project (dedented), where it is, and its name; read
    (parsed) only when a rule asks about that name."""

    path: str
    line: int
    text: str


@dataclass
class ProjectFacts:
    """The facts of one project (see the module doc). Plain data: cheap to send to workers."""

    root: str = ""
    datasets: dict[str, DatasetFacts] = field(default_factory=dict)
    gpu_only: bool = False
    gpu_only_files: tuple[str, ...] = ()  # files importing a GPU-only library at module level
    gpu_check_files: int = 0  # files that check torch.cuda.is_available()/device_count()
    nccl_files: int = 0  # files that hard-code the NCCL backend
    # some file moves data or models to an accelerator (.cuda(), "cuda", .to(device))
    moves_to_device: bool = False
    targets_gpu: bool = False  # some file names CUDA: .cuda(), a "cuda" device, torch.cuda
    # short functions whose text mentions a host read (.item()...), a GPU set-up (NCCL, a GPU check)
    # or pin_memory, by name; each is read only when a rule asks (semantics.projectcode)
    host_read_blocks: dict[str, tuple[FunctionBlock, ...]] = field(default_factory=dict)
    gpu_setup_blocks: dict[str, tuple[FunctionBlock, ...]] = field(default_factory=dict)
    loader_blocks: dict[str, tuple[FunctionBlock, ...]] = field(default_factory=dict)
    definitions: dict[str, int] = field(default_factory=dict)  # how often each of those names is defined
    # every DataLoader of the project is built with pin_memory=True (and there is one)
    all_loaders_pinned: bool = False
    pins_memory: bool = False  # some file of the project mentions pin_memory
    # random generators the project seeds: "random", "numpy", "torch" -> "path:line" of the first seed
    seeded: dict[str, str] = field(default_factory=dict)
    seed_files: tuple[str, ...] = ()  # every file that seeds a generator (per-call seeds of a method left out)
    seeds_everything: bool = False  # a seed-everything helper (framework's or its own) is called or defined
    save_files: tuple[tuple[str, str], ...] = ()  # (path, text) of the files that call torch.save
    # (path, text) of every non-test file: read (parsed) only when a rule follows a value into
    # another module (the callers of a function: semantics.callers)
    files: tuple[tuple[str, str], ...] = ()
    # names the project's test files call as methods (`model.infer(...)` in tests/): the tests use them
    test_calls: frozenset[str] = frozenset()
    # functions and methods decorated with @torch.no_grad()/@torch.inference_mode() somewhere
    no_grad_functions: frozenset[str] = frozenset()
    # classes the project defines with no base (or only object): plain classes, not modules
    plain_classes: frozenset[str] = frozenset()
    # top-level folders ("lm/") that are GPU-only sub-projects of a collection (project.gpu_only_folders)
    gpu_only_dirs: tuple[str, ...] = ()
    cpu_path_files: int = 0  # files with any way to run without a GPU (a GPU check, a device flag, "cpu")
    # files whose module-level imports reach a CUDA-only extension (project.extensions.kernel_importers)
    kernel_files: frozenset[str] = frozenset()
    # entry points with no CPU path of their own nor in what they import (project.scripts.gpu_scripts)
    gpu_scripts: frozenset[str] = frozenset()
    # files a CPU run reaches: entry points with a strong CPU path and the project modules they import (project.cpudriven)
    cpu_driven: frozenset[str] = frozenset()
    # answers worked out on demand from the blocks and files above (one process's cache)
    answers: dict = field(default_factory=dict, repr=False, compare=False)

    def dataset(self, name: str | None) -> DatasetFacts | None:
        """The facts of the project's dataset class ``name`` (None if not defined in the project,
        or defined more than once with different facts)."""
        return self.datasets.get(name) if name else None


NO_FACTS = ProjectFacts()


__all__ = ["NO_FACTS", "DatasetFacts", "FunctionBlock", "ProjectFacts"]

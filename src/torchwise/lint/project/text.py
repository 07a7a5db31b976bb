"""Project facts read from the text of the files, without parsing: GPU-only libraries imported
at module level, GPU checks, hard-coded NCCL, moves to a device, and which random generators the
project seeds (and where)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.project.cpudriven import cpu_option, explicit_cpu_option
from torchwise.lint.project.dynimports import dynamic_packages, in_packages
from torchwise.lint.project.gpucount import gpu_count_gate
from torchwise.lint.semantics.seedtext import SEED_HELPERS as _SEED_ALL, SEEDS

# Libraries whose code runs on NVIDIA (or AMD) GPUs only: kernels, fused ops, GPU-only engines.
GPU_ONLY_LIBS = ("triton", "flash_attn", "apex", "transformer_engine", "xformers", "pycuda", "cupy", "vllm",
                 "deepspeed", "mamba_ssm", "causal_conv1d")
_GPU_IMPORT = lazy_compile(r"^(?:import|from)[ \t]+(" + "|".join(GPU_ONLY_LIBS) + r")\b", re.M)
_GPU_CHECK = lazy_compile(r"cuda\.(?:is_available|device_count)\(")
_NCCL_ONLY = lazy_compile(r"init_process_group\(\s*(?:backend\s*=\s*)?[\"']nccl[\"']|backend\s*=\s*[\"']nccl[\"']")
# a way to run without a GPU: a GPU check (not `device_count() > 1`, a multi-GPU choice), a device
# flag (`--no_cuda`, `use_gpu`, `args.cuda`) or option (`add_argument("--device")`), another
# accelerator (substrings), or a "cpu" device chosen (not a map_location or a move back)
_CPU_PATH = ("is_available(", "select_device", "accelerator", "no_cuda", "no-cuda", "use_cpu", "use-cpu",
             "--cpu", "use_gpu", "use_cuda", "args.cuda", "if cuda else", "if cuda:")
_AVAILABLE = lazy_compile(r"is_available\(")
_CPU_STRING = lazy_compile(r"[\"']cpu(?::\d)?[\"']")
_MPS = lazy_compile(r"\bmps\b")
# "cpu" where nothing is chosen: a checkpoint mapped while it loads (`map_location="cpu"`,
# `map_location=torch.device("cpu")`, `torch.load(f, "cpu")`) or a result moved back (`.to("cpu")`)
_NO_CHOICE = lazy_compile(r"(?:map_location[ \t]*=[ \t]*|\.to\([ \t]*(?:device[ \t]*=[ \t]*)?|torch\.load\([^()\n]*,[ \t]*)"
                        r"(?:torch\.device\([ \t]*)?$")


def gpu_check(text: str, pattern: re.Pattern[str] = _GPU_CHECK) -> bool:
    """A GPU check that chooses (``if torch.cuda.is_available():``, ``"cuda" if ... else "cpu"``),
    not one that only demands a GPU (``assert torch.cuda.is_available()``: no CPU path)."""
    for m in pattern.finditer(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if not text[start:m.start()].lstrip().startswith("assert"):
            return True
    return False


_DEVICE_OPTION = lazy_compile(r"""add_argument\(\s*["']--device["']""")


_GPU_ID_FLAG = lazy_compile(r"""CUDA_VISIBLE_DEVICES["']\][ \t]*=[ \t]*(?:str\([ \t]*)?args\.cuda\b""")


def _cpu_path(text: str) -> bool:
    if "is_available(" in text and gpu_check(text, _AVAILABLE):
        return True
    if "--device" in text and _DEVICE_OPTION.search(text) is not None:
        return True  # a device option: "cpu" is one answer
    if "add_argument(" in text and cpu_option(text):
        return True  # `--no_cuda`, or a boolean GPU switch (`--gpu` stored as True/False): its off side runs on the CPU
    words = [w for w in _CPU_PATH[1:] if w in text]
    if words == ["args.cuda"] and "CUDA_VISIBLE_DEVICES" in text and _GPU_ID_FLAG.search(text) is not None:
        words = []  # `os.environ["CUDA_VISIBLE_DEVICES"] = str(args.cuda)`: a GPU id, no way to run without one
    if words or ("mps" in text and _MPS.search(text) is not None):
        return True
    if "gpu" in text and gpu_count_gate(text):
        return True  # `if args.ngpu > 0: net.cuda()`: a count of zero runs on the CPU
    if "cpu" not in text:
        return False
    for m in _CPU_STRING.finditer(text):
        before = text[max(0, m.start() - 40):m.start()]
        if not ("map_location" in before or ".to(" in before or "load(" in before) \
                or _NO_CHOICE.search(text, max(0, m.start() - 40), m.start()) is None:
            return True
    return False


# substrings (faster than a regex over every file): naming CUDA, and moving data to a device
_CUDA = (".cuda(", '"cuda', "'cuda", "torch.cuda.")
_MOVES = _CUDA + (".to(device", ".to(self.device", ".to(args.device")


# classes with no base or only ``object``: plain Python classes, never modules
_PLAIN_CLASS = lazy_compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\([ \t]*(?:object)?[ \t]*\))?[ \t]*:", re.M)
_NO_GRAD_DEF = lazy_compile(r"@(?:torch\.)?(?:no_grad|inference_mode)\(\)[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")


@dataclass
class TextFacts:
    gpu_files: list[str] = field(default_factory=list)
    checks: int = 0
    cuda_files: int = 0  # files that hard-code CUDA (`.cuda(`, a "cuda" string)
    cpu_paths: int = 0  # files with a way to run without a GPU (_CPU_PATH)
    cpu_path_files: set[str] = field(default_factory=set)  # ... and which
    cuda_trainers: int = 0  # files with a training step (`.backward(`) that hard-code CUDA
    cpu_trainers: int = 0  # files with a training step and a way to run without a GPU
    cuda_only_trainers: list[str] = field(default_factory=list)  # training files hard-coding CUDA with no CPU path of their own
    nccl: int = 0
    nccl_folders: set[str] = field(default_factory=set)  # folders of the files that hard-code NCCL
    # folder of a file -> [files hard-coding CUDA, files with a CPU path, training files hard-coding CUDA]
    folders: dict[str, list[int]] = field(default_factory=dict)
    moves_to_device: bool = False
    targets_gpu: bool = False
    seeded: dict[str, str] = field(default_factory=dict)  # family -> path:line of its first seed
    seed_files: list[str] = field(default_factory=list)  # every file that seeds a generator
    seeds_everything: bool = False
    no_grad_functions: set[str] = field(default_factory=set)
    plain_classes: set[str] = field(default_factory=set)


def text_facts(texts: list[tuple[str, str]]) -> TextFacts:
    """The text facts of the (non-test) files ``(path, text)`` of one project."""
    out = TextFacts()
    cuda_only: list[str] = []  # training files that hard-code CUDA and have no CPU path of their own
    for path, text in texts:
        if any(lib in text for lib in GPU_ONLY_LIBS) and _GPU_IMPORT.search(text) is not None:
            out.gpu_files.append(path)  # an import statement at column 0: module level, unconditional
        if ("is_available(" in text or "device_count(" in text) and gpu_check(text):
            out.checks += 1
        cuda = ".cuda(" in text or '"cuda' in text or "'cuda" in text
        # (a package's setup.py builds, it runs no model: its GPU check chooses no device)
        cpu = _cpu_path(text) and not path.replace("\\", "/").endswith(("/setup.py",)) and path != "setup.py"
        out.cuda_files += cuda
        out.cpu_paths += cpu
        if cpu:
            out.cpu_path_files.add(path)
        counts = out.folders.setdefault(path.replace("\\", "/").rpartition("/")[0], [0, 0, 0])
        counts[0] += cuda
        counts[1] += cpu
        if ".backward(" in text and (".step(" in text or "optim" in text):  # trains (an attack's backward to its input does not)
            # a GPU check that never guards the trained model's move is no CPU path of the training
            # (unless the file offers its user a CPU run by an option of its own, `--no_cuda`: R17)
            cpu = cpu and not (cuda and unguarded_model_move(text) is not None and not explicit_cpu_option(text))
            out.cuda_trainers += cuda
            out.cpu_trainers += cpu
            counts[2] += cuda
            if cuda and not cpu:
                cuda_only.append(path)
        if "nccl" in text and _NCCL_ONLY.search(text):
            out.nccl += 1
            out.nccl_folders.add(path.replace("\\", "/").rpartition("/")[0])
        if not out.moves_to_device and any(m in text for m in _MOVES):
            out.moves_to_device = True
        if not out.targets_gpu and "cuda" in text and any(m in text for m in _CUDA):
            out.targets_gpu = True
        if "seed" in text:
            _seeds(path, text, out)
        if "no_grad()" in text or "inference_mode()" in text:
            out.no_grad_functions.update(_NO_GRAD_DEF.findall(text))
        if "class " in text:
            out.plain_classes.update(_PLAIN_CLASS.findall(text))
    out.cpu_trainers += sum(_driven_on_cpu(path, texts, out.cpu_path_files) for path in cuda_only)
    out.cuda_only_trainers = cuda_only
    return out


_ENTRY = lazy_compile(r"^\S[^\n]*\bparse_args\(|^if[ \t]+__name__[ \t]*==", re.M)


def _driven_on_cpu(path: str, texts: list[tuple[str, str]], cpu_files: set[str]) -> bool:
    """An entry script with a CPU path imports the training module ``path`` (``from
    model.BasicTrainer import Trainer`` in a ``Run.py`` that falls back to ``args.device =
    'cpu'``), also by a name built at run time (``import_module("approach." + args.approach)``):
    the training runs on the device that script chooses, so its CPU path is the trainer's."""
    stem = path.replace("\\", "/").rsplit("/", 1)[-1][:-3]
    if not stem.isidentifier():
        return False
    pattern = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]*\b" + stem + r"[ \t]+import|import[ \t]+[\w.]*\b" + stem + r"\b"
                         r"|from[ \t]+[\w.]+[ \t]+import[^\n]*\b" + stem + r"\b)", re.M)
    return any(p != path and (stem in t and pattern.search(t) is not None or in_packages(path, dynamic_packages(t)))
               and _ENTRY.search(t) is not None for p, t in texts if p in cpu_files)


_MODEL_MOVE = lazy_compile(r"^[ \t]*(\w+)(?:[ \t]*=[ \t]*[^\n]*)?\.(?:cuda\([^()\n]*\)|to\([ \t]*[\"']cuda(?::\d+)?[\"'][ \t]*\))"
                         r"[ \t]*(?:#[^\n]*)?$", re.M)


def unguarded_model_move(text: str) -> int | None:
    """The line of a statement that moves the model this file trains to CUDA unconditionally
    (``model = model.cuda()``, ``net = Net().to("cuda")``, ``model.cuda()``: a name whose
    ``.parameters()`` the file reads) at module level or directly in a function's body, under no
    ``if``; None when there is none. A training script whose GPU check guards only the batches
    while the model itself always goes to CUDA cannot train without a GPU."""
    for m in _MODEL_MOVE.finditer(text):
        name = m.group(1)
        if f"{name}.parameters(" not in text and f"{name}.named_parameters(" not in text:
            continue
        indent = m.end(1) - len(name) - m.start()
        if indent == 0 or _def_body(text, m.start(), indent):
            return text.count("\n", 0, m.start()) + 1
    return None


def _def_body(text: str, start: int, indent: int) -> bool:
    """The line starting at ``start`` (indented ``indent``) lies directly in a function's body:
    the nearest less-indented code line above it is the ``def``."""
    pos = start
    while pos > 0:
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev:pos - 1]
        stripped = line.lstrip()
        pos = prev
        if not stripped or stripped.startswith("#"):
            continue
        if len(line) - len(stripped) < indent:
            return stripped.startswith(("def ", "async def "))
    return False


def _defines_seed_helper(text: str) -> bool:
    """A ``def ...seed...(`` line: a seeding helper of the project's own."""
    pos = text.find("seed")
    while pos >= 0:
        line = text[text.rfind("\n", 0, pos) + 1:pos].lstrip()
        if line.startswith(("def ", "async def ")) and "(" not in line:
            return True
        pos = text.find("seed", pos + 4)
    return False


_DEF_HEAD = lazy_compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(([^)]*)\)")


def _per_call_seed(text: str, start: int, end: int) -> bool:
    """``np.random.seed(seed)`` in a method that takes ``seed`` as a parameter
    (``def read_frames(self, path, jitter=0, seed=None)``): an option of one call, not the
    run's seeding (a method named for seeding, or ``__init__``, still is; so is a required ``seed``
    parameter, ``def _setup_data(self, name, shuffle, seed)``: every call hands the run's seed in)."""
    close = text.find(")", end)
    arg = text[end:close].strip() if close >= 0 else ""
    if not arg.isidentifier():
        return False
    line_start = text.rfind("\n", 0, start) + 1
    indent = len(text[line_start:start]) - len(text[line_start:start].lstrip())
    pos = line_start
    while pos > 0:
        prev = text.rfind("\n", 0, pos - 1) + 1
        line = text[prev:pos - 1]
        stripped = line.lstrip()
        if stripped and len(line) - len(stripped) < indent:
            if not stripped.startswith(("def ", "async def ")):
                if stripped.startswith("class ") or len(line) - len(stripped) == 0:
                    return False
                indent = len(line) - len(stripped)
                pos = prev
                continue
            m = _DEF_HEAD.match(text, prev)
            if m is None or "seed" in m.group(1).lower() or m.group(1) == "__init__":
                return False
            params = [p.split("=")[0].split(":")[0].strip() for p in m.group(2).split(",")]
            required = [p.split(":")[0].strip() for p in m.group(2).split(",") if "=" not in p]
            return bool(params) and params[0] == "self" and arg in params and arg not in required
        pos = prev
    return False


def _calls_seed_helper(text: str) -> bool:
    """A call of a seed-everything helper, as a whole name (``manual_seed_all(`` is no ``seed_all(``)."""
    for helper in _SEED_ALL:
        pos = text.find(helper)
        while pos >= 0:
            if pos == 0 or not (text[pos - 1].isalnum() or text[pos - 1] == "_"):
                return True
            pos = text.find(helper, pos + 1)
    return False


def _worker_seed(text: str, start: int) -> bool:
    """A seed in a DataLoader worker's init function (``def worker_init_fn(worker_id):
    numpy.random.seed(... + worker_id)``): each worker's stream made distinct, not the run's seeding."""
    line_end = text.find("\n", start)
    if "worker" in text[start:line_end if line_end >= 0 else len(text)]:
        return True
    head = text.rfind("def ", 0, start)
    if head >= 0 and "worker" in text[head:text.find("\n", head)]:
        return True
    return "target=" in text and _process_target_seed(text, start)


def _clock_arg(text: str, end: int) -> bool:
    """The seeding call whose ``(`` ends at ``end`` seeds with the clock (:func:`clock_seed`)."""
    line_end = text.find("\n", end)
    line = text[end:line_end if line_end >= 0 else len(text)]
    depth, close = 1, -1
    for i, ch in enumerate(line):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            close = i
            break
    return close >= 0 and clock_seed(text, line[:close])


def _process_target_seed(text: str, start: int) -> bool:
    """``np.random.seed(SEED)`` in a function that a process runs (``Process(target=sample_function,
    args=(..., np.random.randint(2e9)))``) with the seed it is handed: a worker's own stream."""
    close = text.find(")", start)
    arg = text[text.find("(", start) + 1:close].strip() if close >= 0 else ""
    if not arg.isidentifier():
        return False
    line_start = text.rfind("\n", 0, start) + 1
    indent = len(text[line_start:start]) - len(text[line_start:start].lstrip())
    # the enclosing function: the last head above with a smaller indent
    heads = [m for m in _DEF_HEAD.finditer(text[:line_start]) if m.start() == 0 or text[m.start() - 1] == "\n"]
    outer = [m for m in heads if len(m.group(0)) - len(m.group(0).lstrip()) < indent]
    if not outer:
        return False
    m = outer[-1]
    params = [p.split("=")[0].split(":")[0].strip() for p in m.group(2).split(",")]
    return arg in params and re.search(rf"\b(?:target|initializer)\s*=\s*{re.escape(m.group(1))}\b", text) is not None


# the clock as a seed: `time.time()`, `int(time.time())`, `int(time.time() * 1000) % 2**32`
_CLOCK = lazy_compile(r"(?:int\(\s*)?(?:time\.)?time(?:_ns)?\(\)(?:\s*[*%]\s*[\w.*]+)*\s*\)?(?:\s*[*%]\s*[\w.*]+)*")


def clock_seed(text: str, arg: str) -> bool:
    """The seed ``arg`` (the text of a seeding call's argument) is the clock or none at all (an
    empty argument list or ``None`` reseeds from OS entropy): the call reads the
    time itself (``random.seed(time.time())``), or the file assigns the time to that name
    (``args.seed = time.time()`` ... ``torch.cuda.manual_seed(args.seed)``). Such a seed differs
    on every run: no reproducibility is intended."""
    arg = arg.strip()
    if arg in ("", "None", "seed=None") or _CLOCK.fullmatch(arg) is not None:
        return True  # `np.random.seed()` / `random.seed(None)`: fresh entropy from the OS, no seed
    if not arg or "time(" not in text or not all(part.isidentifier() for part in arg.split(".")):
        return False
    for m in re.finditer(rf"^[ \t]*{re.escape(arg)}[ \t]*=(?!=)([^\n#]*)", text, re.M):
        if _CLOCK.fullmatch(m.group(1).strip()) is not None:
            return True
    return False


def _seeds(path: str, text: str, out: TextFacts) -> None:
    if _calls_seed_helper(text) or _defines_seed_helper(text):
        out.seeds_everything = True
    for family, (needle, pattern) in SEEDS.items():
        if needle not in text:
            continue
        for m in pattern.finditer(text):
            if _per_call_seed(text, m.start(), m.end()) or _worker_seed(text, m.start()) or _clock_arg(text, m.end()):
                continue
            out.seeded.setdefault(family, f"{path}:{text.count(chr(10), 0, m.start()) + 1}")
            if path not in out.seed_files:
                out.seed_files.append(path)
            break

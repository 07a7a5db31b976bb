"""TW403: hard-coded ``"cuda"``/``.cuda()`` in a file with no CPU fallback anywhere."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.chosendevice import cpu_choices, gpu_lines_beside_choice
from torchwise.lint.semantics.cpureach import cpu_unreached
from torchwise.lint.semantics.cudamaps import cuda_map_locations
from torchwise.lint.semantics.cudascopes import demo_script, device_method
from torchwise.lint.semantics.deadcode import in_dead_function
from torchwise.lint.semantics.deviceparams import factories_ignoring_device
from torchwise.lint.semantics.devices import gpu_setup_line
from torchwise.lint.semantics.factorynames import COMMON, LIKE
from torchwise.lint.semantics.guardedmoves import availability_beside_option, bare_beside_guarded_model, model_beside_guarded_batches
from torchwise.lint.semantics.handeddevice import cuda_calls, promised_cpu_run, set_device_calls, unhanded_lines
from torchwise.lint.semantics.gpupaths import in_fallback_try, on_gpu_distributed_path, tests_device_for_cpu
from torchwise.lint.semantics.defaultguards import only_default_guards
from torchwise.lint.semantics.harmlessmoves import cuda_contexts_beside_choice, harmless_cuda
from torchwise.lint.semantics.fallback import chooses_by_flag, gpu_only_file, has_cpu_fallback, pinned_gpu_script, under_device_flag
from torchwise.lint.semantics.optinmodes import module_device_only_opt_in
from torchwise.lint.semantics.projectcode import function_verdict

_CUDA_STR = lazy_compile(r"^cuda(:\d+)?$")
_GPU_ONLY_LIBS = ("triton", "pycuda", "cupy", "vllm", "flash_attn", "xformers", "tensorrt", "apex", "transformer_engine")


_CHOSEN_DEVICE = lazy_compile(r"""device\(\s*(?:["']cuda["']\s+if\s+[\w.]+(?:\(\))?\s+else\s+["']cpu["']"""
                            r"""|["']cpu["']\s+if\s+[\w.]+(?:\(\))?\s+else\s+["']cuda["'])""")
# (factorynames.COMMON but linspace, the *_like ones, data and three typed legacy constructors)
_FACTORIES = COMMON - {"linspace"} | LIKE | {"Tensor", "FloatTensor", "LongTensor", "from_numpy", "as_tensor"}


class HardcodedCuda(Rule):
    code = "TW403"
    name = "hardcoded-cuda"
    triggers = ("cuda",)
    doc = """\
What it flags
  `.cuda()` calls, `torch.device("cuda")`, `.to("cuda")`, `device="cuda"` arguments, a checkpoint
  mapped onto a fixed GPU (`torch.load(p, map_location='cuda:0')`, `f'cuda:{args.gpu}'`), the
  typed CUDA constructors (`torch.cuda.FloatTensor(n, c)`) and `torch.cuda.current_device()`
  (and `torch.cuda.synchronize()` in a file that moves to CUDA under a device flag, below) in a
  file that has no device fallback anywhere: it never checks
  `torch.cuda.is_available()`, never names a `"cpu"` device (moving results back with `.cpu()`
  or `.to("cpu")`, or mapping a checkpoint with `map_location="cpu"` or
  `map_location=torch.device("cpu")`, chooses nothing) and has no device parameter of its own
  (`torch.cuda.device_count() > 1` chooses between GPUs, and `json.dumps` names no MPS
  backend). In a file that does
  choose its device by a flag (`device = torch.device("cuda" if use_cuda else "cpu")`, or
  `torch.device("cpu" if self.opt.no_cuda else "cuda")`), a
  tensor made with a factory and moved with a bare `.cuda()` (`torch.randn(x.shape).cuda()`,
  `torch.from_numpy(seq).cuda()`, also beside `"cuda" if torch.cuda.is_available() else "cpu"`;
  not under a device flag): the CPU run the file offers fails on that line. Likewise a bare
  `.cuda()` in a function that chooses its device by a setting itself (`if config['cuda']:
  device = torch.device("cuda:0")` / `else: device = torch.device("cpu")`) and then moves
  its inputs with `.cuda()` instead of `.to(device)`, and a factory's bare `.cuda()`
  (`torch.ones(d.size()).cuda()`) in a function whose device parameter defaults to `"cpu"` and
  is used there (`def train(self, loader, device='cpu'):` moving its batches `.to(device)`).
  In a file that tests the device it chose
  for the CPU (`device = lib.get_device()` ... `if device.type != 'cpu':`, `use_amp =
  device.type == "cuda"`), every `.cuda()` and `device="cuda"` outside such a test: the file
  means to run on either, and the hard-coded line breaks its CPU run (not when it asserts its
  device is no CPU: `assert self.get_device() != "cpu", "CPU not implemented"` demands a GPU). And in a training file that checks for a
  GPU and moves every batch under its flag (`if use_cuda: inputs = inputs.cuda()`), the model
  (or its loss) moved with a bare `.cuda()` as a whole statement (`model =
  torch.nn.DataParallel(model).cuda()`): the per-batch fallback is broken by the model move.
  Likewise the bare `.cuda()` moves of batches and states (in a loop or a helper) in a file that moves its model only
  under a device check (`if torch.cuda.is_available(): G = G.cuda()`, then
  `Variable(img).cuda()`; not when the file names a "cuda" device outside any check), and a
  `.cuda()` whose only device check is a bare `if torch.cuda.is_available():` in a file whose
  device flag honours a CPU option (`args.cuda = not args.no_cuda and
  torch.cuda.is_available()`): run with `--no-cuda` on a GPU machine, it moves the model to
  CUDA while the data stays on the CPU.
  In any file that chooses its device, a call needing a GPU at its top level under no `if`
  (`torch.cuda.current_device()` at import, a driver work-around): importing or starting it
  fails without a GPU, whatever its functions' `device` parameters offer.
  Not when the file also uses "cuda" unguarded elsewhere (autocast on "cuda", a tensor made on
  "cuda:0"): such a file is written for a GPU.
  Linted with its project, a file with no CPU path of its own is reported only where a CPU run
  of the project reaches it (`torchwise.lint.project.cpudriven`): an entry point (`if __name__
  == "__main__":`, a top-level `parse_args()`, or a script no file imports that runs code at its
  top level) with strong evidence of a CPU run - it chooses a `"cpu"` device as the other side
  of a choice (`"cuda" if torch.cuda.is_available() else "cpu"`, `else: device =
  torch.device("cpu")`, `args.device = "cpu"`), sets a device flag from the GPU check (`use_gpu
  = torch.cuda.is_available()`), or parses a CPU option (`--no_cuda`, `--cpu`, `--use_cpu`,
  `--device`; not a `--device` holding GPU ids: `default='0'`, `default=[0, 1]`, `type=int`, unless its
  help names the CPU) or a boolean GPU switch (`--cuda` with `type=str2bool`, `--use_gpu` with
  `action="store_true"`, `--gpu` with `default=False`, also declared over several lines), or moves to the GPU only when a GPU count is positive (`if args.ngpu >
  0: net.cuda()`: `--ngpu 0` is its CPU run; a count tested only against 1, `if args.ngpu > 1:
  DataParallel(...)`, or guarding only seeding is none), also through the options module it imports - and every project module
  such an entry point imports, directly or through other modules (the models, losses and
  trainers it runs) - and every file that calls a helper of its project which moves what it is
  handed or returns to CUDA only when a GPU is there (`def tensor2var(x): if
  torch.cuda.is_available(): x = x.cuda(); return Variable(x)`, a model factory `models.make(name)`
  doing the same, or one returning what it is handed moved onto a device it chooses with a CPU
  alternative: `def cc(net): device = torch.device("cuda" if torch.cuda.is_available() else
  "cpu"); return net.to(device)`), imported from the helper's module: the helper is the CPU path the file uses
  (not the modules it imports; not a helper whose check ends in `raise`). A sibling script's fallback is no CPU path of a file it never imports; an
  option that holds a GPU id (`--cuda 1` written into `CUDA_VISIBLE_DEVICES`, `--gpu 0`,
  `--gpu_ids`) is none; a GPU check that only guards the entry's own moves (`if
  torch.cuda.is_available(): model = model.cuda()`) is none for its libraries; a `"cpu"` chosen
  inside a library's function for a tensor of its own is none for its importers. A file linted
  on its own is judged by itself. Within a module such a CPU run reaches only by its imports, a function
  that no CPU-reached file calls or names beyond its import line (`from probe import exact, soft`
  where the CPU-capable script calls only `soft`; `exact` runs from a GPU-only script) is left
  alone, unless the module's own reached code calls it or a CPU-reached file picks names at
  run time (`getattr(probe, args.fn)`, `eval(name)`). Entry points with no CPU path of their own nor in the project
  modules they import (the options they parse with their `--no_cuda`, a `get_device()` helper)
  are left alone (an analysis script under `scripts/`, the test of a CUDA extension).
  Left alone: files importing GPU-only libraries (Triton, flash-attn, vLLM, ...) or using the
  NCCL backend, and every file of a project that is GPU-only by design: a first pass over the
  linted project (`torchwise.lint.project`) finds at least 3 files importing such libraries
  unconditionally at module level - CUDA extensions included: modules named `*_cuda`
  (`knn_cuda`, `emd_cuda`), kernel packages (`pointnet2_ops`), and the project's own kernels
  built with `CUDAExtension(...)` (imported by their name or by the folder of their `setup.py`)
  (in a collection of sub-projects side by side - the chapters of a book - where those files
  or the NCCL files below lie in folders with no CPU path while another folder has one, only those
  folders are GPU-only: the distributed chapter's NCCL is no design of the chapter beside it)
  (also one whose `setup.py` falls back to `CppExtension` but raises when CUDA is missing:
  `else: raise NotImplementedError("Cuda is not available")`)
  or JIT-compiled from `.cu` sources at import - more than the files that check `torch.cuda.is_available()`
  (and, whatever the counts, a file whose module-level imports reach such an extension, directly
  or through the project's modules: `from models import build` where a model imports `knn_cuda`),
  or a file hard-codes the NCCL backend (`init_process_group("nccl")`) and none checks for a GPU
  (`assert torch.cuda.is_available()` demands a GPU: it is no check and no CPU path);
  and a script that calls a set-up function of its project that is GPU-only (it initialises
  NCCL, or exits or asserts when no GPU is there), even when other scripts fall back to the CPU.
  A file that is written for a GPU by its own evidence is left alone too: it sets an imported
  library's CUDA switch to a constant (`Config.cuda = True`: the library moves the batches
  itself), or it times itself with CUDA events or `torch.cuda.synchronize()` under no `if` (a
  speed-run or benchmark script) - unless it moves to CUDA under a device flag (`if args.cuda:
  batch = batch.cuda()`): then it offers a CPU run, and its unguarded `.cuda()` and
  `torch.cuda.synchronize()` break it.
  (The flake8 plugin sees one file at a time: there only the file's own evidence counts.)
  A move in a `try` whose `except` carries on without it (`try: torch.sort(scores.cuda())` /
  `except: torch.sort(scores)`: a CPU fallback), and one on the distributed path of a file whose
  distributed set-up pins each process to a GPU (`torch.cuda.set_device(rank)`) - under `if
  world_size > 1:` / `if args.distributed:`, or after `if world_size == 1: return` - are left
  alone: no CPU run reaches them.
  In a file that chooses `"cuda" if ... else "cpu"` and moves with `.to(device)`, a
  `torch.cuda.synchronize()` beside such a move (not under an option switch such as `if
  args.time_exp:`) and the trained net's bare `net.cuda()`: the CPU run it offers fails there.
  Moves under a flag derived from the GPU check (`args.mixmode = args.no_cuda and args.mixmode
  and torch.cuda.is_available()`, then `if args.mixmode:`) only run with a GPU, and a module-level
  `torch.device("cuda:0")` used only under a mode parameter that defaults to False (`if
  self.mixmode:`) is the caller's choice: both are left alone.
  Moves under an `if` that tests a device flag (`if args.cuda:`, `if use_gpu:`,
  `if not args.use_cpu:`, also a lambda chosen there: `if to_gpu: cast = lambda x:
  Tensor(x).cuda()`) are the user's choice and stay quiet; an unconditional `.cuda()` in
  the same script is still reported, since it breaks the CPU path the flag offers. So is one
  under `if cuda:` where `cuda` is a parameter of its function that defaults to True and that no
  call passes (`def one_hot(idx, size, cuda=True)`, called as `one_hot(t, n)`): that guard is
  always on. So is a bare `.cuda()` in a function that chooses a device with a CPU alternative
  (`torch.device("cuda:0" if gpu_ids else "cpu")`, `device = torch.device("cuda") if
  opt.use_gpu else torch.device("cpu")`), and `with torch.cuda.device(...)` entered
  unguarded in a class whose methods choose a CPU branch. A training module's CPU path is also
  the entry script's that imports it (`Run.py` falling back to `args.device = "cpu"` before it
  runs `model/BasicTrainer.py`). A file that parses an option meant only for a CPU run
  (`--no_cuda`, `--cpu`, `--use_cpu`, a `--device` defaulting to `"cuda"`) gets every `.cuda()`,
  `device="cuda"` and `torch.cuda.set_device(args.gpu)` outside a device flag (`model.cuda(args.gpu)`
  beside batches moved under `if not args.no_cuda and torch.cuda.is_available():`); so does a file
  whose only device handling is a `device` parameter (`def __init__(self, model, device)`, then
  `.to(self.device)`) when a CPU run of the project reaches it: the device it is handed may be the
  CPU. An entry point reaches the modules it imports by a name built at run time
  (`importlib.import_module("approach." + args.approach)`, `import_module(f"trainers.{name}")`);
  its fallback may print a warning before it assigns `"cpu"` (`else: print(...)` / `device =
  'cpu'`), and `--cuda` with a `'yes'`/`'no'` default is a boolean GPU switch. Not flagged: `.cuda()` of a built-in loss that holds no tensor
  (`nn.MSELoss().cuda()` moves nothing and runs without a GPU; `nn.CrossEntropyLoss(weight=w)`
  holds a buffer and is flagged), and a call of the project's own `cuda()` method that moves to
  a configured device (`def cuda(self, *args): return (x.to(self.config.DEVICE) for x in args)`).
  Code that nothing in the project calls or names is left alone (it never runs: a helper of a
  script with no `__main__` guard that nothing calls, a call only quoted out in a string, a class
  no code or config names, a left-over module nobody imports, runs or names), and
  so is an old version of a class kept in a module nobody imports while the project imports a
  class of that name from another module (`deepmind_version.py` beside `fatchord_version.py`,
  both defining `WaveRNN`). The body of a class's own `cuda()` method (`def cuda(self):
  self.prob = self.prob.cuda()`, also `gpu`, `to_cuda`, `to_gpu`) runs only when its caller asks
  for the GPU: the unconditional call of it (`self.sampler.cuda()`) is reported instead. A project is
  also GPU-only by design when two or more of its files hard-code CUDA and none has any way to
  run without a GPU (no GPU check, no `"cpu"` device chosen, no device flag), or when the only
  such ways are in files that train nothing (an inference module's `"cuda" if
  torch.cuda.is_available() else "cpu"`) while its training files (`.backward(` with an
  optimizer: not an attack that backpropagates to its input) hard-code CUDA:
  the training entry point cannot run on a CPU by design. A training file's GPU check does not
  count as its CPU path when the model it trains (a name whose `.parameters()` it reads) still
  goes to CUDA unconditionally - `model = model.cuda()` at module level or directly in a
  function's body, under no `if` - while the check only guards the batches: such a script
  cannot train without a GPU (re-identification baselines whose helpers, `*_gpu.py` evaluation
  and demo then hard-code CUDA by design). A model moved under the check (`if use_gpu: model =
  model.cuda()`) or an unconditional move of something else (a class-weight tensor) keeps the
  CPU path, and the other files' findings. In a repository that gathers several sub-projects
  side by side (a language model, an image classifier, a translation model, each in its own
  top-level folder), a folder is GPU-only by itself when two or more of its files hard-code
  CUDA, one of them trains and none of its files has a CPU path: the classifier's fallback is
  no CPU path of the language model. A script that picks its one GPU itself
  (`os.environ["CUDA_VISIBLE_DEVICES"] = args.gpu`, then `.cuda()` throughout) is left alone
  when no file of its project has any CPU path; a sibling script's `--use_cpu` flag or GPU check
  keeps its findings. Module-level code
  of a demo - a file that runs the model on random inputs and neither trains, reads data nor
  loads a checkpoint (drawing the autograd graph, timing a forward) - is left alone too.

Why it matters
  Such code runs only on a machine with a CUDA GPU. On a laptop, a CPU-only CI runner or an
  Apple/Intel accelerator it fails with "Torch not compiled with CUDA enabled" or "no CUDA
  GPUs are available", which makes tests and quick experiments impossible.

Example
  model = Net().cuda()                                 # TW403
  x = x.to("cuda")                                     # TW403

Fix
  Choose the device once - `device = "cuda" if torch.cuda.is_available() else "cpu"`, or
  `torchwise.select_device("auto")` - and write `.to(device)` everywhere.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if ctx.project.gpu_only or len(ctx.project.files) > 1 and ctx.project.cpu_path_files == 0:
            return  # GPU-only by design (torchwise.lint.project), or no file offers a CPU path to break
        if ctx.path in ctx.project.kernel_files:
            return  # its imports reach a CUDA-only extension (knn_cuda, the project's CUDAExtension): it cannot run on a CPU
        if ctx.path in ctx.project.gpu_scripts:
            return  # an entry point with no CPU path of its own nor in what it imports: written for the GPU it names
        if ctx.project.gpu_only_dirs and ctx.path.replace("\\", "/").startswith(ctx.project.gpu_only_dirs):
            return  # a GPU-only sub-project of a collection (its own folder: a language model beside a classifier)
        setups = ctx.project.gpu_setup_blocks
        if setups and any(function_verdict(ctx.project, "gpu_setup_blocks", name, gpu_setup_line)
                          for name in ctx.calls_by_name if name in setups):
            return  # it calls the project's GPU-only set-up (NCCL, exit without a GPU): GPU-only by design
        if has_cpu_fallback(ctx):
            promise = promised_cpu_run(ctx)  # `--no_cuda` parsed here; a `device` handed in by a CPU-driven entry
            if promise:
                unhanded = unhanded_lines(ctx) if promise == "handed" else ()  # its own __main__, defaults callers replace
                yield from (f for f in self._promised(ctx) if f.line not in unhanded)
                return
            yield from self._factories_beside_fallback(ctx)
            return  # it checks for a GPU, names a "cpu" device or takes a device parameter
        if gpu_only_file(ctx) and not chooses_by_flag(ctx) or self._pinned_in_gpu_project(ctx):
            return  # configures a library for CUDA, times itself with CUDA events, or picks its one GPU: GPU-only by design
        if any(ctx.imports_module(m) for m in _GPU_ONLY_LIBS):
            return  # GPU kernels and GPU-only serving engines: CUDA-only by nature
        if any(c.value == "nccl" for c in ctx.nodes.get(ast.Constant, ()) if isinstance(c.value, str)):
            return  # the NCCL backend runs on NVIDIA GPUs only: this code is GPU-only by design
        if len(ctx.project.files) > 1 and ctx.path not in ctx.project.cpu_driven:
            return  # no CPU path of its own, and no CPU run of the project reaches it (project.cpudriven)
        yield from (f for f in self._every_hardcoded(ctx) if not cpu_unreached(ctx, f.line))  # (a function only GPU-only scripts call)

    def _every_hardcoded(self, ctx: Context) -> Iterator[Finding]:
        """Every ``.cuda()``, ``.to("cuda")``, ``torch.device("cuda")`` and ``device="cuda"`` (each
        still subject to :meth:`_finding`'s exceptions)."""
        src = ctx.source
        for call in ctx.calls_named("cuda"):
            func = call.func
            if func.__class__ is ast.Attribute and ctx.qualname(func) is None:
                yield from self._opt(self._finding(ctx, call, f"{ctx.text(func)}() assumes a CUDA GPU is present"))
        for call, q in cuda_calls(ctx):
            if q != "torch.cuda.synchronize" or chooses_by_flag(ctx):  # (a benchmark's sync times the GPU it is about)
                yield from self._opt(self._finding(ctx, call, f"{q}() assumes a CUDA GPU is present"))
        for call in ctx.calls_named("to", "device"):
            func = call.func
            if func.__class__ is ast.Attribute and func.attr == "to":
                arg = call.args[0] if call.args else (keyword(call, "device").value if keyword(call, "device") else None)
            elif ctx.qualname(func) == "torch.device":
                arg = call.args[0] if call.args else None
            else:
                continue
            if arg is not None and arg.__class__ is ast.Constant and isinstance(arg.value, str) and _CUDA_STR.match(arg.value):
                yield from self._opt(self._finding(ctx, call, f'hard-coded device "{arg.value}" with no CPU fallback'))
        for load, where, text in cuda_map_locations(ctx):  # torch.load(p, map_location='cuda:0')
            yield from self._opt(self._finding(ctx, load, f'map_location={text} needs a CUDA GPU', where))
        for kw_call in ctx.nodes.get(ast.Call, ()) if 'device="cuda' in src or "device='cuda" in src else ():
            kw = keyword(kw_call, "device")
            if kw is None or kw_call.func.__class__ is ast.Attribute and kw_call.func.attr == "to":
                continue
            v = kw.value
            if v.__class__ is ast.Constant and isinstance(v.value, str) and _CUDA_STR.match(v.value):
                yield from self._opt(self._finding(ctx, kw_call, f'hard-coded device="{v.value}" with no CPU fallback', kw.value))

    def _import_time_cuda(self, ctx: Context) -> Iterator[Finding]:
        """A file that chooses its device yet calls ``torch.cuda.current_device()`` (or another
        call needing a GPU) at its top level, under no ``if``/``try``: importing or starting it
        fails without a GPU, whatever device it or its importers choose."""
        for call, q in cuda_calls(ctx):
            if ctx.scope_of(call).__class__ is ast.Module and not any(
                    a.__class__ in (ast.If, ast.Try, ast.With) for a in ctx.ancestors(call)):
                yield from self._opt(self._finding(ctx, call, f"{q}() at import time needs a CUDA GPU; "
                                                   "every module importing this one fails without it"))

    @staticmethod
    def _pinned_in_gpu_project(ctx: Context) -> bool:
        """The script picks its one GPU itself (``CUDA_VISIBLE_DEVICES = args.gpu``, then ``.cuda()``
        throughout) and no file of its project has any way to run without a GPU: written for a GPU
        machine. (A sibling script's ``--use_cpu`` flag or GPU check keeps its findings.)"""
        return bool(ctx.project.files) and ctx.project.cpu_path_files == 0 and pinned_gpu_script(ctx)

    def _factories_beside_fallback(self, ctx: Context) -> Iterator[Finding]:
        """A file that chooses its device by a flag (``device = torch.device("cuda" if use_cuda
        else "cpu")``) yet makes a tensor with ``torch.randn(x.shape).cuda()``: the CPU run it
        offers fails there (the one line that ignores the choice)."""
        src = ctx.source
        if "cuda" not in src:
            return
        if tests_device_for_cpu(ctx):
            yield from self._every_hardcoded(ctx)  # `if device.type != 'cpu':`: the file runs on either
            return
        yield from self._import_time_cuda(ctx)
        for call in gpu_lines_beside_choice(ctx):  # device = "cuda" if available else "cpu"; x.to(device); torch.cuda.synchronize()
            yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() needs a GPU while this file chooses "
                                               "its device with a CPU alternative; its CPU path fails here"))
        yield from (f for call in cuda_contexts_beside_choice(ctx, cpu_choices(ctx))
                    for f in self._opt(self._finding(ctx, call, "torch.cuda.device() ignores the device this class "
                                                     "chooses; its CPU path fails here")))
        if "cuda(" not in src:
            return
        handed = list(factories_ignoring_device(ctx))
        for call in handed:  # def train(..., device='cpu'): x.to(device); torch.ones(n).cuda()
            yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() ignores the device this function is "
                                               "handed (default \"cpu\"); its CPU run fails here"))
        yield from self._cuda_beside_choice(ctx)
        yield from self._model_beside_guarded_batches(ctx)
        for call in bare_beside_guarded_model(ctx):  # if torch.cuda.is_available(): G = G.cuda(); then Variable(img).cuda()
            yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() assumes a GPU while this file moves its "
                                               "model only when one is there; its CPU path fails here"))
        yield from self._beside_option(ctx)
        if not ("else 'cpu'" in src or 'else "cpu"' in src or "else 'cuda'" in src or 'else "cuda"' in src) \
                or not _CHOSEN_DEVICE.search(src):
            return
        for call in ctx.calls_named("cuda"):
            func = call.func
            if func.__class__ is not ast.Attribute or call.args or call.keywords or func.value.__class__ is not ast.Call:
                continue
            q = ctx.qualname(func.value.func) or ""
            if q.startswith("torch.") and q.count(".") == 1 and last_name(func.value.func) in _FACTORIES and call not in handed:
                yield from self._opt(self._finding(ctx, call, f"{ctx.text(func)}() ignores the device this file chooses; "
                                                   "its CPU path fails here"))

    def _promised(self, ctx: Context) -> Iterator[Finding]:
        """Every hard-coded CUDA line of a file that promises a CPU run (semantics.handeddevice)."""
        yield from self._every_hardcoded(ctx)
        for call in set_device_calls(ctx):
            yield from self._opt(self._finding(ctx, call, "torch.cuda.set_device() needs a CUDA GPU while this file "
                                               "offers a CPU run"))
        yield from self._beside_option(ctx)

    def _beside_option(self, ctx: Context) -> Iterator[Finding]:
        for call in availability_beside_option(ctx):  # args.cuda = not args.no_cuda and ...; if torch.cuda.is_available(): model.cuda()
            yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() runs whenever a GPU exists, ignoring the "
                                               "CPU option this file's device flag honours", flag_ok=True))

    def _cuda_beside_choice(self, ctx: Context) -> Iterator[Finding]:
        """A function that chooses its device by a setting (``if config['cuda']: device =
        torch.device("cuda:0") else: device = torch.device("cpu")``) and then moves inputs with a
        bare ``.cuda()``: the CPU branch it offers fails on that line."""
        for func in {id(f): f for f in map(ctx.function_of, cpu_choices(ctx)) if f is not None}.values():
            for call in ctx.calls_named("cuda"):
                if call.func.__class__ is ast.Attribute and ctx.qualname(call.func) is None and ctx.function_of(call) is func:
                    yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() ignores the device this "
                                                       "function chooses; its CPU path fails here"))

    def _model_beside_guarded_batches(self, ctx: Context) -> Iterator[Finding]:
        for call, name in model_beside_guarded_batches(ctx):  # if use_cuda: x = x.cuda(); model = DataParallel(model).cuda()
            yield from self._opt(self._finding(ctx, call, f"{ctx.text(call.func)}() moves {name} to CUDA unguarded while "
                                               "the batches fall back to the CPU; the CPU path fails here"))

    @staticmethod
    def _opt(finding: Finding | None) -> Iterator[Finding]:
        if finding is not None:
            yield finding

    def _finding(self, ctx: Context, node: ast.AST, message: str, at: ast.AST | None = None, flag_ok: bool = False) -> Finding | None:
        if not flag_ok and under_device_flag(ctx, node, moves_too=True) and not only_default_guards(ctx, node):
            return None  # under `if args.cuda:` / `if use_gpu:` / `if not args.use_cpu:`: the user chose the device
        lam = next((a for a in ctx.ancestors(node) if a.__class__ is ast.Lambda), None) if "lambda" in ctx.source else None
        if lam is not None and under_device_flag(ctx, lam, moves_too=True) and not only_default_guards(ctx, lam):
            return None  # `if to_gpu: cast = lambda x: Tensor(x).cuda()`: the lambda is chosen by the flag
        if in_fallback_try(ctx, node) or on_gpu_distributed_path(ctx, node):
            return None  # `try: x.cuda() except: <CPU version>`; the distributed path of a file that pins GPUs
        if in_dead_function(ctx, node) or node.__class__ is ast.Call and harmless_cuda(ctx, node):
            return None  # code nothing runs (METHOD R5); nn.MSELoss().cuda() and the project's own cuda() need no GPU
        if node.__class__ is ast.Call and module_device_only_opt_in(ctx, node):
            return None  # device = torch.device("cuda:0") used only under `if mixmode:` (a mode off by default)
        if device_method(ctx, node):
            return None  # the body of a class's own cuda(): it runs when its caller asks for CUDA (the call is reported)
        if ctx.scope_of(node).__class__ is ast.Module and demo_script(ctx):
            return None  # module-level demo on random inputs (draw the graph, time a forward)
        return ctx.finding(
            self.code, at or node, message,
            suggestion='pick the device once (device = "cuda" if torch.cuda.is_available() else "cpu") and use .to(device)',
        )


RULE = HardcodedCuda()

"""TW301: a file that seeds some random generators but uses another one unseeded."""

from __future__ import annotations

import ast
import os
from typing import Iterator

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.findings import Finding
from torchwise.lint.project.text import clock_seed
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.envseeds import env_only_draws
from torchwise.lint.semantics.offeredseeds import OFFERED, SEED_FROM_OPTION, project_names_seed, unused_seed_option
from torchwise.lint.semantics.steps import training_calls
from torchwise.lint.semantics.files import in_demo_main
from torchwise.lint.semantics.gpuseeds import cuda_branch_seeds
from torchwise.lint.semantics.idledraws import cached_draw, display_only, draws_seed, names_only
from torchwise.lint.semantics.reach import implicit_torch_draws, importer_torch_draws, reached_from, training_seeders
from torchwise.lint.semantics.runseeds import imported_for_sure, lone_trainer, run_seeded
from torchwise.lint.semantics.seedkinds import scoped_seed as _scoped_seed, worker_reseed as _worker_reseed
from torchwise.lint.semantics.splitseeds import SEEDERS, split_seed, split_seeds_only
from torchwise.lint.semantics.workerseeds import in_worker_code, loaders_use_workers

# helpers that seed everything at once (frameworks, torchwise itself)
_SEED_ALL = frozenset({"seed_everything", "set_seed", "set_random_seed", "fix_seed", "setup_seed", "seed_all", "set_seeds", "init_seeds", "fix_seeds"})
_RANDOM_FUNCS = frozenset({
    "random", "randint", "randrange", "shuffle", "choice", "choices", "sample", "uniform", "gauss",
    "normalvariate", "betavariate", "expovariate", "triangular",
})
_NUMPY_FUNCS = frozenset({
    "rand", "randn", "randint", "random", "random_sample", "choice", "shuffle", "permutation", "uniform",
    "normal", "binomial", "poisson", "beta", "exponential",
})
_TORCH_FUNCS = frozenset({
    "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial", "rand_like", "randn_like",
    "randint_like", "poisson",
})
_RANDOM_INITS = frozenset({
    "uniform_", "normal_", "trunc_normal_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
    "kaiming_normal_", "orthogonal_", "sparse_",
})
# layers whose constructor draws their initial weights (or whose forward draws masks)
_RANDOM_LAYERS = (
    "Linear", "Bilinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "Embedding", "EmbeddingBag", "LSTM", "GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell", "MultiheadAttention",
    "Transformer", "TransformerEncoderLayer", "TransformerDecoderLayer", "Dropout", "Dropout1d", "Dropout2d",
    "Dropout3d", "AlphaDropout",
)
_LABELS = {"random": "Python's random", "numpy": "NumPy's global generator", "torch": "torch's generator"}


def _under_test(ctx: Context, node: ast.AST) -> bool:
    """In a test function (``test_*``, ``_test*``), a ``unittest.TestCase`` method, or under an
    ``if`` that tests a test switch (``if args.test:``): code that runs only under test; or in
    the body of ``if False:`` / ``if 0:``, code that never runs."""
    for anc in ctx.ancestors(node):
        if anc.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and anc.name.lstrip("_").startswith("test"):
            return True
        if anc.__class__ is ast.ClassDef and any((last_name(b) or "").endswith("TestCase") for b in anc.bases):
            return True
        if anc.__class__ is ast.If and "test" in ctx.text(anc.test).lower():
            return True
        if anc.__class__ is ast.If and anc.test.__class__ is ast.Constant and not anc.test.value \
                and any(ctx.contains(stmt, node) for stmt in anc.body):
            return True  # dead code (`if False:`): it never runs
    return False


def _module_reseeds(ctx: Context, seed: ast.Call) -> bool:
    """The seed is in a function of a module that is no script (no ``__main__``, no ``parse_args(``)
    and is not itself a seeding helper (``def set_seeds(seed)``, whose callers may seed torch too):
    a data module's ``get_iterator(self, epoch)`` reseeding per epoch."""
    func = ctx.function_of(seed)
    src = ctx.source
    if func is not None and func.name == "__init__" and seed.args and seed.args[0].__class__ is ast.Constant:
        return False  # np.random.seed(0) in a dataset's constructor: a fixed pick of its data (which classes form a subset)
    return func is not None and "seed" not in func.name.lower() and "__main__" not in src and "parse_args(" not in src


def _never_called(ctx: Context, node: ast.AST) -> bool:
    """``node`` is in a function that no file of the project calls (its name followed by ``(``
    appears nowhere but in its own ``def``): code for some other program, such as a notebook."""
    func = ctx.function_of(node)
    if func is None or not ctx.project.files or func.name.startswith("__"):
        return False  # (__getitem__, __iter__: called by the DataLoader, never by name)
    needle = f"{func.name}("
    return sum(text.count(needle) for _, text in ctx.project.files) <= 1




class PartialSeeding(Rule):
    code = "TW301"
    name = "partial-seeding"
    triggers = ("seed", "rand", "__main__")
    doc = """\
What it flags
  In a file that seeds at least one generator (`random.seed`, `np.random.seed`,
  `torch.manual_seed`), the first use of another generator that is never seeded there:
  `random.shuffle(...)` with only torch seeded, `np.random.rand(...)` with only `random`
  seeded, torch randomness (`torch.randn`, `randperm`, `nn.init.*`, `random_split`, shuffling
  DataLoaders, dropout) with only NumPy seeded... Also `np.random.default_rng()` and
  `random.Random()` created without a seed next to the seeding calls (same function or
  script, not under an `if`), which the global seeds do not reach. A draw that only picks the
  seed (`args.manualSeed = random.randint(1, 10000)` when none is given) is no use of its
  generator, nor is a draw that only names the run's output (`rand_suffix =
  "".join(random.choices(string.ascii_letters, k=3))` used only in an output folder's name or a
  path). Also `torch.cuda.manual_seed(s)` on the GPU branch of `if torch.cuda.is_available():`
  whose `else` alone calls `torch.manual_seed(s)`: on a GPU run the CPU generator (weight init,
  shuffling, `torch.randperm`) stays unseeded. Files
  that call a seed-everything helper (`seed_everything`, `set_seed`, or any other function of
  their own with "seed" in its name) are left alone, and seeds that only run under test (in a
  `test_*` function, a `TestCase`, under `if args.test:`) do not count, nor do seeds and draws
  in dead code (the body of `if False:`); nor does a scoped seed
  that puts the state back (`state = np.random.get_state(); np.random.seed(0); ...;
  np.random.set_state(state)`), nor a DataLoader worker's reseeding (`def worker_init_fn(worker_id):
  numpy.random.seed(... + worker_id)`) or a worker process's (`np.random.seed(SEED)` in the
  function a `Process(target=...)` runs, with the seed it is handed), nor a literal seed that fixes a train/test split
  (`random.seed(1234); random.shuffle(ids)`, then `ids[-n:]` / `ids[:-n]`; or a dataset's
  `__init__(self, root, random_seed=123)` that seeds with that default and shuffles its own
  items, `random.shuffle(self.rows)`) in a file that seeds
  no other generator - a project whose only seeds are such split seeds makes no attempt at a
  reproducible run for an unseeded torch generator to break. Nor does a seed that is the clock
  (`random.seed(time.time())`, or `args.seed = time.time()` then `torch.cuda.manual_seed(args.seed)`),
  nor a call without a seed (`np.random.seed()`, `random.seed(None)`: fresh OS entropy):
  it differs on every run, so no reproducibility is intended. A draw that only picks what to plot (`random.sample(paths, k=3)`
  looped over by a plotting call) is not a use, nor is a draw from a generator of its own
  (`torch.randperm(n, generator=g)`). Nor is a draw in a dataset's `__getitem__` or a
  transform's `__call__` (`GaussianBlur.__call__` drawing `random.random()`), or in a helper only
  such code calls (a transform's static `get_params`, also where each transform defines one, a data module's `add_noise` that `__getitem__`
  calls), where torch is
  seeded and the project's loaders run workers (a `num_workers=` that is not 0, and no
  `--num_workers` option defaulting to 0): each worker seeds `random`, NumPy and torch from
  torch's seeded generator.
  Also a `__main__` script that offers a seed option (`parser.add_argument("--seed", ...)`, here
  or in a parser function of another module of the project it calls, `args = arg_parse()`),
  draws from a generator and seeds none, reads no seed option and hands its parsed options to no
  code of another module (which might seed from them; handing them to the project's own code
  counts when no file of the project names a seed beyond its `--seed` options, help texts
  included): reported at the option (or the parser's call). The draws may be in the project
  modules the script imports (the models it builds, a data module that shuffles) when the
  script trains (a backward pass and an optimizer step) or its project names no seed otherwise.
  Across the files linted together: in a module that seeds nothing itself, a draw from a
  generator (`random.shuffle`, `np.random.rand`, `torch.randperm`...) that no file of the
  project seeds, while the project seeds others (`train.py` seeds numpy and torch, `data.py`
  shuffles with Python's `random`); projects with a seed-everything helper are left alone, and
  a generator the project's entry point seeds counts as seeded for every module. Only modules
  a seeding file that trains imports (directly or through others) are on the seeded run's
  path - the file runs a backward pass and an optimizer step, itself or in a module it imports:
  a notebook of a course collection is its own program, whatever another notebook seeds, and
  an evaluation script that seeds its own shuffle (`random.seed(args.seed)` in `eval.py`, which
  reaches no training code) asks nothing of the training loss and augmentations it happens to
  import (`train.py` seeds nothing); nor is a function
  no file of the project calls (an inference helper only a notebook uses; `__getitem__` and other
  special methods are called for the user). A per-call seed
  option of a method (`def read_frames(self, path, seed=None): np.random.seed(seed)`) is not
  the project's seeding (a required `seed` parameter, `def _setup(self, name, shuffle, seed):
  np.random.seed(seed)`, is: every call hands the run's seed in), and draws in a `__main__` smoke test of a library module (a random
  input whose output shape is printed) are not uses. And a script that seeds NumPy or `random`
  but not torch, while a module it imports draws from torch's generator every step without
  naming a random function (`nn.Dropout(`, a `shuffle=True` loader, `random_split(`), in a
  project that seeds torch nowhere: reported at the seed (a layer's initial weights alone are
  not counted across files); likewise a data module whose function reseeds NumPy and `random`
  (`def get_iterator(self, epoch): random.seed(epoch); np.random.seed(epoch)`) while a training
  script that imports it draws from torch (`torch.randperm`, dropout, a shuffling loader) and
  the project seeds torch nowhere (not a literal seed in a constructor, `np.random.seed(0)` in a dataset's
  `__init__` before it picks which classes form a subset: a fixed choice of data, not a per-epoch reseed).
  And, in a project of several programs (a folder per algorithm, each with its `main.py`), an
  entry script that trains and seeds some generators while a module it imports (its own folder's
  first) draws from another (`np.random.rand() < eps` in the agent's `select_action`,
  `np.random.shuffle` of minibatches) that no file on its run seeds - only another program of the
  project does: reported at the script's first seed.
  And a training run whose only seed is its gym environment's (`env.seed(SEED)`,
  `env.reset(seed=args.seed)`; not `env.seed(worker_id)`) while it or a module it imports draws:
  reported at that seed.

Why it matters
  Each library keeps its own generator. Seeding one leaves the others on fresh entropy, so
  runs still differ - data order, augmentation, dropout masks, initial weights - while the
  code looks reproducible. Bugs then come and go between runs.

Example
  torch.manual_seed(0)
  random.shuffle(files)                        # TW301: Python's random is not seeded

Fix
  Seed every generator in use in one place - `random.seed(s)`, `np.random.seed(s)`,
  `torch.manual_seed(s)` (which also seeds every CUDA device) - or call
  `torchwise.seed_everything(s)`; give explicit generators a seed (`np.random.default_rng(s)`).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if "seed" not in ctx.source and "rand" not in ctx.source:  # (a script whose parser lives in another module)
            yield from self._offered(ctx)
            return
        seeded: set[str] = set()
        seeders: list[ast.Call] = []
        first_seed: ast.Call | None = None
        for name in ("seed", "manual_seed", "manual_seed_all"):
            for call in ctx.calls_named(name):
                family = SEEDERS.get(ctx.qualname(call.func) or "")
                if family is not None and not _under_test(ctx, call) and not _scoped_seed(ctx, call) \
                        and not split_seed(ctx, call, family) and not _worker_reseed(ctx, call) \
                        and not clock_seed(ctx.source, ctx.text((call.args or [k.value for k in call.keywords])[0]) if call.args or call.keywords else ""):
                    seeded.add(family)
                    seeders.append(call)
                    if first_seed is None or (call.lineno, call.col_offset) < (first_seed.lineno, first_seed.col_offset):
                        first_seed = call
        if any(ctx.calls_named(name) for name in _SEED_ALL) or self._unknown_seeder(ctx):
            return
        if not seeded or first_seed is None:
            offered = list(self._offered(ctx)) or list(self._env_only(ctx))
            yield from offered or self._unseeded_in_project(ctx)
            return
        for call in cuda_branch_seeds(ctx):  # if torch.cuda.is_available(): torch.cuda.manual_seed(s) / else: torch.manual_seed(s)
            yield ctx.finding(self.code, call, "on a GPU run only the CUDA generator is seeded: torch.manual_seed runs only "
                              "on the CPU branch, so weight init, shuffling and torch.randperm stay unseeded",
                              suggestion="call torch.manual_seed(seed) on every run (it seeds the CUDA devices too)")
        uses = self._uses(ctx, workers_seeded="torch" in seeded or "torch" in ctx.project.seeded)
        for family in ("random", "numpy", "torch"):
            if family in seeded or family not in uses or family in ctx.project.seeded:
                continue  # seeded here, unused, or seeded by the project's entry point
            node = uses[family]
            yield ctx.finding(
                self.code, node,
                f"{_LABELS[family]} is used here but never seeded, while this file seeds {self._list(seeded)} (line {first_seed.lineno})",
                suggestion="seed every generator in use (or call torchwise.seed_everything)",
                end_node=node.func if node.__class__ is ast.Call else node,
            )
        if "torch" not in seeded and "torch" not in uses and "torch" not in ctx.project.seeded and ctx.project.files:
            other = implicit_torch_draws(ctx.project, ctx.path)  # only NumPy/random seeded by the run's entry point
            if other is None and _module_reseeds(ctx, first_seed):
                other = importer_torch_draws(ctx.project, ctx.path)  # a data module's per-epoch seeds, the script draws
            if other is not None:
                yield ctx.finding(self.code, first_seed, f"this file seeds {self._list(seeded)} only, while torch's generator, "
                                  f"which {os.path.basename(other)} draws from every step (dropout, shuffling), "
                                  "is seeded nowhere", suggestion="also call torch.manual_seed(seed) (or torchwise.seed_everything)")
        if ctx.project.files and ("__main__" in ctx.source or "parse_args(" in ctx.source) and ctx.path in training_seeders(ctx.project) \
                and not in_demo_main(ctx, first_seed) and lone_trainer(ctx.project, ctx.path):
            yield from self._other_programs_seed(ctx, seeded, first_seed)
        seeding_scopes = {id(ctx.scope_of(c)) for c in seeders}
        for call in ctx.calls_named("default_rng", "Random", "RandomState"):
            q = ctx.qualname(call.func)
            if q not in ("numpy.random.default_rng", "random.Random", "numpy.random.RandomState"):
                continue
            if call.args or keyword(call, "seed") is not None:
                continue
            if id(ctx.scope_of(call)) not in seeding_scopes or ctx.enclosing_ifs(call):
                continue  # elsewhere, or a deliberate fresh generator (e.g. to draw a seed)
            yield ctx.finding(
                self.code, call,
                f"{q}() without a seed is not affected by the global seeds this file sets (line {first_seed.lineno})",
                suggestion=f"pass a seed: {last_name(call.func)}(seed)",
            )

    def _other_programs_seed(self, ctx: Context, seeded: set[str], first_seed: ast.Call) -> Iterator[Finding]:
        """An entry script that trains, whose run (it and the modules it may import) leaves a
        generator unseeded that only another program of the project seeds, while a module it
        imports for sure draws from it (``np.random.rand() < eps`` in the agent's
        ``select_action``): reported at the script's first seed."""
        project = ctx.project
        run = run_seeded(project, ctx.path)
        if run is None:
            return
        for family in ("random", "numpy", "torch"):
            if family in seeded or family in run or family not in project.seeded:
                continue  # seeded on this run; or seeded nowhere, which the module's own check reports
            texts = dict(project.files)
            program = (ctx.path, *imported_for_sure(project, ctx.path))
            for path in program[1:]:
                other = parsed_file(project, path, texts[path]) if path in texts else None
                draw = self._uses(other, draws_only=True, workers_seeded="torch" in seeded).get(family) if other else None
                func = other.function_of(draw) if draw is not None else None
                if func is not None and not func.name.startswith("__") and sum(
                        texts[p].count(func.name + "(") for p in program if p in texts) <= 1:
                    continue  # in a function this program never calls (only another program's copy of it may)
                if draw is not None:
                    yield ctx.finding(self.code, first_seed, f"this run seeds {self._list(seeded)} only, while {_LABELS[family]}, "
                                      f"which {os.path.basename(path)} draws from (line {draw.lineno}), is seeded on no file "
                                      "it imports (only another program of the project seeds it)",
                                      suggestion="seed every generator in use (or call torchwise.seed_everything)")
                    break

    def _env_only(self, ctx: Context) -> Iterator[Finding]:
        found = env_only_draws(ctx, self._uses)
        if found is not None:
            call, draws = found
            used = ", ".join(f"{_LABELS[f]} ({os.path.basename(p)})" for f, p in sorted(draws.items()))
            yield ctx.finding(self.code, call, f"only the environment is seeded here; {used} stay unseeded on this run",
                              suggestion="also seed random, numpy and torch (or call torchwise.seed_everything)")

    def _unseeded_in_project(self, ctx: Context) -> Iterator[Finding]:
        """A module that seeds nothing and draws from a generator the project never seeds, while
        its entry point seeds others (``random.shuffle`` in ``data.py``; ``train.py`` seeds numpy
        and torch). Only explicit draws count here: layers and initialisers are seeded by
        whoever builds the model."""
        project = ctx.project
        if not project.seeded or project.seeds_everything or split_seeds_only(ctx):
            return  # (seeds that only fix a data split are no attempt at a reproducible run)
        if project.files and ctx.path not in reached_from(project, training_seeders(project)):
            return  # no seeding script that trains imports this module: another program (a notebook of a
            # course), or only an evaluation script seeds (`random.seed(args.seed)` for its shuffle)
        uses = self._uses(ctx, draws_only=True, workers_seeded="torch" in project.seeded)
        for family in ("random", "numpy", "torch"):
            if family in project.seeded or family not in uses:
                continue
            node = uses[family]
            others = ", ".join(f"{f} ({w})" for f, w in sorted(project.seeded.items()))
            yield ctx.finding(
                self.code, node,
                f"{_LABELS[family]} is used here but never seeded in this project, which seeds {others}",
                suggestion="seed every generator in use where the others are seeded (or call torchwise.seed_everything)",
                end_node=node.func if node.__class__ is ast.Call else node,
            )

    def _offered(self, ctx: Context) -> Iterator[Finding]:
        offer = unused_seed_option(ctx)
        if offer is not None and (self._uses(ctx) or (training_calls(ctx) or not project_names_seed(ctx)) and self._imported_draws(ctx)):
            yield ctx.finding(self.code, offer, OFFERED, suggestion=SEED_FROM_OPTION)

    def _imported_draws(self, ctx: Context) -> bool:
        """A module of the project that the script imports (directly or not) draws random numbers
        or builds randomly initialised layers: the run draws, though the script itself does not.
        (Asked only of a script that trains, or whose project names no seed anywhere else.)"""
        texts = dict(ctx.project.files)
        for path in sorted(reached_from(ctx.project, (ctx.path,))):
            other = parsed_file(ctx.project, path, texts[path]) if path != ctx.path and path in texts else None
            if other is not None and self._uses(other):
                return True
        return False

    @staticmethod
    def _unknown_seeder(ctx: Context) -> bool:
        """A call of some other ``*seed*`` function (``seed_torch(s)``, ``utils.fix_all_seeds()``)
        that may well seed the generators we would report."""
        for name, calls in ctx.calls_by_name.items():
            low = name.lower()
            if "seed" not in low or name in ("seed", "manual_seed", "manual_seed_all", "initial_seed", "get_seed"):
                continue
            for c in calls:
                q = ctx.qualname(c.func)
                if q is None or not q.startswith(("random.", "numpy.", "torch.")):
                    return True
        return False

    @staticmethod
    def _list(seeded: set[str]) -> str:
        names = {"random": "random", "numpy": "numpy", "torch": "torch", "cuda": "CUDA"}
        return ", ".join(names[s] for s in sorted(seeded))

    @staticmethod
    def _uses(ctx: Context, draws_only: bool = False, workers_seeded: bool = False) -> dict[str, ast.AST]:
        found: dict[str, list[ast.AST]] = {}

        def note(family: str, node: ast.AST) -> None:
            found.setdefault(family, []).append(node)

        for name in _RANDOM_FUNCS | _NUMPY_FUNCS | _TORCH_FUNCS:
            for call in ctx.calls_named(name):
                q = ctx.qualname(call.func)
                if q is None or keyword(call, "generator") is not None:
                    continue  # (randperm(n, generator=g) draws from its own generator, not the global one)
                if q == f"random.{name}" and name in _RANDOM_FUNCS:
                    note("random", call)
                elif q == f"numpy.random.{name}" and name in _NUMPY_FUNCS:
                    note("numpy", call)
                elif q == f"torch.{name}" and name in _TORCH_FUNCS:
                    note("torch", call)
        for call in ctx.calls_named("random_split", "dropout"):
            q = ctx.qualname(call.func) or ""
            if q in ("torch.utils.data.random_split", "torch.utils.data.dataset.random_split", "torch.nn.functional.dropout"):
                note("torch", call)
        for call in ctx.calls_to("torch.utils.data.DataLoader"):
            shuffle = keyword(call, "shuffle")
            if shuffle is not None and shuffle.value.__class__ is ast.Constant and shuffle.value.value is True:
                note("torch", call)
        if not draws_only:
            for name in _RANDOM_INITS:
                for call in ctx.calls_named(name):
                    if (ctx.qualname(call.func) or "").startswith("torch.nn.init."):
                        note("torch", call)
            layers = ctx.calls_to(*(f"torch.nn.{n}" for n in _RANDOM_LAYERS))
            if layers:
                note("torch", layers[0])
        uses: dict[str, ast.AST] = {}
        for family, nodes in found.items():  # the first use of each family that a run computes with
            nodes.sort(key=lambda n: (n.lineno, n.col_offset))
            first = next((n for n in nodes if not _under_test(ctx, n) and not display_only(ctx, n) and not draws_seed(ctx, n)
                          and not names_only(ctx, n) and not cached_draw(ctx, n)
                          and not in_demo_main(ctx, n) and not (draws_only and _never_called(ctx, n))
                          and not (workers_seeded and in_worker_code(ctx, n) and loaders_use_workers(ctx))), None)
            if first is not None:  # (not a self-test of the module, nor a pick of what to plot)
                uses[family] = first
        return uses


RULE = PartialSeeding()

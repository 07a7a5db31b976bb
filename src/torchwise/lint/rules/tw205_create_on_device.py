"""TW205: a tensor created on the CPU and then moved to the device it was meant for."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.findings import Edit, Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.buffercopies import buffer_copies
from torchwise.lint.semantics.cpuonly import runs_only_on_cpu
from torchwise.lint.semantics.builtmodules import built_module
from torchwise.lint.semantics.callers import never_called
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.factories import DETERMINISTIC, LEGACY, SHAPE_METHODS, cpu_factory
from torchwise.lint.semantics.exampleinputs import example_input
from torchwise.lint.semantics.instancecalls import once_per_instance_call
from torchwise.lint.semantics.implicitmoves import host_index_arrays, implicit_moves
from torchwise.lint.semantics.movetargets import device_args, move_target, tensor_target
from torchwise.lint.semantics.memos import memoized
from torchwise.lint.semantics.once import made_once_per_request, runs_once
from torchwise.lint.semantics.passedalways import fallback_never_taken
from torchwise.lint.semantics.projecthelpers import project_returned_new, round_trip_helper
from torchwise.lint.semantics.pulledback import pulled_back
from torchwise.lint.semantics.remotemovers import handed_to_movers
from torchwise.lint.semantics.sizebuilders import size_builder_call
from torchwise.lint.semantics.unselected import only_unselected, unselected_branch
from torchwise.lint.semantics.stored import branch_alternatives, stored_then_moved
from torchwise.lint.semantics.handoff import copied_by_new_tensor, moved_sources, rarely_moved, unwrap_variable

class CreateThenMove(Rule):
    code = "TW205"
    per_call = True
    name = "create-then-move"
    triggers = ("cuda", "to", "type_as")
    fixable = True
    doc = """\
What it flags
  A tensor factory (`torch.zeros/ones/empty/full/arange/linspace/eye`, `torch.tensor`/`as_tensor`
  of Python data such as a list, and the random `rand/randn/randint/randperm`; also through a name
  a project module hands on: `t.ones(n, n)` with `t` from `from module import *`) called without
  `device=` (nor a `generator=`, whose device decides) - also a window function
  (`torch.hann_window`...), or a factory scaled or wrapped before the move
  (`(torch.ones(n) * i).to(x.device)`, `torch.triu(torch.ones(n, n)).to(device)`, rows picked
  on the host `torch.eye(n)[labels]`, a one-hot filled in on the host
  `torch.zeros(s).scatter_(1, idx, 1)`, drawn or rescaled in place `torch.rand(s).sub_(0.5).mul_(2.0)`),
  a typed legacy constructor of sizes or Python literals
  (`torch.LongTensor(range(n))`, a list built in Python from sizes `torch.LongTensor([i * 2 for i in range(n)])`,
  `torch.BoolTensor(x.size()).fill_(0)`, two or more sizes
  `torch.FloatTensor(n, opt.dim).zero_()`, a task number the function also indexes with `torch.LongTensor([t])`
  with `outputs[t]`, anything zeroed or filled right away, an index array a
  model method makes with NumPy from sizes `torch.LongTensor(positions).to(self.dev)`; not of data
  read from somewhere, which has to cross anyway: an agent's observation
  `torch.FloatTensor(state).to(device)`, a replay minibatch, the arrays a model method is handed)
  and `torch.from_numpy` of an array NumPy makes right there (`np.random.uniform(...)`, `np.eye(k)`, a permutation `perm = np.arange(n)` shuffled in place
  with `np.random.shuffle(perm)`; a mask filled row by
  row with such arrays, `overall[i, :] = row` of a shuffled `np.hstack([np.zeros(g - k), np.ones(k)])`,
  also cast with `.to(torch.bool)` before the move; also `torch.tensor(arr)` or a typed constructor of it,
  `LongTensor(perm)` - also under names a star import of the project hands on, `from utils import *`)
  or builds from sizes and settings: detection anchors
  or a position table joined with `np.append`/`np.concatenate` in a loop from pure-NumPy helpers
  of the file (`np.append(grid, cell_offsets(side // s, s), axis=0)`, helpers that read no file
  and no `self`, given `x.shape`, constants, `self.strides[i]`; arrays joined from the
  function's input data have to cross anyway) - and then moved with `.cuda()`,
  `.to(device)`, `.to(other_tensor)` (also the forward's input after scaling, layers or a reshape:
  `x = F.relu(self.conv1(x / 255)); x = x.view(b, -1)`), `.type_as(other_tensor)` (also a reshaped row of an input, `e = out[i].unsqueeze(0)`), `.type(other_tensor.type())` (also of `torch.Tensor(torch.zeros(...))`),
  `.type(torch.cuda.FloatTensor)` (also
  `FloatTensor = torch.cuda.FloatTensor if x.is_cuda else torch.FloatTensor`) or `other.new_tensor(name)`
  (`frame = torch.arange(n).unfold(0, k, s); frame = signal.new_tensor(frame)`) - chained, or in the next use
  of the name it was stored under (`m = torch.ones(n); m = m.cuda()`, or reshaped as it moves:
  `m.expand(b, k).to(x)`; also under
  `if x.is_cuda:` or `if self.cuda:`, wrapped `Variable(z).cuda(i)`, reshaped first under the
  same name `eta = eta.expand(...)` or `alpha = alpha.expand_as(real)`, made under nested `if`s (each branch of an `if`/`elif`/`else` that makes the name
  is reported: `alpha = torch.rand(1)` / `else: alpha = torch.FloatTensor([0.5])`, then `alpha.to(device)`)
  and moved after `if x is not None:` - a test, not a use -, or joined and moved: `torch.cat([y, m], 1).float().to(device)`, also a join stored first,
  `grid = torch.cat([rows, cols], 1)` then `if self.use_cuda: grid = grid.cuda()`;
  every part of a join is on one device; also a part appended to a list that is joined and moved,
  `parts.append(torch.eye(n))`, `x = torch.cat([p.reshape(b, -1) for p in parts], 1)`, then
  `x = x.cuda()` - here, or by the caller of a helper that returns the join, `a, b =
  self._inputs(batch, t)`, reported at the factory; a mask reshaped by a chain of views under its
  own name, `m = m.view(-1, 1).repeat(1, d)`, before the move; a state a method resets,
  `def init_hidden(self, n): self.h = torch.zeros(n, k)`, stored back moved where it is used,
  `self.h = self.h.cuda()`, reported at the reset when that method runs per step), also after host arithmetic and a retype
  (`(torch.ones(s) / n).type_as(x).to(x.device)`, a cast `torch.ones(k).byte().cuda()`), a coordinate grid
  `torch.meshgrid` makes of CPU factories, unpacked and moved (`yy, xx = torch.meshgrid(torch.arange(h),
  torch.arange(w))`, then `xx, yy = xx.cuda(), yy.cuda()` or `torch.stack((xx, yy), 2).to(device)`,
  also `torch.stack(torch.meshgrid(...), dim=2)` moved;
  reported once per meshgrid, at its first factory), through a helper of the file that returns
  it (`t = diffusion.sample_timesteps(n).to(device)`, the helper returning `torch.randint(...)`)
  or that builds a table from numbers alone (`kernel = kernel_up(zeros).to(x)`, the helper making a
  sinc kernel from `th.hann_window(4 * zeros + 1)`; `importance_matrix(b, n_data).to(z.device)` from a
  utilities module; not a helper that uses an argument as data or reads a file), or a module of the
  project built in a forward pass or a training step and moved, `dsp.LowPassFilters([lo, hi]).to(wav.device)`
  with its `__init__` registering buffers it makes with torch (a model built once before training is set-up)
  or that moves what it is given (`self.to_var(torch.randn(b, d))` with `def to_var(self, x):
  return Variable(x).cuda()`, reported at the call that passes it; also a function of another
  module of the project, found through the `__init__.py` files that re-export it or a star import
  (`from utils import *`, `z = tensor2var(torch.randn(b, d))`), `scores =
  async_copy_to(scores, gpu)` with `obj.cuda(dev)` in it, reported where the tensor is made), a constant table made in
  `__init__` as a plain attribute and moved where it is used (`self.pe.to(x.device)` in
  `forward`; a buffer moves with the model once), and a device tensor pulled
  to NumPy and sent back (`torch.from_numpy(np.flip(out.cpu().numpy(), 3).copy()).cuda()` of a
  model's output: two crossings for work `torch.flip` does on the device; also the action a rollout
  pulled to NumPy for `env.step`, converted back with `torch.as_tensor(act)` and written into a device
  tensor; a device tensor pulled to the host for an operation torch runs on the device too and moved
  back, `labels = det[:, -1].cpu().unique()` then `labels = labels.cuda()` under `if x.is_cuda:`,
  reported at the `.cpu()`), and noise drawn on the host into a buffer the module registered
  (`self.eps.copy_(torch.randn(n))`, also through a helper of the class and tensor math on its result,
  `a = self._scale_noise(k)`, `self.eps.copy_(b.ger(a))`) by a `forward` or a method something other than
  `__init__` calls (an agent's `self.net.reset_noise()` every update) - where the code runs
  repeatedly: inside a loop, in `forward()` and other
  per-call functions (a training step, a helper without a loop of its own, a helper with a
  loop that a forward pass calls - `farthest_point_sample`, a loss with a loop over the batch's
  nodes that a `forward` of another module calls, also through `from losses import *` -, a
  `_sample_noise(actions)` helper that only another method of its class calls (not a sampler:
  `self._sample_noise(a)` in the agent's noisy action choice), the `__init__` of a helper class
  that a forward pass builds every call, here or in another module of the project; a collate
  function, which runs for every batch; a method of a model whose `nn.Module` base lives in
  another module of the project).
  Also: a move to a device some call names (`.to(self._device())`, `.to(get_device(t))`); a
  factory under elementwise math or scaled by a number Python computes
  (`th.exp(-math.log(p) * th.arange(h) / h).to(t.device)`, `torch.ones(n, n) * float('-inf')`,
  `1 / torch.log2(position.float())` of `position = torch.arange(2, k + 2)`, `torch.zeros(n, 1) +
  torch.tensor(float('nan'))`); episode labels made with NumPy (`np.repeat(range(n_way),
  n_query)`, `np.repeat(task - 1, x.size(0))`) and a NumPy one-hot filled with a constant
  (`a[0][idx] = 1`); a constant written in before the move (`loops[:, 0] = 4`); a move in the
  `else` of an `if` whose body used the tensor, or in the other branch of `c if device is None
  else c.to(device)`; a list grown with sizes (`lens.append(x.shape[0])`, then
  `torch.LongTensor(lens).to(device)`); a new CPU tensor returned by a helper of another module
  (`Variable(utils.one_hot(y, n)).cuda()`), and a round trip through a helper that builds its
  result with NumPy or torch alone (`lf.to_one_hot(y.cpu(), n).to(y.device)`); copies no
  `.to()` spells - a CPU `torch.arange` indexing a tensor on the device
  (`top_vec[torch.arange(b).unsqueeze(1), clss]`; also one a helper of the file returns,
  `rep[cycle_index(len(rep), 1)]` with the helper making `torch.arange(num) + shift`, reported
  in the helper; the indexed tensor on the device by evidence, or computed by calls from one:
  `summary = torch.sigmoid(model.pool(model.gnn(batch.x, ...), ...))` of a moved batch), an index
  array NumPy draws on the host for a tensor on the device (`idx = np.random.randint(0, n, size=b)`,
  then `self._states[idx]` of a replay buffer that `__init__` made with `device=` - not when every
  construction leaves that device at a `"cpu"` default or passes the CPU;
  `fps_idx[:, np.random.choice(n, k, False)]` of a GPU op's output; not one number drawn without a size,
  `q[0, np.random.randint(0, n)]`, a plain integer index), or a CPU tensor written into one
  (`gain[2:6] = torch.tensor(p.shape)[[3, 2, 3, 2]]`); Python values converted on every call -
  a constant table given as a parameter's default that no caller overrides
  (`def augment(img, kernel=SYM6)`), `th.tensor(x).to(t)` where `x` is not a tensor and some
  caller passes a number for it, and a NumPy schedule the object set once in `__init__`
  handed to a helper that converts it (`_extract(self.sqrt_alphas_cumprod, t, shape)` doing
  `th.from_numpy(arr).to(t.device)`), and a tuple of numbers `__init__` keeps on `self` (written
  out, or a parameter's default, `loc_normalize_mean=(0., 0., 0., 0.)`) converted where it is used
  (`t.Tensor(self.loc_normalize_mean).cuda()` per predicted image).
  Scripts that only run on the CPU are not reported: every device is a `'cpu'` constant and the file
  names no accelerator (an RL tutorial's `device = 'cpu'`), or every CUDA choice is behind an option no run turns on.
  Code that never runs is not reported: a branch on a constructor option that no construction of the
  class in the project selects (`elif 'svm-ww' in kind:` when scripts build only `Head('ridge')`,
  `if self.variational:` left at its default False), and a function only such branches name.
  One-time set-up is not reported: module-level code outside loops, `__init__`, `setup`/
  `build`/`main`-like functions (a `make_*`/`init_*` helper that a forward pass or loss calls,
  `make_one_hot(target, n)`, a `build_targets(...)` that a loss `forward` of another module of the
  project calls for every YOLO layer, or a training step - in a training loop, or in a function that runs
  one step per call, `hidden = model.init_hidden()` in `def train(line)`, here or in another
  module -, is per call - not when only `__init__` calls it, or a
  `generate()` outside its loop: `hidden = self.init_hidden()`), allocations before the loop of a function that loops (not when
  it is called inside a loop over batches or items, `for x, y in test_loader: pgd(model, x, y)`, or
  inside a training loop: its own loop - an attack's steps - is then per call; a call in
  `for epoch in range(n):` stays set-up; also before or after the training loop of a
  `def train(self):` that runs its steps in loops of its own, and one item per layer of a
  comprehension over the model's parts, `[torch.zeros(b, k).to(device) for layer in
  model.module.layers]`),
  helpers only `__init__` or an evaluation calls (also from a package's `__init__.py`,
  `from . import get_sigmas` / `from models import get_sigmas`), a model's `sample()`/`generate()` method
  outside its loops when no training step of the project calls it, values stored in a cache
  the first time only (`if key not in cache: cache[key] = ...`, an optimizer's lazy
  `if not state:` set-up, `if not hasattr(self, "id_tensor"): self.id_tensor = ...`), NaN-recovery branches
  (`if torch.isnan(k).any():`), example inputs for `add_graph`, allocations under a periodic
  branch (`if (i + 1) % 1000 == 0:` or `% args.log_every`, a sample grid for a figure; not
  `% 2`, every other step, nor the optimizer step of gradient accumulation) and in an
  `evaluate()`-like function outside its loops that no loop of the file calls (one grid of
  samples per evaluation). Nor is a module-level
  helper of a script (`if __name__ == "__main__":` or `parse_args()`) that nothing runs: its
  name occurs nowhere else in the file and no module of the project imports the script (a
  `fliplr()` left in a training script while the test script calls its own copy).
  Nor is dead code (nothing runs it): a module-level function or class that nothing in the
  project names but dead code, in a module the project imports or a script (`def recall(...)`
  left in a metrics module; `sequence_mask` called only by a `GlobalAttention` nobody builds;
  `count_flops` that a script imports but only calls in a comment, `# flops = count_flops(m, n)`;
  a copy of a helper pasted into several modules is no use of the others: `def farthest_point_sample`
  in two utility modules, each module's own users calling its own; nor is a use in another module's
  dead code, or in the `if __name__ == "__main__":` demo of a module the project imports; a class
  other files only test with `isinstance(m, layers.SpectralLinear)`, or that only a package
  `__init__.py` re-exports, is built by nothing; a left-over module no file imports is dead though
  other files say its stem for something else, `vae = VQVAE(...)` or `torch.distributions`), nor a fallback for an argument that
  every call of the function passes (`if x_mask is None: x_mask = torch.ones(...)` in a helper every
  call of which, in its module and the modules importing it, gives `x_mask`; also a method called as
  `self.vae.decode(s, z)` everywhere, or the `forward` of a module every instance of which its owner
  calls with it: `for f in self.flows: x = f(x, x_mask)`).
  Nor are a model's once-per-task or once-per-epoch hooks (`begin_task`, `end_task`) and its
  evaluation methods, nor a module-level helper every caller of which - here or in the modules
  importing it - runs at set-up (`factory.get_loss(cfg)` before the epoch loop). Nor is data
  that starts on the host, which has to cross anyway: values a parser converts from the file it
  reads (`torch.Tensor((float(a), float(b))).to(self.device)` per line), arithmetic on such data
  (a window of a loaded array standardized, `w = (series[i:j] - mean) / std`, then
  `torch.as_tensor(w).to(device)`; arrays a solver returned combined, `g.T @ v + cur`; a NumPy
  buffer `pad * np.ones((b, n))` filled with a batch's tokens) - arithmetic of Python numbers,
  literals and sizes (`[0.5] * x.size(0)`, `1.0 / x.shape[1]`) is still a new tensor -, a number a host routine
  computed (`value = metrics.l2(a, b)`, then `torch.Tensor((value,))`), the items of a CPU
  tensor (`[... for i in labels.numpy()]`), a plain copy of a caller's list (`[w for w in
  weights]`), numbers unpacked from a routine's result (`loss_train, pos = train_iteration(...)`,
  then `torch.tensor([loss_train, loss_val]).to(device)` for a reduce), a parameter that holds data put in a list or array (the observation of
  `torch.FloatTensor([state])` or `np.array([state])`; not a number the function uses as a
  size), a list built item by item from the function's data (`[ord(c) for c in text]`, token
  ids `[r[0] for r in rows]`, weights computed from sampled entries), and a tensor whose
  pattern is written per item of data before the move (`for j, k in enumerate(idx): stop[j,
  :length[k]] = 0`, then `stop.to(device)`). Nor is a store made on the first pass of a loop
  only (`features = None` before it, `if features is None: features = torch.zeros(n,
  d).cuda()` in it; also when a checkpoint may have restored it before the loop, not when it is set
  back to None in it), nor a helper a script calls once per setting (`for k in args.nb_knn:` over
  numbers given on the command line, `for res in RESOLUTIONS:` over constants written in it; also an
  allocation inside such a loop, `for K in args.nmb_prototypes:` in a clustering step run once per epoch).
  Nor is what an evaluator object allocates before walking the data in its `__call__` (a plain class,
  not an `nn.Module`, whose instances the file calls outside any loop and no other module names:
  `hist = torch.zeros(n, n).cuda()` before `for imgs, label in dl:`, one per evaluation), nor what a
  helper makes before its loop when the helper is what a `for` loop iterates (`for x in
  batch_iter(X, shuffle=True):` drawing `torch.randperm(n).cuda()` first) and that loop runs the
  training steps inside epoch loops only (`while True:`, `for epoch in range(n):`), or a pass sits
  under a modulo test (`if itr % args.val_freq == 0:`): once per pass over the data.
  Nor is an empty placeholder returned early, `if len(boxes) == 0: return torch.zeros(0, 5).cuda()`
  (no element to copy). Nor is a move to the device of a tensor made on the CPU in the same function
  (`coin = torch.bernoulli(torch.tensor(self.p))`, then `torch.tensor(1.).to(coin.device)`):
  nothing goes to a GPU there - nor a move to a device attribute that is the CPU by construction
  (`.to(self.loss_device)`, kept by `__init__` from a parameter that every construction of the
  module in the project passes as `torch.device("cpu")`).
  There the copy happens once and costs microseconds, so the advice would gain nothing. (A
  lower severity was the alternative; lint's reports - text, JSON, SARIF - have one level, and
  a finding that is right but worthless teaches people to ignore the rule.)

Why it matters
  The tensor is first allocated and filled in host memory, then copied across the bus and
  the host copy is thrown away: two allocations, a transfer and a synchronisation point for
  a tensor that could have been made where it is used - every step, when it is in the loop.

Example
  for x, y in loader:
      mask = torch.ones(n, n).cuda()                # TW205
      noise = torch.randn(b, d).to(device)          # TW205 (no automatic fix)

Fix
  Create it in place: `torch.ones(n, n, device="cuda")`,
  `torch.randn(b, d, device=device)`, `torch.arange(n, device=x.device, dtype=x.dtype)`.
  `torchwise lint --fix` rewrites the deterministic factories moved to a device in the same
  expression; random ones are left to you because the device generator draws different
  numbers than the CPU one, and so are moves to another tensor (they also cast the dtype).
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        if runs_only_on_cpu(ctx):  # every device of the script is the CPU: nothing is copied to a GPU
            return
        seen: set[int] = set()
        for call in ctx.calls_named("cuda", "to", "type_as", "type"):
            target = move_target(ctx, call)
            if target is None:
                continue
            for site, made, separate, via in self._sources(ctx, call):
                if id(site) in seen:
                    continue
                seen.add(id(site))
                inner, chained, factory = made
                here = site if via else inner
                if self._once(ctx, site, here):
                    continue  # one-time set-up; inside torch.jit.trace(...), where the move is recorded; a dead helper
                yield self._finding(ctx, call, site, made, separate, via, target)
                if separate and not via and site is call:
                    for other in self._other_branches(ctx, call, seen):
                        yield self._finding(ctx, call, other[0], other, True, " (made in another branch)", target)
            pulled = pulled_back(ctx, call) if id(call) not in seen and call.func.attr in ("cuda", "to") else None
            if pulled is not None and not self._once(ctx, call, call):
                seen.add(id(call))
                yield ctx.finding(self.code, pulled, f"{ctx.text(pulled.func.value)} is pulled to the host with .cpu() and "
                                  f"copied back to the device at line {call.lineno}",
                                  suggestion="do the work on the device and drop the .cpu() and the move back")
            helper = round_trip_helper(ctx, call, target) if id(call) not in seen else None
            if helper is not None and not self._once(ctx, call, call):
                seen.add(id(call))
                owner = ctx.text(target.value)
                yield ctx.finding(self.code, call, f"{owner} is pulled to the host for {ctx.text(helper.func)}() and its "
                                  f"result copied back to {owner}'s device", suggestion="compute it on the device with torch "
                                  "(F.one_hot, torch.eye(n, device=...)[idx], torch.arange(..., device=...))")
        for site, owner, (inner, _, factory), how in implicit_moves(ctx, lambda e: cpu_factory(ctx, e)):
            if id(inner) not in seen and not self._once(ctx, site, site):
                seen.add(id(inner))
                if ctx.function_of(inner) is not ctx.function_of(site):
                    site = inner  # made in a helper that returns it: reported where it is made, once
                yield ctx.finding(self.code, site, f"torch.{factory}(...) is built on the CPU and copied to "
                                  f"{ctx.text(owner)}'s device because it {how} it",
                                  suggestion=f"create it there: torch.{factory}(..., device={ctx.text(owner)}.device)")
        for draw, owner in host_index_arrays(ctx):
            if id(draw) not in seen and not self._once(ctx, draw, draw):
                seen.add(id(draw))
                yield ctx.finding(self.code, draw, f"{ctx.text(draw.func)}(...) is drawn on the host and copied to "
                                  f"{ctx.text(owner)}'s device because it indexes it",
                                  suggestion=f"draw it there: torch.randint/randperm/arange(..., device={ctx.text(owner)}.device)")
        for call, (inner, _, factory) in handed_to_movers(ctx, lambda e: cpu_factory(ctx, e)):
            if id(inner) not in seen and not self._once(ctx, inner, inner):
                seen.add(id(inner))
                yield ctx.finding(self.code, inner, f"torch.{factory}(...) is built on the CPU and then copied to the device "
                                  f"by {last_name(call.func)}()", suggestion=f"create it there: torch.{factory}(..., device=...)")
        for call, (inner, _, factory) in buffer_copies(ctx, lambda e: cpu_factory(ctx, e)):
            if id(inner) not in seen:  # (buffer_copies leaves out what runs only at set-up)
                seen.add(id(inner))
                yield ctx.finding(self.code, inner, f"torch.{factory}(...) is built on the CPU and then copied into the "
                                  f"device buffer {ctx.text(call.func.value)} at line {call.lineno}",
                                  suggestion=f"create it there: torch.{factory}(..., device={ctx.text(call.func.value)}.device)")
        for call, owner, (inner, _, factory) in copied_by_new_tensor(ctx, lambda e: cpu_factory(ctx, e)):
            if id(inner) not in seen and not (runs_once(ctx, call) or never_called(ctx, ctx.function_of(call)) or dead_code(ctx, call)):
                seen.add(id(inner))
                yield ctx.finding(self.code, inner, f"torch.{factory}(...) is built on the CPU and then copied to "
                                  f"{ctx.text(owner)}'s device by .new_tensor()",
                                  suggestion=f"create it there: torch.{factory}(..., device={ctx.text(owner)}.device)")

    @staticmethod
    def _sources(ctx: Context, call: ast.Call) -> Iterator[tuple[ast.Call, tuple[ast.Call, bool, str], bool, str]]:
        """What ``call`` moves that was made on the CPU: here or in a helper of this file
        (:func:`moved_sources`), or returned by a helper of another module of the project."""
        found = False
        for source in moved_sources(ctx, call, lambda e: cpu_factory(ctx, e), SHAPE_METHODS):
            found = True
            yield source
        recv = call.func.value
        if not found and unwrap_variable(recv).__class__ is ast.Name and stored_then_moved(ctx, unwrap_variable(recv), call):
            recv = ctx.resolve(unwrap_variable(recv), call)  # y_oh = utils.one_hot(y, n); y_oh = Variable(y_oh.cuda())
        made = None if found else project_returned_new(ctx, recv, cpu_factory)
        if made is not None:
            name = last_name((recv.args[0] if last_name(recv.func) == "Variable" else recv).func)
            yield call, made, True, f" (made in {name}())"
        elif not found:
            built = size_builder_call(ctx, recv)  # kernel_upsample2(zeros).to(x): a table of constants
            if built is not None:
                yield call, (built[0], True, built[1]), True, f" (in {last_name(built[0].func)}(), from numbers alone)"
            module = built_module(ctx, recv) if built is None else None  # LowPassFilters([lo, hi]).to(wav.device)
            if module is not None:
                yield call, (module[0], True, module[1]), True, f" (by {last_name(module[0].func)}.__init__, a module built every call)"

    def _other_branches(self, ctx: Context, call: ast.Call, seen: set[int]) -> Iterator[tuple[ast.Call, bool, str]]:
        """The CPU factories of the other branches of an ``if``/``elif``/``else`` that each make the
        name ``call`` moves (``alpha = torch.rand(1)`` / ``else: alpha = torch.FloatTensor([0.5])``)."""
        recv = unwrap_variable(call.func.value)
        b = ctx.binding_at(recv.id, call) if recv.__class__ is ast.Name else None
        for value in branch_alternatives(ctx, b.node, recv.id) if b is not None and b.kind == "assign" else ():
            made = cpu_factory(ctx, value)
            if made is not None and id(made[0]) not in seen and not self._once(ctx, made[0], made[0]):
                seen.add(id(made[0]))
                yield made

    @staticmethod
    def _once(ctx: Context, site: ast.AST, here: ast.AST) -> bool:
        return dead_code(ctx, here) or runs_once(ctx, here) or example_input(ctx, site) or made_once_per_request(ctx, site) \
            or memoized(ctx, site) or rarely_moved(ctx, site) or never_called(ctx, ctx.function_of(here)) \
            or fallback_never_taken(ctx, here) or unselected_branch(ctx, here) or only_unselected(ctx, ctx.function_of(here)) \
            or once_per_instance_call(ctx, here)

    def _finding(self, ctx: Context, call: ast.Call, site: ast.Call, made: tuple[ast.Call, bool, str], separate: bool,
                 via: str, target: ast.AST | bool) -> Finding:
        inner, chained, factory = made
        fix = None
        if not separate and factory in DETERMINISTIC and keyword(inner, "requires_grad") is None and not chained:
            fix = self._fix(ctx, call, inner, target)
        where = f"{ctx.text(target)}'s device" if target is not True and tensor_target(ctx, call) else "the device"
        if factory in LEGACY or factory == "from_numpy":
            suggestion = (f"create it there with a factory or torch.tensor(data, dtype=..., {device_args(ctx, call, target)})"
                          if factory in LEGACY else
                          f"draw or build it with torch on the device: torch.rand/eye/tensor(..., {device_args(ctx, call, target)})")
        else:
            suggestion = f"create it there: torch.{factory}(..., {device_args(ctx, call, target)})"
        if via.startswith(" every call"):  # a constant table kept as a plain attribute
            suggestion = "make it once in __init__ with self.register_buffer(name, tensor) and use it as it is"
        return ctx.finding(self.code, site, f"torch.{factory}(...) is built on the CPU and then copied to {where}{via}",
                           suggestion=suggestion, fix=fix)

    @staticmethod
    def _fix(ctx: Context, call: ast.Call, inner: ast.Call, target: ast.AST | bool) -> Fix | None:
        if tensor_target(ctx, call):
            return None  # .to(other) also casts to its dtype
        if target is True:
            if call.args or call.keywords:
                return None  # .cuda(1), .cuda(non_blocking=True)...
            device = '"cuda"'
        else:
            if len(call.args) + len(call.keywords) != 1:
                return None  # .to(device, dtype) / non_blocking...: keep it simple and exact
            device = ctx.text(target)
        add = ctx.add_keyword(inner, f"device={device}")
        if add is None:
            return None
        inner_start, inner_end = ctx.span(inner)
        start, end = ctx.span(call)
        # new text: the factory call with device=..., and nothing of the .to/.cuda call
        text = ctx.source[inner_start:add.start] + add.text + ctx.source[add.end:inner_end]
        return Fix(f"create the tensor with device={device}", (Edit(start, end, text),))


RULE = CreateThenMove()

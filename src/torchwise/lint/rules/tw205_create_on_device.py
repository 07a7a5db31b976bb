"""TW205: a tensor created on the CPU and then moved to the device it was meant for."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, keyword, last_name
from torchwise.lint.findings import Edit, Finding, Fix
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import device_move_target, is_device_tensor, is_dtype_expr
from torchwise.lint.semantics.actions import model_input_copy, observation_copy
from torchwise.lint.semantics.callers import never_called
from torchwise.lint.semantics.once import memoized, runs_once, sampler_off_step
from torchwise.lint.semantics.stored import host_built
from torchwise.lint.semantics.tensorlike import tensor_like
from torchwise.lint.semantics.hostarrays import numpy_made
from torchwise.lint.semantics.handoff import copied_by_new_tensor, host_round_trip, moved_sources, rarely_moved

# Factories whose values do not depend on the random generator: moving the device into the
# call gives exactly the same tensor.
DETERMINISTIC = frozenset({
    "zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye", "tensor", "as_tensor",
    "empty_strided", "tril_indices", "triu_indices",
    "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window",
})
# torch functions that take a new tensor first and keep it where it is (torch.triu(torch.ones(...)))
_WRAPPING = frozenset({"torch.triu", "torch.tril", "torch.diag", "torch.diag_embed", "torch.flip", "torch.roll"})
# calls whose argument is an example input, used once (to trace or draw the graph)
_EXAMPLE_TAKERS = frozenset({"add_graph", "trace", "summary", "export", "profile"})
# Random factories draw from a different generator on the device: same advice, no automatic fix.
# (normal/bernoulli/multinomial are left out: given tensors, they already run on their device)
RANDOM = frozenset({"rand", "randn", "randint", "randperm"})


_LITERALS = (ast.List, ast.Tuple, ast.Constant, ast.ListComp, ast.UnaryOp, ast.BinOp)


def _host_data(ctx: Context, data: ast.AST, use: ast.AST) -> bool:
    """Python data (a list, tuple or number, directly or through a name) - surely on the host."""
    if data.__class__ in _LITERALS:
        return True
    if data.__class__ is ast.Name:
        b = ctx.binding_at(data.id, use)
        if b is not None and b.kind == "for" and b.value is not None and b.value.__class__ is ast.Call:
            return last_name(b.value.func) == "range"  # [torch.tensor(y).to(device) for y in range(n)]: a Python int
        return b is not None and b.kind == "assign" and b.value.__class__ in _LITERALS
    return False


# methods between the factory and the move that only reshape or retype (the data stays as made)
_SHAPE_METHODS = frozenset({
    "unsqueeze", "squeeze", "unfold", "repeat", "expand", "expand_as", "view", "view_as", "reshape", "reshape_as", "flatten",
    "t", "transpose", "permute",
    "flip", "float", "long", "int", "bool", "half", "double", "contiguous", "repeat_interleave", "tril", "triu",
    "fill_", "zero_", "type", "type_as",
    "scatter_", "scatter_add_",  # a one-hot filled in on the host: torch.zeros(s).scatter_(1, idx, 1)
    # drawn or rescaled in place on the host: torch.rand(s).sub_(0.5).mul_(2.0), FloatTensor(b, 1).uniform_(0, 1)
    "normal_", "uniform_", "sub_", "mul_", "add_", "div_", "clamp_",
})
# filling methods: what a legacy constructor was given are sizes (FloatTensor(n).zero_())
_FILLS = frozenset({"fill_", "zero_", "normal_", "uniform_"})
# the typed legacy constructors (TW513): they always allocate on the CPU, whatever they are given
LEGACY = frozenset({
    "Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
    "ShortTensor", "ByteTensor", "CharTensor", "BoolTensor",
})


_SIZE_CALLS = frozenset({"size", "range", "len", "int", "numel", "dim"})


def _sizes_or_literal(ctx: Context, arg: ast.AST, use: ast.AST, depth: int = 2) -> bool:
    """A legacy constructor's argument that makes a new tensor rather than converting data read
    from somewhere: sizes (``10000``, ``x.size()``, ``n`` bound to ``loc.size(0)``), Python
    literals and ranges (``[0.5]``, ``range(n)``). Data arrays (``torch.FloatTensor(wav)``) are
    left alone: they have to cross to the device anyway."""
    cls = arg.__class__
    if cls in (ast.Constant, ast.List, ast.Tuple, ast.ListComp):
        return True  # also a list built in Python: torch.LongTensor([s[0] for s in batch])
    if cls is ast.Attribute:
        return arg.attr == "shape"
    if cls is ast.Subscript:
        return _sizes_or_literal(ctx, arg.value, use, depth)
    if cls is ast.BinOp:
        return _sizes_or_literal(ctx, arg.left, use, depth) and _sizes_or_literal(ctx, arg.right, use, depth)
    if cls is ast.Call:
        return last_name(arg.func) in _SIZE_CALLS
    if cls is ast.Name and depth > 0:
        b = ctx.binding_at(arg.id, use)
        return b is not None and b.kind == "assign" and b.value is not None and _sizes_or_literal(ctx, b.value, use, depth - 1)
    return False


def _legacy_sizes(ctx: Context, call: ast.Call, filled: bool) -> bool:
    """A legacy constructor that allocates: given sizes or literals, two or more positional
    arguments or ``*shape`` (only sizes take that form: ``torch.FloatTensor(n, dim)``), or
    filled right away (``torch.FloatTensor(n).zero_()``: whatever it was given is overwritten)."""
    args = call.args
    return filled or len(args) >= 2 or any(a.__class__ is ast.Starred for a in args) or all(
        _sizes_or_literal(ctx, a, call) for a in args)


def _traced(ctx: Context, node: ast.AST) -> bool:
    """An example input: inside ``torch.jit.trace(...)``/``torch.onnx``/``torch.fx`` (where the
    move is recorded), or an argument of ``writer.add_graph(...)``, ``summary(...)``: made once."""
    for anc in ctx.ancestors(node):
        if anc.__class__ is ast.Call:
            if (ctx.qualname(anc.func) or "").startswith(("torch.jit.", "torch.onnx.", "torch.fx.")):
                return True
            if last_name(anc.func) in _EXAMPLE_TAKERS:
                return True
    return False


class CreateThenMove(Rule):
    code = "TW205"
    name = "create-then-move"
    triggers = ("cuda", "to", "type_as")
    fixable = True
    doc = """\
What it flags
  A tensor factory (`torch.zeros/ones/empty/full/arange/linspace/eye`, `torch.tensor`/`as_tensor`
  of Python data such as a list, and the random `rand/randn/randint/randperm`) called without
  `device=` (nor a `generator=`, whose device decides) - also a window function
  (`torch.hann_window`...), or a factory scaled or wrapped before the move
  (`(torch.ones(n) * i).to(x.device)`, `torch.triu(torch.ones(n, n)).to(device)`, rows picked
  on the host `torch.eye(n)[labels]`, a one-hot filled in on the host
  `torch.zeros(s).scatter_(1, idx, 1)`, drawn or rescaled in place `torch.rand(s).sub_(0.5).mul_(2.0)`),
  a typed legacy constructor of sizes or Python literals
  (`torch.LongTensor(range(n))`, a list built in Python `torch.LongTensor([r[0] for r in rows])`,
  `torch.BoolTensor(x.size()).fill_(0)`, two or more sizes
  `torch.FloatTensor(n, opt.dim).zero_()`, anything zeroed or filled right away; not of data read from
  somewhere, which has to cross anyway - except an agent's observation in its action-selection
  method, `torch.FloatTensor(state).to(device)` in `select_action(self, state)` (also of
  `state.reshape(1, -1)`), copied twice every environment step, and a replay buffer's
  `sample()` method building each minibatch from the arrays it stores,
  `torch.FloatTensor(self.state[ind]).to(device)`, when a training step calls it, and the
  minibatch such a memory returns, `states, actions = memory.sample(n)` then
  `torch.FloatTensor(states).to(device)` in the update, and a model's input copied in a method of
  an `nn.Module`, `torch.LongTensor(log_seqs).to(self.dev)` in `forward`/`predict` or a helper
  method - a parameter of the method or an array NumPy makes there, moved in the same expression) and `torch.from_numpy` of an array NumPy makes right
  there (`np.random.uniform(...)`, `np.eye(k)`; also `torch.tensor(arr)`) or builds from sizes and settings: detection anchors
  or a position table joined with `np.append`/`np.concatenate` in a loop from pure-NumPy helpers
  of the file (`np.append(grid, cell_offsets(side // s, s), axis=0)`, helpers that read no file
  and no `self`, given `x.shape`, constants, `self.strides[i]`; arrays joined from the
  function's input data have to cross anyway) - and then moved with `.cuda()`,
  `.to(device)`, `.to(other_tensor)` (also the forward's input after scaling, layers or a reshape:
  `x = F.relu(self.conv1(x / 255)); x = x.view(b, -1)`), `.type_as(other_tensor)` or `other.new_tensor(name)`
  (`frame = torch.arange(n).unfold(0, k, s); frame = signal.new_tensor(frame)`) - chained, or in the next use
  of the name it was stored under (`m = torch.ones(n); m = m.cuda()`, or reshaped as it moves:
  `m.expand(b, k).to(x)`; also under
  `if x.is_cuda:` or `if self.cuda:`, wrapped `Variable(z).cuda(i)`, reshaped first under the
  same name `eta = eta.expand(...)` or `alpha = alpha.expand_as(real)`, made under nested `if`s
  and moved after `if x is not None:` - a test, not a use -, or joined and moved: `torch.cat([y, m], 1).float().to(device)`, also a join stored first,
  `grid = torch.cat([rows, cols], 1)` then `if self.use_cuda: grid = grid.cuda()`;
  every part of a join is on one device), also after host arithmetic and a retype
  (`(torch.ones(s) / n).type_as(x).to(x.device)`), through a helper of the file that returns
  it (`t = diffusion.sample_timesteps(n).to(device)`, the helper returning `torch.randint(...)`)
  or that moves what it is given (`self.to_var(torch.randn(b, d))` with `def to_var(self, x):
  return Variable(x).cuda()`, reported at the call that passes it), a constant table made in
  `__init__` as a plain attribute and moved where it is used (`self.pe.to(x.device)` in
  `forward`; a buffer moves with the model once), and a device tensor pulled
  to NumPy and sent back (`torch.from_numpy(np.flip(out.cpu().numpy(), 3).copy()).cuda()` of a
  model's output: two crossings for work `torch.flip` does on the device) - where the code runs
  repeatedly: inside a loop, in `forward()` and other
  per-call functions (a training step, a helper without a loop of its own, a helper with a
  loop that a forward pass calls - `farthest_point_sample` -, the `__init__` of a helper class
  that a forward pass builds every call, here or in another module of the project).
  One-time set-up is not reported: module-level code outside loops, `__init__`, `setup`/
  `build`/`main`-like functions (a `make_*`/`init_*` helper that a forward pass or loss calls,
  `make_one_hot(target, n)`, is per call - not when only `__init__` calls it, or a
  `generate()` outside its loop: `hidden = self.init_hidden()`), allocations before the loop of a function that loops (not when
  it is called inside a loop over batches or items, `for x, y in test_loader: pgd(model, x, y)`, or
  inside a training loop: its own loop - an attack's steps - is then per call; a call in
  `for epoch in range(n):` stays set-up),
  helpers only `__init__` or an evaluation calls, a model's `sample()`/`generate()` method
  outside its loops when no training step of the project calls it, values stored in a cache
  the first time only (`if key not in cache: cache[key] = ...`, an optimizer's lazy
  `if not state:` set-up), NaN-recovery branches
  (`if torch.isnan(k).any():`), example inputs for `add_graph`, allocations under a periodic
  branch (`if (i + 1) % 1000 == 0:` or `% args.log_every`, a sample grid for a figure; not
  `% 2`, every other step, nor the optimizer step of gradient accumulation) and in an
  `evaluate()`-like function outside its loops that no loop of the file calls (one grid of
  samples per evaluation). Nor is a module-level
  helper of a script (`if __name__ == "__main__":` or `parse_args()`) that nothing runs: its
  name occurs nowhere else in the file and no module of the project imports the script (a
  `fliplr()` left in a training script while the test script calls its own copy).
  Nor is a move to the device of a tensor made on the CPU in the same function
  (`coin = torch.bernoulli(torch.tensor(self.p))`, then `torch.tensor(1.).to(coin.device)`):
  nothing goes to a GPU there.
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
        seen: set[int] = set()
        for call in ctx.calls_named("cuda", "to", "type_as"):
            target = _move_target(ctx, call)
            if target is None:
                continue
            for site, made, separate, via in moved_sources(ctx, call, lambda e: _factory(ctx, e), _SHAPE_METHODS):
                if id(site) in seen:
                    continue
                seen.add(id(site))
                inner, chained, factory = made
                here = site if via else inner
                if runs_once(ctx, here) or _traced(ctx, site) or _made_once_per_request(ctx, site) or memoized(ctx, site) \
                        or rarely_moved(ctx, site) or never_called(ctx, ctx.function_of(here)):
                    continue  # one-time set-up; inside torch.jit.trace(...), where the move is recorded; a dead helper
                yield self._finding(ctx, call, site, made, separate, via, target)
        for call, owner, (inner, _, factory) in copied_by_new_tensor(ctx, lambda e: _factory(ctx, e)):
            if id(inner) not in seen and not (runs_once(ctx, call) or never_called(ctx, ctx.function_of(call))):
                seen.add(id(inner))
                yield ctx.finding(self.code, inner, f"torch.{factory}(...) is built on the CPU and then copied to "
                                  f"{ctx.text(owner)}'s device by .new_tensor()",
                                  suggestion=f"create it there: torch.{factory}(..., device={ctx.text(owner)}.device)")

    def _finding(self, ctx: Context, call: ast.Call, site: ast.Call, made: tuple[ast.Call, bool, str], separate: bool,
                 via: str, target: ast.AST | bool) -> Finding:
        inner, chained, factory = made
        fix = None
        if not separate and factory in DETERMINISTIC and keyword(inner, "requires_grad") is None and not chained:
            fix = self._fix(ctx, call, inner, target)
        where = f"{ctx.text(target)}'s device" if target is not True and _tensor_target(ctx, call) else "the device"
        if factory in LEGACY or factory == "from_numpy":
            suggestion = (f"create it there with a factory or torch.tensor(data, dtype=..., {_device_args(ctx, call, target)})"
                          if factory in LEGACY else
                          f"draw or build it with torch on the device: torch.rand/eye/tensor(..., {_device_args(ctx, call, target)})")
        else:
            suggestion = f"create it there: torch.{factory}(..., {_device_args(ctx, call, target)})"
        if via.startswith(" every call"):  # a constant table kept as a plain attribute
            suggestion = "make it once in __init__ with self.register_buffer(name, tensor) and use it as it is"
        return ctx.finding(self.code, site, f"torch.{factory}(...) is built on the CPU and then copied to {where}{via}",
                           suggestion=suggestion, fix=fix)

    @staticmethod
    def _fix(ctx: Context, call: ast.Call, inner: ast.Call, target: ast.AST | bool) -> Fix | None:
        if _tensor_target(ctx, call):
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


def _made_once_per_request(ctx: Context, call: ast.Call) -> bool:
    """Outside the loops of a model's ``sample()``/``generate()`` method that no training step
    calls (:func:`sampler_off_step`): one allocation per request for samples."""
    func = ctx.function_of(call)
    return func is not None and not ctx.enclosing_loops(call) and sampler_off_step(ctx, func)


def _tensor_target(ctx: Context, call: ast.Call) -> bool:
    """``.to(other_tensor)`` / ``.type_as(other_tensor)``: a move (and cast) to where a tensor lives."""
    return call.func.attr == "type_as" or (call.func.attr == "to" and device_move_target(ctx, call) is None)


def _move_target(ctx: Context, call: ast.Call) -> ast.AST | bool | None:
    """Where ``call`` moves its receiver: True for ``.cuda()``, the device or tensor expression
    of ``.to(...)``/``.type_as(...)``; None when it is not a move (``.to(torch.float16)``,
    ``.to("cpu")``)."""
    if call.func.__class__ is not ast.Attribute:
        return None
    target = device_move_target(ctx, call)
    if target is not None:
        if target is not True and target.__class__ is ast.Constant and str(target.value).startswith("cpu"):
            return None  # .to("cpu") of a new tensor: it is made there already
        if target is not True and target.__class__ is ast.Attribute and target.attr == "device" \
                and host_built(ctx, ctx.resolve(target.value, call), call, lambda e: _factory(ctx, e) is not None,
                               _SHAPE_METHODS):
            return None  # .to(var.device) with var itself drawn on the CPU: nothing goes to a GPU
        return target
    if call.func.attr not in ("to", "type_as") or len(call.args) != 1 or call.args[0].__class__ is ast.Starred:
        return None
    other = call.args[0]
    if other.__class__ not in (ast.Name, ast.Attribute, ast.Subscript) or is_dtype_expr(ctx, other):
        return None
    if is_dtype_expr(ctx, ctx.resolve(other, call)) or any(k.arg == "dtype" for k in call.keywords):
        return None  # precision = torch.half; x.to(precision)
    return other if tensor_like(ctx, other, call) else None


def _device_args(ctx: Context, call: ast.Call, target: ast.AST | bool) -> str:
    if target is True:
        return 'device="cuda"'
    text = ctx.text(target)
    if _tensor_target(ctx, call):
        return f"device={text}.device, dtype={text}.dtype"
    return f"device={text}"


def _factory(ctx: Context, expr: ast.AST | None) -> tuple[ast.Call, bool, str] | None:
    """The torch factory call that makes ``expr`` on the CPU (through reshaping/retyping
    methods), whether methods were chained after it, and the factory's name."""
    if expr is not None and expr.__class__ is ast.BinOp:
        # (torch.ones(n) * i).to(x.device): the factory scaled by a number on the host
        sides = [expr.left, expr.right]
        made = [_factory(ctx, side) for side in sides]
        others = [side for side, m in zip(sides, made) if m is None]
        found = [m for m in made if m is not None]
        if len(found) == 1 and all(_number_like(o) and not is_device_tensor(ctx, o, expr) for o in others):
            return found[0][0], True, found[0][2]
        return None
    if expr is not None and expr.__class__ is ast.Subscript and expr.value.__class__ is ast.Call:
        made = _factory(ctx, expr.value)  # torch.eye(n)[labels]: rows picked on the host
        return (made[0], True, made[2]) if made is not None else None
    if expr is None or expr.__class__ is not ast.Call:
        return None
    inner, chained, filled = expr, False, False
    while True:
        func = inner.func
        if func.__class__ is ast.Attribute and func.attr in _SHAPE_METHODS and func.value.__class__ in (ast.Call, ast.Subscript, ast.BinOp) \
                and ctx.qualname(func) is None:
            if func.value.__class__ is not ast.Call:  # (torch.ones(s) / n).type_as(x): scaled on the host
                made = _factory(ctx, func.value)
                return (made[0], True, made[2]) if made is not None else None
            inner, chained = func.value, True  # arange(n).unsqueeze(0).repeat(b, 1).to(dev)
            filled = filled or func.attr in _FILLS
        elif (ctx.qualname(func) in _WRAPPING or last_name(func) == "Variable") and inner.args and inner.args[0].__class__ is ast.Call:
            inner, chained = inner.args[0], True  # torch.triu(torch.ones(n, n), diagonal=1).to(dev); Variable(...)
        else:
            break
    q = ctx.qualname(inner.func)
    if q is None or not q.startswith("torch.") or q.count(".") != 1:
        return None
    factory = q.split(".", 1)[1]
    if factory in LEGACY:
        made = inner.args and (_legacy_sizes(ctx, inner, filled) or observation_copy(ctx, inner) or model_input_copy(ctx, inner))
        return (inner, True, factory) if made else None
    if factory == "from_numpy":
        return (inner, True, factory) if len(inner.args) == 1 and (
            numpy_made(ctx, inner.args[0], inner) or host_round_trip(ctx, inner.args[0], inner)) else None
    if factory not in DETERMINISTIC and factory not in RANDOM:
        return None
    if keyword(inner, "device") is not None or keyword(inner, "generator") is not None:
        return None  # a generator fixes the device the numbers are drawn on
    if any(k.arg is None for k in inner.keywords):
        return None  # **kwargs may hold a device; *sizes cannot
    if factory in ("tensor", "as_tensor"):
        if any(a.__class__ is ast.Starred for a in inner.args) or len(inner.args) != 1 or not (
                _host_data(ctx, inner.args[0], inner) or numpy_made(ctx, inner.args[0], inner)):
            return None  # data that may already be a tensor on the device, or positional extras
    return inner, chained, factory


def _number_like(node: ast.AST) -> bool:
    """A number or a name (``i``, ``-1``, ``-alpha``) scaling a factory on the host."""
    if node.__class__ is ast.UnaryOp:
        node = node.operand
    return node.__class__ in (ast.Constant, ast.Name)


RULE = CreateThenMove()

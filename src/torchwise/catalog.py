"""The practice catalog: every practice torchwise knows, under a stable code.

This module is the single source of truth that the linter, the doctor, the tuner, the Trainer
and ``torchwise rule`` read. It is plain data and imports nothing of the project and nothing
heavy, so it costs almost nothing to import.

Codes: ``TW1xx`` correctness, ``TW2xx`` performance, ``TW3xx`` reproducibility, ``TW4xx``
devices / distribution / checkpoints / security, ``TW5xx`` api (removed, deprecated or
error-prone PyTorch APIs); ``CATEGORY_NOTES`` says what each covers. The flags say which engine can act on a
practice: ``static`` (lint), ``runtime`` (doctor), ``tuned`` (tune); ``default`` says what the
Trainer does about it by default ("" when nothing).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Iterable

CATEGORIES: dict[str, str] = {
    "1": "correctness",
    "2": "performance",
    "3": "reproducibility",
    "4": "devices",
    "5": "api",
}

# what each category covers, as `torchwise rules` and `torchwise rule` explain it
CATEGORY_NOTES: dict[str, str] = {
    "correctness": "bugs that make training silently wrong (gradients, modes, losses, labels)",
    "performance": "settings and habits that waste time or memory",
    "reproducibility": "seeds and determinism, so that a run can be repeated",
    "devices": "devices, distributed training and checkpoints (loading, saving, security)",
    "api": "PyTorch APIs that were removed, are deprecated or are easy to misuse, with their replacements",
}


@dataclass(frozen=True)
class Practice:
    """One practice of the catalog."""

    code: str
    title: str
    category: str  # "correctness" | "performance" | "reproducibility" | "devices" | "api"
    rationale: str  # why it matters, and the mechanism behind it
    seeds: tuple[int, ...]  # numbers of the source articles
    static: bool  # the linter can detect it
    runtime: bool  # the doctor can detect it
    tuned: bool  # the tuner measures it
    default: str  # what the Trainer does by default ("" when nothing)
    fix: str
    example_bad: str
    example_good: str

    @property
    def engines(self) -> tuple[str, ...]:
        """The engines that act on this practice according to the catalog flags."""
        out = []
        if self.static:
            out.append("lint")
        if self.runtime:
            out.append("doctor")
        if self.tuned:
            out.append("tune")
        if self.default:
            out.append("trainer")
        return tuple(out)


class UnknownPractice(LookupError):
    """A code or selector that names no practice; the message lists near matches."""

    def __init__(self, message: str, near: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.near = tuple(near)

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0])


_ENTRIES: list[Practice] = []


def _add(code: str, title: str, seeds: tuple[int, ...], flags: str, default: str,
         rationale: str, fix: str, bad: str, good: str) -> None:
    _ENTRIES.append(Practice(
        code=code, title=title, category=CATEGORIES[code[2]], rationale=" ".join(rationale.split()),
        seeds=seeds, static="S" in flags, runtime="R" in flags, tuned="T" in flags, default=default,
        fix=" ".join(fix.split()), example_bad=bad, example_good=good,
    ))


# ---------------------------------------------------------------------------------------------
# TW1xx: correctness
# ---------------------------------------------------------------------------------------------

_add("TW101", "Running loss accumulated as a tensor", (4,), "SR", "trainer accumulates detached values",
     """Adding the loss tensor to a running total (`total += loss`) makes the total part of the
     autograd graph, so the graph of every step and the activations it references stay alive as
     long as the total does. Memory grows each iteration until the process runs out. Logging only
     needs the number.""",
     """Accumulate `loss.detach()` (stays on the device, no sync) or `loss.item()` (a Python
     float); convert detached totals with `.item()` once per log interval.""",
     "total_loss += loss",
     "total_loss += loss.detach()   # .item() at log time")

_add("TW102", "Softmax output fed to CrossEntropyLoss", (3,), "SR", "",
     """`CrossEntropyLoss` expects raw logits and applies log-softmax itself: it equals
     `LogSoftmax` followed by `NLLLoss`. Giving it probabilities applies a softmax twice, which
     flattens the gradients and slows or stalls learning while the loss still looks plausible.
     At run time it shows up as model outputs whose rows sum to 1.""",
     """Let the model return logits and pass them straight to `CrossEntropyLoss`; if you need
     log-probabilities, use `log_softmax` with `NLLLoss`.""",
     "loss = F.cross_entropy(F.softmax(logits, dim=1), y)",
     "loss = F.cross_entropy(logits, y)")

_add("TW103", "forward() called directly", (3,), "S", "",
     """`module(x)` goes through `__call__`, which runs the forward pre-hooks, forward hooks and
     backward hooks registered on the module around `forward`. Calling `module.forward(x)` skips
     all of them, so anything built on hooks (profilers, quantisation observers, parallel wrappers,
     torchwise's own checks) silently sees nothing.""",
     "Call the module itself: `out = model(x)`.",
     "out = model.forward(x)",
     "out = model(x)")

_add("TW104", "Evaluation without no_grad / inference_mode", (2, 4), "SR", "eval under inference_mode",
     """Outside `torch.no_grad()` every operation on tensors that require grad records autograd
     history and keeps intermediate activations for a backward pass that never comes. Validation
     and inference then use several times the memory they need and run slower, and large
     evaluation batches can run out of memory.""",
     """Wrap evaluation in `with torch.inference_mode():` (or `torch.no_grad()` when the outputs
     are later used with autograd) and call `model.eval()` first.""",
     "model.eval()\nfor x, y in val_loader:\n    out = model(x)",
     "model.eval()\nwith torch.inference_mode():\n    for x, y in val_loader:\n        out = model(x)")

_add("TW105", "log of probabilities without an epsilon", (3,), "SR", "",
     """`torch.log(torch.softmax(x))` is unstable: softmax underflows to exactly 0 for very
     negative logits, log(0) is -inf, and the gradient turns into NaN. The same happens with
     `log(p)` of any probability that can reach 0. `log_softmax` computes the same quantity
     stably with the log-sum-exp trick.""",
     """Use `F.log_softmax(x, dim=...)`; for other probabilities clamp first:
     `torch.log(p.clamp_min(1e-12))`.""",
     "logp = torch.log(F.softmax(logits, dim=-1))",
     "logp = F.log_softmax(logits, dim=-1)")

_add("TW106", "Class labels outside [0, C)", (3,), "R", "checked before the first CUDA step (the trainer checks before the first step on any device)",
     """CrossEntropyLoss and NLLLoss index the output with the target. On the CPU a bad label
     raises a readable IndexError, but on CUDA the kernel trips an assertion reported only as
     "device-side assert triggered", asynchronously, often at a later line, and the CUDA context
     is unusable afterwards. Labels numbered 1..C, or a -1 padding value without `ignore_index`,
     are the usual causes.""",
     """Check one batch before training: `0 <= target.min()` and `target.max() < output.shape[1]`
     (`torchwise.utils.labels.label_problem` does this); remap labels to 0..C-1 or set `ignore_index`
     for padding.""",
     "# 10 classes, labels numbered 1..10\nloss = F.cross_entropy(logits, labels)",
     "loss = F.cross_entropy(logits, labels - 1)   # labels now in [0, 10)")

_add("TW107", "view() on a non-contiguous tensor", (3,), "S", "",
     """`view` reinterprets the existing storage and needs strides that fit the new shape. After
     `transpose`, `permute` or some slicing the tensor is not contiguous and `view` fails with
     "view size is not compatible with input tensor's size and stride". `reshape` returns a view
     when it can and copies only when it must.""",
     "Use `x.reshape(...)`, or `x.contiguous().view(...)` when you want the copy to be explicit.",
     "y = x.transpose(1, 2).view(b, -1)",
     "y = x.transpose(1, 2).reshape(b, -1)")

_add("TW108", "register_backward_hook on multi-op modules", (3,), "S", "",
     """The old `Module.register_backward_hook` attaches to the last autograd node of the
     module's forward. For a module made of several operations it therefore reports the gradients
     of that last operation, not those of the module's inputs, and it is deprecated for that
     reason. `register_full_backward_hook` reports the true gradients with respect to the module's
     inputs and outputs.""",
     "Replace it with `module.register_full_backward_hook(hook)`; the hook signature is the same.",
     "layer.register_backward_hook(hook)",
     "layer.register_full_backward_hook(hook)")

_add("TW109", "BatchNorm frozen only with .eval()", (3,), "SR", "",
     """Putting BatchNorm layers in eval mode stops their running statistics from updating, but
     the next `model.train()` of the training loop switches every submodule back to training mode
     and the statistics start moving again. The affine weight and bias also keep training unless
     their `requires_grad` is off. Fine-tuning with small batches then drifts away from the
     pre-trained statistics.""",
     """Use `torchwise.freeze_batchnorm(model)`, which keeps BatchNorm layers in eval mode across
     `model.train()` and freezes their affine parameters; or override `train()` to re-apply eval
     to them and turn their `requires_grad` off.""",
     "for m in model.modules():\n    if isinstance(m, nn.BatchNorm2d):\n        m.eval()\nmodel.train()   # BN trains again",
     "torchwise.freeze_batchnorm(model)\nmodel.train()   # BN stays frozen")

_add("TW110", "No zero_grad in the training loop", (3, 2), "SR", "",
     """`backward()` adds into `.grad` instead of overwriting it. Without zeroing once per
     optimizer step, the gradients of all earlier steps pile up, the effective step grows without
     bound and training diverges or behaves erratically. Deliberate gradient accumulation zeroes
     after every N micro-steps instead.""",
     "Call `optimizer.zero_grad()` once per optimizer step (before `backward`, or after `step`).",
     "for x, y in loader:\n    loss_fn(model(x), y).backward()\n    opt.step()",
     "for x, y in loader:\n    opt.zero_grad()\n    loss_fn(model(x), y).backward()\n    opt.step()")

_add("TW111", "Matrix init scheme applied to 1-D parameters", (3,), "S", "",
     """Xavier and Kaiming initialisers compute fan-in and fan-out from at least two dimensions.
     Applied to a bias or a normalisation weight (1-D) they raise "Fan in and fan out can not be
     computed for tensor with fewer than 2 dimensions", so a loop that initialises every
     parameter fails at the first bias.""",
     """Apply matrix schemes only to parameters with `p.dim() >= 2` and set biases to zero, or use
     `torchwise.init_weights(model, scheme=...)`.""",
     "for p in model.parameters():\n    nn.init.xavier_uniform_(p)",
     "for name, p in model.named_parameters():\n    if p.dim() >= 2:\n        nn.init.xavier_uniform_(p)\n    elif name.endswith('bias'):\n        nn.init.zeros_(p)")

_add("TW112", "NaN/Inf in the loss or gradients", (3,), "R", "non-finite guard",
     """A single non-finite value spreads through the next optimizer step into every weight and
     the run is lost. Fixing it needs the first module that produced it (an overflowing exp, a
     division by zero, a log of zero). `torch.autograd.set_detect_anomaly` finds backward
     problems but slows every step a lot; checking module outputs with forward hooks once, after
     a failure, is cheap.""",
     """Check the loss with `torch.isfinite` and skip the step when it is not finite; locate the
     first module with non-finite outputs (`torchwise doctor`,
     `torchwise.utils.nonfinite.find_nonfinite`); then fix the cause: lower learning rate, gradient
     clipping, `log_softmax`, epsilons, bf16 or a GradScaler.""",
     "loss.backward()\nopt.step()   # even when loss is nan",
     "if not torch.isfinite(loss):\n    raise RuntimeError(str(find_nonfinite(model, run_forward)))\nloss.backward()\nopt.step()")

_add("TW113", "Target shape differs from the prediction's", (), "R", "",
     """`mse_loss` and `l1_loss` broadcast their arguments. A prediction of shape (N, 1) against
     a target of shape (N,) broadcasts to (N, N): every prediction is compared with every target
     and the model learns little more than the mean. PyTorch only warns, and the warning is easy
     to miss.""",
     "Make the shapes equal: `pred.squeeze(-1)`, or `target.view_as(pred)`.",
     "loss = F.mse_loss(model(x), y)   # (N, 1) vs (N,)",
     "loss = F.mse_loss(model(x).squeeze(-1), y)")

_add("TW114", "Parameters that get no gradient", (4,), "R", "",
     """A parameter that takes no part in the loss keeps `grad=None` after backward.
     DistributedDataParallel expects a gradient for every parameter and fails at the next step
     unless `find_unused_parameters=True`, which costs a graph traversal every step. Outside DDP
     it usually means a layer that was defined but never wired into `forward`, or a branch that
     never runs.""",
     """Use the layer in `forward`, delete it, or freeze it with `requires_grad_(False)`; pass
     `find_unused_parameters=True` to DDP only when some parameters are legitimately unused on
     some steps.""",
     "self.head2 = nn.Linear(64, 10)   # defined, never used in forward",
     "# remove head2, or freeze it:\nself.head2.requires_grad_(False)")

_add("TW115", "Optimizer and trainable parameters disagree", (), "R", "",
     """A parameter that requires grad but was never given to the optimizer receives gradients
     and is never updated; typically a layer added or unfrozen after the optimizer was built.
     Frozen parameters inside the optimizer are the mirror image of the same mix-up: the
     optimizer holds them and would update them again as soon as they get a gradient.""",
     """Build the optimizer after the model is final, from
     `[p for p in model.parameters() if p.requires_grad]`, and rebuild it (or use
     `add_param_group`) when you unfreeze layers.""",
     "opt = torch.optim.AdamW(model.parameters())\nmodel.head = nn.Linear(512, 10)   # not in opt",
     "model.head = nn.Linear(512, 10)\nopt = torch.optim.AdamW(p for p in model.parameters() if p.requires_grad)")

_add("TW116", "Blind k[7:] to strip a 'module.' prefix", (1,), "S", "smart state-dict loading",
     """Checkpoints saved from `nn.DataParallel` or DDP prefix every key with `module.`, and
     `torch.compile` adds `_orig_mod.`. Cutting the first seven characters of every key also
     chops the start of keys that never had the prefix, and a `load_state_dict(strict=False)`
     then silently loads nothing.""",
     """Strip only a prefix that is really there: `k.removeprefix('module.')`,
     `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present(sd, 'module.')`, or
     `torchwise.load_state_dict(model, sd)`, which handles both prefixes in both directions.""",
     "sd = {k[7:]: v for k, v in sd.items()}",
     "sd = {k.removeprefix('module.'): v for k, v in sd.items()}")

_add("TW117", "Variable-length samples without a padding collate", (3,), "R", "`pad_collate` helper",
     """The default collate function stacks samples with `torch.stack`, which needs identical
     shapes. Sequences of different lengths (text, audio, point sets) fail with "each element in
     list of batch should be of equal size" or a stack size error, often only at the first batch
     that happens to mix lengths.""",
     """Pass `collate_fn=torchwise.pad_collate(pad_value=0)`, which pads to the longest sample and
     returns lengths and a mask, or write one with `torch.nn.utils.rnn.pad_sequence`.""",
     "DataLoader(sequences, batch_size=32)",
     "DataLoader(sequences, batch_size=32, collate_fn=pad_collate(pad_value=0))")

_add("TW130", "Exploding or vanishing gradients", (), "R", "",
     """When gradients shrink layer by layer on the way back, the first layers barely learn: deep
     stacks of sigmoid or tanh units without normalisation or residual connections are the usual
     cause. When they grow, updates blow up and the loss swings or turns to NaN: a too-wide init
     or a learning rate far too high.""",
     """Add normalisation and residual connections, prefer ReLU-family activations, use a proper
     init (kaiming for ReLU, xavier for tanh); against explosion lower the learning rate and clip
     gradients with `clip_grad_norm_`.""",
     "nn.Sequential(*[nn.Linear(64, 64), nn.Sigmoid()] * 12)",
     "nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.LayerNorm(64), nn.ReLU()) for _ in range(12)])")

_add("TW131", "Dead ReLU units", (), "R", "",
     """A ReLU unit whose input stays negative outputs zero for every sample and passes no
     gradient, so it never recovers. A layer with many dead units trains with a fraction of its
     width; a too-large learning rate or a large negative bias are the usual causes.""",
     """Lower the learning rate or warm it up, use kaiming init and normalisation before the
     ReLU, or a leaky activation (`LeakyReLU`, `GELU`).""",
     "nn.init.constant_(layer.bias, -3.0)   # every unit starts below zero",
     "nn.init.kaiming_normal_(layer.weight); nn.init.zeros_(layer.bias)")

_add("TW132", "Saturated sigmoid or tanh units", (), "R", "",
     """A sigmoid or tanh unit pinned near its limits has a gradient near zero, so the layers
     before it barely learn. Unscaled inputs (raw pixel values, features in the hundreds) or a
     too-wide init push most units there from the first step.""",
     """Standardise the inputs, use xavier init or normalisation before the activation, or use
     ReLU-family activations.""",
     "model(torch.tensor(raw_features))   # values in the hundreds into nn.Tanh()",
     "model((x - mean) / std)")

_add("TW133", "Weights that do not move", (), "R", "",
     """Parameters that get gradients but keep their initial values do not train. The usual
     causes are a parameter group with learning rate 0 (easy to miss when groups are built by
     name) or a learning rate so small that a whole run changes the weights by a negligible
     fraction.""",
     """Give every parameter group a sensible learning rate (check per-group overrides and the
     scheduler's start factor); freeze on purpose with `requires_grad_(False)`.""",
     "Adam([{\"params\": body, \"lr\": 0.0}, {\"params\": head}], lr=1e-3)",
     "Adam([{\"params\": body, \"lr\": 1e-4}, {\"params\": head}], lr=1e-3)")

_add("TW134", "Training loss diverging or oscillating", (), "R", "",
     """A training loss that ends above where it started, or that swings by about its own size
     without making progress, is the classic sign of a learning rate too high for the model and
     batch size. Updates overshoot the minimum instead of settling into it.""",
     """Lower the learning rate (3-10x), add a warm-up, clip gradients.""",
     "torch.optim.SGD(model.parameters(), lr=5.0)",
     "torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)")

_add("TW135", "Training loss not decreasing", (), "R", "",
     """After a run of optimizer steps the training loss is where it started: the model is not
     learning. Typical causes are a learning rate far off, an optimizer over the wrong
     parameters, a loss that does not depend on the output, or targets that do not match it.""",
     """Check the learning rate (a range test with `torchwise tune`), that `optimizer.step()`
     updates the model's parameters, and that a single batch can be overfitted.""",
     "torch.optim.Adam(model.parameters(), lr=1e-9)",
     "torch.optim.Adam(model.parameters(), lr=1e-3)")

_add("TW136", "Label leakage: the target is readable from the input", (), "R", "",
     """A training loss that collapses toward zero within the first pass over the data means the
     answer is in the input. The classic case is a language model whose targets were not
     shifted by one, so it learns to copy the token it is given; a label column left among the
     features is another.""",
     """Shift language-model targets (`targets = tokens[:, 1:]`), keep the causal mask, and keep
     the label and anything derived from it out of the inputs.""",
     "x, y = tokens[:, :-1], tokens[:, :-1]",
     "x, y = tokens[:, :-1], tokens[:, 1:]")

_add("TW137", "BatchNorm trained on a batch of one", (), "R", "",
     """Batch statistics of one sample are meaningless: `BatchNorm1d` raises "Expected more than
     1 value per channel when training", `BatchNorm2d` normalises each image by itself and
     corrupts the running estimates. A last batch of one sample hits this at the end of an epoch,
     often hours into a run.""",
     """Use `drop_last=True` on the training loader (or a batch size that leaves no remainder of
     one), `model.eval()` for single samples, GroupNorm or LayerNorm for tiny batches.""",
     "DataLoader(ds_of_1025, batch_size=64)   # last batch: 1 sample",
     "DataLoader(ds_of_1025, batch_size=64, drop_last=True)")

_add("TW138", "Reentrant checkpoint over inputs that need no grad", (), "R", "",
     """The reentrant variant of `torch.utils.checkpoint` connects its output to the graph only
     through its inputs. With no input requiring grad (the first block, checkpointed on the
     input batch) the parameters inside get no gradient, and if nothing else does the backward
     fails with "element 0 of tensors does not require grad".""",
     """Pass `use_reentrant=False` (PyTorch's recommendation), or do not checkpoint the block that
     takes the raw input.""",
     "h = checkpoint(self.block1, x, use_reentrant=True)   # x: the input batch",
     "h = checkpoint(self.block1, x, use_reentrant=False)")

_add("TW139", "Evaluation with the model in training mode", (), "R", "",
     """Without `model.eval()`, Dropout keeps dropping units at random and BatchNorm normalises
     each evaluation batch by its own statistics while updating its running estimates with
     evaluation data. The metrics come out noisy, biased and dependent on the batch size, and
     they are not the model's: the same weights evaluated correctly score differently.""",
     """Call `model.eval()` before evaluating and `model.train()` before training again; `eval()`
     does not turn autograd off, so also evaluate under `torch.inference_mode()`.""",
     "def test(model, loader):\n    with torch.no_grad():\n        for x, y in loader:\n            correct += (model(x).argmax(1) == y).sum()",
     "def test(model, loader):\n    model.eval()\n    with torch.inference_mode():\n        for x, y in loader:\n            correct += (model(x).argmax(1) == y).sum()")

_add("TW140", "Learning rate far too high", (), "R", "",
     """Healthy steps change each weight matrix by a small fraction of its size, so a few
     hundred of them move it by less than about 1.5 times its initial norm. A rate far too high
     throws the weights several times their own size within a few dozen steps: the loss swings or
     diverges, ReLU units die, and a classifier often collapses to predicting the class prior,
     its loss pinned at ln C. Lowering the rate fixes what no other change will.""",
     """Lower the learning rate 10-100x (Adam-family: 1e-4 to 3e-3, SGD: 1e-3 to 1e-1), add a
     warm-up, or run a learning-rate range test (`torchwise tune`).""",
     "torch.optim.Adam(model.parameters(), lr=0.1)",
     "torch.optim.Adam(model.parameters(), lr=1e-3)")

_add("TW141", "Training data not shuffled", (), "R", "",
     """Data stored in order (sorted by label, grouped by source or time) and loaded without
     shuffling feeds the model one class or one range of targets for many steps. It follows
     whatever it sees last: the loss swings at each change, and it learns far less than from the
     same data shuffled.""",
     """Shuffle every epoch: `DataLoader(..., shuffle=True)`, or a `DistributedSampler(shuffle=True)`
     with `set_epoch` under DDP; for batches sliced by hand, index with `torch.randperm`.""",
     "DataLoader(TensorDataset(x, y_sorted_by_label), batch_size=64)",
     "DataLoader(TensorDataset(x, y_sorted_by_label), batch_size=64, shuffle=True)")

_add("TW142", "Output far off scale at the first step (bad init or unscaled inputs)", (), "R", "",
     """An untrained classifier should start near the chance loss ln C, a regression model near
     the targets' mean square. Weights initialised several times wider than the usual schemes,
     or inputs in the hundreds, make the first outputs hundreds of times too large. The first
     steps then only undo the init, units saturate and gradients explode.""",
     """Use PyTorch's default init or `kaiming_normal_` for ReLU layers (`xavier_uniform_` for
     tanh/sigmoid) without extra gain, and standardise the inputs.""",
     "nn.init.normal_(layer.weight, std=1.0)   # 512-wide layers: outputs in the hundreds",
     "nn.init.kaiming_normal_(layer.weight, nonlinearity='relu')")

# ---------------------------------------------------------------------------------------------
# TW2xx: performance
# ---------------------------------------------------------------------------------------------

_add("TW201", "nn.DataParallel instead of DistributedDataParallel", (1, 2, 4), "S", "DDP via torchrun",
     """`nn.DataParallel` drives all GPUs from one Python process: it replicates the model every
     step, scatters each batch and gathers outputs on GPU 0. It is held back by the GIL and the
     per-step copies, and GPU 0 carries the outputs and the loss, so it fills up first.
     `DistributedDataParallel` runs one process per GPU and overlaps the gradient all-reduce with
     backward; it is faster even on a single machine.""",
     """Launch with `torchrun --nproc_per_node=N train.py`, call `dist.init_process_group()`, wrap
     the model in `DistributedDataParallel(model, device_ids=[local_rank])` and use a
     `DistributedSampler` (the torchwise Trainer does all of this under torchrun).""",
     "model = nn.DataParallel(model).cuda()",
     "dist.init_process_group('nccl')\nmodel = DDP(model.to(local_rank), device_ids=[local_rank])")

_add("TW202", "DataLoader with num_workers=0", (2, 3), "SRT", "",
     """With `num_workers=0` the main process loads and augments every batch while the
     accelerator waits. Worker processes prepare batches in parallel with training. Each worker
     costs memory and start-up time and competes for cores, so the best count depends on the
     machine and the pipeline and has to be measured; more is not always faster.""",
     """Set `num_workers` to a measured value (start near the physical cores per GPU;
     `torchwise tune` measures it) and keep `persistent_workers=True`.""",
     "DataLoader(ds, batch_size=64, shuffle=True)",
     "DataLoader(ds, batch_size=64, shuffle=True, num_workers=4, persistent_workers=True)")

_add("TW203", "pin_memory for loaders feeding a GPU", (2,), "ST", "trainer pins loader memory when training on CUDA",
     """A copy from ordinary pageable host memory to the GPU first goes through a pinned staging
     buffer and cannot overlap with computation. With `pin_memory=True` the loader places batches
     in page-locked memory, so the copy is a direct DMA that can run asynchronously. It only
     helps when the data goes to a CUDA device.""",
     """`DataLoader(..., pin_memory=torch.cuda.is_available())`, together with
     `non_blocking=True` copies (TW204).""",
     "DataLoader(ds, batch_size=64, num_workers=4)",
     "DataLoader(ds, batch_size=64, num_workers=4, pin_memory=True)")

_add("TW204", "non_blocking host-to-device copies", (2,), "S", "trainer copies batches with non_blocking=True",
     """`.to('cuda')` blocks the Python thread until the copy finishes. From pinned memory,
     `non_blocking=True` queues the copy on the CUDA stream and returns at once, so the host
     prepares the next step while the transfer and the kernels run. From pageable memory the
     flag gains nothing.""",
     "`x = x.to(device, non_blocking=True)` for batches from a loader with `pin_memory=True`.",
     "x, y = x.cuda(), y.cuda()",
     "x = x.to(device, non_blocking=True)\ny = y.to(device, non_blocking=True)")

_add("TW205", "Tensors created on the CPU, then moved", (2,), "S", "",
     """`torch.rand(n).cuda()` allocates and fills the tensor in host memory, copies it over PCIe
     and throws the host copy away. Passing `device=` creates it directly in device memory, with
     no transfer and no synchronisation.""",
     "Create it in place: `torch.rand(n, device=device)`, `torch.zeros_like(x)`, `x.new_zeros(...)`.",
     "noise = torch.randn(b, 128).cuda()",
     "noise = torch.randn(b, 128, device=x.device)")

_add("TW206", "torch.tensor(ndarray) copies", (2,), "S", "",
     """`torch.tensor(array)` always copies the data. `torch.from_numpy(array)` and
     `torch.as_tensor(array)` return a tensor that shares the array's memory without copying,
     which matters for large arrays converted every batch. The shared tensor sees later writes to
     the array.""",
     "Use `torch.from_numpy(a)` or `torch.as_tensor(a)`, then `.to(device)` if needed.",
     "t = torch.tensor(np_array)",
     "t = torch.from_numpy(np_array)")

_add("TW207", "Host-device syncs in the hot loop", (2,), "SR", "trainer syncs once per log interval (plus one scalar read per optimizer step for the non-finite guard)",
     """CUDA kernels run asynchronously: Python normally runs ahead and queues work.
     `.item()`, `.cpu()`, `.numpy()`, `.tolist()`, printing a tensor, `nonzero()` and any `if` on
     a tensor's value make the CPU wait until the GPU has finished everything queued, and the GPU
     then idles while Python prepares the next step. One sync per step can cost a large share of
     throughput for small models.""",
     """Keep running metrics on the device (`total += loss.detach()`) and convert them once per
     log interval; avoid Python branches on tensor values inside the step.""",
     "for x, y in loader:\n    ...\n    print(loss.item())",
     "running += loss.detach()\nif step % 100 == 0:\n    print((running / 100).item())\n    running.zero_()")

_add("TW208", "zero_grad(set_to_none=False) or manual grad.zero_()", (2,), "S", "trainer zeroes with set_to_none=True",
     """Zeroing with `set_to_none=False` or `p.grad.zero_()` writes zeros over every gradient, one
     memory-bound kernel per parameter. Setting gradients to None skips that work: the next
     backward assigns fresh gradients instead of adding into zeros. It is the default since
     PyTorch 2.0, so code that passes False or zeroes by hand gives the saving up.""",
     "`optimizer.zero_grad()` (set_to_none=True is the default) or `model.zero_grad(set_to_none=True)`.",
     "opt.zero_grad(set_to_none=False)",
     "opt.zero_grad(set_to_none=True)")

_add("TW209", "Convolution bias right before BatchNorm", (2,), "SR", "",
     """BatchNorm subtracts the per-channel mean of its input, so a per-channel bias added by the
     convolution just before it is removed again exactly. The bias costs parameters, optimizer
     state and an extra add while having no effect on the output.""",
     "Create the convolution with `bias=False` when BatchNorm follows it.",
     "nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128)",
     "nn.Conv2d(64, 128, 3, padding=1, bias=False), nn.BatchNorm2d(128)")

_add("TW210", "Tensor-core friendly sizes (multiples of 8)", (2,), "RT", "",
     """Tensor cores process fp16/bf16 matrix products in fixed tiles. Dimensions that are
     multiples of 8 (64 or more on recent GPUs) map onto them fully; other sizes need padding or
     fall back to slower kernels. Layer widths, channel counts, vocabulary size and batch size all
     become matrix dimensions.""",
     """Round hidden sizes, channels and the vocabulary (pad it) up to multiples of 8, and use
     batch sizes that are multiples of 8.""",
     "nn.Linear(768, 30522)   # vocabulary size not a multiple of 8",
     "nn.Linear(768, 30528)   # vocabulary padded to a multiple of 64")

_add("TW211", "Mixed precision with autocast (and GradScaler for fp16)", (2, 4, 1), "T",
     '"auto": bf16 autocast where supported, fp16 with GradScaler on other GPUs, fp32 on CPU',
     """Running matrix products and convolutions in fp16 or bf16 uses tensor cores and halves the
     activation memory, often doubling throughput. `torch.autocast` chooses the precision per
     operation and keeps sensitive ones (reductions, softmax, losses) in fp32. fp16 has a narrow
     exponent range, so small gradients underflow unless the loss is scaled by a `GradScaler`;
     bf16 has the range of fp32 and needs no scaler where the hardware supports it.""",
     """Run forward and loss under `torch.autocast(device_type, dtype=torch.bfloat16)` (bf16 where
     supported) or fp16 with `torch.amp.GradScaler`; call `backward` outside the autocast
     block.""",
     "loss = loss_fn(model(x), y)   # everything in fp32",
     "scaler = torch.amp.GradScaler('cuda')\nwith torch.autocast('cuda', dtype=torch.float16):\n    loss = loss_fn(model(x), y)\nscaler.scale(loss).backward()\nscaler.step(opt)\nscaler.update()")

_add("TW212", "channels_last memory format for CNNs", (2,), "RT", "",
     """Convolutions on tensor cores work in NHWC layout. With PyTorch's default NCHW layout
     cuDNN has to transpose activations around each convolution. Converting model and inputs to
     `torch.channels_last` removes those transposes and usually speeds up 4-D convolutional
     networks, most of all under mixed precision; for other models it can do nothing or slow
     down, so it is measured.""",
     """`model = model.to(memory_format=torch.channels_last)` and
     `x = x.to(memory_format=torch.channels_last)` for each batch.""",
     "out = cnn(images)",
     "cnn = cnn.to(memory_format=torch.channels_last)\nout = cnn(images.to(memory_format=torch.channels_last))")

_add("TW213", "cudnn.benchmark for fixed input shapes", (0, 1, 2, 3), "SRT", '"auto": on when input shapes do not vary',
     """With `cudnn.benchmark=True` cuDNN times several convolution algorithms the first time it
     sees an input shape and caches the fastest. For fixed shapes that is a one-off cost repaid on
     every step. When shapes change from batch to batch (variable image sizes or sequence
     lengths) it benchmarks again for each new shape and training gets slower, not faster.""",
     """Set `torch.backends.cudnn.benchmark = True` when input shapes are fixed; leave it off when
     they vary, or bucket the inputs into a few shapes.""",
     "# fixed 224x224 inputs, benchmark never enabled",
     "torch.backends.cudnn.benchmark = True   # shapes are fixed")

_add("TW214", "Fuse pointwise ops with torch.compile", (2,), "ST", "",
     """Chains of pointwise operations (activations, normalisation arithmetic, residual adds) are
     memory-bound: each reads and writes the whole tensor. A compiler fuses them into one kernel
     that reads once. `torch.jit.script` did this for a subset of Python and is no longer
     developed; `torch.compile` (TorchInductor) does it for ordinary code, at the price of compile
     time when training starts.""",
     """Replace `torch.jit.script(model)` with `torch.compile(model)` and measure it: small models
     or constantly changing shapes may not repay the compile time.""",
     "model = torch.jit.script(model)",
     "model = torch.compile(model)")

_add("TW215", "Gradient accumulation, with no_sync under DDP", (2,), "S",
     "trainer accumulates gradients and skips the all-reduce (no_sync) on non-final micro-steps",
     """When the batch you want does not fit, run several micro-batches, divide each loss by their
     number and step the optimizer once. Under DDP every backward all-reduces the gradients by
     default; doing it on each micro-step multiplies the communication although only the final
     sum is used. `model.no_sync()` skips it on the other micro-steps.""",
     """Scale the loss by 1/accum_steps, step and zero the optimizer every accum_steps, and wrap
     the non-final micro-steps in `with model.no_sync():` under DDP.""",
     "for i, (x, y) in enumerate(loader):\n    (loss_fn(ddp(x), y) / k).backward()   # all-reduce every micro-step\n    if (i + 1) % k == 0:\n        opt.step(); opt.zero_grad()",
     "for i, (x, y) in enumerate(loader):\n    last = (i + 1) % k == 0\n    with contextlib.nullcontext() if last else ddp.no_sync():\n        (loss_fn(ddp(x), y) / k).backward()\n    if last:\n        opt.step(); opt.zero_grad()")

_add("TW216", "Largest batch that fits, found by measuring", (2, 3), "T", "",
     """A larger batch spreads fixed per-step costs (kernel launches, the optimizer step, Python)
     over more samples and keeps the accelerator busy, up to the memory limit. How much fits
     depends on the model, precision and activation sizes and is hard to predict; a guess either
     leaves memory unused or runs out of memory later, when a larger input comes along.""",
     """Search for the largest batch that runs forward and backward without running out of
     memory, keep a margin, round down to a multiple of 8, and retune the learning rate if the
     batch changes a lot (`torchwise tune` does the search).""",
     "loader = DataLoader(ds, batch_size=512)   # guessed",
     "# torchwise tune examples/digits.py:task  -> tune.json with the measured batch_size")

_add("TW217", "torch.cuda.empty_cache() in the training loop", (3, 4), "S", "",
     """PyTorch's caching allocator keeps freed GPU blocks to reuse them without calling
     cudaMalloc. `torch.cuda.empty_cache()` returns them to the driver, so the next step has to
     allocate them again, which is slow and synchronises. It cannot free memory held by live
     tensors, so it does not cure an out-of-memory error; it only helps other processes sharing
     the GPU.""",
     """Remove it from the loop; free memory by dropping references (`del`), detaching
     accumulated values (TW101) and evaluating under `inference_mode` (TW104).""",
     "for x, y in loader:\n    train_step(x, y)\n    torch.cuda.empty_cache()",
     "for x, y in loader:\n    train_step(x, y)")

_add("TW218", ".half() on a whole model", (4,), "SR", "",
     """`model.half()` converts every parameter and buffer to fp16, BatchNorm running statistics
     included, whose small variances and accumulated sums lose precision or overflow; losses and
     softmax then run in fp16 too. Accuracy drops or training diverges, whereas autocast gives the
     speed and keeps these in fp32.""",
     """Keep the model in fp32 and use `torch.autocast` (TW211); if weights must be stored in half
     precision, keep normalisation layers in fp32.""",
     "model = model.half()\nout = model(x.half())",
     "with torch.autocast('cuda', dtype=torch.float16):\n    out = model(x)")

_add("TW219", "Deprecated torch.set_default_tensor_type", (0, 1), "S", "",
     """`torch.set_default_tensor_type(torch.cuda.FloatTensor)` sets dtype and device at once
     through the legacy tensor-type classes and is deprecated. `torch.set_default_dtype` and
     `torch.set_default_device` (or a `with torch.device(...)` block) set each one separately and
     are supported.""",
     "`torch.set_default_dtype(torch.float32)` and `torch.set_default_device('cuda')`.",
     "torch.set_default_tensor_type(torch.cuda.FloatTensor)",
     "torch.set_default_dtype(torch.float32)\ntorch.set_default_device('cuda')")

_add("TW220", "Old AMP APIs (torch.cuda.amp, apex.amp)", (1, 2), "S", "",
     """`torch.cuda.amp.autocast` and `torch.cuda.amp.GradScaler` are deprecated aliases that warn,
     and NVIDIA apex `amp` is an external extension no longer kept up with PyTorch.
     `torch.autocast(device_type)` and `torch.amp.GradScaler(device)` are the device-generic
     replacements.""",
     """Use `torch.autocast('cuda', dtype=...)` and `torch.amp.GradScaler('cuda')`; drop
     `apex.amp.initialize`.""",
     "with torch.cuda.amp.autocast():\n    ...\nscaler = torch.cuda.amp.GradScaler()",
     "with torch.autocast('cuda'):\n    ...\nscaler = torch.amp.GradScaler('cuda')")

_add("TW221", "Thread oversubscription", (3,), "RT", "",
     """By default every PyTorch process uses one intra-op thread per core. Several jobs, DDP
     ranks or worker processes on one host then run many more threads than there are cores, and
     they spend their time contending and switching; CPU-side work can become several times
     slower.""",
     """Cap threads per process: `torch.set_num_threads(cores // processes)` or `OMP_NUM_THREADS`;
     `torchwise.set_threads(n)`.""",
     "# 4 training jobs on an 8-core host, each with 8 threads",
     "torch.set_num_threads(2)   # 8 cores / 4 jobs")

_add("TW222", "Input pipeline is the bottleneck", (2, 3), "RT", "",
     """When a large share of each step is spent waiting for the next batch, the accelerator idles
     and faster model settings change nothing. Typical causes are too few workers, decoding and
     augmentation in Python, workers restarted every epoch and slow or remote storage.""",
     """Measure the loader-wait share (`torchwise doctor`); raise `num_workers`, set
     `persistent_workers=True` and `prefetch_factor`, move augmentation to the GPU, or cache
     preprocessed data on fast local disk.""",
     "DataLoader(ds, batch_size=256, num_workers=1)   # workers restarted each epoch",
     "DataLoader(ds, batch_size=256, num_workers=8, persistent_workers=True, prefetch_factor=4)")

# ---------------------------------------------------------------------------------------------
# TW3xx: reproducibility
# ---------------------------------------------------------------------------------------------

_add("TW301", "Seed every generator", (0, 1, 3), "S", "`seed_everything`",
     """Python's `random`, NumPy's global generator, torch's CPU generator and each CUDA device's
     generator are separate; seeding one leaves the others random, so initialisation, shuffling or
     augmentation still differ between runs. `PYTHONHASHSEED` fixes hash randomisation (set
     iteration order) in child processes started later.""",
     """`torchwise.seed_everything(seed)`, or call `random.seed`, `np.random.seed` and
     `torch.manual_seed` (which also seeds every CUDA device) and set
     `os.environ['PYTHONHASHSEED']`.""",
     "torch.manual_seed(0)   # random and numpy still unseeded",
     "torchwise.seed_everything(0)")

_add("TW302", "cudnn.benchmark together with cudnn.deterministic", (1,), "S", "",
     """`cudnn.deterministic=True` asks for deterministic convolution algorithms while
     `cudnn.benchmark=True` lets cuDNN choose algorithms by timing them, and timings vary from
     run to run. With both set the choice can still differ between runs, so the code pays for
     determinism without getting reproducible results.""",
     """For reproducible runs set `cudnn.benchmark = False` and `cudnn.deterministic = True`
     (`seed_everything(seed, deterministic=True)` does both).""",
     "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = True",
     "torch.backends.cudnn.deterministic = True\ntorch.backends.cudnn.benchmark = False")

_add("TW303", "torch.cuda.manual_seed seeds only the current GPU", (1,), "S", "",
     """`torch.cuda.manual_seed(s)` seeds only the current CUDA device; other GPUs used by the
     process keep unseeded generators. `torch.cuda.manual_seed_all(s)` seeds every device, and
     `torch.manual_seed(s)` already does so as well.""",
     "Use `torch.manual_seed(s)` or `torch.cuda.manual_seed_all(s)`.",
     "torch.cuda.manual_seed(seed)",
     "torch.cuda.manual_seed_all(seed)")

_add("TW304", "Seeded generator for the DataLoader", (), "", "trainer passes a seeded generator to its loaders",
     """Without a `generator`, a DataLoader draws its shuffling order and the worker base seed
     from the global torch RNG, so any extra random call elsewhere (another layer's
     initialisation, a dropout call before the loader starts) changes the data order. A dedicated
     seeded `torch.Generator` makes the order depend on its own seed only. Since PyTorch 1.9 each
     worker already seeds `random` and NumPy from the base seed, so `seed_worker` matters only for
     other libraries.""",
     """`DataLoader(ds, shuffle=True, generator=torchwise.make_generator(seed),
     worker_init_fn=torchwise.seed_worker)`.""",
     "DataLoader(ds, shuffle=True, num_workers=2)",
     "DataLoader(ds, shuffle=True, num_workers=2, generator=make_generator(0), worker_init_fn=seed_worker)")

_add("TW305", "Full determinism: deterministic algorithms and CUBLAS_WORKSPACE_CONFIG", (0,), "S",
     "with deterministic=True: use_deterministic_algorithms(True) and CUBLAS_WORKSPACE_CONFIG",
     """Seeds and cuDNN flags are not enough: several CUDA operations (index_add, scatter_add,
     some pooling and interpolation backward passes) use atomic additions whose order varies, and
     cuBLAS can split work differently between runs. `torch.use_deterministic_algorithms(True)`
     selects deterministic implementations and raises for operations that have none; cuBLAS also
     needs `CUBLAS_WORKSPACE_CONFIG=:4096:8` set before CUDA starts.""",
     """`torchwise.seed_everything(seed, deterministic=True)`, or set
     `os.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'` and call
     `torch.use_deterministic_algorithms(True)` at start-up.""",
     "torch.manual_seed(0)\ntorch.backends.cudnn.deterministic = True",
     "os.environ['CUBLAS_WORKSPACE_CONFIG'] = ':4096:8'\ntorch.use_deterministic_algorithms(True)\ntorch.manual_seed(0)")

# ---------------------------------------------------------------------------------------------
# TW4xx: devices, distribution, checkpoints, security
# ---------------------------------------------------------------------------------------------

_add("TW401", "torch.load without weights_only=True", (1,), "S", "safe loading",
     """Checkpoints are pickle files, and unpickling can run arbitrary code stored in the file.
     Loading a downloaded or shared checkpoint with `weights_only=False` hands that code your
     process. `weights_only=True` (the default since PyTorch 2.6) restricts loading to tensors and
     plain containers.""",
     """`torch.load(path, weights_only=True)`, written out so older PyTorch versions are safe too;
     allow trusted extra types with `torch.serialization.add_safe_globals`, or store weights as
     safetensors.""",
     "state = torch.load('model.pt')",
     "state = torch.load('model.pt', map_location='cpu', weights_only=True)")

_add("TW402", "torch.load of a GPU checkpoint without map_location", (1,), "S",
     "`load_checkpoint` maps tensors to the CPU or the training device",
     """Tensors are saved together with their device. Loading a GPU checkpoint on a CPU-only
     machine fails with "Attempting to deserialize object on a CUDA device", and on a multi-GPU
     machine everything lands on the GPU it was saved from, often GPU 0, which may then run out of
     memory.""",
     "`torch.load(path, map_location='cpu', weights_only=True)`, then move the model; or `map_location=device`.",
     "state = torch.load('ckpt.pt', weights_only=True)",
     "state = torch.load('ckpt.pt', map_location='cpu', weights_only=True)")

_add("TW403", "Hard-coded 'cuda' with no fallback", (4, 0), "S", '`select_device("auto")`',
     """Code with `.cuda()` or `device='cuda'` scattered through it fails on machines without an
     NVIDIA GPU (laptops, CI, Apple silicon) and cannot be pointed at another device. Choosing the
     device once and passing it around keeps the same script working everywhere.""",
     """`device = torchwise.select_device('auto')` (or `'cuda' if torch.cuda.is_available() else
     'cpu'`), then `.to(device)` everywhere.""",
     "model = model.cuda()\nx = x.cuda()",
     "device = select_device('auto')\nmodel = model.to(device)\nx = x.to(device)")

_add("TW404", "CUDA_VISIBLE_DEVICES set after CUDA started", (0, 1), "S", "",
     """CUDA reads `CUDA_VISIBLE_DEVICES` once, when it initialises. Setting
     `os.environ['CUDA_VISIBLE_DEVICES']` after anything has touched CUDA (a `.cuda()` call,
     `torch.cuda.device_count()`, a library that initialises it on import) has no effect and the
     process still sees every GPU.""",
     """Set it in the shell (`CUDA_VISIBLE_DEVICES=1 python train.py`) or at the very top of the
     script before torch is imported; or select the device explicitly (`cuda:1`).""",
     "import torch\ntorch.cuda.device_count()\nos.environ['CUDA_VISIBLE_DEVICES'] = '1'   # too late",
     "# in the shell:\nCUDA_VISIBLE_DEVICES=1 python train.py")

_add("TW405", "Hand-rolled mp.spawn with hard-coded MASTER_ADDR/PORT", (1,), "S", "trainer runs DDP under torchrun",
     """Starting workers with `torch.multiprocessing.spawn` and hard-coding `MASTER_ADDR` and
     `MASTER_PORT` ties the script to one machine and one port, fails when the port is taken and
     has no restart on failure. `torchrun` sets rank, world size and rendezvous for every process,
     supports several nodes and restarts failed workers.""",
     """Launch with `torchrun --nproc_per_node=N train.py` and call `dist.init_process_group()`
     without address arguments; read `LOCAL_RANK` from the environment.""",
     "os.environ['MASTER_ADDR'] = 'localhost'\nos.environ['MASTER_PORT'] = '12355'\nmp.spawn(train, nprocs=4)",
     "# torchrun --nproc_per_node=4 train.py\ndist.init_process_group()\nlocal_rank = int(os.environ['LOCAL_RANK'])")

_add("TW406", "DistributedSampler without set_epoch", (), "S", "trainer calls set_epoch every epoch",
     """`DistributedSampler` shuffles with a seed derived from its epoch counter. If
     `set_epoch(epoch)` is never called the counter stays at 0, every epoch visits the data in
     the same order on every rank, and shuffling is lost across epochs.""",
     "Call `sampler.set_epoch(epoch)` at the start of every epoch, before iterating the loader.",
     "for epoch in range(epochs):\n    for x, y in loader:\n        ...",
     "for epoch in range(epochs):\n    sampler.set_epoch(epoch)\n    for x, y in loader:\n        ...")

_add("TW407", "Checkpoints written in place", (), "", "`save_checkpoint` writes atomically (temporary file, fsync, rename)",
     """`torch.save(state, 'ckpt.pt')` overwrites the file in place. If the process is killed, the
     node is pre-empted or the disk fills up during the write, the only checkpoint is left
     truncated and the run cannot resume. Writing a temporary file in the same folder, syncing it
     and renaming it over the old one makes the replacement all-or-nothing.""",
     """`torchwise.save_checkpoint(path, **state)`, or `torch.save` to a temporary file in the same
     folder, `os.fsync`, then `os.replace(tmp, path)`.""",
     "torch.save(state, 'ckpt.pt')",
     "torchwise.save_checkpoint('ckpt.pt', **state)")

_add("TW408", "Model split across devices moved wholesale", (4,), "R", "trainer leaves a model that spans several devices in place",
     """A model split across devices on purpose (pipeline stages on different GPUs, a large
     embedding kept on the CPU) carries its placement inside the model. A generic
     `model.to(device)` in the training code moves every part onto one device, undoing the split
     and usually running out of memory.""",
     """Look at the parameter devices first (`{p.device for p in model.parameters()}`) and move the
     model only when it lives on a single device; move inputs to the first stage's device
     instead.""",
     "model = TwoStageModel()   # stages on cuda:0 and cuda:1\nmodel.to('cuda')",
     "model = TwoStageModel()\nx = x.to(next(model.stage1.parameters()).device)")


_add("TW409", "Ranks' weights drift apart under data parallelism", (4,), "R", "",
     """Data-parallel training keeps one replica of the model per rank and relies on every rank
     applying the same averaged gradient, so the replicas stay identical. A rank that skips a
     gradient sync or an optimizer step on a local condition, or parameters moved to another
     dtype or device after DistributedDataParallel wrapped them (its hooks then sync the old
     tensors), let the replicas drift apart silently: the loss looks fine on every rank while each
     trains a different model, and the checkpoint saved from rank 0 is only one of them.""",
     """Move the model to its device and dtype before wrapping it; take every skip decision (a
     non-finite loss, a bad batch) from a value all ranks share, so that all skip together; never
     call no_sync() or all_reduce on some ranks only. `torchwise watch -- torchrun ...` compares
     the ranks' weights every few steps and names the first step they differed.""",
     "model = DDP(model)\nmodel.to(torch.float64)   # after wrapping: gradients no longer averaged",
     "model = model.to(torch.float64)\nmodel = DDP(model)")

_add("TW410", "Model wrapped for DDP again (nested or per-epoch wrappers)", (4,), "R", "",
     """Every DistributedDataParallel wrap broadcasts rank 0's weights and builds a new gradient
     reducer. Wrapping again inside the epoch or run loop nests wrappers (DDP around DDP), so each
     gradient is synchronized once per level, memory grows with every reducer, and the state dict
     gains `module.module.` prefixes that no loader expects.""",
     """Wrap once, before training, and reuse the wrapper; keep the bare module (`ddp.module`) for
     saving, evaluation or building a wrapper around a genuinely new model.""",
     "for epoch in range(epochs):\n    model = DDP(model)\n    train(model)",
     "model = DDP(model)\nfor epoch in range(epochs):\n    train(model)")

_add("TW411", "Every rank trains on the same batches", (4,), "R", "",
     """Without a DistributedSampler each rank's DataLoader walks the whole dataset in the same
     order, so every rank computes the same gradient on the same batch. The run costs N processes
     and learns like one, with an effective batch N times smaller than intended.""",
     """Give the training DataLoader `sampler=DistributedSampler(dataset)` (shuffle in the sampler,
     not the loader) and call `sampler.set_epoch(epoch)` every epoch.""",
     "loader = DataLoader(dataset, batch_size=64, shuffle=True)",
     "sampler = DistributedSampler(dataset)\nloader = DataLoader(dataset, batch_size=64, sampler=sampler)")

_add("TW412", "A straggler or stalled rank", (4,), "R", "",
     """Synchronous data parallelism runs at the pace of its slowest rank: the others wait for it
     in every gradient sync. One slow rank (a slower GPU, a starved data loader, another job on its
     device) slows the whole job, and a rank stuck in a collective the others never entered hangs
     it until the timeout.""",
     """Find what is slower on that rank (its data loading, its device, uneven batches) and give
     every rank the same work; for a hang, look at the line where the stalled rank waits and make
     every rank enter the same collectives in the same order.""",
     "if rank == 0:\n    dist.all_reduce(metric)   # the other ranks never enter it",
     "dist.all_reduce(metric)   # every rank, same order")

# ---------------------------------------------------------------------------------------------
# TW5xx: api (removed, deprecated and non-public APIs; numerically fragile spellings)
# ---------------------------------------------------------------------------------------------

_add("TW501", "Removed PyTorch functions", (), "S", "",
     """Functions such as `torch.solve`, `torch.symeig`, `torch.matrix_rank`, `torch.lstsq` and
     `torch.eig` were deprecated for several releases and then deleted. A call or import of one
     fails with AttributeError or ImportError on current PyTorch, often late in a job when a rare
     code path is reached.""",
     """Use the `torch.linalg` replacement (`torch.linalg.solve(A, B)`: note the argument
     order).""",
     "x = torch.solve(B, A).solution",
     "x = torch.linalg.solve(A, B)")

_add("TW502", "Deprecated PyTorch functions", (), "S", "",
     """Deprecated functions (`torch.qr`, `torch.svd`, `torch.norm`, `torch.chain_matmul`,
     `torch.range`, `nn.utils.weight_norm`, `functorch.vmap`...) warn on every call and disappear
     in a later release. Several differ subtly from their replacements, so moving early with tests
     is cheaper than moving when an upgrade breaks the code.""",
     """Use the named replacement (`torch.linalg.*`, `torch.arange`,
     `nn.utils.parametrizations.weight_norm`, `torch.func.*`).""",
     "outer = torch.ger(a, b)\nfrom functorch import vmap",
     "outer = torch.outer(a, b)\nfrom torch.func import vmap")

_add("TW503", "`require_grad` typo", (), "S", "",
     """Tensors have `requires_grad`; assigning `require_grad` creates an unrelated attribute and
     changes nothing. The intended freeze or unfreeze silently does not happen, so a frozen part
     keeps training or a new head never trains.""",
     "Assign `requires_grad` (or call `requires_grad_(flag)`).",
     "p.require_grad = False",
     "p.requires_grad = False")

_add("TW504", "Activation checkpoint without explicit use_reentrant", (), "S", "",
     """`torch.utils.checkpoint.checkpoint` warns when `use_reentrant` is not given, and the
     default is set to change. The reentrant variant does not support `torch.autograd.grad`,
     keyword arguments, or inputs that do not require grad, where gradients silently become
     None.""",
     "Pass `use_reentrant=False` (recommended) or `use_reentrant=True` explicitly.",
     "h = checkpoint(block, x)",
     "h = checkpoint(block, x, use_reentrant=False)")

_add("TW505", "Public functions imported from private modules", (), "S", "",
     """Modules whose names start with an underscore are internal and are reorganised without
     notice. Importing a public function such as `default_collate` through
     `torch.utils.data._utils.collate` breaks on some upgrade although the function is stable.""",
     "Import it from its public place (`from torch.utils.data import default_collate`).",
     "from torch.utils.data._utils.collate import default_collate",
     "from torch.utils.data import default_collate")

_add("TW506", "log(1 + x) instead of log1p", (), "S", "",
     """For small `x` the sum `1 + x` rounds away most of `x` before the logarithm is taken, so
     `torch.log(1 + x)` loses precision or returns 0. `torch.log1p` computes the same value
     accurately.""",
     "`torch.log1p(x)`.",
     "y = torch.log(1 + x)",
     "y = torch.log1p(x)")

_add("TW507", "exp(x) - 1 instead of expm1", (), "S", "",
     """For small `x`, `exp(x)` is close to 1 and subtracting 1 cancels most significant digits.
     `torch.expm1` computes the difference accurately.""",
     "`torch.expm1(x)`.",
     "y = torch.exp(x) - 1",
     "y = torch.expm1(x)")

_add("TW508", "log(sum(exp(x))) instead of logsumexp", (), "S", "",
     """Written out, `exp` overflows to inf for moderately large inputs (about 88 in float32) and
     underflows for very negative ones, so the result is inf or -inf where the true value is
     finite. `torch.logsumexp` subtracts the maximum first and stays exact.""",
     "`torch.logsumexp(x, dim)`.",
     "lse = torch.log(torch.sum(torch.exp(x), dim=1))",
     "lse = torch.logsumexp(x, dim=1)")

_add("TW509", "torchvision `pretrained=` arguments", (), "S", "",
     """Since torchvision 0.13 model builders take `weights=` (an enum naming the exact checkpoint)
     and the boolean `pretrained=`/`pretrained_backbone=` warn and are being removed.
     `pretrained=True` also hides which of several published checkpoints is loaded.""",
     """Pass `weights=<Model>_Weights.<NAME>` (`IMAGENET1K_V1` is what `pretrained=True` loaded),
     `weights="DEFAULT"`, or `weights=None`.""",
     "model = torchvision.models.resnet50(pretrained=True)",
     "model = torchvision.models.resnet50(weights=ResNet50_Weights.IMAGENET1K_V1)")

_add("TW510", "transforms.v2.ToTensor", (), "S", "",
     """In torchvision's v2 transforms `ToTensor` is deprecated and will be removed. It merges two
     steps that v2 keeps apart: converting to a tensor image, and rescaling to float.""",
     "`v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`.",
     "from torchvision.transforms.v2 import ToTensor",
     "from torchvision.transforms import v2\nto_tensor = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])")

_add("TW511", "torchvision submodule imported under its own name", (), "S", "",
     """`import torchvision.models as models` binds exactly what `from torchvision import models`
     binds but reads as if another module were meant, and import tools treat the forms
     differently. Writing the `from` form keeps imports uniform.""",
     "`from torchvision import models` (likewise `datasets`, `transforms`).",
     "import torchvision.models as models",
     "from torchvision import models")

_add("TW512", "Asynchronous collective never waited on", (), "S", "",
     """With `async_op=True` (and always for `isend`/`irecv`) a collective only starts the
     communication and returns a work handle. Until `work.wait()` the tensor may be incomplete;
     code that reads or changes it before then gets partial results or races the transfer, only
     sometimes.""",
     """Keep the handle and call `work.wait()` before using the tensor, or drop
     `async_op=True`.""",
     "dist.all_reduce(grad, async_op=True)\ngrad /= world_size",
     "work = dist.all_reduce(grad, async_op=True)\nwork.wait()\ngrad /= world_size")

_add("TW513", "Legacy torch.Tensor constructor", (), "S", "",
     """`torch.Tensor(3, 4)` returns uninitialised memory while `torch.Tensor([3, 4])` returns
     data, and both use the global default float type instead of the data's dtype. Leftover
     memory that slips into a computation gives irreproducible results.""",
     """`torch.empty`/`torch.zeros(sizes)` for shapes, `torch.tensor(data, dtype=...)` for
     values.""",
     "w = torch.Tensor(out_features, in_features)",
     "w = torch.empty(out_features, in_features)\nnn.init.kaiming_uniform_(w)")


_add("TW514", "torch.library.Library created in tests", (), "S", "",
     """A `torch.library.Library` registers operators with the dispatcher for as long as it
     lives, and one created in a test usually outlives it. Its registrations then leak into later
     tests, which pass or fail depending on their order.""",
     """Use `with torch.library._scoped_library(ns, kind) as lib:`, which unregisters everything
     when the block ends.""",
     "lib = torch.library.Library('mylib', 'DEF')",
     "with torch.library._scoped_library('mylib', 'DEF') as lib:\n    ...")

PRACTICES: dict[str, Practice] = {p.code: p for p in _ENTRIES}
del _ENTRIES


def _near(text: str) -> list[str]:
    """Codes close to ``text``: by prefix, then by spelling, else by words of the title."""
    key = text.strip().upper()
    near: list[str] = []
    for cut in range(len(key), 2, -1):  # "TW2999" -> codes starting "TW299", then "TW29"...
        near = [c for c in PRACTICES if c.startswith(key[:cut])]
        if near:
            break
    near = near[:10]
    for c in difflib.get_close_matches(key, list(PRACTICES), n=5, cutoff=0.6):
        if c not in near and len(near) < 10:
            near.append(c)
    if not near and len(key) >= 3:
        words = key.lower().split()
        near = [c for c, p in PRACTICES.items() if all(w in p.title.lower() for w in words)][:10]
    return near


def _unknown(what: str, text: str) -> UnknownPractice:
    near = _near(text)
    hint = f"near matches: {', '.join(near)}" if near else (
        "codes are TW101-TW117, TW130-TW142, TW201-TW222, TW301-TW305, TW401-TW412 (see 'torchwise rules')")
    return UnknownPractice(f"unknown {what} {text!r}; {hint}", near)


def get_practice(code: str) -> Practice:
    """The practice with this code (case-insensitive, surrounding spaces ignored).

    >>> get_practice("tw201").title
    'nn.DataParallel instead of DistributedDataParallel'

    Raises :class:`UnknownPractice` naming near matches when there is no such code.
    """
    practice = PRACTICES.get(str(code).strip().upper())
    if practice is None:
        raise _unknown("practice code", str(code))
    return practice


def select_codes(selectors: Iterable[str]) -> list[str]:
    """Expand codes, prefixes ("TW2", "TW21") and category names into codes, in catalog order.

    Each selector may hold several, separated by commas. An unknown selector raises
    :class:`UnknownPractice`.

    >>> select_codes(["TW30", "tw401"])
    ['TW301', 'TW302', 'TW303', 'TW304', 'TW305', 'TW401']
    """
    if isinstance(selectors, str):
        selectors = [selectors]
    chosen: set[str] = set()
    for selector in selectors:
        for part in str(selector).split(","):
            key = part.strip().upper()
            if not key:
                continue
            if key.lower() in CATEGORIES.values():
                matched = [c for c, p in PRACTICES.items() if p.category == key.lower()]
            else:
                matched = [c for c in PRACTICES if c.startswith(key)]
            if not matched:
                raise _unknown("practice code or prefix", part.strip())
            chosen.update(matched)
    return [c for c in PRACTICES if c in chosen]


def by_category(category: str) -> list[Practice]:
    """The practices of one category ("correctness", "performance", "reproducibility", "devices")."""
    if category not in CATEGORIES.values():
        raise UnknownPractice(f"unknown category {category!r}; expected one of {', '.join(CATEGORIES.values())}")
    return [p for p in PRACTICES.values() if p.category == category]

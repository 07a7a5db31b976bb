"""Model summaries: per-layer output shapes, parameters and FLOPs, and ``torchwise summary TASK``.

FLOPs come from :class:`torch.utils.flop_counter.FlopCounterMode` (a multiply-add counts as 2
FLOPs); shapes come from forward hooks. The model runs once on the example input and is left
exactly as it was (modes, weights, buffers, RNG state). FLOPs count what *training* runs: the
forward runs with autograd on (no ``no_grad``) and attention modules (``nn.MultiheadAttention``,
``nn.Transformer*``) in training mode, so their inference fast paths (fused kernels, nested
tensors that skip padding) do not hide work from the counter; every other module is in eval
mode (BatchNorm statistics are not updated; dropout is off).
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from torchwise.core.errors import UsageError

if TYPE_CHECKING:  # torch is imported where it is used, so `torchwise summary --help` starts fast
    import torch
    from torch import nn

__all__ = [
    "LayerRow",
    "ModelSummary",
    "count_parameters",
    "format_bytes",
    "format_count",
    "summary",
]


# --------------------------------------------------------------------------------------------
# unit formatting


def format_count(n: float, digits: int = 3) -> str:
    """A count with a decimal unit and ``digits`` significant digits: 1_234_567 -> ``"1.23 M"``.

    Below 1000 the exact number is printed (``"950"``); units are K, M, G, T, P.
    """
    if n is None or (isinstance(n, float) and not math.isfinite(n)):
        return str(n)
    if abs(n) < 1000:
        return str(int(n)) if float(n).is_integer() else f"{n:.{digits}g}"
    units = ["", "K", "M", "G", "T", "P", "E"]
    i = 0
    value = float(n)
    while i < len(units) - 1:
        scaled = value / 1000**i
        # rounding may carry to 1000 (999_999 -> "1000 K"): move to the next unit then
        if abs(float(f"{scaled:.{digits}g}")) < 1000:
            break
        i += 1
    scaled = float(f"{value / 1000**i:.{digits}g}")
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(scaled)))), 0)
    return f"{scaled:.{decimals}f} {units[i]}"


def format_bytes(n: float) -> str:
    """A byte count with binary units: ``format_bytes(1536) == "1.50 KiB"``; below 1 KiB: ``"512 B"``."""
    if abs(n) < 1024:
        return f"{int(n)} B"
    units = ["KiB", "MiB", "GiB", "TiB", "PiB"]
    value = float(n) / 1024
    i = 0
    while abs(value) >= 1023.995 and i < len(units) - 1:
        value /= 1024
        i += 1
    return f"{value:.2f} {units[i]}"


# --------------------------------------------------------------------------------------------
# parameter counting


def _unique_parameters(model: nn.Module) -> list[nn.Parameter]:
    # Module.parameters() already de-duplicates shared (tied) parameters by identity.
    return list(model.parameters())


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameter elements of ``model``; shared (tied) parameters count once.

    With ``trainable_only=True`` only parameters with ``requires_grad`` are counted.
    """
    from torch import nn

    if not isinstance(model, nn.Module):
        raise UsageError(f"count_parameters expects a torch.nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in _unique_parameters(model) if p.requires_grad or not trainable_only)


# --------------------------------------------------------------------------------------------
# the summary


@dataclass
class LayerRow:
    """One module of the summary (``name`` is its qualified name, ``depth`` its nesting level)."""

    name: str
    type: str
    depth: int
    output_shape: Any = None  # tuple of ints, nested lists/dicts of those, or None if not called
    trainable_params: int = 0
    frozen_params: int = 0
    flops: int = 0
    calls: int = 0

    @property
    def params(self) -> int:
        """Trainable plus frozen parameters of this module (with its children)."""
        return self.trainable_params + self.frozen_params


@dataclass
class ModelSummary:
    """The result of :func:`summary`: rows per module and totals; ``str()`` gives a table."""

    model_type: str
    rows: list[LayerRow]
    total_params: int
    trainable_params: int
    frozen_params: int
    flops: int
    param_bytes: int
    buffer_bytes: int
    input_shape: Any = None
    output_shape: Any = None
    flops_by_operator: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (shapes as lists)."""
        data = asdict(self)
        for row in data["rows"]:
            row["params"] = row["trainable_params"] + row["frozen_params"]
        return json.loads(json.dumps(data, default=_jsonable))

    def __str__(self) -> str:
        return self.table()

    def table(self, max_shape_width: int = 36) -> str:
        """The per-layer table followed by the totals, with K/M/G counts and KiB/MiB bytes."""
        header = ("Layer (type)", "Output shape", "Params", "Trainable", "FLOPs")
        body: list[tuple[str, ...]] = []
        for row in self.rows:
            label = "  " * (row.depth - 1) + f"{row.name} ({row.type})"
            shape = _shape_text(row.output_shape) if row.calls else "--"
            if row.calls > 1:
                shape += f" x{row.calls}"
            if len(shape) > max_shape_width:
                shape = shape[: max_shape_width - 3] + "..."
            trainable = (
                "--" if row.params == 0 else "yes" if row.frozen_params == 0
                else "no" if row.trainable_params == 0 else "partly"
            )
            body.append((label, shape, format_count(row.params) if row.params else "--", trainable,
                         format_count(row.flops) if row.flops else "--"))
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
        align = ["<", "<", ">", ">", ">"]

        def fmt(r: tuple[str, ...]) -> str:
            return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(r, align, widths)).rstrip()

        lines = [f"{self.model_type}: input {_shape_text(self.input_shape)} -> output {_shape_text(self.output_shape)}",
                 rule, fmt(header), rule]
        lines += [fmt(r) for r in body] or ["(no submodules)"]
        lines += [
            rule,
            f"Total params:         {format_count(self.total_params)} ({self.total_params:,})",
            f"Trainable params:     {format_count(self.trainable_params)} ({self.trainable_params:,})",
            f"Frozen params:        {format_count(self.frozen_params)} ({self.frozen_params:,})",
            f"Forward FLOPs:        {format_count(self.flops)}FLOPs ({self.flops:,})"
            if self.flops >= 1000 else f"Forward FLOPs:        {self.flops:,}",
            f"Parameter memory:     {format_bytes(self.param_bytes)}",
            f"Buffer memory:        {format_bytes(self.buffer_bytes)}",
        ]
        return "\n".join(lines)


def _jsonable(obj: Any) -> Any:
    import torch

    if isinstance(obj, torch.Size):
        return list(obj)
    return str(obj)


def _shape_of(obj: Any) -> Any:
    """Shapes of the tensors in an output: a tuple for a tensor, lists/dicts for containers."""
    import torch

    if isinstance(obj, torch.Tensor):
        return tuple(obj.shape)
    if isinstance(obj, dict):
        return {str(k): _shape_of(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_shape_of(v) for v in obj]
    return type(obj).__name__


def _shape_text(shape: Any) -> str:
    if shape is None:
        return "--"
    if isinstance(shape, tuple):
        return "[" + ", ".join(str(s) for s in shape) + "]"
    if isinstance(shape, list):
        return "(" + ", ".join(_shape_text(s) for s in shape) + ")"
    if isinstance(shape, dict):
        return "{" + ", ".join(f"{k}: {_shape_text(v)}" for k, v in shape.items()) + "}"
    return str(shape)


def _training_path() -> tuple[type, ...]:
    from torch import nn

    return (nn.MultiheadAttention, nn.TransformerEncoderLayer, nn.TransformerDecoderLayer,
            nn.TransformerEncoder, nn.TransformerDecoder, nn.Transformer)


def _detached(obj: Any) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.detach()
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_detached(o) for o in obj)
    if isinstance(obj, dict):
        return {k: _detached(v) for k, v in obj.items()}
    return obj


def _tracker_names(model: nn.Module) -> dict[int, str]:
    """The names ``FlopCounterMode`` gives modules: root class name, then ``.child`` per level.

    Mirrors ``torch.utils.module_tracker.ModuleTracker``: a module reachable under two names gets
    the one assigned last, exactly as the tracker does.
    """
    names: dict[int, str] = {id(model): type(model).__name__}
    seen: set[int] = set()

    def visit(mod: nn.Module) -> None:
        if id(mod) in seen:
            return
        seen.add(id(mod))
        for child_name, child in mod.named_children():
            names[id(child)] = f"{names[id(mod)]}.{child_name}"
            visit(child)

    visit(model)
    return names


def _move(obj: Any, device: torch.device) -> Any:
    import torch

    if isinstance(obj, torch.Tensor):
        return obj.to(device)
    if isinstance(obj, dict):
        return {k: _move(v, device) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        moved = [_move(v, device) for v in obj]
        return type(obj)(*moved) if hasattr(obj, "_fields") else type(obj)(moved)
    return obj


def _model_device(model: nn.Module) -> torch.device:
    for t in model.parameters():
        return t.device
    for t in model.buffers():
        return t.device
    import torch

    return torch.device("cpu")


def summary(
    model: nn.Module,
    example_input: Any,
    *,
    depth: int | None = None,
    device: str | torch.device | None = None,
) -> ModelSummary:
    """Run ``model`` once on ``example_input`` and summarise every module.

    ``example_input`` is passed as one positional argument, except that a tuple is spread over
    the positional arguments and a dict is passed as keyword arguments (wrap a single tuple
    input as ``(my_tuple,)``). ``depth`` keeps rows nested at most that deep (1 = children of
    the model). Inputs go to ``device`` (default: where the model's parameters are); a model on
    another device is moved there for the run and moved back. The model is left unchanged.
    """
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    if not isinstance(model, nn.Module):
        raise UsageError(f"summary expects a torch.nn.Module, got {type(model).__name__}")
    if depth is not None and depth < 1:
        raise UsageError(f"depth must be >= 1 (1 = the model's children), got {depth}")
    home = _model_device(model)
    target = home if device is None else torch.device(device)
    moved = target != home
    if moved:
        model.to(target)
    inputs = _move(example_input, target)
    if isinstance(inputs, tuple) and not hasattr(inputs, "_fields"):
        args, kwargs = inputs, {}
    elif isinstance(inputs, dict):
        args, kwargs = (), inputs
    else:
        args, kwargs = (inputs,), {}

    modules = list(model.named_modules())
    outputs: dict[int, Any] = {}
    calls: dict[int, int] = {}

    def hook(mod: nn.Module, _inp: Any, out: Any) -> None:
        calls[id(mod)] = calls.get(id(mod), 0) + 1
        outputs.setdefault(id(mod), _shape_of(out))

    modes = {m: m.training for _, m in modules}
    handles = [m.register_forward_hook(hook) for _, m in modules]
    devices = [target.index or 0] if target.type == "cuda" else []
    try:
        model.eval()
        training_path = _training_path()
        for m in model.modules():
            if isinstance(m, training_path):
                m.train()  # the path training takes (the eval fast path skips work)
        counter = FlopCounterMode(display=False)
        with torch.random.fork_rng(devices=devices), torch.enable_grad(), counter:
            result = model(*args, **kwargs)
        result = _detached(result)
    except Exception as exc:
        raise UsageError(
            f"running {type(model).__name__} on the example input {_shape_text(_shape_of(example_input))} "
            f"failed: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        for h in handles:
            h.remove()
        for m, mode in modes.items():
            m.training = mode
        if moved:
            model.to(home)

    counts = counter.get_flop_counts()
    tracker = _tracker_names(model)

    def flops_of(mod: nn.Module) -> int:
        by_op = counts.get(tracker.get(id(mod), ""), {})
        return int(sum(by_op.values()))

    rows: list[LayerRow] = []
    for name, mod in modules[1:]:
        level = name.count(".") + 1
        if depth is not None and level > depth:
            continue
        trainable = sum(p.numel() for p in mod.parameters() if p.requires_grad)
        frozen = sum(p.numel() for p in mod.parameters() if not p.requires_grad)
        rows.append(LayerRow(
            name=name, type=type(mod).__name__, depth=level, output_shape=outputs.get(id(mod)),
            trainable_params=trainable, frozen_params=frozen, flops=flops_of(mod),
            calls=calls.get(id(mod), 0),
        ))

    params = _unique_parameters(model)
    buffers = list({id(b): b for b in model.buffers()}.values())
    total_flops = int(counter.get_total_flops())
    return ModelSummary(
        model_type=type(model).__name__,
        rows=rows,
        total_params=sum(p.numel() for p in params),
        trainable_params=sum(p.numel() for p in params if p.requires_grad),
        frozen_params=sum(p.numel() for p in params if not p.requires_grad),
        flops=total_flops,
        param_bytes=sum(p.numel() * p.element_size() for p in params),
        buffer_bytes=sum(b.numel() * b.element_size() for b in buffers),
        input_shape=_shape_of(args[0] if len(args) == 1 and not kwargs else inputs),
        output_shape=_shape_of(result),
        flops_by_operator={str(op): int(n) for op, n in counts.get("Global", {}).items()},
    )


# --------------------------------------------------------------------------------------------
# command line: torchwise summary TASK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``torchwise summary``."""
    from torchwise.core.task_args import add_task_arg

    parser.add_argument("task", help="a Task reference: path/to/file.py:function or package.module:function")
    add_task_arg(parser)
    parser.add_argument("--depth", type=int, default=None, help="show modules nested at most this deep (1 = top level)")
    parser.add_argument("--device", default=None, help="run the example batch on this device (default: the model's)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")


def run(args: argparse.Namespace) -> int:
    """Load the Task, take its example batch's inputs, print the summary; returns the exit code."""
    from torchwise.utils.batch import forward_names, model_call
    from torchwise.core.task import load_task
    from torchwise.core.task_args import task_kwargs

    task = load_task(args.task, **task_kwargs(args.task_arg))
    # the model is called as the Trainer calls it (torchwise.utils.batch.model_call): model(inputs), or
    # with the dict batch's keys that forward() names
    call_args, call_kwargs, _ = model_call(task.get_example_batch(), forward_names(task.model))
    if call_kwargs:
        import inspect

        example: Any = dict(inspect.signature(task.model.forward).bind_partial(*call_args, **call_kwargs).arguments)
    else:
        example = tuple(call_args)
    result = summary(task.model, example, depth=args.depth, device=args.device)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(f"task {task.name!r}")
        print(result)
    return 0


# `torchwise.summary` is the main function; imported under its old path (`import torchwise.summary`),
# the package attribute `torchwise.summary` becomes this module, so the module is callable as the
# function too.
from torchwise.core.callable_module import make_callable  # noqa: E402

make_callable(__name__, "summary")

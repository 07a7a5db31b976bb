"""Looking inside a model: captured activations and their gradients, gradients without ``.grad``,
and the autograd graph as DOT text.
"""

from __future__ import annotations

import contextlib
import difflib
import fnmatch
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import torch
from torch import nn

from torchwise.core.errors import UsageError

__all__ = ["AutogradGraph", "Captured", "autograd_graph", "capture", "layer_grad"]

ModuleSpec = Union[str, type, nn.Module]


# --------------------------------------------------------------------------------------------
# capture


@dataclass
class Captured:
    """What :func:`capture` recorded, keyed by qualified module name.

    ``outputs[name]`` is the (detached) output of the module's last call, ``grads[name]`` the
    gradient of that output (with ``grads=True``, filled during backward; for an output holding
    several tensors a dict ``path -> grad``, path being the tuple of keys/indices). ``history``
    and ``grad_history`` keep every call in call order (a gradient stays None until it arrives).
    """

    modules: list[str]
    outputs: dict[str, Any] = field(default_factory=dict)
    grads: dict[str, Any] = field(default_factory=dict)
    history: dict[str, list[Any]] = field(default_factory=dict)
    grad_history: dict[str, list[Any]] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Any:
        return self.outputs[name]


def _is_pattern(s: str) -> bool:
    return any(c in s for c in "*?[")


def _resolve_modules(model: nn.Module, modules: ModuleSpec | Iterable[ModuleSpec] | None) -> list[tuple[str, nn.Module]]:
    named = list(model.named_modules())
    if modules is None:
        leaves = [(n, m) for n, m in named if not any(True for _ in m.children())]
        return leaves
    specs: list[ModuleSpec]
    if isinstance(modules, (str, type, nn.Module)):
        specs = [modules]
    else:
        specs = list(modules)
    names = [n for n, _ in named if n]
    chosen: dict[int, tuple[str, nn.Module]] = {}
    for spec in specs:
        if isinstance(spec, str):
            if _is_pattern(spec):
                hits = [(n, m) for n, m in named if n and fnmatch.fnmatchcase(n, spec)]
            else:
                hits = [(n, m) for n, m in named if n == spec]
            if not hits:
                near = difflib.get_close_matches(spec, names, n=5, cutoff=0.4) or names[:8]
                raise UsageError(
                    f"{type(model).__name__} has no module matching {spec!r}; near names: "
                    f"{', '.join(near) if near else '(the model has no submodules)'}"
                )
        elif isinstance(spec, type):
            hits = [(n, m) for n, m in named if isinstance(m, spec)]
            if not hits:
                kinds = sorted({type(m).__name__ for _, m in named})
                raise UsageError(f"{type(model).__name__} has no {spec.__name__} module; types there: {', '.join(kinds)}")
        elif isinstance(spec, nn.Module):
            hits = [(n, m) for n, m in named if m is spec]
            if not hits:
                raise UsageError(f"the given {type(spec).__name__} module is not part of {type(model).__name__}")
        else:
            raise UsageError(f"modules must be names, glob patterns, module types or modules, got {type(spec).__name__}")
        for n, m in hits:
            chosen.setdefault(id(m), (n or type(m).__name__, m))
    return list(chosen.values())


def _detach(obj: Any, clone: bool) -> Any:
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t.clone() if clone else t
    if isinstance(obj, Mapping):
        return {k: _detach(v, clone) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_detach(v, clone) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_detach(v, clone) for v in obj)
    return obj


def _tensors(obj: Any) -> list[tuple[Any, torch.Tensor]]:
    """(path, tensor) pairs of a nested output; path is () for a bare tensor."""
    if isinstance(obj, torch.Tensor):
        return [((), obj)]
    out: list[tuple[Any, torch.Tensor]] = []
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            out += [((k, *p), t) for p, t in _tensors(v)]
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            out += [((i, *p), t) for p, t in _tensors(v)]
    return out


@contextlib.contextmanager
def capture(
    model: nn.Module,
    modules: ModuleSpec | Iterable[ModuleSpec] | None = None,
    grads: bool = False,
    *,
    clone: bool = True,
) -> Iterator[Captured]:
    """Record the outputs (and with ``grads=True`` the output gradients) of modules of ``model``.

    ``modules`` are qualified names (``"features.0"``), glob patterns (``"layer*.conv1"``),
    module types (``nn.Conv2d``), module objects, or a list of those; by default every leaf
    module. Outputs are detached (and cloned unless ``clone=False``, so later in-place ops do
    not change them). Gradients are recorded with tensor hooks during any backward run inside
    the block. Every hook is removed on exit, also when the block raises.

        with capture(model, ["features.0"], grads=True) as cap:
            loss_fn(model(x), y).backward()
        cap.outputs["features.0"], cap.grads["features.0"]
    """
    selected = _resolve_modules(model, modules)
    rec = Captured(modules=[n for n, _ in selected])
    handles: list[Any] = []
    active = [True]

    def make_hook(name: str):
        def hook(_mod: nn.Module, _inp: Any, out: Any) -> None:
            if not active[0]:
                return
            value = _detach(out, clone)
            rec.outputs[name] = value
            rec.history.setdefault(name, []).append(value)
            if not grads:
                return
            pairs = [(p, t) for p, t in _tensors(out) if t.requires_grad]
            if not pairs:
                return
            calls = rec.grad_history.setdefault(name, [])
            index = len(calls)
            bare = len(pairs) == 1 and pairs[0][0] == ()
            calls.append(None if bare else {})

            def store(path: Any, g: torch.Tensor) -> None:
                if not active[0]:
                    return
                g = g.detach().clone()
                if bare:
                    calls[index] = g
                else:
                    calls[index][path] = g
                if index == len(calls) - 1:  # the latest call's gradient is the one shown
                    rec.grads[name] = calls[index]

            for path, t in pairs:
                handles.append(t.register_hook(lambda g, path=path: store(path, g)))

        return hook

    try:
        for name, mod in selected:
            handles.append(mod.register_forward_hook(make_hook(name)))
        yield rec
    finally:
        active[0] = False
        for h in handles:
            h.remove()


# --------------------------------------------------------------------------------------------
# layer_grad


def layer_grad(
    loss: torch.Tensor,
    params: nn.Module | Sequence[torch.Tensor] | Mapping[str, torch.Tensor] | torch.Tensor,
    *,
    retain_graph: bool = False,
    create_graph: bool = False,
) -> Any:
    """Gradients of a scalar ``loss`` w.r.t. ``params`` via ``torch.autograd.grad``; ``.grad`` is untouched.

    ``params`` is a module (returns ``{name: grad}`` over its trainable parameters), a dict
    ``name -> tensor`` (returns a dict), a list/tuple of tensors (returns a list/tuple) or one
    tensor. Tensors the loss does not depend on get zero gradients. Pass ``retain_graph=True``
    to call it (or backward) again on the same graph.
    """
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        shape = tuple(loss.shape) if isinstance(loss, torch.Tensor) else type(loss).__name__
        raise UsageError(f"layer_grad needs a scalar loss tensor, got {shape}; reduce it first (e.g. loss.mean())")
    if not loss.requires_grad:
        raise UsageError("the loss does not require grad: was it computed under torch.no_grad() or from detached tensors?")
    if isinstance(params, nn.Module):
        names, tensors = zip(*[(n, p) for n, p in params.named_parameters() if p.requires_grad]) if any(
            p.requires_grad for p in params.parameters()) else ((), ())
        kind = "dict"
    elif isinstance(params, Mapping):
        names, tensors = tuple(params.keys()), tuple(params.values())
        kind = "dict"
    elif isinstance(params, torch.Tensor):
        names, tensors, kind = ("",), (params,), "tensor"
    elif isinstance(params, (list, tuple)):
        names, tensors, kind = tuple(str(i) for i in range(len(params))), tuple(params), type(params)
    else:
        raise UsageError(f"params must be a module, a dict of tensors, a list of tensors or a tensor; got {type(params).__name__}")
    if not tensors:
        raise UsageError("no trainable parameters given to layer_grad")
    for n, t in zip(names, tensors):
        if not isinstance(t, torch.Tensor) or not t.requires_grad:
            raise UsageError(f"parameter {n or '(tensor)'} does not require grad, so it has no gradient")
    grads = torch.autograd.grad(loss, list(tensors), retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
    grads = tuple(torch.zeros_like(t) if g is None else g for t, g in zip(tensors, grads))
    if kind == "dict":
        return dict(zip(names, grads))
    if kind == "tensor":
        return grads[0]
    return kind(grads)


# --------------------------------------------------------------------------------------------
# autograd graph


@dataclass
class AutogradGraph:
    """The autograd graph behind some outputs: ``nodes`` id -> label, ``edges`` (from, to), ``dot`` text."""

    nodes: dict[str, str]
    edges: list[tuple[str, str]]
    kinds: dict[str, str]  # node id -> "op" | "param" | "leaf" | "output"

    @property
    def dot(self) -> str:
        """The graph in Graphviz DOT syntax (edges point from inputs towards outputs)."""
        style = {
            "op": 'shape=box, style="rounded,filled", fillcolor="#e8e8e8"',
            "param": 'shape=box, style=filled, fillcolor="#cfe8ff"',
            "leaf": 'shape=box, style=filled, fillcolor="#fff2b3"',
            "output": 'shape=box, style=filled, fillcolor="#d9f2d0"',
        }
        lines = ["digraph autograd {", '  graph [rankdir=TB];', '  node [fontname="monospace", fontsize=10];']
        for nid, label in self.nodes.items():
            text = label.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            lines.append(f'  {nid} [label="{text}", {style[self.kinds[nid]]}];')
        lines += [f"  {a} -> {b};" for a, b in self.edges]
        lines.append("}")
        return "\n".join(lines) + "\n"

    def __str__(self) -> str:
        return self.dot

    def render(self, path: str | Path) -> Path:
        """Write the graph to ``path``: ``.dot``/``.gv`` as text, else rendered by Graphviz in the
        format the extension names (``.svg``, ``.png``, ``.pdf``). Needs the ``graphviz`` Python
        package (``pip install torchwise[viz]``) and Graphviz's ``dot`` program for rendering.
        """
        path = Path(path)
        fmt = path.suffix.lower().lstrip(".")
        if fmt in ("dot", "gv"):
            path.write_text(self.dot)
            return path
        if not fmt:
            raise UsageError(f"cannot tell the image format of {path}: give it an extension such as .svg or .png")
        try:
            import graphviz
        except ImportError:
            raise UsageError(
                "rendering the autograd graph needs the graphviz Python package: pip install 'torchwise[viz]' "
                "(and Graphviz's `dot` program, e.g. apt-get install graphviz); the DOT text is in .dot"
            ) from None
        if shutil.which("dot") is None:
            raise UsageError(
                "rendering the autograd graph needs Graphviz's `dot` program on PATH (e.g. apt-get install "
                "graphviz, brew install graphviz, conda install graphviz); the DOT text is in .dot, or "
                "render(path) with a .dot extension writes it"
            )
        try:
            data = graphviz.Source(self.dot).pipe(format=fmt)
        except Exception as exc:  # unknown format, dot failure
            raise UsageError(f"Graphviz could not render {path.name} as {fmt!r}: {exc}") from exc
        path.write_bytes(data)
        return path


def _shape(t: torch.Tensor) -> str:
    return str(tuple(t.shape))


def autograd_graph(
    output: torch.Tensor | Sequence[torch.Tensor] | Mapping[str, torch.Tensor],
    params: nn.Module | Mapping[str, torch.Tensor] | None = None,
) -> AutogradGraph:
    """The autograd graph that produced ``output`` (a tensor, or a list/dict of tensors).

    Walks ``grad_fn.next_functions`` from the outputs to the leaves. Leaf tensors are labelled
    with their names from ``params`` (a dict name -> tensor, or a module whose
    ``named_parameters()`` are used) and their shapes; operations with their autograd node type.
    """
    outs = _tensors(output)
    if not outs:
        raise UsageError(f"autograd_graph needs a tensor (or a list/dict of tensors), got {type(output).__name__}")
    if isinstance(params, nn.Module):
        param_names = {id(p): n for n, p in params.named_parameters()}
    elif isinstance(params, Mapping):
        param_names = {id(p): str(n) for n, p in params.items()}
    elif params is None:
        param_names = {}
    else:
        raise UsageError(f"params must be a module or a dict name -> tensor, got {type(params).__name__}")

    nodes: dict[str, str] = {}
    kinds: dict[str, str] = {}
    edges: list[tuple[str, str]] = []
    seen_edges: set[tuple[str, str]] = set()
    ids: dict[int, str] = {}
    keep_alive: list[Any] = []  # keep visited nodes alive so their ids stay unique

    def node_id(fn: Any) -> str:
        key = id(fn)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            keep_alive.append(fn)
        return ids[key]

    def add_edge(a: str, b: str) -> None:
        if (a, b) not in seen_edges:
            seen_edges.add((a, b))
            edges.append((a, b))

    def leaf_label(variable: torch.Tensor) -> tuple[str, str]:
        name = param_names.get(id(variable))
        if name is not None:
            return f"{name}\n{_shape(variable)}", "param"
        return f"leaf\n{_shape(variable)}", "leaf"

    def label(fn: Any) -> tuple[str, str]:
        variable = getattr(fn, "variable", None)
        if variable is not None:  # AccumulateGrad: a leaf tensor
            return leaf_label(variable)
        return type(fn).__name__, "op"

    stack: list[Any] = []
    for path, t in outs:
        oid = f"out{len([k for k in kinds.values() if k == 'output'])}"
        name = "output" if path == () else "output[" + "][".join(map(str, path)) + "]"
        nodes[oid], kinds[oid] = f"{name}\n{_shape(t)}", "output"
        if t.grad_fn is not None:
            fid = node_id(t.grad_fn)
            add_edge(fid, oid)
            stack.append(t.grad_fn)
        elif t.requires_grad:  # the output is itself a leaf
            lid = f"leaf_{oid}"
            nodes[lid], kinds[lid] = leaf_label(t)
            add_edge(lid, oid)
    if not any(t.requires_grad for _, t in outs):
        raise UsageError("the output has no autograd graph: it does not require grad (computed under no_grad, or detached)")

    visited: set[int] = set()
    while stack:
        fn = stack.pop()
        if id(fn) in visited:
            continue
        visited.add(id(fn))
        fid = node_id(fn)
        nodes[fid], kinds[fid] = label(fn)
        for nxt, _ in getattr(fn, "next_functions", ()):
            if nxt is None:
                continue
            add_edge(node_id(nxt), fid)
            stack.append(nxt)
    return AutogradGraph(nodes=nodes, edges=edges, kinds=kinds)

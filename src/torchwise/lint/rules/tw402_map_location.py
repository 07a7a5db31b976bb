"""TW402: ``torch.load`` without ``map_location`` in code that uses a GPU."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context, argument, has_star_args, last_name, str_consts
from torchwise.lint.findings import Finding
from torchwise.lint.rule import Rule
from torchwise.lint.semantics.devices import gpu_evident
from torchwise.lint.semantics.hostreads import checkpoint_facts, loaded_keys, saved_keys, saves_on_host


def _file_names(ctx: Context, expr: ast.AST | None) -> set[str]:
    return {c for c in str_consts(expr) if "." in c} if expr is not None else set()


def _own_cpu_cache(ctx: Context, load: ast.Call) -> bool:
    """``torch.save(feats.cpu(), ".../feats.pth")`` elsewhere in the file, and this load reads a
    file of the same name: the tensors in it are on the CPU already."""
    names = _file_names(ctx, argument(load, "f", 0))
    if not names:
        return False
    for save in ctx.calls_to("torch.save"):
        if names & _file_names(ctx, argument(save, "f", 1)):
            obj = argument(save, "obj", 0)
            if obj is not None and any(
                n.__class__ is ast.Call and last_name(n.func) == "cpu" for n in ast.walk(obj)
            ):
                return True
    return False


def _host_keys(ctx: Context, load: ast.Call) -> bool:
    """Every key read from the loaded dict is saved (by this file or the project) with host data
    only: ``stats["mean"]`` where ``torch.save(dict(mean=np.mean(f, 0), ...))`` wrote it."""
    keys = loaded_keys(ctx, load)
    if not keys:
        return False
    host, device = saved_keys(ctx)
    _, project_host, project_device = checkpoint_facts(ctx.project)
    host |= project_host
    device |= project_device
    return keys <= host and not keys & device


class LoadWithoutMapLocation(Rule):
    code = "TW402"
    name = "torch-load-no-map-location"
    triggers = ("load",)
    doc = """\
What it flags
  `torch.load(...)` without `map_location` (by keyword or as the second positional argument)
  in a file that evidently uses a GPU (`.cuda()`, a `"cuda"` device, `torch.cuda`), where the
  checkpoints it reads are likely to hold CUDA tensors. Left alone: files that cannot hold GPU
  tensors because the file, or the project linted with it, writes every checkpoint from host
  data (`torch.save({k: v.cpu() ...})`, `model.cpu().state_dict()`, NumPy statistics), and
  loads whose keys (`stats["mean"]`) are only ever saved with host data.

Why it matters
  Tensors are restored onto the device they were saved from. A checkpoint written on
  `cuda:0` fails to load on a machine without CUDA ("Attempting to deserialize object on a
  CUDA device"), and on a multi-GPU machine every process loads onto GPU 0, crowding it.

Example
  model = Net().cuda()
  model.load_state_dict(torch.load("ckpt.pt"))            # TW402

Fix
  `torch.load("ckpt.pt", map_location="cpu")` (then `load_state_dict` copies onto the model's
  device), or `map_location=device` for the current process's device.
"""

    def check(self, ctx: Context) -> Iterator[Finding]:
        calls = ctx.calls_to("torch.load")
        if not calls or not gpu_evident(ctx):
            return
        for call in calls:
            if argument(call, "map_location", 1) is not None or has_star_args(call):
                continue
            if _own_cpu_cache(ctx, call) or saves_on_host(ctx) or checkpoint_facts(ctx.project)[0] or _host_keys(ctx, call):
                continue  # reads back what this file (or project) saves from host data: .cpu() tensors, NumPy
            yield ctx.finding(
                self.code, call,
                "torch.load without map_location restores tensors onto the GPU they were saved from",
                suggestion='pass map_location="cpu" (or the current device)',
                end_node=call.func,
            )


RULE = LoadWithoutMapLocation()

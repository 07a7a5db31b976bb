"""torchwise: train PyTorch models well, automatically and checkably.

The public API is small and imported lazily: ``import torchwise`` costs nothing until a name is
used, so ``torchwise lint``/``rule``/``rules`` start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # catalog
    "Practice": "torchwise.catalog",
    "PRACTICES": "torchwise.catalog",
    "get_practice": "torchwise.catalog",
    # errors
    "TorchwiseError": "torchwise.errors",
    # environment
    "collect_env": "torchwise.env",
    # reproducibility
    "seed_everything": "torchwise.seed",
    "seed_worker": "torchwise.seed",
    "make_generator": "torchwise.seed",
    "get_rng_state": "torchwise.seed",
    "set_rng_state": "torchwise.seed",
    # devices, threads, memory
    "select_device": "torchwise.device",
    "to_device": "torchwise.device",
    "set_threads": "torchwise.device",
    "track_memory": "torchwise.memory",
    "free_memory": "torchwise.memory",
    "memory_report": "torchwise.memory",
    # checkpoints
    "save_checkpoint": "torchwise.checkpoint",
    "load_checkpoint": "torchwise.checkpoint",
    "load_state_dict": "torchwise.checkpoint",
    "save_safetensors": "torchwise.checkpoint",
    # model inspection
    "count_parameters": "torchwise.summary",
    "summary": "torchwise.summary",
    "capture": "torchwise.hooks",
    "layer_grad": "torchwise.hooks",
    "autograd_graph": "torchwise.hooks",
    "per_sample_grads": "torchwise.per_sample",
    "freeze_batchnorm": "torchwise.layers",
    "unfreeze_batchnorm": "torchwise.layers",
    "init_weights": "torchwise.layers",
    # data
    "pad_collate": "torchwise.collate",
    "to_numpy": "torchwise.convert",
    "from_numpy": "torchwise.convert",
    "image_to_tensor": "torchwise.convert",
    "tensor_to_image": "torchwise.convert",
    # tasks
    "Task": "torchwise.task",
    "RunPlan": "torchwise.task",
    "load_task": "torchwise.task",
    # engines
    "Trainer": "torchwise.train",
    "EarlyStopping": "torchwise.train",
    "doctor": "torchwise.doctor",
    "watching": "torchwise.integrations",
    "tune": "torchwise.tune",
    "lint_paths": "torchwise.lint",
    "lint_source": "torchwise.lint",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'torchwise' has no attribute {name!r}")
    module = importlib.import_module(module_name)
    # `doctor` and `tune` are both a subpackage and a function: the subpackage module is callable.
    value = module if module_name == f"torchwise.{name}" and callable(module) else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchwise.catalog import PRACTICES, Practice, get_practice
    from torchwise.checkpoint import load_checkpoint, load_state_dict, save_checkpoint, save_safetensors
    from torchwise.collate import pad_collate
    from torchwise.convert import from_numpy, image_to_tensor, tensor_to_image, to_numpy
    from torchwise.device import select_device, set_threads, to_device
    from torchwise.env import collect_env
    from torchwise.errors import TorchwiseError
    from torchwise.hooks import autograd_graph, capture, layer_grad
    from torchwise.integrations import watching
    from torchwise.layers import freeze_batchnorm, init_weights, unfreeze_batchnorm
    from torchwise.lint import lint_paths, lint_source
    from torchwise.memory import free_memory, memory_report, track_memory
    from torchwise.per_sample import per_sample_grads
    from torchwise.seed import get_rng_state, make_generator, seed_everything, seed_worker, set_rng_state
    from torchwise.summary import count_parameters, summary
    from torchwise.task import RunPlan, Task, load_task
    from torchwise.train import EarlyStopping, Trainer

"""torchwise: train PyTorch models well, automatically and checkably.

The public API is small and imported lazily: ``import torchwise`` costs nothing until a name is
used, so ``torchwise lint``/``rule``/``rules`` start without importing torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from torchwise.core import moved as _moved

__version__ = "0.1.0"

# The modules that moved into core/, utils/ and cli/ keep their old import paths.
_moved.install()

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # catalog
    "Practice": "torchwise.catalog",
    "PRACTICES": "torchwise.catalog",
    "get_practice": "torchwise.catalog",
    # errors
    "TorchwiseError": "torchwise.core.errors",
    # environment
    "collect_env": "torchwise.utils.env",
    # reproducibility
    "seed_everything": "torchwise.utils.seed",
    "seed_worker": "torchwise.utils.seed",
    "make_generator": "torchwise.utils.seed",
    "get_rng_state": "torchwise.utils.seed",
    "set_rng_state": "torchwise.utils.seed",
    # devices, threads, memory
    "select_device": "torchwise.utils.device",
    "to_device": "torchwise.utils.device",
    "set_threads": "torchwise.utils.device",
    "track_memory": "torchwise.utils.memory",
    "free_memory": "torchwise.utils.memory",
    "memory_report": "torchwise.utils.memory",
    # checkpoints
    "save_checkpoint": "torchwise.utils.checkpoint",
    "load_checkpoint": "torchwise.utils.checkpoint",
    "load_state_dict": "torchwise.utils.checkpoint",
    "save_safetensors": "torchwise.utils.checkpoint",
    # model inspection
    "count_parameters": "torchwise.utils.summary",
    "summary": "torchwise.utils.summary",
    "capture": "torchwise.utils.hooks",
    "layer_grad": "torchwise.utils.hooks",
    "autograd_graph": "torchwise.utils.hooks",
    "per_sample_grads": "torchwise.utils.per_sample",
    "freeze_batchnorm": "torchwise.utils.layers",
    "unfreeze_batchnorm": "torchwise.utils.layers",
    "init_weights": "torchwise.utils.layers",
    # data
    "pad_collate": "torchwise.utils.collate",
    "to_numpy": "torchwise.utils.convert",
    "from_numpy": "torchwise.utils.convert",
    "image_to_tensor": "torchwise.utils.convert",
    "tensor_to_image": "torchwise.utils.convert",
    # tasks
    "Task": "torchwise.core.task",
    "RunPlan": "torchwise.core.task",
    "load_task": "torchwise.core.task",
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
    from torchwise.utils.checkpoint import load_checkpoint, load_state_dict, save_checkpoint, save_safetensors
    from torchwise.utils.collate import pad_collate
    from torchwise.utils.convert import from_numpy, image_to_tensor, tensor_to_image, to_numpy
    from torchwise.utils.device import select_device, set_threads, to_device
    from torchwise.utils.env import collect_env
    from torchwise.core.errors import TorchwiseError
    from torchwise.utils.hooks import autograd_graph, capture, layer_grad
    from torchwise.integrations import watching
    from torchwise.utils.layers import freeze_batchnorm, init_weights, unfreeze_batchnorm
    from torchwise.lint import lint_paths, lint_source
    from torchwise.utils.memory import free_memory, memory_report, track_memory
    from torchwise.utils.per_sample import per_sample_grads
    from torchwise.utils.seed import get_rng_state, make_generator, seed_everything, seed_worker, set_rng_state
    from torchwise.utils.summary import count_parameters, summary
    from torchwise.core.task import RunPlan, Task, load_task
    from torchwise.train import EarlyStopping, Trainer

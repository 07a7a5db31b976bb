"""What PyTorch code means: the semantic helpers rules build on, one module per theme.

Each is a set of queries on a :class:`~torchwise.lint.engine.Context`. Every predicate answers
"evidently yes" or "not evidently": when in doubt it says no, so rules built on it stay silent
rather than guess. The modules, each importing only the engine and the ones listed before it:

* :mod:`.values` -- what a name or call evidently is; the local functions a call runs;
* :mod:`.files` -- test files; old-API branches of version-compatible code;
* :mod:`.api_symbols` -- removed, deprecated and non-public torch names, and their uses;
* :mod:`.backends` -- ``torch.backends.cudnn`` flags;
* :mod:`.steps` -- backward passes, optimizer steps, training loops, gradient clearing;
* :mod:`.losses` -- loss modules, functionals and values;
* :mod:`.models` -- ``nn.Module`` classes and instances;
* :mod:`.autograd` -- grad-free regions (``no_grad``, ``inference_mode``);
* :mod:`.devices` -- devices, dtypes, moves to a device, tensors on the accelerator;
* :mod:`.data` -- datasets and loaders, also through the project facts.

Nothing here imports a rule or the project scan (``tests/lint/test_layers.py`` checks it).
"""

"""A GPU count that offers the CPU: ``if args.ngpu > 0: net.cuda()``.

Scripts written in the style of the DCGAN/WRN baselines take the number of GPUs as an option
(``parser.add_argument('--ngpu', type=int, default=1, help='0 = CPU.')``) and move the model only
when it is positive. A count of zero is then the CPU run the script offers (METHOD ruling R17):
every ``.cuda()`` it hard-codes outside that test breaks it.

Text only. The evidence is the test itself - ``if <...>ngpu > 0:`` (also ``n_gpu``, ``num_gpus``,
``ngpus``, ``>= 1``, ``!= 0``) whose next code line moves something to the GPU (``.cuda(`` or
``.to(``) - not the option alone: a count tested only against 1 (``if args.ngpu > 1:
DataParallel(...)``) chooses between GPUs, and one that only guards seeding
(``torch.cuda.manual_seed_all``) moves nothing.
"""

from __future__ import annotations

import re

from torchwise.lint.engine.lazyre import lazy_compile

_COUNT_GATE = lazy_compile(r"^[ \t]*if[ \t]+\(?[\w.\[\]'\"]*\bn(?:um)?_?gpus?\b[\]'\"]*[ \t]*(?:>[ \t]*0|>=[ \t]*1|!=[ \t]*0)[ \t]*\)?[ \t]*:"
                         r"[ \t]*(?:#[^\n]*)?\n(?:[ \t]*(?:#[^\n]*)?\n)*[^\n]*\.(?:cuda|to)\(", re.M | re.I)


def gpu_count_gate(text: str) -> bool:
    """The file moves to the GPU only when a GPU count is positive (``if args.ngpu > 0:
    net.cuda()``): a count of zero runs on the CPU (see the module doc)."""
    return "gpu" in text.lower() and _COUNT_GATE.search(text) is not None


__all__ = ["gpu_count_gate"]

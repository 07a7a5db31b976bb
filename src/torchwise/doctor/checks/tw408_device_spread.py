"""Parameters and buffers spread over more than one device.

What: the model's parameters and buffers do not all sit on one device. The doctor then keeps
the placement as it is (inputs go to the first parameter's device) and reports the split.
Why: a model deliberately split across GPUs (model parallelism) breaks when code moves it
wholesale with ``model.to(device)`` or ``.cuda()``, as training loops and wrappers commonly do;
and a split that was not deliberate (one submodule or tensor left on the CPU, often a plain
tensor attribute or a layer created after ``.to()``) makes the step fail with a device mismatch
or copy data every step.
Example: ``self.table = nn.Embedding(...)`` created after ``model.cuda()``, or a pipeline with
``self.part1.to("cuda:0")`` and ``self.part2.to("cuda:1")`` later passed to ``model.to("cuda")``.
Fix: deliberate split: never move the model wholesale, move each batch to the first stage's device
(the Trainer leaves such models in place). Accidental: create everything before moving, register
tensors as buffers, and move the whole model once.
"""

from __future__ import annotations

from collections import Counter

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding

CODES = ("TW408",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding]:
    if not ctx.spread_over_devices:
        return []
    counts = Counter(ctx.param_devices.values())
    main = counts.most_common(1)[0][0]
    minority = [n for n, d in ctx.param_devices.items() if d != main]
    accelerators = {d.split(":")[0] for d in counts} - {"cpu", "meta"}
    deliberate = "cpu" not in counts and "meta" not in counts and len(accelerators) == 1
    return [Finding(
        "TW408", "hint" if deliberate else "warning",
        f"parameters/buffers sit on {len(counts)} devices: " + ", ".join(f"{n} on {d}" for d, n in counts.most_common()),
        listing(minority),
        {"tensors_per_device": dict(counts), "off_main_device": minority[:50]},
        "model parallel on purpose: never move the model wholesale, send batches to the first stage's device; "
        "otherwise create every layer and buffer before moving the whole model once",
    )]

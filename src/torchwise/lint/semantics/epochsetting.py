"""Whether anything in a project can set a DistributedSampler's epoch (for TW406): a text test over
the project's files, made once per process. A sampler built in a data module (``def
create_dataloader(config): ... DistributedSampler(train_dataset)``) is shuffled anew only if some
code calls ``set_epoch`` (or assigns ``sampler.epoch``), or a training framework that does it for
its loaders runs the loop."""

from __future__ import annotations

import re

from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.facts import ProjectFacts

# trainers that call set_epoch on their loaders' samplers themselves (Lightning, Accelerate, the
# Hugging Face Trainer, Ignite, mmcv/mmengine runners...), or that bring their own samplers
_FRAMEWORK_IMPORT = lazy_compile(
    r"^[ \t]*(?:from|import)[ \t]+(?:pytorch_lightning|lightning|accelerate|transformers|ignite|catalyst|mmcv|mmengine"
    r"|deepspeed|detectron2|fairseq|composer|fastai|torchtnt|keras)\b", re.M)
_SAMPLER_EPOCH = lazy_compile(r"sampler\w*\.epoch[ \t]*=(?!=)")
_EPOCH_LOOP = lazy_compile(r"^[ \t]*for\b[^\n#]*epoch[^\n]*:", re.M | re.I)  # a for statement naming epochs


def project_never_sets_epoch(facts: ProjectFacts) -> bool:
    """The project (several files linted together) loops over epochs, yet none of its files calls
    ``set_epoch`` or assigns a sampler's ``epoch``, and none imports a framework that would."""
    key = "tw406:never-sets-epoch"
    found = facts.answers.get(key)
    if found is None:
        texts = [text for _, text in facts.files]
        found = bool(texts) and not any(
            "set_epoch" in t or _SAMPLER_EPOCH.search(t) or _framework_runs(t) for t in texts
        ) and any(_EPOCH_LOOP.search(t) for t in texts)
        facts.answers[key] = found
    return found


_TRAINING_WORDS = lazy_compile(r"loader|trainer|runner|accelerat|epoch|fit\(", re.I)


def _framework_runs(text: str) -> bool:
    """The file imports a training framework that could run the loop: at module level, or inside a
    function of a file that speaks of loaders, trainers, runners or epochs - not the lazy ``import
    mmcv`` of a vendored config reader that only parses a YAML file with it."""
    for m in _FRAMEWORK_IMPORT.finditer(text):
        if not m.group(0)[:1].isspace() or _TRAINING_WORDS.search(text):
            return True
    return False

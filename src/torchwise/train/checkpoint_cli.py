"""``torchwise checkpoint consolidate DIR OUT.pt``: a sharded checkpoint as one file.

    torchwise checkpoint consolidate runs/task/checkpoints/step-00000012.dcp model.pt
    torchwise checkpoint consolidate runs/task/checkpoints model.pt      # the newest .dcp in the folder

The output is a plain torchwise training checkpoint (model, optimizer, step, RNG states...),
read in one process by ``torchwise.load_checkpoint`` / ``load_state_dict`` and resumable by a
single-process, DDP or FSDP Trainer. Runs in one process, without a process group.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from torchwise.core.errors import CheckpointError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = sub.add_parser("consolidate", help="write a sharded (FSDP, .dcp folder) checkpoint as one .pt file")
    c.add_argument("source", help="a step-NNNNNNNN.dcp folder, or a checkpoint folder (its newest sharded checkpoint is used)")
    c.add_argument("out", help="the single-file checkpoint to write (atomically), e.g. model.pt")


def run(args: argparse.Namespace) -> int:
    from torchwise.train import checkpoints as ckpt
    from torchwise.train.dcp import consolidate

    source = Path(args.source)
    if not source.exists():
        raise CheckpointError(f"{source} does not exist; expected a step-NNNNNNNN.dcp folder written by strategy='fsdp'")
    if source.is_dir() and not ckpt.is_sharded(source):
        sharded = [p for p in ckpt.list_checkpoints(source) if ckpt.is_sharded(p)]
        if not sharded:
            raise CheckpointError(f"{source} holds no sharded checkpoint (step-NNNNNNNN.dcp folder with a .metadata file)")
        source = sharded[-1]
    out = consolidate(source, args.out)
    print(f"consolidated {source} -> {out}")
    return 0

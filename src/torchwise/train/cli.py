"""``torchwise train TASK``: train a Task with the Trainer, on one process or several via torchrun.

    torchwise train examples/digits.py:task
    torchwise train examples/digits.py:task --resume last --epochs 15
    torchwise train examples/digits.py:task --nproc-per-node 2          # DDP through torchrun
    torchwise train examples/digits.py:task --nproc-per-node 2 --strategy fsdp
    torchwise train examples/digits.py:task --nnodes 2 --node-rank 0 --nproc-per-node 1 \
        --rdzv-endpoint head:29400 --max-restarts 1                      # on each node

With ``--nproc-per-node N`` (or ``--nnodes M``) the command re-launches itself through
``python -m torch.distributed.run`` (torchrun: elastic, multi-node; TW405), which sets RANK,
WORLD_SIZE and the rendezvous for each worker; each worker's Trainer then detects the
environment and trains with DDP. ``--batch-size`` is per process. The launcher ends with one
line naming the first failure and that worker's exit code (:mod:`torchwise.train.launch`).

Each run gets its own folder, ``runs/TASK_NAME/version_N`` (``--resume last`` continues the
newest); an explicit ``--log-dir`` that holds another run is refused unless resuming
(:mod:`torchwise.train.runs`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from torchwise.core.errors import UsageError
from torchwise.core.task_args import add_task_arg, task_kwargs

_PRECISIONS = ("auto", "32", "bf16-mixed", "16-mixed")
# options handled by the launcher, not forwarded to the workers
_LAUNCH_OPTIONS = ("--nproc-per-node", "--nnodes", "--node-rank", "--rdzv-endpoint", "--rdzv-id", "--rdzv-backend", "--max-restarts")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", help="the Task: path/to/file.py:function or package.module:function (default function: task)")
    add_task_arg(parser)
    g = parser.add_argument_group("training")
    g.add_argument("--epochs", type=int, help="number of epochs (default: the task's); with --resume, the total to reach")
    g.add_argument("--max-steps", type=int, help="stop after this many optimizer steps")
    g.add_argument("--batch-size", type=int, help="batch size per process (default: the task's)")
    g.add_argument("--precision", default="auto", choices=_PRECISIONS, help="numeric precision (default: auto = bf16/fp16 mixed on CUDA, 32 on CPU)")
    g.add_argument("--accumulate", type=int, default=1, help="gradient accumulation steps (default 1)")
    g.add_argument("--scheduler-interval", choices=("step", "epoch"), help="step the task's scheduler per optimizer step or per epoch (default: the task's, else by the scheduler's class)")
    g.add_argument("--monitor", help="metric for ReduceLROnPlateau, early stopping and best.pt (default: the task's, val/loss)")
    g.add_argument("--monitor-mode", choices=("min", "max"), help="whether the monitored metric is better lower or higher (default: from its name)")
    g.add_argument("--early-stopping", type=int, metavar="PATIENCE", help="stop after PATIENCE epochs without improvement of the monitored metric")
    g.add_argument("--ema", type=float, metavar="DECAY", help="evaluate and checkpoint an exponential moving average of the weights (e.g. 0.999)")
    g.add_argument("--clip-grad-norm", type=float, help="clip the gradient norm to this value (the pre-clip norm is logged)")
    g.add_argument("--compile", action="store_true", help="use torch.compile (falls back to eager with a warning)")
    g.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps (default auto)")
    g.add_argument("--seed", type=int, help="seed every generator (model initialisation included)")
    g.add_argument("--deterministic", action="store_true", help="deterministic algorithms (implies --seed 0 if no seed)")
    g.add_argument("--strategy", default="auto", choices=("auto", "ddp", "fsdp"), help="auto/ddp: DistributedDataParallel under torchrun; fsdp: shard parameters, gradients and optimizer state (FSDP2)")
    g.add_argument("--activation-checkpointing", action="store_true", help="recompute each block's activations in the backward (less memory, more compute)")
    g.add_argument("--tuned", metavar="TUNE_JSON", help="apply settings chosen by 'torchwise tune' (for options left at their defaults)")
    g = parser.add_argument_group("checkpoints and logs")
    g.add_argument("--checkpoint-dir", help="where checkpoints go (default: LOG_DIR/checkpoints)")
    g.add_argument("--checkpoint-every", type=int, help="also checkpoint every N optimizer steps (default: at each epoch end)")
    g.add_argument("--resume", metavar="last|PATH", help="resume from the newest checkpoint of this run's folder ('last'; fresh start when none) or a file")
    g.add_argument("--log-dir", help="the run's folder: CSV, TensorBoard, checkpoints (default: runs/TASK_NAME/version_N, a new one per run; "
                                     "with --resume last the newest); one that holds another run is refused unless resuming")
    g.add_argument("--log-every", type=int, default=50, help="log every N optimizer steps (default 50)")
    g.add_argument("--no-progress", action="store_true", help="no progress bar or periodic lines (the summary is still printed)")
    g = parser.add_argument_group("distributed (launched through torchrun)", "a failed worker ends the command with one line naming the first "
                                  "failure and that worker's exit code (2: an error torchwise names, a dead or silent peer included; "
                                  "1: an unexpected exception; 128+N: killed by signal N)")
    g.add_argument("--nproc-per-node", type=int, default=1, help="processes on this node (one per GPU; on CPU, gloo)")
    g.add_argument("--nnodes", type=int, default=1, help="number of nodes")
    g.add_argument("--node-rank", type=int, default=0, help="rank of this node (multi-node)")
    g.add_argument("--rdzv-endpoint", metavar="HOST:PORT", help="rendezvous endpoint (multi-node; default: a free local port)")
    g.add_argument("--rdzv-id", default="torchwise", help="rendezvous job id (multi-node)")
    g.add_argument("--rdzv-backend", default="c10d", choices=("c10d",), help="rendezvous backend (multi-node; default c10d)")
    g.add_argument("--max-restarts", type=int, default=0, help="restart the whole group this many times after a worker fails; the run resumes from its last checkpoint")
    g.add_argument("--peer-timeout", type=float, metavar="SECONDS", help="a silent peer ends the run after this long, naming it (default 1800; env TORCHWISE_PEER_TIMEOUT)")


def worker_argv(args: argparse.Namespace) -> list[str]:
    """The ``torchwise train`` arguments each worker gets: everything but the launcher's options."""
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    out = [args.task]
    for action in parser._actions:
        if not action.option_strings or action.option_strings[0] in _LAUNCH_OPTIONS:
            continue
        value = getattr(args, action.dest, None)
        if value is None or value == action.default:
            continue
        flag = action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            out.append(flag)
        elif isinstance(action, argparse._AppendAction):
            for item in value:
                out += [flag, str(item)]
        else:
            out += [flag, str(value)]
    return out


def launch_command(args: argparse.Namespace, worker_argv: list[str]) -> list[str]:
    """The torchrun command line that runs ``torchwise train`` in every worker."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(args.nproc_per_node), "--nnodes", str(args.nnodes)]
    if args.max_restarts:
        cmd += ["--max-restarts", str(args.max_restarts)]
    if args.nnodes == 1 and not args.rdzv_endpoint:
        cmd.append("--standalone")  # a free local port, no endpoint to configure
    else:
        if not args.rdzv_endpoint:
            raise UsageError("--nnodes > 1 needs --rdzv-endpoint HOST:PORT (the same on every node)")
        cmd += ["--node-rank", str(args.node_rank), "--rdzv-backend", args.rdzv_backend, "--rdzv-endpoint", args.rdzv_endpoint, "--rdzv-id", str(args.rdzv_id)]
    return cmd + ["-m", "torchwise", "train", *worker_argv]


def run(args: argparse.Namespace) -> int:
    from torchwise.train.strategy import launched_by_torchrun

    for name in ("nproc_per_node", "nnodes", "accumulate", "log_every"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if args.max_restarts < 0 or not 0 <= args.node_rank < args.nnodes:
        raise UsageError(f"--max-restarts must be >= 0 and --node-rank in 0..{args.nnodes - 1} (--nnodes {args.nnodes}), got {args.max_restarts} and {args.node_rank}")
    if args.peer_timeout is not None:
        from torchwise.train.strategy import peer_timeout_s

        os.environ["TORCHWISE_PEER_TIMEOUT"] = str(peer_timeout_s(args.peer_timeout))  # read by every worker's strategy
    if (args.nproc_per_node > 1 or args.nnodes > 1) and not launched_by_torchrun():
        from torchwise.train.launch import launch

        cmd = launch_command(args, worker_argv(args))
        print("launching: " + " ".join(cmd[1:]), flush=True)
        return launch(cmd[3:])  # (torchrun's own arguments: what follows "python -m torch.distributed.run")
    if not launched_by_torchrun():
        return _train(args)
    try:
        return _train(args)
    except BaseException as exc:  # a worker: leave the cause where the launcher reads it
        from torchwise.train.launch import record_failure

        record_failure(exc)
        raise


def _train(args: argparse.Namespace) -> int:
    from torchwise.utils.seed import seed_everything
    from torchwise.core.task import load_task
    from torchwise.train.early_stopping import EarlyStopping
    from torchwise.train.trainer import Trainer

    seed = args.seed if args.seed is not None else (0 if args.deterministic else None)
    if seed is not None:
        seed_everything(seed)  # before the task is built, so the model's initial weights are seeded too
    task = load_task(args.task, **task_kwargs(args.task_arg))
    if args.batch_size is not None:
        if args.batch_size < 1:
            raise UsageError(f"--batch-size must be >= 1, got {args.batch_size}")
        task.batch_size = args.batch_size
    log_dir = Path(args.log_dir) if args.log_dir else Path("runs") / task.name / "{version}"  # (a new version_N per run)
    checkpoint_dir = Path(args.checkpoint_dir) if args.checkpoint_dir else log_dir / "checkpoints"
    overrides = {k: getattr(args, k) for k in ("scheduler_interval", "monitor", "monitor_mode") if getattr(args, k) is not None}
    trainer = Trainer.from_task(
        task,
        **overrides,
        early_stopping=EarlyStopping(patience=args.early_stopping) if args.early_stopping is not None else None,
        ema=args.ema,
        precision=args.precision,
        accumulate=args.accumulate,
        clip_grad_norm=args.clip_grad_norm,
        compile=args.compile,
        device=args.device,
        seed=seed,
        deterministic=args.deterministic,
        checkpoint_dir=checkpoint_dir,
        checkpoint_every=args.checkpoint_every,
        log_dir=log_dir,
        log_every=args.log_every,
        progress=not args.no_progress,
        tuned=args.tuned,
        strategy=args.strategy,
        activation_checkpointing=args.activation_checkpointing,
    )
    try:
        result = trainer.fit(epochs=args.epochs, max_steps=args.max_steps, resume=args.resume)
        if args.no_progress and trainer.strategy.is_main:
            print(_one_line(result))
    finally:
        trainer.close()
    return 0


def _one_line(result: Any) -> str:
    """The --no-progress summary: what this run did (and the total after a resume), best values, the checkpoint."""
    from torchwise.train.result import plural

    done = f"trained {plural(result.steps_run, 'step')} in {result.seconds:.1f} s"
    if result.steps_run != result.steps:
        done += f" ({result.steps} in all)"
    best = ", ".join(f"best {k} {v:.4g}" for k, (v, _) in result.best.items())
    return f"{done}{'; ' + best if best else ''}; checkpoint {result.checkpoint}"

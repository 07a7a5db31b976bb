"""The cross-rank check under torchrun: a few numbers per rank every N steps, compared on rank 0.

Every rank, at steps 1..``dense`` and then every ``rank_every`` steps, posts one small record to
the store the process group was started with (``torchrun``'s rendezvous store; no collective is
added, so a rank that is out of step can never hang on the watch): the norm of each parameter
tensor after the step (a checksum of the weights), the gradient norm before the step, its
counters (batches, backward passes, gradient syncs: DDP passes with sync on plus ``all_reduce``
calls), its last loss, and how its time split between its own work and waiting in the gradient
sync. Rank 0 reads a step's records once all ranks have posted it (it never waits for them)
and compares them (:func:`compare`):

- **weights drifting apart** (TW409): ranks whose parameter norms differ from the majority's
  (relative difference above ``DRIFT``) — the finding names the rank, the first step seen out
  of sync and the last step seen in sync, the parameters that differ, and the cause the counters
  show (a rank that synced fewer times, one that took more batches than it stepped, parameters
  moved after wrapping, no sync at all);
- **every rank reads the same batches** (TW411): the loss is bit for bit the same on all ranks
  at three checks in a row while it changes over the steps (no DistributedSampler);
- **a straggler** (TW412): one rank's own work per step ``STRAGGLER`` times the others' median,
  and the gap above ``GAP`` of the step time, at ``STRAGGLER_CHECKS`` regular checks in a row;
- **a rank that does not arrive** (TW412): a step that some ranks have not posted ``LAG_S``
  seconds after rank 0 did.

Ranks whose parameter shapes differ (pipeline or tensor parallel, FSDP shards) are not compared.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from torchwise.doctor.report import Finding
from torchwise.watch.addons import AddOn
from torchwise.watch.series import median

DRIFT = 1e-5  # relative difference of a parameter norm between ranks that counts as out of sync
GRAD_DRIFT = 1e-4
STRAGGLER = 2.0
GAP = 0.25
STRAGGLER_CHECKS = 5  # regular checks in a row (a busy shared machine slows one rank for a while: seen at 3)
LAG_S = 120.0
KEY = "torchwise_watch"


@dataclass
class CompareState:
    """What rank 0 remembers between comparisons."""

    in_sync_at: int | None = None
    drift_reported: bool = False
    same_loss: int = 0
    last_loss: float | None = None
    same_loss_reported: bool = False
    slow: dict[int, int] = field(default_factory=dict)
    straggler_reported: set[int] = field(default_factory=set)
    lag_reported: set[int] = field(default_factory=set)
    not_compared: str | None = None


def _close(a: float, b: float, tol: float) -> bool:
    if not (math.isfinite(a) and math.isfinite(b)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    return abs(a - b) <= tol * max(abs(a), abs(b), 1e-12)


def _groups(vectors: list[list[float]], tol: float) -> list[list[int]]:
    """Ranks grouped by equal vectors (within ``tol``), largest group first, ties by lowest rank."""
    groups: list[list[int]] = []
    for r, v in enumerate(vectors):
        for g in groups:
            ref = vectors[g[0]]
            if len(ref) == len(v) and all(_close(a, b, tol) for a, b in zip(ref, v)):
                g.append(r)
                break
        else:
            groups.append([r])
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def compare(step: int, records: list[dict[str, Any]], state: CompareState, names: list[str], regular: bool) -> list[Finding]:
    """The findings one step's records (one per rank, by rank) show."""
    out: list[Finding] = []
    if len({r.get("sig") for r in records}) > 1 or any(r.get("sharded") for r in records):
        state.not_compared = "the ranks hold different parameters (model parallel or sharded): weights not compared"
    else:
        out += _drift(step, records, state, names)
    out += _same_loss(step, records, state)
    if regular:
        out += _straggler(step, records, state)
    return out


def _drift(step: int, records: list[dict[str, Any]], state: CompareState, names: list[str]) -> list[Finding]:
    groups = _groups([r["p"] for r in records], DRIFT)
    if len(groups) == 1:
        state.in_sync_at = step
        return []
    if state.drift_reported:
        return []
    state.drift_reported = True
    syncs = [r["c"]["sync"] for r in records]
    batches = [r["c"]["batches"] for r in records]
    main, apart, known = _who(groups, syncs, batches)
    ref = records[main[0]]
    r = apart[0]
    rec = records[r]
    differ = [i for i, (a, b) in enumerate(zip(ref["p"], rec["p"])) if not _close(a, b, DRIFT)]
    label = [names[i] if i < len(names) else f"parameter {i}" for i in differ]
    since = f"in sync at step {state.in_sync_at:,}" if state.in_sync_at is not None else "never seen in sync"
    cause, fix = _cause(r, records, syncs, batches, len(differ), len(ref["p"]), label)
    who = f"rank {r} differs from rank {main[0]}" if known else f"ranks {r} and {main[0]} differ"
    worst = max((abs(a - b) / max(abs(a), 1e-12) for a, b in ((ref["p"][i], rec["p"][i]) for i in differ)), default=0.0)
    return [Finding(
        "TW409", "error",
        f"the ranks' weights drifted apart: {who} at step {step:,} ({since}); "
        f"{len(differ)} of {len(ref['p'])} parameter tensors differ (up to {worst:.2g} relative); {cause}",
        f"rank {r}: " + ", ".join(label[:4]) + (f" (+{len(label) - 4} more)" if len(label) > 4 else ""),
        {"rank": r, "ranks_apart": apart, "step": step, "in_sync_at": state.in_sync_at, "parameters": label[:50],
         "syncs": syncs, "batches": batches, "grad_norms": [rr.get("g") for rr in records], "max_relative_difference": worst},
        fix)]


def _who(groups: list[list[int]], syncs: list[int], batches: list[int]) -> tuple[list[int], list[int], bool]:
    """(ranks in sync, ranks apart, whether the split is known). The majority is in sync; with
    two ranks the counters decide: more batches than the other for the same optimizer steps (it
    skipped a step), else fewer gradient syncs (it skipped a sync)."""
    if len(syncs) > 2:
        return groups[0], [r for g in groups[1:] for r in g], True
    if batches[0] != batches[1]:
        r = 0 if batches[0] > batches[1] else 1
    elif syncs[0] != syncs[1]:
        r = 0 if syncs[0] < syncs[1] else 1
    else:
        return [0], [1], False
    return [1 - r], [r], True


def _cause(r: int, records: list[dict[str, Any]], syncs: list[int], batches: list[int], differ: int, total: int, label: list[str]) -> tuple[str, str]:
    others = [x for i, x in enumerate(syncs) if i != r]
    other_batches = [x for i, x in enumerate(batches) if i != r]
    if records[r].get("moved") or any(rec.get("moved") for rec in records):
        return ("parameters were moved after DistributedDataParallel wrapped them (see the TW409 finding on the move): "
                "their gradients are not averaged", "move the model to its device and dtype before wrapping it in DistributedDataParallel")
    if max(syncs) == 0:
        return ("no gradient sync was seen on any rank (no DistributedDataParallel pass, no all_reduce): every rank trains its own copy",
                "wrap the model in DistributedDataParallel (or all_reduce the gradients before every optimizer step)")
    if batches[r] != median(other_batches):
        return (f"rank {r} took {batches[r]} batches for the same optimizer steps, the others {int(median(other_batches))}: "
                "it skipped optimizer steps (or took extra batches) on its own",
                "decide to skip a step (a non-finite loss, a bad batch) from a value all ranks agree on (all_reduce it first), "
                "so that every rank skips together")
    if syncs[r] < median(others):
        return (f"rank {r} synchronized its gradients {syncs[r]} times, the others {int(median(others))}: it skipped a sync "
                "(a no_sync() or an all_reduce left out on that rank)",
                "take the same sync decisions on every rank: no rank-dependent no_sync()/all_reduce; decide skips from values all ranks share")
    if differ < total:
        return (f"only these parameters differ ({', '.join(label[:3])}): their gradients are not averaged across ranks "
                "(moved or replaced after DistributedDataParallel wrapped the model, or left out of the sync)",
                "move and build the model completely before wrapping it in DistributedDataParallel, and let every parameter "
                "that trains go through the wrapper")
    return ("the gradients or the updates differ between ranks at the same step",
            "check that every rank averages its gradients before each optimizer step and steps the same optimizer settings")


def _same_loss(step: int, records: list[dict[str, Any]], state: CompareState) -> list[Finding]:
    losses = [r.get("loss") for r in records]
    if any(not isinstance(v, (int, float)) or not math.isfinite(v) for v in losses):
        return []
    if len(set(losses)) == 1 and losses[0] != state.last_loss:
        state.same_loss += 1
    else:
        state.same_loss = 0
    state.last_loss = losses[0]
    if state.same_loss < 3 or state.same_loss_reported:
        return []
    state.same_loss_reported = True
    return [Finding(
        "TW411", "warning",
        f"every rank computed exactly the same loss at {state.same_loss} checks in a row (step {step:,}: {losses[0]:.6g}): "
        f"the ranks train on the same batches, so {len(records)} processes do the work of one",
        "DataLoader (sampler)", {"step": step, "loss": losses[0], "ranks": len(records)},
        "give the training DataLoader a DistributedSampler (sampler=DistributedSampler(dataset), shuffle in the sampler, "
        "sampler.set_epoch(epoch) each epoch)")]


def _straggler(step: int, records: list[dict[str, Any]], state: CompareState) -> list[Finding]:
    own = [r.get("own_ms") for r in records]
    if any(not isinstance(v, (int, float)) for v in own) or len(own) < 2:
        return []
    out = []
    for r, v in enumerate(own):
        others = median(x for i, x in enumerate(own) if i != r)
        wall = records[r].get("wall_ms") or 0.0
        if v > STRAGGLER * others and v - others > GAP * max(wall, 1e-9):
            state.slow[r] = state.slow.get(r, 0) + 1
        else:
            state.slow[r] = 0
        if state.slow[r] >= STRAGGLER_CHECKS and r not in state.straggler_reported:
            state.straggler_reported.add(r)
            wait = records[r].get("wait_ms") or 0.0
            why = (f"most of it waiting for batches ({wait:.3g} ms a step)" if wait > 0.5 * (v - others)
                   else "in its own forward/backward compute")
            out.append(Finding(
                "TW412", "warning",
                f"rank {r} is a straggler: {v:.3g} ms of its own work per step against {others:.3g} ms on the other ranks, "
                f"who wait for it in every gradient sync ({why}; {state.slow[r]} checks in a row up to step {step:,})",
                f"rank {r}", {"rank": r, "own_ms": own, "wait_ms": [rr.get("wait_ms") for rr in records], "step": step},
                "find what is slower on that rank: its data loading (workers, storage), its GPU (clocks, thermal, another "
                "job on it), uneven batches; give every rank the same work"))
    return out


class RankCheck(AddOn):
    """Posts this rank's record at the check steps; rank 0 also compares them."""

    def __init__(self, session: Any, ddp: Any) -> None:
        self.session, self.ddp = session, ddp
        self.rank, self.world = session.rank, session.world_size
        self.state = CompareState()
        self.pending: list[tuple[int, float, bool]] = []  # (step, posted at, regular check)
        self._grad: Any = None
        self._last = (time.perf_counter(), 0, 0.0, 0.0, 0.0)
        self._store: Any = None
        self._names: list[str] = []

    def due(self, step: int) -> bool:
        return step <= self.session.options.dense or step % self.session.options.rank_every == 0

    def _params(self) -> tuple[list[Any], list[str]]:
        """The parameters compared: the DDP-wrapped model's, else those the doctor's recorder tracks
        (the first optimizer's, named by their modules), else the first optimizer's."""
        w = self.ddp.current()
        module = w.module() if w is not None else None
        if module is not None:
            named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
            return [p for _, p in named], [n for n, _ in named]
        watch = self.session.window.watch if self.session.window is not None else None
        if watch is not None and watch._params:
            self._tracked = (list(watch._params), list(watch.result.param_names))
        if getattr(self, "_tracked", None):
            return self._tracked
        first = self.session.first
        params = [p for g in getattr(first, "param_groups", []) for p in g["params"]] if first is not None else []
        return params, [f"parameter {i}" for i in range(len(params))]

    def pre_step(self, optimizer: Any, first: bool) -> None:
        if not first or not self.due(self.session.step + 1):
            return
        import torch

        params, _ = self._params()
        grads = [p.grad for p in params if p.grad is not None and not p.grad.is_sparse]
        if grads and all(g.device == grads[0].device for g in grads):
            self._grad = torch.stack(torch._foreach_norm([g.float() for g in grads])).norm()

    def post_step(self) -> None:
        step = self.session.step
        if not self.due(step):
            return
        store = self._get_store()
        if store is None:
            return
        record = self._record(step)
        try:
            store.set(f"{KEY}/{step}/{self.rank}", json.dumps(record))
        except Exception:  # the store went away (the group is shutting down)
            return
        if self.rank == 0:
            self.pending.append((step, time.monotonic(), step % self.session.options.rank_every == 0))
            self._judge(store)

    def _get_store(self) -> Any:
        if self._store is None:
            import torch.distributed as dist

            if not dist.is_initialized():
                return None
            try:
                self._store = dist.distributed_c10d._get_default_store()
            except Exception:
                return None
        return self._store

    def _record(self, step: int) -> dict[str, Any]:
        import torch

        s = self.session
        params, self._names = self._params()
        with torch.no_grad():
            devices = {p.device for p in params}
            norms = torch.stack(torch._foreach_norm([p.detach().float() for p in params])).cpu().tolist() if params and len(devices) == 1 else []
        loss = s._last_loss
        loss_value = float(loss.detach().float().reshape(-1)[0]) if loss is not None and loss.numel() >= 1 else None
        t, steps, back, coll, wait = self._last
        now = time.perf_counter()
        n = max(1, s.step - steps)
        waited = (s.backward_s - back) + (self.ddp.collective_s - coll)
        wall = (now - t) / n
        self._last = (now, s.step, s.backward_s, self.ddp.collective_s, s.wait_s)
        sharded = any(type(p).__name__ in ("FlatParameter", "DTensor") for p in params)
        return {
            "s": step, "r": self.rank, "p": norms, "sig": hash(tuple(tuple(p.shape) for p in params)) % (2**31),
            "sharded": sharded, "moved": bool(self.ddp.current() and self.ddp.current().reported), "g": float(self._grad) if self._grad is not None else None, "loss": loss_value,
            "c": {"sync": self.ddp.synced + self.ddp.collectives.get("all_reduce", 0), "batches": s.batches, "backward": s.backwards},
            "wall_ms": wall * 1e3, "own_ms": max(0.0, wall - waited / n) * 1e3, "wait_ms": (s.wait_s - wait) / n * 1e3,
        }

    def _judge(self, store: Any) -> None:
        while self.pending:
            step, posted, regular = self.pending[0]
            keys = [f"{KEY}/{step}/{r}" for r in range(self.world)]
            try:
                ready = store.check(keys)
            except Exception:
                return
            if not ready:
                self._lagging(step, posted, keys, store)
                if len(self.pending) > 64:
                    self.pending.pop(0)
                    continue
                return
            self.pending.pop(0)
            try:
                records = [json.loads(store.get(k)) for k in keys]
                for k in keys:
                    store.delete_key(k)
            except Exception:
                return
            for f in compare(step, records, self.state, self._names, regular):
                self.session.report_finding(f, step=self.session.base + step)

    def _lagging(self, step: int, posted: float, keys: list[str], store: Any) -> None:
        waited = time.monotonic() - posted
        if waited < LAG_S:
            return
        for r, k in enumerate(keys):
            if r in self.state.lag_reported:
                continue
            try:
                arrived = store.check([k])
            except Exception:
                return
            if not arrived:
                self.state.lag_reported.add(r)
                self.session.report_finding(Finding(
                    "TW412", "warning",
                    f"rank {r} has not reached step {step:,} {waited:.0f} s after rank 0 did: it is stalled or far behind "
                    f"(its own log says where its main thread waits)", f"rank {r}",
                    {"rank": r, "step": step, "seconds_behind": round(waited, 1)},
                    "look at that rank: a hang in a collective the others did not enter, a dead data loader, a slow node"))

    def close(self) -> None:
        if self.rank == 0 and self._store is not None:
            self._judge(self._store)


__all__ = ["RankCheck", "compare", "CompareState"]

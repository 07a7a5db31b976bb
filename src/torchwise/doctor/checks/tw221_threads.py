"""More compute threads than the cores this process may use.

What: ``torch.get_num_threads()`` is compared with the cores this process may run on
(``os.sched_getaffinity``, which honours taskset/cgroup CPU sets). Reported when torch alone
uses more threads than there are cores, or when other busy processes of the same user that have
torch loaded (found in ``/proc``, each using at least a quarter of a core while the doctor ran)
would together with this one's threads exceed the cores. With a single thread there is nothing
to lower, so nothing is reported. ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are shown as evidence.
Measured as it happens: in a dynamics run (``steps >= 20``) on the CPU, up to 8 plain steps run
with 1 thread between steps at the default count; when the 1-thread steps have a median at
most ``FASTER`` of the default's, the threads are contending right now (whatever the cause:
other jobs, a noisy neighbour, a model too small to split) and it is reported. Measured on a
shared 2-core machine under a load average of about 7 (2026-11-23): the CNN with BatchNorm of
``tests/doctor/realistic.py`` took 363 ms a step with 2 threads and 60 ms with 1; its
transformer LM 816 ms and 116 ms. ``FASTER`` = 0.75 asks for a clear gap, well beyond the
step-to-step noise of a median over 8 steps.
Why: intra-op threads that outnumber cores preempt each other and spin in barriers; several jobs
each sized to the whole machine can run slower together than one after the other.
Example: four training scripts started at once on an 8-core machine, each with torch's default
of 8 threads; or ``torch.set_num_threads(32)`` inside a 4-CPU container.
Fix: ``torch.set_num_threads(cores // jobs)`` (``torchwise.set_threads``) or ``OMP_NUM_THREADS``
set before start; ``torchwise tune`` measures the best thread count.
"""

from __future__ import annotations

import os
import time

import torch

from torchwise.doctor.probe import usable_cores
from torchwise.doctor.report import Finding

CODES = ("TW221",)
SCRIPT = True  # the thread count check; the live A/B timing runs in Task mode only
BUSY_CORES = 0.25
FASTER = 0.75  # 1-thread median step time / default-thread median at or below this: contention


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def torch_processes() -> list[int]:
    """Other processes of this user that have libtorch mapped (Linux /proc; [] elsewhere)."""
    if not os.path.isdir("/proc"):
        return []
    uid, me = os.getuid(), os.getpid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != uid:
                continue
            with open(f"/proc/{entry}/maps") as f:
                if any("libtorch_cpu" in line for line in f):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def busy_peers(pids: list[int], before: dict[int, int], seconds: float) -> dict[int, float]:
    """pid -> cores used since ``before`` (only those above BUSY_CORES)."""
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out = {}
    for pid in pids:
        now = _cpu_ticks(pid)
        if now is None or pid not in before:
            continue
        used = (now - before[pid]) / hz / max(seconds, 1e-6)
        if used >= BUSY_CORES:
            out[pid] = round(used, 2)
    return out


def before(ctx) -> None:
    threads, cores = torch.get_num_threads(), usable_cores()
    if 1 < threads <= cores:
        pids = torch_processes()
        ctx.scratch["tw221"] = (time.perf_counter(), {p: t for p in pids if (t := _cpu_ticks(p)) is not None})


def check(ctx) -> list[Finding]:
    threads, cores = torch.get_num_threads(), usable_cores()
    evidence = {
        "torch_threads": threads,
        "usable_cores": cores,
        "cpu_count": os.cpu_count(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "MKL_NUM_THREADS": os.environ.get("MKL_NUM_THREADS"),
    }
    if threads > cores:
        return [Finding(
            "TW221", "warning",
            f"torch uses {threads} threads on {cores} usable core(s)",
            "torch.get_num_threads()", evidence,
            f"torch.set_num_threads({cores}) (or fewer when several jobs share the machine)",
        )]
    timing = getattr(getattr(ctx, "watch", None), "thread_timing", None)
    if timing and timing["median_step_ms_1_thread"] <= FASTER * timing["median_step_ms"]:
        evidence.update(timing)
        return [Finding(
            "TW221", "warning",
            f"steps ran faster with 1 thread ({timing['median_step_ms_1_thread']:.3g} ms) than with {timing['threads']} "
            f"({timing['median_step_ms']:.3g} ms), measured during the run: the threads contend for the cores",
            "torch.get_num_threads()", evidence,
            "use fewer threads: torch.set_num_threads(1) here (or cores // jobs when several jobs share the machine); `torchwise tune` measures it",
        )]
    started = ctx.scratch.get("tw221")
    if threads <= 1 or started is None:
        return []
    t0, ticks = started
    seconds = time.perf_counter() - t0
    if seconds < 0.25:  # too short for the tick resolution: measure a little longer
        time.sleep(0.25 - seconds)
        seconds = 0.25
    peers = busy_peers(list(ticks), ticks, seconds)
    if not peers or (len(peers) + 1) * threads <= cores:
        return []
    evidence.update({"busy_torch_processes": len(peers), "peer_cores_used": peers})
    share = max(1, cores // (len(peers) + 1))
    return [Finding(
        "TW221", "warning",
        f"{len(peers)} other busy torch process(es) of this user share {cores} core(s) with this one's {threads} threads",
        "torch.get_num_threads()", evidence,
        f"give each job its share: torch.set_num_threads({share}) or OMP_NUM_THREADS={share} before start",
    )]

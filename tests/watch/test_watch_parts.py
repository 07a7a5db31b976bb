"""The watch's parts without processes: bounded series and logs, alerts once, the long-run and
cross-rank checks on numbers, resuming, the end of a run read from its log, command planning."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from torchwise.doctor.report import Finding
from torchwise.core.errors import UsageError
from torchwise.watch.alerts import Findings, alert_line
from torchwise.watch.events import EventLog, Tail, read_events
from torchwise.watch.longrun import LongRun
from torchwise.watch.options import WatchOptions, rank_log_path
from torchwise.watch.ranks import CompareState, compare
from torchwise.watch.report import assemble
from torchwise.watch.resume import earlier_run, optimizer_step
from torchwise.watch.series import Series

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def test_series_stays_bounded_and_spans_the_run():
    s = Series(capacity=64)
    for step in range(1_000_000):
        s.add(step, float(step))
    assert len(s) <= 64 and s.steps[0] == 0 and s.steps[-1] > 900_000
    gaps = {b - a for a, b in zip(s.steps, s.steps[1:])}
    assert len(gaps) == 1  # evenly spaced after thinning


def test_event_log_thins_samples_and_survives_a_torn_line(tmp_path):
    log = EventLog(tmp_path / "e.jsonl")
    for i in range(20_000):
        log.sample(step=i, loss=float("nan") if i == 5 else 1.0)
    log.write("finding", code="TW112")
    log.close()
    events = read_events(tmp_path / "e.jsonl")
    samples = [e for e in events if e["event"] == "sample"]
    assert 1000 < len(samples) < 4000  # 20k samples logged as a few thousand
    assert samples[5]["loss"] == "nan" and events[-1]["code"] == "TW112"
    with open(tmp_path / "e.jsonl", "a") as f:
        f.write('{"event": "sample", "step": 9')  # a kill in the middle of a write
    assert len(read_events(tmp_path / "e.jsonl")) == len(events)


def test_tail_reads_only_new_whole_lines(tmp_path):
    path = tmp_path / "t.jsonl"
    tail = Tail(path)
    assert tail.read() == []
    path.write_text('{"event": "a"}\n{"event": "b"')
    assert [e["event"] for e in tail.read()] == ["a"]
    with open(path, "a") as f:
        f.write('}\n{"event": "c"}\n')
    assert [e["event"] for e in tail.read()] == ["b", "c"]


def _finding(code="TW131", severity="warning", where="fc1"):
    return Finding(code, severity, "dead units", where, {}, "lower the lr")


def test_findings_alert_once_and_again_when_worse():
    new = []
    f = Findings(new.append)
    f.add([_finding()], 10)
    f.add([_finding()], 50)
    f.add([_finding(where="fc2")], 60)
    f.add([_finding(severity="error")], 70)
    assert [(r["where"], r["severity"], r["step"]) for r in new] == [("fc1", "warning", 10), ("fc2", "warning", 60), ("fc1", "error", 70)]
    [first] = [x for x in f.as_findings() if x.where == "fc1"]
    assert first.severity == "error"
    line = alert_line({**new[0], "rank": 1, "world_size": 2})
    assert line.startswith("torchwise watch [rank 1]: step 10: TW131 warning: dead units [fc1]")


def test_earlier_findings_are_known_not_alerted():
    new = []
    f = Findings(new.append)
    f.known({"code": "TW131", "severity": "warning", "where": "fc1", "message": "m", "evidence": {}, "fix": "x", "step": 3})
    f.add([_finding()], 500)
    assert new == []


def test_options_refuse_bad_values():
    for bad in ({"every": 0}, {"stop_on": "fatal"}, {"stall": -1}, {"rank_every": 0}, {"budget": 2}):
        with pytest.raises(UsageError):
            WatchOptions(**bad)
    with pytest.raises(UsageError, match="unknown watch option"):
        WatchOptions.coerce({"evry": 3})
    assert WatchOptions.coerce(True).stop_on == "never"
    assert rank_log_path("runs/events.jsonl", 3, 4).name == "events.rank3.jsonl"
    assert rank_log_path("runs/events.jsonl", 0, 1).name == "events.jsonl"


def _windows(run, losses, start=0, width=100, **extra):
    out = []
    for i, v in enumerate(losses):
        step = start + (i + 1) * width
        out += run.add(step, step - width, {"loss": {"train.py:9": v}, "samples": 20, **extra})
    return out


def test_loss_spike_against_the_best_window_and_a_healthy_run_quiet():
    assert _windows(LongRun(), [2.0, 1.2, 0.8, 0.7, 0.72, 0.69, 0.75, 0.7]) == []
    found = _windows(LongRun(), [2.0, 1.2, 0.8, 0.7, 0.72, 2.6])
    assert [f.code for f in found] == ["TW134"] and "3.71x its best level" in found[0].message
    assert _windows(LongRun(), [-1.0, -2.0, -3.0, 5.0]) == []  # a loss that goes below zero (a critic) is not judged


def test_loss_after_a_restart_compared_with_before():
    run = LongRun()
    run.restarted(4000, [{"loss": {"train.py:9": 0.5}}, {"loss": {"train.py:9": 0.45}}])
    [f] = _windows(run, [1.6], start=4000)
    assert f.code == "TW134" and "after the restart at step 4,000" in f.message


def test_learning_rate_collapse_but_not_a_cosine_end():
    run = LongRun()
    found = []
    for i in range(20):  # stepped per batch: below 1e-3 of the peak from the 5th window on
        found += run.add((i + 1) * 100, i * 100, {"lrs": [1e-3 * 0.1 ** i], "samples": 20})
    assert [f.code for f in found] == ["TW133"] and "by step 500" in found[0].message
    cosine = LongRun()
    n = 100
    found = []
    for i in range(n):
        lr = 1e-3 * 0.5 * (1 + math.cos(math.pi * i / (n - 1)))
        found += cosine.add((i + 1) * 100, i * 100, {"lrs": [lr], "samples": 20})
    assert found == []
    zero = LongRun()  # an lr of 0 from the start is a fault of its own (the doctor's TW133), not an annealed schedule
    zero.add(100, 0, {"lrs": [0.0], "samples": 20})
    assert not zero.annealed() and cosine.annealed()


def test_loader_slowing_down_and_memory_growing():
    run = LongRun()
    found = []
    for i, share in enumerate([0.03, 0.04, 0.03, 0.05, 0.04, 0.45]):
        found += run.add((i + 1) * 100, i * 100, {"wait": share, "step_ms": 20.0, "samples": 20})
    assert [f.code for f in found] == ["TW222"] and "rose from 3%" in found[0].message
    tiny = LongRun()  # sub-millisecond fetches of a tiny model: no bottleneck whatever the share
    assert all(not tiny.add(i * 100, 0, {"wait": s, "step_ms": 1.0, "samples": 20}) for i, s in enumerate([0.03] * 3 + [0.5] * 4))
    grow = LongRun()
    found = []
    for i in range(12):
        found += grow.add((i + 1) * 100, i * 100, {"memory_mb": 400 + 40 * i, "samples": 20})
    assert [f.code for f in found][:1] == ["TW101"]
    flat = LongRun()
    assert all(not flat.add(i * 100, 0, {"memory_mb": 400 + (i % 3), "samples": 20}) for i in range(30))


def _rec(rank, p, sync=10, batches=10, loss=1.0, own=10.0, wall=20.0, wait=0.0):
    return {"r": rank, "p": p, "sig": 7, "sharded": False, "g": 1.0, "loss": loss,
            "c": {"sync": sync, "batches": batches, "backward": batches}, "own_ms": own, "wall_ms": wall, "wait_ms": wait}


def test_drift_names_the_rank_the_step_and_the_cause():
    state = CompareState()
    names = ["fc.weight", "fc.bias"]
    assert compare(5, [_rec(0, [1.0, 2.0], 5, 5), _rec(1, [1.0, 2.0], 5, 5)], state, names, False) == []
    [f] = compare(6, [_rec(0, [1.1, 2.0], 6, 6), _rec(1, [1.2, 2.0], 5, 6)], state, names, False)
    assert f.code == "TW409" and f.evidence["rank"] == 1 and "at step 6 (in sync at step 5)" in f.message
    assert "skipped a sync" in f.message and f.where == "rank 1: fc.weight"
    assert compare(7, [_rec(0, [1.3, 2.0]), _rec(1, [1.4, 2.0])], state, names, False) == []  # reported once
    skipped_step = compare(7, [_rec(0, [1.1, 2.1], 7, 7), _rec(1, [1.2, 2.0], 8, 8)], CompareState(), names, False)
    assert skipped_step[0].evidence["rank"] == 1 and "skipped optimizer steps" in skipped_step[0].message
    three = compare(3, [_rec(0, [1.0, 2.0]), _rec(1, [1.5, 2.0]), _rec(2, [1.0, 2.0])], CompareState(), names, False)
    assert three[0].evidence["ranks_apart"] == [1] and "rank 1 differs from rank 0" in three[0].message


def test_same_batches_on_every_rank_and_a_straggler():
    state = CompareState()
    found = []
    for step, loss in enumerate([1.3, 1.2, 1.1, 1.0]):
        found += compare(step, [_rec(0, [1.0], loss=loss), _rec(1, [1.0], loss=loss)], state, ["w"], False)
    assert [f.code for f in found] == ["TW411"]
    different = CompareState()
    assert all(not compare(s, [_rec(0, [1.0], loss=1.0 + s), _rec(1, [1.0], loss=1.1 + s)], different, ["w"], False) for s in range(5))
    slow = CompareState()
    found = []
    for step in (50, 100, 150, 200, 250):
        found += compare(step, [_rec(0, [1.0], own=20, wall=100), _rec(1, [1.0], own=90, wall=100, wait=70)], slow, ["w"], True)
    assert [f.code for f in found] == ["TW412"] and "rank 1 is a straggler" in found[0].message and "waiting for batches" in found[0].message
    noisy = CompareState()
    assert all(not compare(s, [_rec(0, [1.0], own=20, wall=40), _rec(1, [1.0], own=30, wall=40)], noisy, ["w"], True) for s in range(9))
    brief = CompareState()  # slow for a while (another job on the machine), then not
    assert all(not compare(s, [_rec(0, [1.0], own=20, wall=100), _rec(1, [1.0], own=90 if s < 4 else 20, wall=100)], brief, ["w"], True)
               for s in range(9))
    sharded = compare(1, [_rec(0, [1.0]), {**_rec(1, [2.0]), "sig": 8}], CompareState(), ["w"], False)
    assert sharded == []


def test_resume_reads_the_earlier_run(tmp_path):
    import torch

    assert earlier_run(tmp_path / "none.jsonl") is None
    log = EventLog(tmp_path / "e.jsonl")
    log.write("start", segment=0)
    log.write("finding", code="TW131", severity="warning", where="fc1", message="m", evidence={}, fix="f", step=40)
    log.write("window", step=400, loss={"a:1": 0.5})
    log.close()
    earlier = earlier_run(tmp_path / "e.jsonl")
    assert earlier.segments == 1 and earlier.last_step == 400 and len(earlier.findings) == 1
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([p])
    assert optimizer_step(opt) is None
    p.grad = torch.ones(3)
    for _ in range(3):
        opt.step()
    assert optimizer_step(opt) == 3


def _log(path: Path, *events: dict) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path


def test_the_end_read_from_the_log(tmp_path):
    finding = {"event": "finding", "code": "TW112", "severity": "error", "message": "NaN", "where": "fc", "evidence": {},
               "fix": "f", "step": 120}
    killed = _log(tmp_path / "k.jsonl", {"event": "start"}, {"event": "sample", "step": 130}, finding)
    out = assemble([killed], "train.py", -9)
    assert out.code == 137 and "killed by SIGKILL at step 130" in out.line and out.report.codes == ["TW112"]
    abrupt = assemble([_log(tmp_path / "a.jsonl", {"event": "start"}, {"event": "sample", "step": 7})], "train.py", 0)
    assert abrupt.code == 5 and "os._exit" in abrupt.line
    report = {"subject": "train.py", "ok": False, "failure": "ValueError: bad (at train.py:3)", "findings": [], "skipped": [],
              "measured": {"steps_run": 9}}
    failed = assemble([_log(tmp_path / "f.jsonl", {"event": "start"}, {"event": "end", "status": "failed", "exit_code": 1,
                                                                       "steps": 9, "report": report})], "train.py", 1)
    assert failed.code == 3 and "failed at step 9 (exit status 1): ValueError: bad" in failed.line
    untrained = assemble([_log(tmp_path / "u.jsonl", {"event": "start"}, {"event": "end", "status": "untrained", "steps": 0,
                                                                          "backward_calls": 0, "report": None})], "t.py", 0)
    assert untrained.code == 4 and "without a single optimizer step" in untrained.line
    spawned = assemble([_log(tmp_path / "s.jsonl", {"event": "start"}, {"event": "end", "status": "spawned", "steps": 0,
                                                                        "processes": ["t.py:9"], "report": None})], "t.py", 0)
    assert spawned.code == 6 and "torchrun" in spawned.line


def test_commands_planned_or_refused(tmp_path):
    from torchwise.watch.launch import plan

    script = tmp_path / "train.py"
    script.write_text("print(1)\n")
    log = tmp_path / "e.jsonl"
    p = plan(["python", str(script), "--lr", "1"], WatchOptions(), log)
    assert p.argv[1:4] == ["-m", "torchwise.watch.child", str(script)] and p.argv[-2:] == ["--lr", "1"] and not p.distributed
    assert json.loads(p.settings)["log"] == str(log)
    m = plan(["python", "-m", "pkg.train", "--x"], WatchOptions(), log)
    assert json.loads(m.settings)["module"] == "pkg.train" and m.argv[-1] == "--x"
    t = plan(["torchrun", "--nproc_per_node=2", str(script), "--lr", "x"], WatchOptions(), log)
    assert t.distributed and t.argv[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert t.argv[3:] == ["--nproc_per_node=2", "-m", "torchwise.watch.child", str(script), "--lr", "x"]
    for bad, match in ((["python", str(tmp_path / "missing.py")], "not found"), ([], "no command"),
                       (["torchrun", "--no-python", "ls"], "not Python"), (["ls", "-l"], "not a Python script")):
        with pytest.raises(UsageError, match=match):
            plan(bad, WatchOptions(), log)


def test_the_sampling_interval_prices_a_sample_by_its_mean_cost_and_the_slow_steps_after_it():
    import math

    from torchwise.watch.options import MAX_EVERY, MIN_EVERY, WatchOptions
    from torchwise.watch.session import AFTER, Session

    s = Session(WatchOptions(alerts=False, stall=0))
    assert s._auto_every() == MIN_EVERY  # nothing measured yet: sample often
    s._plain.extend([1e-3] * 100)
    s._sampled.extend([2e-3] * 9 + [20e-3])  # median 2 ms, but one sample in ten costs 20 ms: mean 3.8 ms
    s.samples = 10
    assert s._auto_every() == math.ceil((3.8e-3 - 1e-3) / (0.01 * 1e-3))  # 280, not the median's 100
    s._after.extend([1.5e-3] * (2 * AFTER))  # the steps after a sample run 0.5 ms slower
    assert s._auto_every() == math.ceil((3.8e-3 - 1e-3 + AFTER * 0.5e-3) / (0.01 * 1e-3))
    s.overhead_s = 10 * 5e-3  # the watch's own bookkeeping, 5 ms per sample
    expected = math.ceil((3.8e-3 - 1e-3 + AFTER * 0.5e-3 + 5e-3) / (0.01 * 1e-3))
    assert s._auto_every() == expected < MAX_EVERY
    s._sampled.clear()
    s._sampled.extend([500e-3] * 10)  # very costly samples: the interval is capped
    assert s._auto_every() == MAX_EVERY


def test_the_steps_just_after_a_sample_are_kept_apart_from_the_plain_steps():
    import torch
    from torch import nn

    from torchwise.watch.options import WatchOptions
    from torchwise.watch.session import AFTER, Session

    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    s = Session(WatchOptions(alerts=False, stall=0, every=10, dense=2, window=2), model=model, optimizers=[opt]).attach()
    try:
        for _ in range(40):
            loss = model(torch.randn(8, 4)).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        s.close()
    assert s.samples >= 4 and len(s._after) >= AFTER * 2
    assert len(s._plain) + len(s._after) + s.samples == 40  # every step is in exactly one of the three

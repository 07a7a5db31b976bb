"""Knob modules: documented, with literal catalog codes, and their plans (what applies, and why not)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from tune_fakes import cpu_ctx, cuda_ctx

import torchwise.tune.knobs as knobs_pkg
from torchwise.catalog import PRACTICES
from torchwise.core.errors import UsageError
from torchwise.tune.knobs import KNOB_NAMES, batch_size, load_knob, loader, select_knobs, threads

KNOB_DIR = Path(knobs_pkg.__file__).parent


@pytest.mark.parametrize("name", KNOB_NAMES)
def test_each_knob_module_is_documented_with_literal_codes(name):
    path = KNOB_DIR / f"{name}.py"
    tree = ast.parse(path.read_text())
    doc = ast.get_docstring(tree)
    assert doc and all(word in doc for word in ("What:", "Why:", "Example:", "Fix:")), name
    codes = [n.value for n in tree.body if isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "CODES" for t in n.targets)]
    assert len(codes) == 1 and isinstance(codes[0], ast.Tuple)
    values = ast.literal_eval(codes[0])
    assert values and all(code in PRACTICES for code in values), values
    # tuned practices only
    assert all(PRACTICES[c].tuned or c == "TW210" for c in values)
    module = load_knob(name)
    assert module.NAME == name and module.MODE in ("step", "loader") and module.PLANS


def test_every_tuned_practice_has_a_knob():
    covered = {c for name in KNOB_NAMES for c in load_knob(name).CODES}
    tuned = {code for code, p in PRACTICES.items() if p.tuned}
    assert tuned <= covered, tuned - covered


def test_select_knobs():
    assert [k.NAME for k in select_knobs()] == list(KNOB_NAMES)
    assert [k.NAME for k in select_knobs("loader, precision")] == ["precision", "loader"]
    with pytest.raises(UsageError, match="unknown tune knob 'fp8'"):
        select_knobs(["fp8"])


def test_thread_and_worker_counts():
    assert threads.counts(1) == [1]
    assert threads.counts(6) == [1, 2, 4, 6]
    assert threads.counts(8) == [1, 2, 4, 8]
    assert loader.worker_counts(2) == [0, 1, 2]
    assert loader.worker_counts(6) == [0, 1, 2, 4, 6]
    plan = threads.plan(cpu_ctx(cores=8), {"threads": 8})
    assert [c["threads"] for c in plan.candidates] == [4, 2, 1] and plan.stop_after_worse == 2
    assert "nothing to choose" in threads.plan(cpu_ctx(cores=1), {"threads": 1}).skipped[0][1]


def test_precision_plans():
    cpu = load_knob("precision").plan(cpu_ctx(bf16=False), {"precision": "32"})
    assert cpu.candidates == []
    assert dict(cpu.skipped)["precision=16-mixed"].startswith("fp16 with a GradScaler is a GPU setting")
    assert "bf16 instructions" in dict(cpu.skipped)["precision=bf16-mixed"]
    gpu = load_knob("precision").plan(cuda_ctx(), {"precision": "32"})
    assert gpu.candidates == [{"precision": "bf16-mixed"}, {"precision": "16-mixed"}]
    old = load_knob("precision").plan(cuda_ctx(bf16=False, device_name="Tesla T4"), {"precision": "32"})
    assert old.candidates == [{"precision": "16-mixed"}] and "Tesla T4" in dict(old.skipped)["precision=bf16-mixed"]


def test_gpu_only_knobs_say_why_on_cpu():
    ctx = cpu_ctx()
    for name, setting, word in (("cudnn_benchmark", "cudnn_benchmark", "CUDA"), ("tf32", "matmul_precision=high", "tensor-core")):
        plan = load_knob(name).plan(ctx, {})
        assert not plan.candidates and word in dict(plan.skipped)[setting]
    assert "cpu" in dict(batch_size.plan(ctx, {}).skipped)["batch_size"]
    assert "CUDA" in dict(loader.plan_pin(ctx, {}).skipped)["pin_memory"]


def test_tf32_needs_ampere():
    plan = load_knob("tf32").plan(cuda_ctx(cuda_capability=(7, 5)), {})
    assert "7.5" in dict(plan.skipped)["matmul_precision=high"]
    assert load_knob("tf32").plan(cuda_ctx(cuda_capability=(9, 0)), {}).candidates == [{"matmul_precision": "high"}]


def test_cudnn_benchmark_skipped_for_varying_shapes_and_no_conv():
    knob = load_knob("cudnn_benchmark")
    assert "vary" in dict(knob.plan(cuda_ctx(shapes_vary=True), {}).skipped)["cudnn_benchmark"]
    assert "no convolution" in dict(knob.plan(cuda_ctx(has_conv=False, conv_4d=False), {}).skipped)["cudnn_benchmark"]
    assert knob.plan(cuda_ctx(), {}).candidates == [{"cudnn_benchmark": True}]


def test_channels_last_needs_4d_conv():
    knob = load_knob("channels_last")
    assert "no 2-D convolution" in dict(knob.plan(cpu_ctx(has_conv=False, conv_4d=False), {}).skipped)["channels_last"]
    assert "not 4-D" in dict(knob.plan(cpu_ctx(has_conv=True, conv_4d=False), {}).skipped)["channels_last"]
    assert knob.plan(cpu_ctx(), {"channels_last": False}).candidates == [{"channels_last": True}]


def test_compile_problem_is_the_skip_reason():
    knob = load_knob("compile")
    assert dict(knob.plan(cpu_ctx(compile_problem="no C++ compiler found"), {}).skipped)["compile"] == "no C++ compiler found"


def test_loader_plans():
    ctx = cuda_ctx()
    assert loader.plan_workers(ctx, {"num_workers": 0}).candidates == [{"num_workers": n, "persistent_workers": True} for n in (1, 2, 4)]
    assert loader.plan_workers(ctx, {"num_workers": 2}).candidates[0] == {"num_workers": 0, "persistent_workers": False}
    assert loader.plan_pin(ctx, {"pin_memory": False}).candidates == [{"pin_memory": True}]
    assert "num_workers=0" in dict(loader.plan_persistent(ctx, {"num_workers": 0}).skipped)["persistent_workers"]
    assert loader.plan_persistent(ctx, {"num_workers": 2, "persistent_workers": True}).candidates == [{"persistent_workers": False}]
    assert loader.plan_persistent(ctx, {"num_workers": 2}).candidates == [{"persistent_workers": True}]
    it = loader.plan_workers(cpu_ctx(iterable_dataset=True), {"num_workers": 0})
    assert "IterableDataset" in dict(it.skipped)["num_workers"]


# ------------------------------------------------------------- batch-size bisection (pure)

@pytest.mark.parametrize("limit", [8, 13, 64, 100, 300, 777, 1000, 4095])
def test_largest_fitting_finds_the_largest_multiple_of_8(limit):
    probes = []

    def fits(n):
        probes.append(n)
        return n <= limit

    largest, history, complete = batch_size.largest_fitting(fits, start=64, cap=1 << 14)
    assert complete
    assert largest == limit // 8 * 8
    assert all(n % 8 == 0 for n in probes)
    assert [n for n, _ in history] == probes
    assert len(probes) <= 2 * 12  # doubling + bisection, logarithmic


def test_largest_fitting_respects_the_cap_and_start():
    largest, history, complete = batch_size.largest_fitting(lambda n: True, start=50, cap=1000)
    assert complete and largest == 1000 // 8 * 8
    assert history[0] == (56, True)  # the start rounded up to a multiple of 8
    assert batch_size.largest_fitting(lambda n: False, start=64, cap=1000)[0] is None
    assert batch_size.largest_fitting(lambda n: True, start=64, cap=5) == (None, [], True)


def test_largest_fitting_stops_when_a_probe_cannot_run():
    calls = []

    def fits(n):
        calls.append(n)
        return None if n >= 512 else True

    largest, history, complete = batch_size.largest_fitting(fits, start=64, cap=1 << 14)
    assert (largest, complete) == (256, False)
    assert history == [(64, True), (128, True), (256, True)]


def test_margin():
    assert batch_size.with_margin(1000) == 896
    assert batch_size.with_margin(64) == 56
    assert batch_size.with_margin(8) == 8
    assert batch_size.with_margin(16, margin=0.5) == 8
    assert all(batch_size.with_margin(n) % 8 == 0 for n in range(16, 5000, 8))

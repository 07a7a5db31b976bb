"""tune's report reads right: a setting that looks faster but was not kept says why, the step and
the loader rows are apart, plain text when piped, and the chart has one panel per way of measuring
and a legend for its colours."""

from __future__ import annotations

import argparse

import pytest
from tune_fakes import FakeClock, FakeMeasurer, cpu_ctx, tiny_cnn_task

from torchwise.tune import tune
from torchwise.tune.search import NOT_FASTER, REJECTED

BOX = set("┏┓┗┛┃━│─┡┩╇╋┳┻")


@pytest.fixture(scope="module")
def result():
    """threads=2 is 2% faster (inside the noise), bf16 is faster but moves the loss, channels_last
    and two workers are clearly faster."""
    clock = FakeClock()
    fake = FakeMeasurer(
        clock,
        factors={("threads", 2): 1.02, ("precision", "bf16-mixed"): 1.6, ("channels_last", True): 1.2},
        loader_factors={("num_workers", 2): 1.3},
        loss=lambda cfg: 2.9 if cfg["precision"] == "bf16-mixed" else 2.3,
        noise=0.05,
    )
    return tune(tiny_cnn_task(), budget_s=500, measure=fake, context=cpu_ctx(), clock=clock)


def test_a_setting_not_kept_says_why_beside_its_speed_up(result):
    rows = {r["setting"]: r for r in result.rows()}
    not_kept = [t for t in result.trials if t.status == NOT_FASTER and t.measurement is not None]
    assert not_kept
    for t in not_kept:
        verdict = rows[t.label]["verdict"]
        assert verdict.startswith("not kept: ") and "the best so far" in verdict, verdict
    threads = rows["threads=2"]
    assert threads["speed-up"] == "1.02x"
    assert "+2% against default (fp32, torch defaults), the best so far: within the measurement noise" in threads["verdict"]
    (bf16,) = [t for t in result.trials if t.status == REJECTED]
    assert bf16.speedup > 1.5 and rows[bf16.label]["verdict"].startswith("rejected: loss 2.9 against fp32 baseline 2.3")


def test_step_rows_come_before_loader_rows(result):
    modes = [r["measured"] for r in result.rows() if r["#"] != "-"]
    assert modes == sorted(modes, key=lambda m: m != "step") and {"step", "loader"} <= set(modes)


def test_plain_text_has_no_box_drawing_and_explains_the_columns(result):
    text = result.text()
    assert not BOX & set(text)
    lines = text.splitlines()
    assert lines[1].split() == ["#", "setting", "measured", "samples/s", "speed-up", "noise", "verdict"]
    assert "'loader' = end to end through the DataLoader" in text and text.endswith(result.summary())
    assert str(result) == text


def test_the_cli_prints_plain_tables_when_piped(result, monkeypatch, capsys):
    import torchwise.tune as tune_pkg
    from torchwise.tune import cli

    monkeypatch.setattr(tune_pkg, "tune", lambda *a, **k: result)
    monkeypatch.setattr("torchwise.core.task.load_task", lambda *a, **k: None)
    args = argparse.Namespace(task="t.py:task", task_arg=[], budget=5.0, out="-", plot=None, json=False, device="cpu",
                              knobs=None, max_batch_size=None, loss_rtol=0.05, quiet=True)
    assert cli.run(args) == 0
    out = capsys.readouterr().out
    assert "not kept: " in out and not BOX & set(out)


def test_the_chart_has_a_panel_per_measurement_and_a_legend(result, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    saved = []
    original = Figure.savefig

    def spy(self, *args, **kwargs):
        saved.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    path = result.plot(tmp_path / "speedups.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    (fig,) = saved
    assert [ax.get_xlabel().split("measured ")[1] for ax in fig.axes] == [
        "on the training step alone (batches already in memory)", "end to end through the DataLoader"]
    step_labels = {t.get_text() for t in fig.axes[0].get_yticklabels()}
    assert "threads=2" in step_labels and not any("num_workers" in label for label in step_labels)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "chosen (in tune.json)" in legend and any(text.startswith("not kept") for text in legend)
    assert any(text.startswith("rejected") for text in legend)


def test_step_settings_stand_when_no_time_is_left_to_measure_them_through_the_loader():
    """The loader's reference is affordable, the tuned step settings through the loader are not:
    the step-alone choice is kept (and said so), instead of silently falling back to the defaults."""
    clock = FakeClock()
    fake = FakeMeasurer(clock, factors={("channels_last", True): 1.5}, loader_factors={("num_workers", 2): 1.3},
                        cost=lambda spec: 30.0 if spec.mode == "loader" else 1.0)
    res = tune(tiny_cnn_task(), budget_s=60, measure=fake, context=cpu_ctx(), clock=clock, knobs="channels_last,loader")
    assert res.basis == "step" and res.config.channels_last is True and res.speedup == pytest.approx(1.5)
    assert any("tuned step settings" in s.setting and "not enough time" in s.reason for s in res.skipped)
    rows = {r["setting"]: r["verdict"] for r in res.rows()}
    assert rows["channels_last=True"] == "chosen"


def test_a_faster_step_setting_left_out_of_the_final_choice_does_not_read_as_kept(result):
    from torchwise.tune.report import verdict

    (faster,) = [t for t in result.trials if t.label == "tuned step settings, default loader"]
    assert not faster.chosen and result.in_final(faster)  # the workers were added on top of it
    assert verdict(faster, result.in_final(faster)) == "faster: kept, later settings build on it"
    assert verdict(faster, in_final=False).startswith("faster at its stage, but not in the final settings")

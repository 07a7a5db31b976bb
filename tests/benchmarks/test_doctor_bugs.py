"""The doctor bug corpus is consistent and its harness scores reports correctly (no corpus run here)."""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from torchwise.catalog import PRACTICES

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
CORPUS = BENCH / "doctor_bugs"
sys.path.insert(0, str(BENCH))

import _doctor_bugs_public as public  # noqa: E402
import _doctor_bugs_score as scoring  # noqa: E402
import doctor_bugs  # noqa: E402

MANIFEST = json.loads((CORPUS / "manifest.json").read_text())
PAIRS = MANIFEST["pairs"]
CODES = set(PRACTICES)
# the classes of issue 19 (items 1 and 2) the corpus must cover, each with several pairs
REQUIRED = {
    "grads_not_cleared", "eval_in_train_mode", "kept_loss", "optimizer_no_effect", "lr_too_high", "unshuffled",
    "bad_init", "bad_label_late", "labels_out_of_range", "softmax_before_ce", "lr_zero_group", "param_left_out",
    "dead_relu", "bn_batch_one",
}


def header_and_body(path: Path) -> tuple[list[str], list[str]]:
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if not line.startswith("#"))
    return lines[:n], lines[n:]


def test_manifest_lists_exactly_the_pair_folders():
    on_disk = {d.name for d in (CORPUS / "pairs").iterdir() if d.is_dir()}
    assert sorted(on_disk) == sorted(p["id"] for p in PAIRS)
    assert len(PAIRS) >= 25


@pytest.mark.parametrize("pair", PAIRS, ids=[p["id"] for p in PAIRS])
def test_pair_is_cited_and_its_twins_differ_only_by_the_fix(pair):
    assert pair["class"] in MANIFEST["classes"]
    assert pair["sources"] and pair["bug"] and pair["fix"]
    for source in pair["sources"]:
        assert re.match(r"https://\S+$", source["url"]) and len(source["saw"]) > 20
    expected = pair.get("expected", MANIFEST["classes"][pair["class"]]["codes"])
    assert set(expected) <= CODES and set(pair.get("also_ok", [])) <= CODES
    buggy, fixed = CORPUS / "pairs" / pair["id"] / "buggy.py", CORPUS / "pairs" / pair["id"] / "fixed.py"
    (head_b, body_b), (head_f, body_f) = header_and_body(buggy), header_and_body(fixed)
    assert head_b == head_f, "the twins share one header comment"
    head = "\n".join(head_b)
    assert f'pair "{pair["id"]}"' in head and f"class: {pair['class']}" in head
    assert all(s["url"] in head for s in pair["sources"])
    changed = [d for d in difflib.unified_diff(body_b, body_f, lineterm="", n=0) if d[:1] in "+-" and d[:3] not in ("+++", "---")]
    assert 0 < len(changed) <= 8, f"{len(changed)} changed lines"
    for path in (buggy, fixed):
        ast.parse(path.read_text(), filename=str(path))
        assert "torchwise" not in path.read_text().split("\n", len(head_b))[-1], "the scripts are plain PyTorch"


def test_every_class_is_covered_with_several_pairs_and_the_special_cases_exist():
    per_class = {c: sum(p["class"] == c for p in PAIRS) for c in MANIFEST["classes"]}
    assert REQUIRED <= set(per_class)
    assert all(per_class[c] >= 2 for c in REQUIRED), per_class
    tags = {t for p in PAIRS for t in p.get("tags", [])}
    assert {"intended_accumulation", "two_models", "hand_update", "gan"} <= tags


def test_public_manifest_names_commits_and_data_rules_and_commits_no_code():
    entries = public.load_public()
    assert len(entries) >= 10 and len({e["id"] for e in entries}) == len(entries)
    for e in entries:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", e["repo"]) and re.fullmatch(r"[0-9a-f]{40}", e["commit"])
        assert e["path"].endswith(".py") and e["data"]
        assert set(e.get("files", [])) <= set(public.FILES)
    ours = {p.relative_to(CORPUS / "public").parts[0] for p in (CORPUS / "public").rglob("*") if p.is_file()}
    assert ours == {"fakevision"}, "only our own stand-in lives under public/"


def test_public_substitutions_must_match(tmp_path):
    repo = tmp_path / "pub" / "someone+demo" / "ex"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text("data = load('mnist')\n")
    entry = {"id": "demo", "repo": "someone/demo", "commit": "0" * 40, "path": "ex/train.py",
             "substitutions": [{"find": "load('mnist')", "replace": "load('fake')"}]}
    script = public.prepare(entry, tmp_path / "pub", tmp_path / "work")
    assert script.read_text() == "data = load('fake')\n" and script.parent == tmp_path / "work" / "repo" / "ex"
    entry["substitutions"][0]["find"] = "load('cifar')"
    with pytest.raises(ValueError, match="substitution text not found"):
        public.prepare(entry, tmp_path / "pub", tmp_path / "work2")


def test_fake_torchvision_serves_shaped_shuffled_learnable_data(monkeypatch):
    monkeypatch.syspath_prepend(str(public.FAKEVISION))
    for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
        monkeypatch.delitem(sys.modules, name)
    from torchvision import datasets, transforms

    mnist = datasets.MNIST("../data", train=True, download=True, size=200,
                           transform=transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.13,), (0.31,))]))
    image, label = mnist[0]
    assert image.shape == (1, 28, 28) and 0 <= label < 10 and mnist.data.shape == (200, 28, 28)
    targets = mnist.targets.tolist()
    assert len(set(targets)) == 10 and targets != sorted(targets), "labels in random order, as in the real data"
    cifar = datasets.CIFAR10("x", size=50, transform=transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.Resize(64)]))
    assert cifar[1][0].shape == (3, 64, 64) and cifar.data.shape == (50, 32, 32, 3) and isinstance(cifar.targets, list)
    test = datasets.MNIST(train=False, size=200)
    means = torch.stack([mnist.images[mnist.targets == c].mean(0) for c in range(10)]).flatten(1)
    nearest = torch.cdist(test.images.flatten(1), means).argmin(1)
    assert (nearest == test.targets).float().mean() > 0.3, "learnable: the nearest class mean beats chance (0.1) by far"


# ----------------------------------------------------------------------------- scoring


def f(code: str, severity: str = "warning") -> dict:
    return {"code": code, "severity": severity}


def run(kind: str, id: str, findings: list[dict], error: str | None = None) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, id=id, cls=None, findings=findings, error=error)


@pytest.mark.parametrize("findings, expected, status", [
    ([f("TW110", "error"), f("TW134")], ["TW110"], "found-first"),
    ([f("TW134", "error"), f("TW110")], ["TW110"], "found"),
    ([f("TW115", "hint")], ["TW115"], "hint-only"),
    ([f("TW134")], ["TW110"], "wrong-cause"),
    ([f("TW209", "hint")], ["TW110"], "missed"),
    ([], ["TW110"], "missed"),
    ([f("TW134")], [], "unmapped"),
])
def test_score_buggy_statuses(findings, expected, status):
    assert scoring.score_buggy(findings, expected)["status"] == status


def test_secondary_codes_do_not_make_a_wrong_cause():
    assert scoring.score_buggy([f("TW131")], ["TW140"], also_ok=["TW131"])["status"] == "symptom-only"
    verdict = scoring.score_buggy([f("TW140"), f("TW131"), f("TW202")], ["TW140"], also_ok=["TW131"])
    assert verdict["status"] == "found-first" and verdict["other"] == ["TW202"]


def test_score_aggregates_a_made_up_result_set():
    manifest = {
        "classes": {"a": {"codes": ["TW110"]}, "b": {"codes": []}, "c": {"codes": ["TW106"]}},
        "pairs": [{"id": "p1", "class": "a"}, {"id": "p2", "class": "a"}, {"id": "p3", "class": "b"},
                  {"id": "p4", "class": "c", "expected": ["TW102"]}],
    }
    runs = [
        run("buggy", "p1", [f("TW110", "error")]), run("fixed", "p1", [f("TW209", "hint")]),
        run("buggy", "p2", [f("TW134")]), run("fixed", "p2", [f("TW134")]),
        run("buggy", "p3", [f("TW135")]), run("fixed", "p3", []),
        run("buggy", "p4", [f("TW106")], error="timeout after 300 s"), run("fixed", "p4", [], error="no report (exit 2)"),
        run("clean", "s1", [f("TW130")]), run("clean", "s2", [f("TW202", "hint")]),
        SimpleNamespace(kind="clean", id="s3", cls=None, findings=[], error=None, measured={"steps_run": 3}, failure="ValueError: x"),
    ]
    result = scoring.score(runs, manifest, mapping={})
    assert result["classes"]["a"]["status"] == {"found-first": 1, "wrong-cause": 1}
    assert result["classes"]["a"]["fixed_alarms"] == 1 and result["classes"]["a"]["fixed_codes"] == {"TW134": 1}
    assert result["classes"]["c"]["status"] == {"run-error": 1} and result["classes"]["c"]["fixed_alarms"] == 1
    o = result["overall"]
    assert (o["found"], o["found_first"], o["mapped"]) == (1, 1, 3)
    assert (o["fixed_false_alarms"], o["fixed_run_errors"], o["clean_false_alarms"]) == (1, 1, 1)
    assert o["false_alarm_codes"] == {"TW134": 1, "TW130": 1} and o["stopped"] == ["s3"]
    assert result["clean"]["s3"] == {"error": None, "quiet": True, "alarms": [], "steps": 3, "failure": "ValueError: x"}
    mapped = scoring.score(runs, manifest, mapping={"b": ["TW135"]})
    assert mapped["pairs"]["p3"]["buggy"]["status"] == "found-first"
    text = scoring.render(result, "header", ["a note"])
    assert "root cause found: 1/3" in text and "unmapped classes" in text and "a note" in text
    assert "stopped with an error under the doctor: s3" in text


def test_map_option_checks_class_names():
    assert doctor_bugs.parse_map(["lr_too_high=tw140, TW134"], MANIFEST["classes"]) == {"lr_too_high": ["TW140", "TW134"]}
    with pytest.raises(SystemExit, match="CLASS=CODE"):
        doctor_bugs.parse_map(["no_such_class=TW140"], MANIFEST["classes"])


# ----------------------------------------------------------------------------- running, with a stand-in doctor


def stub_args(tmp_path: Path, body: str) -> Namespace:
    stub = tmp_path / "fake_torchwise"
    stub.write_text(f"#!{sys.executable}\nimport json, sys, time\n{body}\n")
    stub.chmod(0o755)
    return Namespace(torchwise=str(stub), python=sys.executable, doctor_arg=[], threads=1, public=None, max_rss_gb=4.0, plain=False)


def test_runner_parses_the_report_and_passes_the_script(tmp_path):
    args = stub_args(tmp_path, "print(json.dumps({'findings': [{'code': 'TW110', 'severity': 'error', 'message': sys.argv[-1]}],"
                               " 'failure': None, 'measured': {'argv': sys.argv[1:4]}}))")
    job = doctor_bugs.Job("buggy", "p", "a", script=tmp_path / "train.py", timeout=60)
    result = doctor_bugs.run_job(job, args)
    assert result.error is None and result.findings[0]["code"] == "TW110"
    assert result.findings[0]["message"].endswith("train.py") and result.measured["argv"] == ["doctor", "--json", "--"]


def test_runner_reports_a_timeout_and_a_missing_report(tmp_path):
    slow = doctor_bugs.run_job(doctor_bugs.Job("fixed", "p", "a", script=tmp_path / "t.py", timeout=1),
                               stub_args(tmp_path, "time.sleep(30)"))
    assert slow.error == "timeout after 1 s" and slow.seconds < 10
    silent = doctor_bugs.run_job(doctor_bugs.Job("fixed", "p", "a", script=tmp_path / "t.py", timeout=60),
                                 stub_args(tmp_path, "print('Traceback: boom', file=sys.stderr); sys.exit(2)"))
    assert silent.error == "no report (exit 2)" and "boom" in silent.output_tail


def test_plain_mode_runs_the_script_alone_and_keeps_its_final_line(tmp_path):
    good, bad = tmp_path / "fixed.py", tmp_path / "buggy.py"
    good.write_text("print('epoch 1')\nprint('final: test_acc=0.9')\n")
    bad.write_text("raise IndexError('Target 10 is out of bounds.')\n")
    args = Namespace(python=sys.executable, threads=1, public=None, max_rss_gb=4.0, plain=True)
    runs = [doctor_bugs.run_job(doctor_bugs.Job(kind, "p", "a", script=path, timeout=60), args)
            for kind, path in (("buggy", bad), ("fixed", good))]
    assert runs[1].measured == {"exit_status": 0, "final": "test_acc=0.9"} and runs[0].exit_code == 1
    row = scoring.render_plain(runs, "header").splitlines()[-1]
    assert row.split()[:2] == ["p", "exit"] and "IndexError: Target 10 is out of bounds." in row and row.endswith("test_acc=0.9")

"""``torchwise demo``: its steps, its folder (never a user's files), and a run from a built wheel
installed in a fresh environment, away from the source tree."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from torchwise import cli
from torchwise.cli import demo
from torchwise.core.errors import UsageError

pytestmark = pytest.mark.needs_torch  # the demo checks for torch and scikit-learn first
ROOT = Path(__file__).resolve().parents[2]


def demo_args(folder: Path, **kw) -> argparse.Namespace:
    return argparse.Namespace(**{"dir": str(folder), "epochs": 1, "budget": 5.0, "steps": "train,lint,doctor,tune", **kw})


def test_each_planned_step_parses_with_the_real_command(tmp_path):
    for title, argv, _what, _ok in demo.plan(tmp_path, epochs=2, budget=7):
        name, rest = argv[0], argv[1:]
        module = cli.importlib.import_module(cli.COMMANDS[name][0])
        parser = argparse.ArgumentParser(prog=f"torchwise {name}")
        module.add_arguments(parser)
        parsed = parser.parse_args(rest)  # SystemExit on any argument the command does not have
        assert name == title and parsed is not None


def test_steps_are_announced_and_run_in_order(tmp_path, capsys):
    calls: list[list[str]] = []
    status = {"lint": 1, "doctor": 1}  # findings are the point of those two steps

    def dispatch(argv: list[str]) -> int:
        calls.append(argv)
        assert (tmp_path / "demo" / "digits_script.py").is_file()  # copied before any step runs
        return status.get(argv[0], 0)

    assert demo.run(demo_args(tmp_path / "demo"), dispatch=dispatch) == 0
    assert [c[0] for c in calls] == ["train", "lint", "doctor", "tune"]
    out = capsys.readouterr().out
    assert "=== [1/4] train:" in out and "=== [4/4] tune:" in out
    assert "$ torchwise train torchwise.examples.digits:task --epochs 1" in out
    assert f"$ torchwise doctor --steps 30 -- python {tmp_path / 'demo' / 'digits_script.py'}" in out
    assert "Done. Everything is in" in out


def test_a_failing_step_stops_the_demo_with_its_status(tmp_path, capsys):
    calls = []

    def dispatch(argv: list[str]) -> int:
        calls.append(argv[0])
        return 2

    assert demo.run(demo_args(tmp_path / "demo"), dispatch=dispatch) == 2
    assert calls == ["train"]
    assert "step 'train' ended with exit status 2" in capsys.readouterr().err


def test_only_the_chosen_steps_run(tmp_path, capsys):
    calls = []
    assert demo.run(demo_args(tmp_path / "d", steps="lint"), dispatch=lambda a: calls.append(a[0]) or 1) == 0
    assert calls == ["lint"] and "[1/1] lint" in capsys.readouterr().out
    with pytest.raises(UsageError, match="unknown step"):
        demo.run(demo_args(tmp_path / "d", steps="lint,deploy"), dispatch=lambda a: 0)


def test_a_folder_with_other_files_is_refused_and_left_alone(tmp_path):
    mine = tmp_path / "work"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(UsageError, match="torchwise demo did not write"):
        demo.run(demo_args(mine), dispatch=lambda a: 0)
    assert (mine / "thesis.tex").read_text() == "years of work"


def test_an_earlier_demo_folder_is_emptied(tmp_path):
    folder = tmp_path / "demo"
    assert demo.run(demo_args(folder, steps="lint"), dispatch=lambda a: 0) == 0
    (folder / "left-over.txt").write_text("from the earlier run")
    assert demo.run(demo_args(folder, steps="lint"), dispatch=lambda a: 0) == 0
    assert not (folder / "left-over.txt").exists() and (folder / demo.MARK).is_file()


# ------------------------------------------------------------------------------------------
# from a wheel, in a fresh environment
# ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the source tree (so the checkout gets no build files)."""
    tree = tmp_path_factory.mktemp("tree")
    for name in ("pyproject.toml", "README_PYPI.md", "LICENSE"):
        shutil.copy(ROOT / name, tree / name)
    shutil.copytree(ROOT / "src", tree / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__"))
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(tree)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (path,) = out.glob("torchwise-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_ships_the_examples_license_and_a_short_description(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
    assert {"torchwise/examples/digits.py", "torchwise/examples/digits_script.py.txt", "torchwise/py.typed"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert "License-Expression: MIT" in meta and "Classifier: Programming Language :: Python :: 3.11" in meta
    assert "Project-URL: Source, https://github.com/torchwise/torchwise" in meta
    assert "Requires-Dist: torch" in meta and all("extra ==" in line for line in meta.splitlines() if line.startswith("Requires-Dist: torch"))
    description = meta.split("\n\n", 1)[1]
    assert len(description) < 5000  # not the whole README
    links = [link for link in re.findall(r"\]\(([^)]+)\)|(https?://\S+)", description) for link in link if link]
    assert links and all(link.startswith("https://") for link in links), links


@pytest.mark.slow
def test_the_demo_runs_from_the_installed_wheel(wheel, tmp_path):
    """The wheel in a fresh venv (torch, NumPy and scikit-learn borrowed from this environment's
    site-packages through a .pth file), run from a folder with no source tree in sight."""
    import site
    import venv

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    py = env_dir / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", "--no-index", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    (Path(purelib) / "_borrowed_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    where = subprocess.run([str(py), "-c", "import torchwise; print(torchwise.__file__)"], capture_output=True, text=True, cwd=tmp_path)
    assert where.stdout.startswith(purelib), where.stdout  # the wheel's copy, not the source tree
    run = subprocess.run([str(env_dir / "bin" / "torchwise"), "demo", "--dir", "demo", "--epochs", "1", "--steps", "train,lint"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "=== [1/2] train:" in run.stdout and "trained" in run.stdout
    assert "TW102" in run.stdout and "TW209" in run.stdout  # lint found the shipped script's mistakes
    assert (tmp_path / "demo" / "digits_script.py").is_file() and (tmp_path / "demo" / "train").is_dir()

"""The command dispatcher: help, version, unknown commands, one-line errors."""

from __future__ import annotations

import argparse
import types

import pytest

from torchwise import cli
from torchwise.core.errors import UsageError


def test_help_lists_every_command(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert f"  {name}" in out


def test_no_arguments_prints_usage_and_fails(capsys):
    assert cli.main([]) == 2
    assert "usage: torchwise" in capsys.readouterr().out


def test_unknown_command_suggests_near_match(capsys):
    assert cli.main(["lnt"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'lnt'" in err and "lint" in err


def test_version(capsys):
    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("torchwise ")


def test_torchwise_error_becomes_one_line_exit_2(monkeypatch, capsys):
    fake = types.ModuleType("fake_cmd")

    def add_arguments(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("x")

    def run(args) -> int:
        raise UsageError(f"bad value {args.x!r}; expected a number")

    fake.add_arguments, fake.run = add_arguments, run
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_cmd", "a fake command"))
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: fake)
    assert cli.main(["fake", "abc"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "torchwise fake: error: bad value 'abc'; expected a number"


def test_every_command_module_has_the_entry_points():
    import importlib

    for name, (module_name, _) in cli.COMMANDS.items():
        module = importlib.import_module(module_name)
        assert hasattr(module, "run"), f"{module_name} lacks run() for 'torchwise {name}'"
        assert hasattr(module, "add_arguments") or hasattr(module, "add_arguments_for")


@pytest.mark.parametrize("cmd", ["rules", "lint"])
def test_light_commands_do_not_import_torch(cmd, tmp_path, run_cli):
    """Start-up time: `torchwise rules` and `torchwise lint` never import torch."""
    import subprocess
    import sys

    (tmp_path / "ok.py").write_text("x = 1\n")
    args = [cmd] if cmd == "rules" else [cmd, str(tmp_path / "ok.py")]
    code = (
        "import sys, runpy; sys.argv = ['torchwise', *%r];"
        "from torchwise.cli import main; rc = main(sys.argv[1:]);"
        "print('TORCH' if 'torch' in sys.modules else 'NOTORCH')" % (args,)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert out.strip().endswith("NOTORCH")


def _fake_command(monkeypatch, error: BaseException) -> None:
    fake = types.ModuleType("fake_cmd")

    def run(args) -> int:
        raise error

    fake.add_arguments, fake.run = (lambda parser: None), run
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_cmd", "a fake command"))
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: fake)


@pytest.mark.parametrize("error, expected", [
    (PermissionError(13, "Permission denied", "/data/ro/x.py"), "/data/ro/x.py: permission denied"),
    (IsADirectoryError(21, "Is a directory", "out"), "out: is a directory"),
    (FileExistsError(17, "File exists", "runs/log"), "runs/log: file exists"),
    (FileNotFoundError(2, "No such file or directory", "/proc/nope/x.txt"), "/proc/nope/x.txt: no such file or directory"),
    (OSError(28, "No space left on device"), "no space left on device"),
])
def test_os_errors_about_paths_become_one_line_exit_2(monkeypatch, capsys, error, expected):
    _fake_command(monkeypatch, error)
    assert cli.main(["fake"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"torchwise fake: error: {expected}"


@pytest.mark.parametrize("error", [
    TypeError("unsupported operand type(s) for +: 'int' and 'str'"),  # a bug: keep the traceback
    OSError(22, "Invalid argument"),  # not about the user's files: could be ours
    ConnectionResetError(104, "Connection reset by peer"),
])
def test_real_bugs_are_not_hidden(monkeypatch, error):
    _fake_command(monkeypatch, error)
    with pytest.raises(type(error)):
        cli.main(["fake"])


def test_interrupt_exit_status_follows_the_signal(monkeypatch, capsys):
    _fake_command(monkeypatch, KeyboardInterrupt())
    assert cli.main(["fake"]) == 130
    assert capsys.readouterr().err.strip() == "torchwise fake: interrupted"
    term = KeyboardInterrupt("interrupted by SIGTERM; checkpoint saved")
    term.signum = 15
    _fake_command(monkeypatch, term)
    assert cli.main(["fake"]) == 143
    assert capsys.readouterr().err.strip() == "torchwise fake: interrupted by SIGTERM; checkpoint saved"


def _warning_command(monkeypatch, category) -> None:
    import warnings

    fake = types.ModuleType("fake_cmd")

    def run(args) -> int:
        warnings.warn("this tune.json was made for\n   another model", category)
        return 0

    fake.add_arguments, fake.run = (lambda parser: None), run
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake_cmd", "a fake command"))
    monkeypatch.setattr(cli.importlib, "import_module", lambda name: fake)


def test_user_warnings_are_one_line_and_the_hook_is_restored(monkeypatch, capsys):
    import warnings

    _warning_command(monkeypatch, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        before = warnings.showwarning
        assert cli.main(["fake"]) == 0
        assert warnings.showwarning is before
    assert capsys.readouterr().err == "torchwise fake: warning: this tune.json was made for another model\n"


def test_other_warning_categories_go_to_the_usual_hook(monkeypatch, capsys):
    import warnings

    _warning_command(monkeypatch, DeprecationWarning)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert cli.main(["fake"]) == 0
    assert [w.category for w in caught] == [DeprecationWarning]
    assert caught[0].filename.endswith("test_dispatch.py")  # the location is kept
    assert capsys.readouterr().err == ""


# a missing optional dependency inside a command: the extra that brings it


def test_a_task_needing_scikit_learn_names_the_examples_extra(monkeypatch, capsys):
    from torchwise.core.errors import TaskError

    try:
        try:
            raise ModuleNotFoundError("No module named 'sklearn'", name="sklearn")
        except ModuleNotFoundError as cause:
            raise TaskError("building task 'digits.py:task' failed: ModuleNotFoundError: No module named 'sklearn'") from cause
    except TaskError as exc:
        error = exc
    _fake_command(monkeypatch, error)
    assert cli.main(["fake"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.strip().endswith("No module named 'sklearn' (scikit-learn is not installed: pip install 'torchwise[examples]')")


def test_a_missing_module_that_is_not_ours_keeps_its_traceback(monkeypatch):
    _fake_command(monkeypatch, ModuleNotFoundError("No module named 'torchwise.nope'", name="torchwise.nope"))
    with pytest.raises(ModuleNotFoundError):
        cli.main(["fake"])

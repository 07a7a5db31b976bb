"""The command dispatcher: help, version, unknown commands, one-line errors."""

from __future__ import annotations

import argparse
import types

import pytest

from torchwise import cli
from torchwise.errors import UsageError


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

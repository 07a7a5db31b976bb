"""The engine: name resolution, def-use, positions, noqa, and surviving any input."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest

from torchwise.lint import SYNTAX_CODE, lint_source
from torchwise.lint.engine import build_context

HERE = Path(__file__).parent


def _call(ctx, name):
    return ctx.calls_named(name)[0]


def test_qualname_through_every_import_form():
    src = (
        "import torch\nimport torch.nn as nn\nfrom torch import nn as tnn\nimport torch.nn.functional as F\n"
        "from torch.utils.data import DataLoader as DL\nfrom torch.nn.parallel import DataParallel\n"
        "a = torch.nn.Linear\nb = nn.Linear\nc = tnn.Linear\nd = F.cross_entropy\ne = DL\nf = DataParallel\n"
        "g = torch.nn.modules.loss.CrossEntropyLoss\nh = unknown.thing\n"
    )
    ctx = build_context(src, "x.py")
    values = {n.targets[0].id: n.value for n in ctx.tree.body if isinstance(n, ast.Assign)}
    assert ctx.qualname(values["a"]) == "torch.nn.Linear"
    assert ctx.qualname(values["b"]) == "torch.nn.Linear"
    assert ctx.qualname(values["c"]) == "torch.nn.Linear"
    assert ctx.qualname(values["d"]) == "torch.nn.functional.cross_entropy"
    assert ctx.qualname(values["e"]) == "torch.utils.data.DataLoader"
    assert ctx.qualname(values["f"]) == "torch.nn.DataParallel"  # canonical re-export
    assert ctx.qualname(values["g"]) == "torch.nn.CrossEntropyLoss"
    assert ctx.qualname(values["h"]) is None
    assert [c.lineno for c in ctx.calls_to("torch.utils.data.DataLoader")] == []


def test_calls_to_finds_aliased_calls_only():
    src = "from torch import load as tl\nimport pickle\nx = tl(f)\ny = pickle.load(f)\nz = load(f)\n"
    ctx = build_context(src, "x.py")
    assert [c.lineno for c in ctx.calls_to("torch.load")] == [3]


def test_binding_at_sees_the_last_binding_before_the_use():
    src = "def f(x):\n    y = g(x)\n    a = y\n    y = h(x)\n    b = y\n"
    ctx = build_context(src, "x.py")
    uses = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == "y" and isinstance(n.ctx, ast.Load)]
    first, second = sorted(uses, key=lambda n: n.lineno)
    assert ast.unparse(ctx.binding_at("y", first).value) == "g(x)"
    assert ast.unparse(ctx.binding_at("y", second).value) == "h(x)"
    # a parameter is a binding too
    xs = [n for n in ast.walk(ctx.tree) if isinstance(n, ast.Name) and n.id == "x"]
    assert ctx.binding_at("x", xs[0]).kind == "param"


def test_constructed_from_follows_names_and_self_attributes():
    src = (
        "import torch.nn as nn\n"
        "crit = nn.CrossEntropyLoss()\n"
        "def train():\n    fn = crit\n    fn(a, b)\n"
        "class M(nn.Module):\n"
        "    def __init__(self):\n        self.bn = nn.BatchNorm2d(3)\n"
        "    def forward(self, x):\n        return self.bn(x)\n"
        "class Net(M):\n    pass\n"
        "net = Net()\n"
    )
    ctx = build_context(src, "x.py")
    fn_call = [c for c in ctx.calls_named("fn")][0]
    assert ctx.constructed_from(fn_call.func, fn_call) == "torch.nn.CrossEntropyLoss"
    bn_call = ctx.calls_named("bn")[0]
    assert ctx.constructed_from(bn_call.func, bn_call) == "torch.nn.BatchNorm2d"
    assert "torch.nn.Module" in ctx.local_class_bases("Net")


def test_positions_are_1_based_and_count_characters_not_bytes():
    src = "import torch\ns = 'ééé'; sd = torch.load(p)\n"
    [f] = lint_source(src, select=["TW401"])
    assert (f.line, f.col) == (2, 17)  # 'torch.load(p)' starts at character 17, byte 20
    assert f.end_line == 2


def test_noqa_bare_specific_prefix_and_not_in_strings():
    base = "import torch\n"
    assert not lint_source(base + "a = torch.load(p)  # noqa\n")
    assert not lint_source(base + "a = torch.load(p)  # noqa: TW401\n")
    assert not lint_source(base + "a = torch.load(p)  # NOQA:TW4\n")
    assert lint_source(base + "a = torch.load(p)  # noqa: TW201\n")  # another code
    assert lint_source(base + "a = torch.load(p, '# noqa')\n", select=["TW401"])  # inside a string
    # multi-line call: noqa on the last line counts too
    assert not lint_source(base + "a = torch.load(\n    p,\n)  # noqa: TW401\n")


def test_syntax_and_decode_errors_are_findings():
    [f] = lint_source("def f(:\n    pass\n")
    assert f.code == SYNTAX_CODE and "syntax error" in f.message and f.line == 1
    [f] = lint_source(b"x = '\xff\xfe'\n")
    assert f.code == SYNTAX_CODE and "decode" in f.message
    [f] = lint_source(b"# -*- coding: no-such-codec -*-\nx = 1\n")
    assert f.code == SYNTAX_CODE and "decode" in f.message
    [f] = lint_source("x = 1\0\n")
    assert f.code == SYNTAX_CODE
    [f] = lint_source("if x:\npass\n")
    assert f.code == SYNTAX_CODE and "indentation" in f.message
    assert lint_source("def f(:\n", ignore=["TW000"]) == []


def test_latin1_coding_cookie_and_bom_decode():
    src = "# -*- coding: latin-1 -*-\nimport torch\ns = 'caf\xe9'\nsd = torch.load(p)\n".encode("latin-1")
    assert [f.code for f in lint_source(src)] == ["TW401"]
    bom = "\ufeffimport torch\nsd = torch.load(p)\n".encode("utf-8")
    [f] = lint_source(bom)
    assert (f.code, f.line, f.col) == ("TW401", 2, 6)


def _corpus() -> list[str]:
    """Real Python to mutate: the rule snippets and the linter's own sources."""
    from lint_cases import NEGATIVE, POSITIVE

    texts = [s for cases in POSITIVE.values() for s, _ in cases] + [s for cases in NEGATIVE.values() for s in cases]
    src_dir = HERE.parents[1] / "src" / "torchwise" / "lint"
    texts += [p.read_text() for p in sorted(src_dir.rglob("*.py"))[:12]]
    return texts


def test_random_bytes_never_crash():
    rng = random.Random(1234)
    for _ in range(400):
        n = rng.randrange(0, 300)
        data = bytes(rng.randrange(256) for _ in range(n))
        found = lint_source(data)
        assert isinstance(found, list) and all(f.line >= 1 and f.col >= 1 for f in found)
        assert not any("internal error" in f.message for f in found)


def test_truncated_and_mutated_sources_never_crash():
    rng = random.Random(99)
    corpus = _corpus()
    checked = 0
    for _ in range(300):
        text = rng.choice(corpus)
        op = rng.randrange(4)
        if op == 0:  # truncate
            text = text[: rng.randrange(len(text) + 1)]
        elif op == 1:  # drop a random slice
            a = rng.randrange(len(text) + 1)
            text = text[:a] + text[a + rng.randrange(40):]
        elif op == 2:  # duplicate a line somewhere (changes indentation structure)
            lines = text.splitlines(keepends=True) or [""]
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(lines))
            text = "".join(lines)
        else:  # random bytes in the middle
            data = text.encode()
            a = rng.randrange(len(data) + 1)
            text = data[:a] + bytes(rng.randrange(256) for _ in range(5)) + data[a:]
        found = lint_source(text)
        assert not any("internal error" in f.message for f in found), [f.format() for f in found]
        checked += 1
    assert checked == 300


def test_deep_nesting_is_reported_not_raised():
    deep = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"
    found = lint_source(deep)
    assert all(f.code == SYNTAX_CODE for f in found)
    very_deep = "x = " + "-" * 100000 + "1\n"
    found = lint_source(very_deep)
    assert all(f.code == SYNTAX_CODE for f in found)


def test_a_crashing_rule_is_reported_not_raised(monkeypatch):
    from torchwise.lint.rules import get_rule

    rule = get_rule("TW401")

    def boom(ctx):
        raise KeyError("bug")

    monkeypatch.setattr(rule, "check", boom)
    found = lint_source("import torch\nx = torch.load(p)\n")
    assert [(f.code, "internal error in rule TW401" in f.message) for f in found] == [(SYNTAX_CODE, True)]


@pytest.mark.parametrize("src", ["", "\n", "# only a comment\n", "pass", "\ufeff"])
def test_trivial_files(src):
    assert lint_source(src) == []


def test_lazy_pattern_compiles_on_first_use_and_then_acts_as_the_pattern():
    import re

    from torchwise.lint.engine.lazyre import lazy_compile

    lazy = lazy_compile(r"a(?P<n>\d+)", re.I)
    assert "search" not in vars(lazy)  # nothing compiled yet
    assert lazy.search("xA12").group("n") == "12"
    assert "search" in vars(lazy)  # the compiled pattern's methods are now its own
    assert lazy.sub("-", "a1 b a2") == "- b -" and lazy.findall("a3a4") == ["3", "4"]
    assert (lazy.pattern, lazy.flags & re.I, lazy.groups, dict(lazy.groupindex)) == (r"a(?P<n>\d+)", re.I, 1, {"n": 1})


def test_lint_compiles_no_pattern_at_import():
    """Start-up: module-level patterns go through lazy_compile (a run on a few files reaches few of them)."""
    import ast
    from pathlib import Path

    import torchwise.lint

    root = Path(torchwise.lint.__file__).parent
    eager = []
    for path in root.rglob("*.py"):
        stack = [(ast.parse(path.read_text()), False)]
        while stack:
            node, in_function = stack.pop()
            for child in ast.iter_child_nodes(node):
                inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                if (not inside and isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute)
                        and child.func.attr == "compile" and getattr(child.func.value, "id", None) == "re"):
                    eager.append(f"{path.relative_to(root)}:{child.lineno}")
                stack.append((child, inside))
    assert not eager, f"re.compile at import time (use lazy_compile): {eager}"

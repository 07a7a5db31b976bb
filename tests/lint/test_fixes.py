"""Safe fixes: exact edits that keep comments and formatting, parse, and clear their rule."""

from __future__ import annotations

import ast

import pytest

from torchwise.lint import apply_fixes, fix_source, lint_source
from torchwise.lint.findings import Edit, Fix
from torchwise.lint.rules import all_rules

# (code, before, after): after --fix, the file reads exactly `after`.
ROUND_TRIPS = [
    ("TW208", "optimizer.zero_grad(set_to_none=False)  # keep me\n", "optimizer.zero_grad(set_to_none=True)  # keep me\n"),
    ("TW208", "model.zero_grad(False)\n", "model.zero_grad(True)\n"),
    ("TW401", "import torch\nm.load_state_dict(torch.load('m.pt'))\n", "import torch\nm.load_state_dict(torch.load('m.pt', weights_only=True))\n"),
    ("TW401", "import torch\nm.load_state_dict(torch.load(\n    path,  # the checkpoint\n    map_location='cpu',\n))\n",
     "import torch\nm.load_state_dict(torch.load(\n    path,  # the checkpoint\n    map_location='cpu', weights_only=True,\n))\n"),
    ("TW401", "from torch import load as tl\nnet.load_state_dict(tl(f))\n", "from torch import load as tl\nnet.load_state_dict(tl(f, weights_only=True))\n"),
    ("TW219", "import torch\ntorch.set_default_tensor_type(torch.DoubleTensor)\n", "import torch\ntorch.set_default_dtype(torch.float64)\n"),
    ("TW219", "import torch\ntorch.set_default_tensor_type('torch.FloatTensor')\n", "import torch\ntorch.set_default_dtype(torch.float32)\n"),
    ("TW220", "import torch\nscaler = torch.cuda.amp.GradScaler()\n", 'import torch\nscaler = torch.amp.GradScaler("cuda")\n'),
    ("TW220", "import torch\nwith torch.cuda.amp.autocast(dtype=torch.float16):\n    y = f(x)\n",
     'import torch\nwith torch.amp.autocast("cuda", dtype=torch.float16):\n    y = f(x)\n'),
    ("TW220", "import torch\nwith torch.cpu.amp.autocast():\n    y = f(x)\n", 'import torch\nwith torch.amp.autocast("cpu"):\n    y = f(x)\n'),
    ("TW220", "from torch.cuda.amp import GradScaler\nscaler = GradScaler(init_scale=1024)\nother = GradScaler()\n",
     'from torch.amp import GradScaler\nscaler = GradScaler("cuda", init_scale=1024)\nother = GradScaler("cuda")\n'),
    ("TW107", "import torch\ny = x.transpose(1, 2).view(b, -1)\n", "import torch\ny = x.transpose(1, 2).reshape(b, -1)\n"),
    ("TW107", "import torch\ny = x.permute(0, 2, 1) .view (n, -1)\n", "import torch\ny = x.permute(0, 2, 1) .reshape (n, -1)\n"),
    ("TW108", "h = layer.register_backward_hook(fn)\n", "h = layer.register_full_backward_hook(fn)\n"),
    ("TW303", "import torch\ntorch.cuda.manual_seed(0)  # seed\n", "import torch\ntorch.cuda.manual_seed_all(0)  # seed\n"),
    ("TW205", "import torch\nfor x in xs:\n    m = torch.ones(4, 4).cuda()\n", 'import torch\nfor x in xs:\n    m = torch.ones(4, 4, device="cuda")\n'),
    ("TW205", "import torch\nwhile go:\n    idx = torch.arange(n).to(device)\n", "import torch\nwhile go:\n    idx = torch.arange(n, device=device)\n"),
    ("TW205", "import torch\ndef forward(x):\n    e = torch.empty(()).to(x.device)\n", "import torch\ndef forward(x):\n    e = torch.empty((), device=x.device)\n"),
    ("TW204", "from torch.utils.data import DataLoader\nld = DataLoader(ds, num_workers=2, pin_memory=True)\nfor x, y in ld:\n    x = x.to(dev)\n    y = y.cuda()\n",
     "from torch.utils.data import DataLoader\nld = DataLoader(ds, num_workers=2, pin_memory=True)\nfor x, y in ld:\n    x = x.to(dev, non_blocking=True)\n    y = y.cuda(non_blocking=True)\n"),
    ("TW502", "import torch\nouter = torch.ger(a, b)  # keep\n", "import torch\nouter = torch.outer(a, b)  # keep\n"),
    ("TW502", "import torch\nw = eps_out.ger(eps_in)\n", "import torch\nw = eps_out.outer(eps_in)\n"),
    ("TW502", "from functorch import vmap as vm\nf = vm(g)\n", "from torch.func import vmap as vm\nf = vm(g)\n"),
    ("TW502", "import torch\nx = x.cuda(async=True)\ny = y.to(dev, async = True)\n",
     "import torch\nx = x.cuda(non_blocking=True)\ny = y.to(dev, non_blocking = True)\n"),
    ("TW505", "from torch.utils.data._utils.collate import default_collate\nb = default_collate(x)\n",
     "from torch.utils.data import default_collate\nb = default_collate(x)\n"),
    ("TW509", "import torchvision\nm = torchvision.models.resnet18(pretrained=False, num_classes=10)\n",
     "import torchvision\nm = torchvision.models.resnet18(weights=None, num_classes=10)\n"),
    ("TW511", "import torchvision.models as models\nm = models.resnet18()\n", "from torchvision import models\nm = models.resnet18()\n"),
    ("TW513", "import torch\nw = torch.FloatTensor(n_out, n_in)  # weights\n",
     'import torch\nw = torch.empty(n_out, n_in, dtype=torch.float32, device="cpu")  # weights\n'),
    ("TW513", "import torch\nids = torch.LongTensor([[1, 2], [3, -4]])\n",
     'import torch\nids = torch.tensor([[1, 2], [3, -4]], dtype=torch.int64, device="cpu")\n'),
    ("TW513", "import torch\nz = torch.cuda.HalfTensor(x.size()).zero_()\n",
     'import torch\nz = torch.empty(x.size(), dtype=torch.float16, device="cuda").zero_()\n'),
    ("TW101", "import torch.nn.functional as F\nfor x, y in ld:\n    loss = F.mse_loss(m(x), y)\n    loss.backward()\n    total += loss\n",
     "import torch.nn.functional as F\nfor x, y in ld:\n    loss = F.mse_loss(m(x), y)\n    loss.backward()\n    total += loss.detach()\n"),
]


@pytest.mark.parametrize("code,before,after", ROUND_TRIPS, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(ROUND_TRIPS)])
def test_fix_round_trip(code, before, after):
    found = lint_source(before, select=[code])
    assert found and all(f.fixable for f in found), [f.format() for f in found]
    fixed, remaining = fix_source(before, select=[code])
    assert fixed == after
    ast.parse(fixed)
    assert not [f for f in lint_source(fixed, select=[code]) if f.code == code]
    assert not remaining


def test_every_fixable_rule_has_a_round_trip():
    fixable = {r.code for r in all_rules() if r.fixable}
    assert fixable <= {c for c, _, _ in ROUND_TRIPS}


def test_unsafe_cases_get_no_fix_but_a_suggestion():
    cases = [
        ("TW401", "import torch\nsd = torch.load(p, weights_only=False)\n"),  # an explicit choice
        ("TW401", "import dill, torch\nsd = torch.load(p, pickle_module=dill)\n"),  # incompatible with the safe mode
        ("TW205", "import torch\nfor _ in xs:\n    r = torch.randn(3).cuda()\n"),  # different generator on the device
        ("TW205", "import torch\nfor _ in xs:\n    r = torch.zeros(3, requires_grad=True).cuda()\n"),  # leaf vs non-leaf
        ("TW205", "import torch\ndef forward(x):\n    return torch.arange(3).to(x)\n"),  # also casts to x's dtype
        ("TW205", "import torch\nfor _ in xs:\n    m = torch.ones(3)\n    m = m.cuda()\n"),  # two statements
        ("TW219", "import torch\ntorch.set_default_tensor_type(torch.cuda.FloatTensor)\n"),
        ("TW220", "import torch\nwith torch.cuda.amp.autocast(True):\n    pass\n"),  # positional order differs
        ("TW220", "from torch.cuda.amp import autocast, GradScaler\nwith autocast():\n    pass\n"),
        ("TW101", "for x, y in ld:\n    loss = criterion(m(x), y)\n    total += loss\n"),  # tensor-ness not certain
    ]
    for code, src in cases:
        found = lint_source(src, select=[code])
        assert found, (code, src)
        assert not any(f.fixable for f in found), (code, src)
        assert all(f.suggestion for f in found)
        fixed, _ = fix_source(src, select=[code])
        assert fixed == src


def test_fixes_keep_unicode_and_crlf():
    src = "import torch\r\n# «ünïcode» comment\r\nm.load_state_dict(torch.load('päth.pt'))  # ✓\r\n"
    fixed, _ = fix_source(src, select=["TW401"])
    assert fixed == "import torch\r\n# «ünïcode» comment\r\nm.load_state_dict(torch.load('päth.pt', weights_only=True))  # ✓\r\n"


def test_several_fixes_in_one_file_and_noqa_respected():
    src = (
        "import torch\n"
        "a.load_state_dict(torch.load('a.pt'))\n"
        "b = torch.load('b.pt')  # noqa: TW401\n"
        "opt.zero_grad(set_to_none=False)\n"
        "y = x.transpose(0, 1).view(-1)\n"
    )
    fixed, remaining = fix_source(src)
    assert "torch.load('a.pt', weights_only=True)" in fixed
    assert "torch.load('b.pt')  # noqa: TW401" in fixed
    assert "set_to_none=True" in fixed and ".reshape(-1)" in fixed
    ast.parse(fixed)
    assert not any(f.fixable for f in remaining)


def test_apply_fixes_skips_overlaps_and_breaking_edits():
    src = "abc = 1\n"
    good = Fix("x", (Edit(0, 3, "xyz"),))
    overlapping = Fix("y", (Edit(1, 2, "Q"),))
    assert apply_fixes(src, [good, overlapping]) == ("xyz = 1\n", 1)
    breaking = Fix("z", (Edit(4, 5, "=="),))  # 'abc == 1' parses; make it not parse instead
    breaking = Fix("z", (Edit(4, 5, "= ="),))
    assert apply_fixes(src, [breaking]) == (src, 0)


# (code, before, after with --unsafe-fixes): fixes that may change behaviour, offered but not applied by --fix
UNSAFE_ROUND_TRIPS = [
    # a checkpoint may hold an argparse.Namespace or a whole pickled model
    ("TW401", "import torch\nckpt = torch.load('m.pt')\nargs = ckpt['args']\n",
     "import torch\nckpt = torch.load('m.pt', weights_only=True)\nargs = ckpt['args']\n"),
    # the file reads .grad: parameters without a gradient would get None instead of zeros
    ("TW208", "opt.zero_grad(set_to_none=False)\nn = sum(p.grad.norm() for p in ps)\n",
     "opt.zero_grad(set_to_none=True)\nn = sum(p.grad.norm() for p in ps)\n"),
    ("TW503", "for p in ps:\n    p.require_grad = False\n", "for p in ps:\n    p.requires_grad = False\n"),
    ("TW504", "from torch.utils.checkpoint import checkpoint\nh = checkpoint(f, x)\n",
     "from torch.utils.checkpoint import checkpoint\nh = checkpoint(f, x, use_reentrant=False)\n"),
    # torch.empty follows torch.set_default_device; torch.Tensor(sizes) did not
    ("TW513", "import torch\nw = torch.Tensor(3, 4)\n", "import torch\nw = torch.empty(3, 4)\n"),
    # DEFAULT may be a newer checkpoint than the one pretrained=True loaded
    ("TW509", "import torchvision\nm = torchvision.models.resnet50(pretrained=True)\n",
     "import torchvision\nm = torchvision.models.resnet50(weights=\"DEFAULT\")\n"),
]


@pytest.mark.parametrize("code,before,after", UNSAFE_ROUND_TRIPS, ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(UNSAFE_ROUND_TRIPS)])
def test_unsafe_fix_only_with_unsafe_fixes(code, before, after):
    found = lint_source(before, select=[code])
    assert found and all(f.unsafe_fixable and not f.fixable for f in found)
    assert all(f.fix.why_unsafe for f in found)  # the finding says why
    unchanged, remaining = fix_source(before, select=[code])
    assert unchanged == before and remaining
    fixed, remaining = fix_source(before, select=[code], unsafe=True)
    assert fixed == after and not remaining


def test_unsafe_fix_is_reported_in_text_and_json():
    from torchwise.lint.output import format_json, format_text

    found = lint_source("import torch\nckpt = torch.load('m.pt')\n", select=["TW401"])
    text = format_text(found)
    assert "[unsafe fix]" in text and "--unsafe-fixes" in text and "[*]" not in text
    data = __import__("json").loads(format_json(found))
    assert data[0]["fixable"] is False and data[0]["unsafe_fix"] is True
    assert data[0]["fix"]["safe"] is False and "weights_only" in data[0]["fix"]["why_unsafe"]


def test_cli_unsafe_fixes_flag(tmp_path):
    from torchwise.lint.cli import main

    target = tmp_path / "train.py"
    target.write_text("import torch\nckpt = torch.load('m.pt')\n")
    main([str(target), "--fix", "--select", "TW401"])
    assert "weights_only" not in target.read_text()  # --fix leaves the unsafe one alone
    main([str(target), "--fix", "--unsafe-fixes", "--select", "TW401"])
    assert "weights_only=True" in target.read_text()


# Legacy constructor calls whose fix must make exactly the same tensor (run with torch).
TW513_EXACT = [
    "torch.FloatTensor(2, 3)", "torch.LongTensor(4)", "torch.ByteTensor((1, 255, 0))", "torch.FloatTensor([True, 2.5, -1])",
    "torch.LongTensor([1.7, -2.7])", "torch.DoubleTensor([[1, 2], [3, 4]])", "torch.HalfTensor([1e5, 0.1])",
    "torch.BoolTensor([0, 2, 1])", "torch.IntTensor(torch.ones(2, 5).shape)", "torch.ShortTensor([])",
    "torch.FloatTensor(torch.ones(3, 1).size())", "torch.CharTensor([-128, 127])", "torch.BFloat16Tensor([0.1, 3])",
    "torch.LongTensor()", "torch.BoolTensor()",
]


@pytest.mark.needs_torch
@pytest.mark.parametrize("expr", TW513_EXACT)
def test_tw513_fix_makes_exactly_the_same_tensor(expr):
    import warnings

    import torch

    source = f"import torch\nt = {expr}\n"
    fixed, remaining = fix_source(source, select=["TW513"])
    assert fixed != source and not remaining, fixed
    new_expr = fixed.splitlines()[1].split(" = ", 1)[1]
    sizes = new_expr.startswith("torch.empty(")
    for default_device in (None, "meta"):  # the legacy constructors ignore a default device
        torch.set_default_device(default_device)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                old, new = eval(expr, {"torch": torch}), eval(new_expr, {"torch": torch})
        finally:
            torch.set_default_device(None)
        assert (old.dtype, old.shape, old.device, old.requires_grad) == (new.dtype, new.shape, new.device, new.requires_grad)
        if not sizes:  # data: the same values (sizes give uninitialised memory either way)
            assert torch.equal(old, new)

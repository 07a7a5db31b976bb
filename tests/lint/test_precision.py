"""Where a finding would be noise: test files for performance/device advice, and rules that
only concern tests. Each case is a look-alike of a false positive seen on public code."""

from __future__ import annotations

import pytest

from torchwise.lint import lint_source
from torchwise.lint.semantics.files import is_test_path

DATAPARALLEL = "import torch\nm = torch.nn.DataParallel(model)\n"
LOADER = "from torch.utils.data import DataLoader\nfrom torchvision import datasets\nld = DataLoader(datasets.MNIST('.'), batch_size=2)\n"
SCRIPT = "import torch\nm = torch.jit.script(model)\nm(x)\n"
CUDA = "import torch\nx = torch.ones(3).cuda()\n"
LIBRARY = "import torch\nlib = torch.library.Library('mylib', 'DEF')\n"


@pytest.mark.parametrize("path", ["tests/test_dp.py", "pkg/tests/helpers.py", "test/unit/util.py", "test_models.py",
                                  "models_test.py", "conftest.py"])
def test_test_files_are_recognised(path):
    assert is_test_path(path)


@pytest.mark.parametrize("path", ["train.py", "src/latest/model.py", "contest.py", "attest/run.py", "protest_test_data.py"])
def test_other_files_are_not_test_files(path):
    assert not is_test_path(path)


@pytest.mark.parametrize("src,code", [(DATAPARALLEL, "TW201"), (LOADER, "TW202"), (SCRIPT, "TW214"), (CUDA, "TW403")])
def test_advice_rules_are_silent_in_test_files_only(src, code):
    assert [f.code for f in lint_source(src, "train.py", select=[code])] == [code]
    assert lint_source(src, "tests/test_wrapping.py", select=[code]) == []


def test_correctness_rules_still_run_in_tests():
    src = "import torch\nsd = torch.load(p)\nfor p in ps:\n    p.require_grad = False\n"
    codes = {f.code for f in lint_source(src, "tests/test_io.py", select=["TW401", "TW503"])}
    assert codes == {"TW503"}  # a test loads the file it has just written: no untrusted pickle
    assert {f.code for f in lint_source(src, "io.py", select=["TW401", "TW503"])} == {"TW401", "TW503"}


def test_tw101_reference_sums_in_tests_are_left_alone():
    src = "import torch.nn.functional as F\ntotal = 0.0\nfor h in hs:\n    loss = F.cross_entropy(h, y)\n    total += loss\nassert total > 0\n"
    assert [f.code for f in lint_source(src, "train.py", select=["TW101"])] == ["TW101"]
    assert lint_source(src, "tests/test_loss.py", select=["TW101"]) == []


@pytest.mark.parametrize("path", ["examples/jit/gcn.py", "tools/torchscript_export.py", "pkg/jit_utils.py"])
def test_tw214_files_about_torchscript_are_left_alone(path):
    assert [f.code for f in lint_source(SCRIPT, "examples/gcn.py", select=["TW214"])] == ["TW214"]
    assert lint_source(SCRIPT, path, select=["TW214"]) == []


def test_tw514_only_in_test_files():
    assert [f.code for f in lint_source(LIBRARY, "tests/test_ops.py", select=["TW514"])] == ["TW514"]
    assert lint_source(LIBRARY, "mylib/ops.py", select=["TW514"]) == []
    scoped = "import torch\nwith torch.library._scoped_library('mylib', 'DEF') as lib:\n    pass\n"
    assert lint_source(scoped, "tests/test_ops.py", select=["TW514"]) == []

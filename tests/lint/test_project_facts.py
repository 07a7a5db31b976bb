"""Project facts: TW202/TW203/TW403 judged with what other files of the linted folder say."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from torchwise.lint import lint_paths, lint_source
from torchwise.lint.project import scan
from torchwise.lint.runner import FileJob, Selection, discover, project_facts

LOADER = """\
import torch
from torch.utils.data import DataLoader
from .data import {cls}

model = torch.nn.Linear(4, 2).cuda()
ds = {cls}(root="data", transform=None)
loader = DataLoader(ds, batch_size=8)
for x, y in loader:
    model(x.cuda())
"""

DATASETS = {
    # items already on the GPU: neither pinning nor workers apply
    "OnDevice": """
class OnDevice(Dataset):
    def __init__(self, root, transform=None):
        self.x = torch.randn(100, 4)
    def __len__(self):
        return 100
    def __getitem__(self, i):
        return self.x[i].cuda(), 0
""",
    # prompts for sampling: no tensor at all
    "Prompts": """
class Prompts(Dataset):
    def __init__(self, root, transform=None):
        self.prompt = "a photo of a dog"
        self.n = 16
    def __len__(self):
        return self.n
    def __getitem__(self, i):
        return {"prompt": self.prompt, "index": i}
""",
    # random windows of a tensor held in memory: nothing for a worker to do
    "Windows": """
class Windows(Dataset):
    def __init__(self, root, transform=None):
        self.data = torch.load(root)
    def __len__(self):
        return 1000
    def __getitem__(self, i):
        j = torch.randint(0, len(self.data) - 65, (1,)).item()
        return self.data[j:j + 64], self.data[j + 1:j + 65]
""",
    # images read and decoded per item: workers overlap this CPU work with training
    "Images": """
class Images(Dataset):
    def __init__(self, root, transform=None):
        self.files = sorted(os.listdir(root))
        self.transform = transform
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        img = Image.open(self.files[i]).convert("RGB")
        return self.transform(img), 0
""",
}


def _tree(tmp_path: Path, cls: str) -> Path:
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    header = "import os\nimport torch\nfrom PIL import Image\nfrom torch.utils.data import Dataset\n"
    (pkg / "data.py").write_text(header + textwrap.dedent(DATASETS[cls]))
    (pkg / "train.py").write_text(LOADER.format(cls=cls))
    return pkg


def _codes(pkg: Path, select: str) -> list[str]:
    return [f.code for f in lint_paths([str(pkg)], select=select, use_config=False, jobs=1) if f.path.endswith("train.py")]


@pytest.mark.parametrize("cls", ["OnDevice", "Prompts"])
def test_pin_memory_left_alone_when_the_other_module_yields_no_pinnable_tensor(tmp_path: Path, cls: str) -> None:
    pkg = _tree(tmp_path, cls)
    assert _codes(pkg, "TW203") == []
    # the same loader linted alone (no project facts) is flagged: the fact came from data.py
    alone = lint_source((pkg / "train.py").read_text(), "train.py", select="TW203")
    assert [f.code for f in alone] == ["TW203"]


def test_pin_memory_kept_for_a_dataset_that_decodes_images(tmp_path: Path) -> None:
    assert _codes(_tree(tmp_path, "Images"), "TW203") == ["TW203"]


@pytest.mark.parametrize("cls", ["OnDevice", "Windows"])
def test_num_workers_left_alone_for_device_items_and_in_memory_windows(tmp_path: Path, cls: str) -> None:
    pkg = _tree(tmp_path, cls)
    assert _codes(pkg, "TW202") == []
    alone = lint_source((pkg / "train.py").read_text(), "train.py", select="TW202")
    assert [f.code for f in alone] == ["TW202"]  # file-only: the transform= argument is the evidence


def test_num_workers_flagged_for_a_decoding_dataset_of_another_module(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, "Images")
    train = pkg / "train.py"
    train.write_text(train.read_text().replace('root="data", transform=None', 'root="data"'))
    # no transform in train.py: only data.py shows the per-item decoding
    assert lint_source(train.read_text(), "train.py", select="TW202") == []
    assert _codes(pkg, "TW202") == ["TW202"]


def test_iterable_dataset_through_a_project_base_class(tmp_path: Path) -> None:
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "base.py").write_text(
        "from torch.utils.data import IterableDataset\n"
        "class Stream(IterableDataset):\n    def __iter__(self):\n        yield from open('x')\n"
    )
    (pkg / "data.py").write_text("from .base import Stream\nclass ShardDataset(Stream):\n    pass\n")
    (pkg / "train.py").write_text(LOADER.format(cls="ShardDataset").replace("from .data", "from proj.data"))
    assert _codes(pkg, "TW202") == []
    assert [f.code for f in lint_source((pkg / "train.py").read_text(), "train.py", select="TW202")] == ["TW202"]


GPU_KERNEL = "import torch\nimport triton\nimport triton.language as tl\n\n\ndef k(x):\n    return x\n"
STRAY = 'import torch\n\nmodel = torch.nn.Linear(2, 2).to("cuda")\n'


def test_hardcoded_cuda_left_alone_in_a_gpu_only_project(tmp_path: Path) -> None:
    proj = tmp_path / "gpu_framework"
    proj.mkdir()
    for name in ("attn.py", "norm.py", "rotary.py"):
        (proj / name).write_text(GPU_KERNEL)
    (proj / "generate.py").write_text(STRAY)
    assert _codes_in(proj, "generate.py") == []
    assert [f.code for f in lint_source(STRAY, "generate.py", select="TW403")] == ["TW403"]


def _codes_in(proj: Path, name: str) -> list[str]:
    return [f.code for f in lint_paths([str(proj)], select="TW403", use_config=False, jobs=1) if f.path.endswith(name)]


def test_hardcoded_cuda_kept_in_a_normal_project(tmp_path: Path) -> None:
    proj = tmp_path / "normal"
    proj.mkdir()
    # GPU kernels behind a guard, CPU fallbacks elsewhere: not GPU-only by design
    (proj / "attn.py").write_text("try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n")
    (proj / "norm.py").write_text(GPU_KERNEL)
    (proj / "train.py").write_text('import torch\nimport generate\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n')
    (proj / "generate.py").write_text(STRAY)
    assert _codes_in(proj, "generate.py") == ["TW403"]
    # a sibling's fallback that never imports it is no CPU path of the stray file (round 18)
    (proj / "train.py").write_text('import torch\ndevice = "cuda" if torch.cuda.is_available() else "cpu"\n')
    assert _codes_in(proj, "generate.py") == []


def test_gpu_only_needs_more_library_files_than_gpu_checks() -> None:
    kernels = [(f"k{i}.py", GPU_KERNEL) for i in range(3)]
    checks = [(f"c{i}.py", "import torch\nok = torch.cuda.is_available()\n") for i in range(3)]
    assert scan(kernels).gpu_only
    assert not scan(kernels + checks).gpu_only
    assert not scan(kernels[:2]).gpu_only
    # imports in tests do not make the project GPU-only
    assert not scan([(f"tests/k{i}.py", GPU_KERNEL) for i in range(3)]).gpu_only


def test_nccl_only_project_without_any_gpu_check_is_gpu_only(tmp_path: Path) -> None:
    proj = tmp_path / "llm"
    proj.mkdir()
    (proj / "generation.py").write_text('import torch\ntorch.distributed.init_process_group("nccl")\n')
    (proj / "model.py").write_text('import torch\ncache = torch.zeros(4).cuda()\n')
    assert _codes_in(proj, "model.py") == []
    # a script that imports the model and sets a device flag from a GPU check: a CPU run reaches it
    (proj / "run.py").write_text('import torch\nimport model\nuse_gpu = torch.cuda.is_available()\n')
    assert _codes_in(proj, "model.py") == ["TW403"]


def test_facts_are_per_folder_given_and_reach_every_job(tmp_path: Path) -> None:
    gpu = tmp_path / "gpu"
    gpu.mkdir()
    for i in range(3):
        (gpu / f"k{i}.py").write_text(GPU_KERNEL)
    normal = tmp_path / "normal"
    normal.mkdir()
    (normal / "generate.py").write_text(STRAY)
    jobs = discover([str(gpu), str(normal)], Selection(use_config=False))
    facts = project_facts(jobs)
    assert {Path(k).name: v.gpu_only for k, v in facts.items()} == {"gpu": True, "normal": False}
    assert all(isinstance(j, FileJob) and j.project in facts for j in jobs)
    # the stray "cuda" of the normal project is still reported when both are linted together
    findings = lint_paths([str(gpu), str(normal)], select="TW403", use_config=False, jobs=1)
    assert [Path(f.path).name for f in findings] == ["generate.py"]


def test_ambiguous_class_names_give_no_facts() -> None:
    a = "from torch.utils.data import Dataset\nclass D(Dataset):\n    def __getitem__(self, i):\n        return self.x[i].cuda()\n"
    b = "from torch.utils.data import Dataset\nclass D(Dataset):\n    def __getitem__(self, i):\n        return open(self.f[i]).read()\n"
    loader = ("train.py", "from torch.utils.data import DataLoader\n")
    assert scan([("a.py", a), loader]).dataset("D").device
    assert scan([("a.py", a), ("b.py", b), loader]).dataset("D") is None
    # no DataLoader anywhere: nothing consults dataset facts, so none are collected
    assert scan([("a.py", a)]).datasets == {}


def test_dataset_excerpt_survives_a_docstring_at_column_zero() -> None:
    src = (
        "import torch\nfrom torch.utils.data import Dataset\n\n"
        "class D(Dataset):\n    \"\"\"Items.\n\nOn the GPU.\"\"\"\n"
        "    def __getitem__(self, i):\n        return self.x[i].cuda()\n"
        "\ndef helper():\n    pass\n"
    )
    facts = scan([("a.py", src), ("t.py", "DataLoader")]).dataset("D")
    assert facts is not None and facts.device


def test_pool_workers_get_the_project_facts(tmp_path: Path) -> None:
    proj = tmp_path / "gpu_framework"
    proj.mkdir()
    for i in range(20):  # enough files for the process pool
        (proj / f"kernel_{i}.py").write_text(GPU_KERNEL)
    (proj / "generate.py").write_text(STRAY)
    assert lint_paths([str(proj)], select="TW403", use_config=False, jobs=2) == []
    (proj / "check.py").write_text("import torch\nimport generate\n" + "\n".join(f"c{i} = torch.cuda.is_available()" for i in range(3)) + "\n")
    for i in range(18):  # now more files check for a GPU than import GPU-only libraries
        (proj / f"kernel_{i}.py").write_text("import torch\nok = torch.cuda.device_count()\n")
    assert [Path(f.path).name for f in lint_paths([str(proj)], select="TW403", use_config=False, jobs=2)] == ["generate.py"]


def test_gpu_setup_blocks_keep_only_functions_that_can_make_the_program_gpu_only() -> None:
    chooses = "import torch\ndef main():\n    device = 'cuda' if torch.cuda.is_available() else 'cpu'\n    return device\n"
    exits = "import sys, torch\ndef setup():\n    if not torch.cuda.is_available():\n        sys.exit('needs a GPU')\n"
    asserts = "import torch\ndef check():\n    assert torch.cuda.is_available(), 'needs a GPU'\n"
    nccl = "import torch.distributed as dist\ndef init():\n    dist.init_process_group('nccl')\n"
    facts = scan([("a.py", chooses), ("b.py", exits), ("c.py", asserts), ("d.py", nccl)])
    assert sorted(facts.gpu_setup_blocks) == ["check", "init", "setup"]


def test_a_file_that_saves_checkpoints_is_parsed_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    (tmp_path / "train.py").write_text(
        "import torch\nmodel = torch.nn.Linear(2, 2).cuda()\ntorch.save(model.state_dict(), 'model.pt')\n")
    (tmp_path / "eval.py").write_text("import torch\nmodel = Net().cuda()\nmodel.load_state_dict(torch.load('model.pt'))\n")
    (tmp_path / "host.py").write_text("import torch\ntorch.save({'mean': x.cpu()}, 'stats.pt')\n")
    (tmp_path / "device.py").write_text("import torch\nDEVICE = 'cuda' if torch.cuda.is_available() else 'cpu'\n")  # a CPU path: not GPU-only
    (tmp_path / "stats.py").write_text("import torch\nmodel = Net().cuda()\nsd = torch.load('stats.pt')\n")
    parsed: list[str] = []
    real = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):
        parsed.append(str(filename))
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    findings = lint_paths([str(tmp_path)], select="TW402", use_config=False, jobs=1)
    # the GPU checkpoint's load is flagged; the file the project writes from host data is not
    assert sorted(Path(f.path).name for f in findings) == ["eval.py"]
    assert sum(Path(p).name == "train.py" for p in parsed) == 1, parsed


def test_a_module_and_its_callers_are_parsed_once_and_reported_in_path_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ast

    # the caller comes first by name; the module it imports is linted first, and parses it
    (tmp_path / "a_main.py").write_text(
        "import torch\nfrom torch.utils.data import DataLoader\nimport engine\nimport z_opts\nargs = z_opts.parser.parse_args()\n"
        "loader = DataLoader(ds, batch_size=8, num_workers=2, pin_memory=True)\n"
        "engine.train(model, loader, 'cuda')\nx = torch.ones(3).cuda()\n")
    # its options offer --no_cuda: the CPU run it parses reaches the hard-coded line (round 18)
    (tmp_path / "z_opts.py").write_text("import argparse\nparser = argparse.ArgumentParser()\n"
                                        "parser.add_argument('--no_cuda', action='store_true')\n")
    (tmp_path / "engine.py").write_text(
        "def train(model, loader, device='cpu'):\n    for x, y in loader:\n        x = x.to(device)\n"
        "        loss = model(x).sum()\n        loss.backward()\n")
    parsed: list[str] = []
    real = ast.parse

    def counting(source, filename="<unknown>", *args, **kwargs):
        parsed.append(Path(str(filename)).name)
        return real(source, filename, *args, **kwargs)

    monkeypatch.setattr(ast, "parse", counting)
    findings = lint_paths([str(tmp_path)], select="TW204,TW403", use_config=False, jobs=1)
    assert [(Path(f.path).name, f.code) for f in findings] == [("a_main.py", "TW403"), ("engine.py", "TW204")]
    assert parsed.count("a_main.py") == 1 and parsed.count("engine.py") == 1, parsed


def test_tw205_dead_code_needs_a_module_the_project_uses(tmp_path):
    """A helper nobody names is dead only in a module the project imports (or a script): the same
    modules alone are a library whose users are elsewhere, and every finding stays."""
    import sys
    sys.path.insert(0, str(Path(__file__).parent))
    from recall_corpus21 import _LAYERS, _METRICS

    for name, text in {"metrics.py": _METRICS, "layers.py": _LAYERS}.items():
        (tmp_path / name).write_text(text)
    found = sorted((Path(f.path).name, f.line) for f in lint_paths([str(tmp_path)], select=["TW205"], use_config=False, jobs=1))
    assert found == [("layers.py", 4), ("layers.py", 11), ("metrics.py", 5), ("metrics.py", 8)]

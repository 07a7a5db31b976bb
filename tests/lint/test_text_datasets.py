"""TW203 and datasets of strings: a loader over a dataset that hands back only stored strings has
nothing to pin (quiet, see recall_corpus25); the twins below hand back a tensor or a number and
stay flagged."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from torchwise.lint import check_source, lint_paths

sys.path.insert(0, str(Path(__file__).parent))
from recall_corpus25 import _NAMES_SCRIPT, _NAMES_SET  # noqa: E402


def test_a_text_dataset_that_encodes_each_line_into_a_tensor_is_flagged():
    source = textwrap.dedent("""
        import gzip
        import torch
        from torch.utils.data import DataLoader, Dataset

        class LineDataset(Dataset):
            def __init__(self, path):
                with gzip.open(path, "rt") as f:
                    self.lines = [line.strip() for line in f]

            def __getitem__(self, index):
                return torch.tensor([ord(c) for c in self.lines[index]])

            def __len__(self):
                return len(self.lines)

        loader = DataLoader(LineDataset("corpus.txt.gz"), batch_size=16, shuffle=True)
        model = CharModel().cuda()
        for codes in loader:
            model(codes.cuda())
    """)
    assert [f.line for f in check_source(source, "t.py") if f.code == "TW203"] == [17]


def test_a_csv_dataset_with_integer_labels_is_flagged(tmp_path):
    (tmp_path / "surnames.py").write_text(_NAMES_SET.replace("[row[1] for row in rows]", "[int(row[1]) for row in rows]"))
    (tmp_path / "train.py").write_text(_NAMES_SCRIPT)
    found = [(Path(f.path).name, f.line) for f in lint_paths([str(tmp_path)], select=["TW203"], use_config=False, jobs=1)]
    assert found == [("train.py", 5)]

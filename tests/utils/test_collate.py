from __future__ import annotations

import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, default_collate

from torchwise.utils.batch import split_batch
from torchwise.utils.collate import pad_collate
from torchwise.core.errors import DataError, UsageError

SEQS = [torch.tensor([1, 2, 3]), torch.tensor([4]), torch.tensor([5, 6])]


class Pairs(torch.utils.data.Dataset):
    def __len__(self) -> int:
        return len(SEQS)

    def __getitem__(self, i):
        return SEQS[i], i % 2


def test_default_collate_fails_and_pad_collate_fixes_it_through_a_loader():
    with pytest.raises(RuntimeError, match="equal size"):
        next(iter(DataLoader(Pairs(), batch_size=3)))
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([SEQS[0], SEQS[1]])
    batch = next(iter(DataLoader(Pairs(), batch_size=3, collate_fn=pad_collate(pad_value=-1))))
    padded, labels, lengths, mask = batch
    assert padded.tolist() == [[1, 2, 3], [4, -1, -1], [5, 6, -1]]
    assert labels.tolist() == [0, 1, 0]
    assert lengths.dtype == torch.long and lengths.tolist() == [3, 1, 2]
    assert mask.dtype == torch.bool
    assert mask.tolist() == [[True, True, True], [True, False, False], [True, True, False]]
    inputs, targets = split_batch(batch)
    assert inputs is padded and targets is labels


def test_tensor_samples_left_padding_and_time_first():
    batch = pad_collate(padding_side="left")(SEQS)
    assert set(batch) == {"inputs", "lengths", "mask"}
    assert batch["inputs"].tolist() == [[1, 2, 3], [0, 0, 4], [0, 5, 6]]
    assert batch["mask"].tolist() == [[True, True, True], [False, False, True], [False, True, True]]
    tf = pad_collate(batch_first=False)(SEQS)
    assert tf["inputs"].shape == (3, 3) and tf["mask"].shape == (3, 3)
    assert tf["inputs"][:, 1].tolist() == [4, 0, 0]
    assert tf["mask"][:, 1].tolist() == [True, False, False]


def test_feature_dimensions_and_numpy():
    samples = [(np.ones((2, 4), dtype=np.float32), 1.0), (np.ones((5, 4), dtype=np.float32), 0.0)]
    x, y, lengths, mask = pad_collate()(samples)
    assert x.shape == (2, 5, 4) and x.dtype == torch.float32
    assert x[0, 2:].abs().sum() == 0 and x[1].sum() == 20
    assert y.dtype == torch.float64 and lengths.tolist() == [2, 5]
    assert mask.sum() == 7


def test_dict_samples_pad_values_per_field():
    samples = [
        {"input_ids": torch.tensor([7, 8, 9]), "labels": torch.tensor([1, 2, 3]), "id": 0},
        {"input_ids": torch.tensor([5]), "labels": torch.tensor([4]), "id": 1},
    ]
    batch = pad_collate(pad_value={"input_ids": 0, "labels": -100})(samples)
    assert batch["input_ids"].tolist() == [[7, 8, 9], [5, 0, 0]]
    assert batch["labels"].tolist() == [[1, 2, 3], [4, -100, -100]]
    assert batch["id"].tolist() == [0, 1]
    assert batch["lengths"].tolist() == [3, 1]
    inputs, targets = split_batch(batch)
    assert inputs is batch["input_ids"] and targets is batch["labels"]


def test_length_of_chooses_the_field():
    samples = [(torch.zeros(2), torch.zeros(4)), (torch.zeros(3), torch.zeros(1))]
    *_, lengths, _ = pad_collate(length_of=1)(samples)
    assert lengths.tolist() == [4, 1]
    with pytest.raises(UsageError, match="length_of=5"):
        pad_collate(length_of=5)(samples)


def test_clear_errors():
    with pytest.raises(DataError, match="only the first .* dimension may differ"):
        pad_collate()([torch.zeros(2, 3), torch.zeros(2, 4)])
    with pytest.raises(DataError, match="already have"):
        pad_collate()([{"x": torch.zeros(2), "mask": torch.zeros(2)}])
    with pytest.raises(DataError, match="cannot batch samples of type int"):
        pad_collate()([1, 2])
    with pytest.raises(DataError, match="no sequence field"):
        pad_collate()([(1, 2), (3, 4)])
    with pytest.raises(UsageError, match="padding_side"):
        pad_collate(padding_side="top")


def test_picklable_for_spawned_workers():
    fn = pickle.loads(pickle.dumps(pad_collate(pad_value=3, padding_side="left")))
    assert fn(SEQS)["inputs"][1].tolist() == [3, 3, 4]

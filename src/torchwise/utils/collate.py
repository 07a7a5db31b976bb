"""A DataLoader ``collate_fn`` for variable-length sequences: pads them and says where the padding is.

``torch.utils.data.default_collate`` stacks samples and fails on sequences of different lengths
("stack expects each tensor to be equal size"). ``pad_collate()`` pads every tensor field along
its first dimension to the longest in the batch and adds ``lengths`` and a boolean ``mask``.

What a batch looks like, by sample type:

============================  ===============================================================
sample                        batch
============================  ===============================================================
``tensor``                    ``{"inputs": padded, "lengths": lengths, "mask": mask}``
``(seq, label, ...)``         ``(padded_seq, labels, ..., lengths, mask)``
``{"input_ids": ..., ...}``   the same dict, fields padded or stacked, plus ``"lengths"``, ``"mask"``
============================  ===============================================================

``padded`` is (B, T, ...) with ``batch_first=True`` else (T, B, ...); ``lengths`` is a LongTensor
(B,); ``mask`` is bool with the padded tensor's first two dimensions, True at real positions (for
``nn.MultiheadAttention``'s ``key_padding_mask``, which marks padding, pass ``~mask``). Tuples keep
``(inputs, targets)`` first, so :func:`torchwise.utils.batch.split_batch` reads them as usual.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import default_collate

from torchwise.core.errors import DataError, UsageError

__all__ = ["PadCollate", "pad_collate"]

Key = int | str


def _as_tensor(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.dtype != object:
        return torch.from_numpy(np.ascontiguousarray(x))
    return x


def _is_seq(x: Any) -> bool:
    return isinstance(x, torch.Tensor) and x.dim() >= 1


def _pad_field(values: list[Any], key: Key, pad_value: float, batch_first: bool, side: str) -> Any:
    if not all(_is_seq(v) for v in values):
        if any(_is_seq(v) for v in values):
            kinds = sorted({type(v).__name__ if not isinstance(v, torch.Tensor) else f"{v.dim()}-d tensor" for v in values})
            raise DataError(f"field {key!r} mixes sequences and other values across samples ({', '.join(kinds)})")
        return default_collate(values)
    trailing = values[0].shape[1:]
    for i, v in enumerate(values):
        if v.shape[1:] != trailing:
            raise DataError(
                f"field {key!r}: sample {i} has shape {tuple(v.shape)} but sample 0 has {tuple(values[0].shape)}; "
                "only the first (sequence) dimension may differ"
            )
        if v.dtype != values[0].dtype:
            raise DataError(f"field {key!r}: sample {i} has dtype {v.dtype} but sample 0 has {values[0].dtype}")
    return pad_sequence(values, batch_first=batch_first, padding_value=pad_value, padding_side=side)


def _lengths_and_mask(values: list[torch.Tensor], batch_first: bool, side: str) -> tuple[torch.Tensor, torch.Tensor]:
    device = values[0].device
    lengths = torch.tensor([v.shape[0] for v in values], dtype=torch.long, device=device)
    longest = int(lengths.max()) if len(values) else 0
    positions = torch.arange(longest, device=device).unsqueeze(0)
    if side == "right":
        mask = positions < lengths.unsqueeze(1)
    else:
        mask = positions >= (longest - lengths).unsqueeze(1)
    return lengths, mask if batch_first else mask.T.contiguous()


class PadCollate:
    """The picklable ``collate_fn`` that :func:`pad_collate` returns (works with spawned workers)."""

    def __init__(self, pad_value: float | Mapping[Key, float] = 0, batch_first: bool = True,
                 padding_side: str = "right", length_of: Key | None = None) -> None:
        if padding_side not in ("right", "left"):
            raise UsageError(f"padding_side must be 'right' or 'left', got {padding_side!r}")
        self.pad_value = pad_value
        self.batch_first = batch_first
        self.padding_side = padding_side
        self.length_of = length_of

    def __repr__(self) -> str:
        return (f"pad_collate(pad_value={self.pad_value!r}, batch_first={self.batch_first}, "
                f"padding_side={self.padding_side!r}, length_of={self.length_of!r})")

    def _value_for(self, key: Key) -> float:
        if isinstance(self.pad_value, Mapping):
            return self.pad_value.get(key, 0)
        return self.pad_value

    def _pad(self, values: list[Any], key: Key) -> Any:
        return _pad_field(values, key, self._value_for(key), self.batch_first, self.padding_side)

    def __call__(self, samples: list[Any]) -> Any:
        if not samples:
            raise DataError("pad_collate got an empty batch")
        first = samples[0]
        if isinstance(first, (torch.Tensor, np.ndarray)):
            values = [_as_tensor(s) for s in samples]
            if not all(_is_seq(v) for v in values):
                raise DataError("pad_collate: tensor samples must all have at least one (sequence) dimension")
            lengths, mask = _lengths_and_mask(values, self.batch_first, self.padding_side)
            return {"inputs": self._pad(values, 0), "lengths": lengths, "mask": mask}
        if isinstance(first, Mapping):
            keys = list(first)
            for i, s in enumerate(samples):
                if not isinstance(s, Mapping) or list(s) != keys:
                    raise DataError(f"pad_collate: sample {i} is not a dict with the keys {keys} of sample 0")
            clash = {"lengths", "mask"} & set(keys)
            if clash:
                raise DataError(f"pad_collate adds 'lengths' and 'mask', but the samples already have {sorted(clash)}")
            columns: dict[Key, list[Any]] = {k: [_as_tensor(s[k]) for s in samples] for k in keys}
        elif isinstance(first, Sequence) and not isinstance(first, (str, bytes)):
            width = len(first)
            for i, s in enumerate(samples):
                if not isinstance(s, Sequence) or isinstance(s, (str, bytes)) or len(s) != width:
                    raise DataError(f"pad_collate: sample {i} is not a sequence of {width} fields like sample 0")
            columns = {i: [_as_tensor(s[i]) for s in samples] for i in range(width)}
        else:
            raise DataError(
                f"pad_collate cannot batch samples of type {type(first).__name__}: expected a tensor, "
                "a (sequence, label, ...) tuple or a dict"
            )
        seq_key = self.length_of
        if seq_key is None:
            seq_key = next((k for k, vals in columns.items() if all(_is_seq(v) for v in vals)), None)
            if seq_key is None:
                raise DataError("pad_collate found no sequence field (a tensor with at least one dimension) in the samples")
        elif seq_key not in columns or not all(_is_seq(v) for v in columns[seq_key]):
            raise UsageError(f"length_of={seq_key!r} does not name a sequence field of the samples (fields: {list(columns)})")
        out = {k: self._pad(vals, k) for k, vals in columns.items()}
        lengths, mask = _lengths_and_mask(columns[seq_key], self.batch_first, self.padding_side)
        if isinstance(first, Mapping):
            return {**out, "lengths": lengths, "mask": mask}
        return (*out.values(), lengths, mask)


def pad_collate(
    pad_value: float | Mapping[Key, float] = 0,
    batch_first: bool = True,
    padding_side: str = "right",
    *,
    length_of: Key | None = None,
) -> PadCollate:
    """A ``collate_fn`` that pads variable-length sequence samples (see the module docstring).

    ``pad_value`` is a number, or a mapping field index/key -> value (others get 0), e.g.
    ``{0: tokenizer_pad_id, 1: -100}`` to pad token labels with the loss's ignore index.
    ``padding_side`` is ``"right"`` or ``"left"``. ``lengths`` and ``mask`` describe the field
    ``length_of`` (default: the first field that is a tensor with at least one dimension).
    NumPy arrays are turned into tensors; other fields (labels, strings) go through
    ``default_collate``.

        loader = DataLoader(dataset, batch_size=32, collate_fn=pad_collate(pad_value=0))
    """
    return PadCollate(pad_value, batch_first, padding_side, length_of)

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

from torchwise.utils.convert import from_numpy, image_to_tensor, tensor_to_image, to_numpy
from torchwise.core.errors import DataError, UsageError


def test_to_numpy_detaches_and_shares_cpu_memory():
    t = torch.arange(6.0, requires_grad=True).reshape(2, 3) * 1
    a = to_numpy(t)
    assert isinstance(a, np.ndarray) and a.shape == (2, 3) and a.dtype == np.float32
    np.testing.assert_array_equal(a, np.arange(6.0).reshape(2, 3))
    base = torch.zeros(3)
    to_numpy(base)[0] = 5
    assert base[0] == 5  # shared, like Tensor.numpy()
    c = to_numpy(base, copy=True)
    c[1] = 7
    assert base[1] == 0


def test_to_numpy_bfloat16_conj_neg_sparse():
    b = torch.tensor([1.5, -2.25], dtype=torch.bfloat16)
    with pytest.raises(TypeError):
        b.numpy()  # what plain torch does
    a = to_numpy(b)
    assert a.dtype == np.float32 and a.tolist() == [1.5, -2.25]
    z = torch.tensor([1 + 2j, 3 - 1j]).conj()
    assert z.is_conj()
    np.testing.assert_array_equal(to_numpy(z), np.array([1 - 2j, 3 + 1j]))
    n = torch._neg_view(torch.tensor([1.0, -2.0]))
    assert n.is_neg()
    np.testing.assert_array_equal(to_numpy(n), np.array([-1.0, 2.0], dtype=np.float32))
    s = torch.sparse_coo_tensor([[0, 2]], [1.0, 3.0], (4,), check_invariants=True)
    np.testing.assert_array_equal(to_numpy(s), np.array([1.0, 0.0, 3.0, 0.0], dtype=np.float32))
    with pytest.raises(UsageError):
        to_numpy([1, 2])  # type: ignore[arg-type]


def test_from_numpy_negative_strides_copy_only_when_needed():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    flipped = np.flip(a, axis=1)
    with pytest.raises(ValueError):
        torch.from_numpy(flipped)  # what plain torch does
    t = from_numpy(flipped)
    np.testing.assert_array_equal(t.numpy(), flipped)
    assert not np.shares_memory(t.numpy(), a)
    shared = from_numpy(a)
    a[0, 0] = 100
    assert shared[0, 0] == 100  # no copy when none is needed
    rev = from_numpy(np.arange(5)[::-1])
    assert rev.tolist() == [4, 3, 2, 1, 0]


def test_from_numpy_read_only_byte_order_and_errors():
    ro = np.broadcast_to(np.arange(3.0), (2, 3))
    assert not ro.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch would warn about a non-writable array
        t = from_numpy(ro)
    t[0, 0] = 9  # writable, and the source is untouched
    assert ro[0, 0] == 0
    big = np.arange(4, dtype=">i4")
    assert from_numpy(big).tolist() == [0, 1, 2, 3]
    assert from_numpy(np.float64(2.5)).item() == 2.5
    with pytest.raises(DataError, match="dtype <U1"):
        from_numpy(np.array(["a", "b"]))
    with pytest.raises(UsageError, match="as_tensor"):
        from_numpy([1, 2])  # type: ignore[arg-type]


def test_image_round_trip_rgb_and_gray():
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    t = image_to_tensor(rgb)
    assert t.shape == (3, 5, 7) and t.dtype == torch.float32
    assert 0.0 <= float(t.min()) and float(t.max()) <= 1.0
    assert t[1, 2, 3].item() == pytest.approx(rgb[2, 3, 1] / 255)
    assert t.is_contiguous()
    f = np.zeros((2, 2), dtype=np.float32)
    image_to_tensor(f)[0, 0, 0] = 1  # a new tensor, not a view of the caller's array
    assert f[0, 0] == 0
    np.testing.assert_array_equal(tensor_to_image(t), rgb)
    gray = rng.integers(0, 256, size=(4, 6), dtype=np.uint8)
    tg = image_to_tensor(gray)
    assert tg.shape == (1, 4, 6)
    np.testing.assert_array_equal(tensor_to_image(tg), gray)
    assert tensor_to_image(tg, keep_channel_dim=True).shape == (4, 6, 1)
    # every uint8 value survives the trip
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16)
    np.testing.assert_array_equal(tensor_to_image(image_to_tensor(ramp)), ramp)


def test_tensor_to_image_clamps_rounds_and_handles_nan():
    t = torch.tensor([[[-0.5, 0.0, 0.5, 1.0, 2.0, float("nan"), 0.499 / 255, 0.501 / 255]]])
    assert tensor_to_image(t).tolist() == [[0, 0, 128, 255, 255, 0, 0, 1]]
    u = torch.full((3, 2, 2), 7, dtype=torch.uint8)
    assert tensor_to_image(u).shape == (2, 2, 3) and tensor_to_image(u).max() == 7
    assert tensor_to_image(torch.rand(3, 2, 2, dtype=torch.bfloat16)).dtype == np.uint8


def test_image_errors():
    with pytest.raises(DataError, match="looks like CHW"):
        image_to_tensor(np.zeros((3, 8, 8), dtype=np.uint8))
    with pytest.raises(DataError, match="int64"):
        image_to_tensor(np.zeros((4, 4, 3), dtype=np.int64))
    with pytest.raises(UsageError, match="already a tensor"):
        image_to_tensor(torch.zeros(4, 4, 3))
    with pytest.raises(DataError, match="one image at a time"):
        tensor_to_image(torch.zeros(2, 3, 4, 4))
    with pytest.raises(DataError, match="looks like HWC"):
        tensor_to_image(torch.zeros(8, 8, 3))
    with pytest.raises(DataError, match="int64"):
        tensor_to_image(torch.zeros(3, 2, 2, dtype=torch.long))
    assert image_to_tensor(np.ones((2, 2), dtype=np.uint16) * 65535).max() == 1.0
    assert image_to_tensor(np.ones((2, 2), dtype=bool)).sum() == 4


def test_pil_images_by_duck_typing():
    Image = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    rgb = rng.integers(0, 256, size=(6, 5, 3), dtype=np.uint8)
    img = Image.fromarray(rgb)
    t = image_to_tensor(img)
    assert t.shape == (3, 6, 5)
    np.testing.assert_array_equal(tensor_to_image(t), rgb)
    assert image_to_tensor(img.convert("L")).shape == (1, 6, 5)
    pal = img.convert("P")
    assert image_to_tensor(pal).shape == (3, 6, 5)  # palette indices turned into colours

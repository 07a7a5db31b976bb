"""Conversions between tensors, NumPy arrays and images, without torchvision.

Images: ``image_to_tensor`` takes an HWC (or HW) ``uint8`` array or a PIL image and returns a CHW
``float32`` tensor in [0, 1]; ``tensor_to_image`` goes back to an HWC ``uint8`` array (rounded,
clamped). Pillow is optional: PIL images are recognised by their attributes, never imported.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from torchwise.core.errors import DataError, UsageError

__all__ = ["from_numpy", "image_to_tensor", "tensor_to_image", "to_numpy"]

# torch dtypes NumPy cannot hold, and what they become
_WIDEN = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}
for _name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"):
    if hasattr(torch, _name):
        _WIDEN[getattr(torch, _name)] = torch.float32


def to_numpy(tensor: torch.Tensor | np.ndarray, *, copy: bool = False) -> np.ndarray:
    """A NumPy array with the values of ``tensor``: detached, on the CPU, conjugation and negation
    bits resolved, sparse made dense, quantized dequantized, and dtypes NumPy lacks widened
    (bfloat16 and float8 -> float32, complex32 -> complex64).

    The array shares memory with a CPU tensor when no conversion was needed (as ``Tensor.numpy``
    does); pass ``copy=True`` for an independent array. A NumPy array is returned as it is.
    """
    if isinstance(tensor, np.ndarray):
        return tensor.copy() if copy else tensor
    if not isinstance(tensor, torch.Tensor):
        raise UsageError(f"to_numpy expects a torch.Tensor, got {type(tensor).__name__}")
    t = tensor.detach()
    if t.is_quantized:
        t = t.dequantize()
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.resolve_conj().resolve_neg()
    if t.dtype in _WIDEN:
        t = t.to(_WIDEN[t.dtype])
    try:
        array = t.numpy()
    except TypeError as exc:  # any other dtype NumPy does not know
        raise DataError(f"cannot convert a {t.dtype} tensor to NumPy: {exc}") from exc
    return array.copy() if copy else array


def from_numpy(array: np.ndarray, *, copy: bool = False) -> torch.Tensor:
    """A tensor with the values of ``array``, sharing its memory when that is safe.

    ``torch.from_numpy`` refuses negative strides (``np.flip``, ``a[::-1]``) and non-native byte
    order, and warns on read-only arrays (``np.broadcast_to``, memory-mapped files); those, and
    unaligned arrays, are copied first. Everything else shares memory (``copy=True`` forces a
    copy). NumPy scalars become 0-d tensors.
    """
    if isinstance(array, np.generic):
        array = np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise UsageError(f"from_numpy expects a numpy.ndarray, got {type(array).__name__} (use torch.as_tensor for lists)")
    if array.dtype.kind in "OUSVMm":
        raise DataError(f"cannot make a tensor from a NumPy array of dtype {array.dtype} (only numbers and booleans)")
    if not array.dtype.isnative:
        array = array.astype(array.dtype.newbyteorder("="))  # a copy in native byte order
    elif (
        copy
        or any(s < 0 for s in array.strides)
        or not array.flags.writeable
        or not array.flags.aligned
    ):
        array = np.array(array, copy=True, order="C")
    try:
        return torch.from_numpy(array)
    except TypeError as exc:
        raise DataError(f"cannot make a tensor from a NumPy array of dtype {array.dtype}: {exc}") from exc


# --------------------------------------------------------------------------------------------
# images


def _looks_like_pil(img: Any) -> bool:
    return not isinstance(img, (np.ndarray, torch.Tensor)) and all(hasattr(img, a) for a in ("mode", "size", "getbands"))


def _pil_to_array(img: Any) -> np.ndarray:
    mode = img.mode
    if mode == "P":  # palette indices are not colours
        img = img.convert("RGBA" if "transparency" in getattr(img, "info", {}) else "RGB")
    elif mode in ("CMYK", "YCbCr", "LAB", "HSV"):
        img = img.convert("RGB")
    elif mode in ("I;16", "I;16B", "I;16L", "I;16N"):
        return np.asarray(img).astype(np.uint16)
    return np.asarray(img)


def image_to_tensor(img: Any) -> torch.Tensor:
    """An image as a CHW ``float32`` tensor in [0, 1].

    ``img`` is an HWC array with 1-4 channels or an HW (grayscale -> 1HW) array, or a PIL image.
    ``uint8`` is divided by 255, ``uint16`` by 65535, ``bool`` gives 0/1, floating-point values are
    taken as already in [0, 1].
    """
    if _looks_like_pil(img):
        array = _pil_to_array(img)
    elif isinstance(img, np.ndarray):
        array = img
    elif isinstance(img, torch.Tensor):
        raise UsageError("image_to_tensor expects an HWC NumPy array or a PIL image; this is already a tensor")
    else:
        raise UsageError(f"image_to_tensor expects an HWC NumPy array or a PIL image, got {type(img).__name__}")
    if array.ndim == 2:
        array = array[:, :, None]
    elif array.ndim != 3:
        raise DataError(f"image_to_tensor expects an HWC or HW image, got an array of shape {array.shape}")
    if array.shape[2] not in (1, 2, 3, 4):
        hint = " (it looks like CHW; image_to_tensor wants HWC)" if array.shape[0] in (1, 3, 4) else ""
        raise DataError(f"image_to_tensor expects HWC with 1-4 channels, got shape {array.shape}{hint}")
    if array.dtype == np.uint8:
        scale = 255.0
    elif array.dtype == np.uint16:
        scale = 65535.0
    elif array.dtype == np.bool_:
        scale = 1.0
    elif array.dtype.kind == "f":
        scale = 1.0
    else:
        raise DataError(
            f"image_to_tensor supports uint8, uint16, bool and float images, got {array.dtype} "
            "(its value range is not defined; scale it to [0, 1] floats first)"
        )
    tensor = from_numpy(array).permute(2, 0, 1).to(torch.float32, memory_format=torch.contiguous_format, copy=True)
    return tensor.div_(scale) if scale != 1.0 else tensor


def tensor_to_image(tensor: torch.Tensor, *, keep_channel_dim: bool = False) -> np.ndarray:
    """A CHW (or HW) image tensor as an HWC ``uint8`` NumPy array.

    Floating-point values are clamped to [0, 1], scaled by 255 and rounded (NaN becomes 0);
    ``uint8`` is kept, ``bool`` becomes 0/255. A single-channel image comes back HW, as
    grayscale images usually are, unless ``keep_channel_dim=True``.
    """
    if not isinstance(tensor, torch.Tensor):
        raise UsageError(f"tensor_to_image expects a torch.Tensor, got {type(tensor).__name__}")
    t = tensor.detach()
    if t.dim() == 2:
        t = t.unsqueeze(0)
    elif t.dim() == 4:
        raise DataError(f"tensor_to_image converts one image at a time; got a batch of shape {tuple(t.shape)} (index it)")
    elif t.dim() != 3:
        raise DataError(f"tensor_to_image expects a CHW or HW tensor, got shape {tuple(t.shape)}")
    if t.shape[0] not in (1, 2, 3, 4):
        hint = " (it looks like HWC; tensor_to_image wants CHW)" if t.shape[-1] in (1, 3, 4) else ""
        raise DataError(f"tensor_to_image expects CHW with 1-4 channels, got shape {tuple(t.shape)}{hint}")
    if t.is_floating_point():
        t = torch.nan_to_num(t.float(), nan=0.0).clamp_(0.0, 1.0).mul_(255.0).round_().to(torch.uint8)
    elif t.dtype == torch.bool:
        t = t.to(torch.uint8) * 255
    elif t.dtype != torch.uint8:
        raise DataError(f"tensor_to_image supports float, uint8 and bool tensors, got {t.dtype}")
    hwc = t.permute(1, 2, 0).cpu().contiguous().numpy()
    if hwc.shape[2] == 1 and not keep_channel_dim:
        return hwc[:, :, 0]
    return hwc

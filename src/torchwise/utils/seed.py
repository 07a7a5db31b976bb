"""Reproducibility: seed every generator, seed DataLoader workers, save and restore RNG state.

* :func:`seed_everything` seeds ``random``, NumPy's global generator, torch on the CPU and on every
  CUDA device, and sets ``PYTHONHASHSEED`` for child processes; ``deterministic=True`` also
  switches cuDNN and torch to deterministic algorithms.
* :func:`seed_worker` / :func:`make_generator` make a multi-worker DataLoader reproducible.
* :func:`get_rng_state` / :func:`set_rng_state` capture and restore every generator, in a form
  that :func:`torchwise.load_checkpoint` reads with ``weights_only=True``.
"""

from __future__ import annotations

import os
import random
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from torchwise.core.errors import UsageError

__all__ = ["seed_everything", "seed_worker", "make_generator", "get_rng_state", "set_rng_state", "MAX_SEED"]

MAX_SEED = 2**32 - 1  # numpy.random.seed accepts 0 .. 2**32 - 1


def _check_seed(seed: Any, what: str = "seed") -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise UsageError(f"{what} must be an integer in 0..{MAX_SEED}, got {type(seed).__name__} {seed!r}")
    value = int(seed)
    if not 0 <= value <= MAX_SEED:
        raise UsageError(f"{what} must be an integer in 0..{MAX_SEED} (NumPy's range), got {value}")
    return value


def seed_everything(seed: int, deterministic: bool = False) -> int:
    """Seed ``random``, NumPy, torch (CPU and all CUDA devices) and ``PYTHONHASHSEED``; return the seed.

    ``PYTHONHASHSEED`` only affects processes started afterwards (DataLoader workers under
    "spawn", subprocesses); the running interpreter's str hashing is fixed at start-up.

    With ``deterministic=True`` also sets ``cudnn.deterministic=True``, ``cudnn.benchmark=False``,
    ``torch.use_deterministic_algorithms(True)`` (ops without a deterministic version then raise)
    and ``CUBLAS_WORKSPACE_CONFIG=":4096:8"`` unless already set. ``deterministic=False`` leaves
    those settings as they are. NumPy ``Generator`` objects (``default_rng``) are not global and
    must be seeded where they are made.
    """
    seed = _check_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)  # also seeds CUDA/MPS generators (lazily where not initialised)
    torch.cuda.manual_seed_all(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if deterministic:
        if "CUBLAS_WORKSPACE_CONFIG" not in os.environ:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
            if torch.cuda.is_available() and torch.cuda.is_initialized():
                warnings.warn(
                    "seed_everything(deterministic=True) set CUBLAS_WORKSPACE_CONFIG after CUDA started; "
                    "cuBLAS handles created earlier may stay non-deterministic: call it before any CUDA work",
                    stacklevel=2,
                )
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        torch.use_deterministic_algorithms(True)
    return seed


def seed_worker(worker_id: int) -> None:
    """``worker_init_fn`` for DataLoader: seed ``random`` and NumPy in each worker from torch's seed.

    torch gives worker ``i`` the seed ``base_seed + i`` (``base_seed`` drawn from the loader's
    generator each epoch); this passes it on to ``random`` and NumPy. torch >= 1.9 seeds those
    two in its own worker loop as well, so with a stock DataLoader this is belt and braces; it
    matters for older torch and for worker pools that do not go through DataLoader (where every
    forked worker would otherwise repeat the parent's NumPy numbers).
    """
    worker_seed = torch.initial_seed() % 2**32
    np.random.seed(worker_seed)
    random.seed(worker_seed)


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` seeded with ``seed``, e.g. for ``DataLoader(generator=...)``."""
    seed = _check_seed(seed)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed)
    return gen


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def get_rng_state() -> dict[str, Any]:
    """Every generator's state: ``python``, ``numpy`` (global), ``torch`` (CPU), ``cuda`` (per device), ``mps``.

    Only tensors, ints, floats, strings, tuples and lists: safe for ``torch.load(weights_only=True)``.
    """
    version, internal, gauss_next = random.getstate()
    algorithm, keys, pos, has_gauss, cached = np.random.get_state(legacy=True)
    state: dict[str, Any] = {
        "python": {"version": int(version), "state": torch.tensor(internal, dtype=torch.int64), "gauss_next": gauss_next},
        "numpy": {
            "algorithm": str(algorithm),
            "keys": torch.from_numpy(np.asarray(keys, dtype=np.int64)),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = [s.cpu() for s in torch.cuda.get_rng_state_all()]
    if _mps_available():
        try:
            state["mps"] = torch.mps.get_rng_state()
        except Exception:  # pragma: no cover - depends on the MPS build
            pass
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore generators from :func:`get_rng_state` output (e.g. after loading a checkpoint).

    Entries that are absent are left alone. A missing ``cuda`` entry, or a different number of
    CUDA devices than when saved, gives a warning and restores what can be restored.
    """
    if not isinstance(state, Mapping) or not ({"python", "numpy", "torch", "cuda"} & set(state)):
        raise UsageError(
            "set_rng_state expects the dict returned by get_rng_state() (keys python, numpy, torch, cuda), "
            f"got {type(state).__name__}"
        )
    try:
        if "python" in state:
            py = state["python"]
            internal = tuple(int(x) for x in torch.as_tensor(py["state"]).tolist())
            random.setstate((int(py["version"]), internal, py["gauss_next"]))
        if "numpy" in state:
            npy = state["numpy"]
            keys = np.asarray(torch.as_tensor(npy["keys"]).cpu().numpy(), dtype=np.uint32)
            np.random.set_state((npy["algorithm"], keys, int(npy["pos"]), int(npy["has_gauss"]), float(npy["cached_gaussian"])))
        if "torch" in state:
            torch.set_rng_state(torch.as_tensor(state["torch"]).cpu().to(torch.uint8))
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise UsageError(f"set_rng_state: the state is not in get_rng_state() form ({type(exc).__name__}: {exc})") from exc

    if torch.cuda.is_available():
        saved = state.get("cuda")
        count = torch.cuda.device_count()
        if saved is None:
            warnings.warn("set_rng_state: the state has no CUDA generator states; CUDA generators left as they are", stacklevel=2)
        else:
            saved = list(saved)
            if len(saved) != count:
                warnings.warn(
                    f"set_rng_state: state saved with {len(saved)} CUDA device(s), {count} visible now; "
                    f"restoring the first {min(len(saved), count)}",
                    stacklevel=2,
                )
            for index, s in enumerate(saved[:count]):
                torch.cuda.set_rng_state(torch.as_tensor(s).cpu().to(torch.uint8), device=index)
    elif state.get("cuda"):
        warnings.warn("set_rng_state: the state has CUDA generator states but CUDA is not available here; skipped", stacklevel=2)
    if "mps" in state and _mps_available():
        try:
            torch.mps.set_rng_state(torch.as_tensor(state["mps"]).cpu().to(torch.uint8))
        except Exception:  # pragma: no cover - depends on the MPS build
            pass

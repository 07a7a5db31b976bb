"""Checkpoints that survive crashes and load safely.

* :func:`save_checkpoint` writes atomically: a temporary file in the same folder, flushed and
  fsync'ed, then ``os.replace``'d over the target, then the folder is fsync'ed. A process killed
  half-way leaves the previous checkpoint untouched; a disk that fills up is reported as such.
* :func:`load_checkpoint` loads with ``weights_only=True`` by default, maps GPU-saved tensors to
  the CPU when this machine has no CUDA, and turns every failure (missing, truncated, not a
  checkpoint, refused by ``weights_only`` naming the global) into one
  :class:`~torchwise.core.errors.CheckpointError` line.
* :func:`load_state_dict` copes with ``module.`` (DataParallel/DDP) and ``_orig_mod.``
  (``torch.compile``) prefixes in either direction and reports every mismatch at once.
* :func:`save_safetensors` exports weights in the safetensors format.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import tempfile
import warnings
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import torch
from torch import nn

from torchwise.core.errors import CheckpointError, StateDictError, UsageError

__all__ = [
    "save_checkpoint",
    "load_checkpoint",
    "load_state_dict",
    "save_safetensors",
    "LoadResult",
    "default_map_location",
    "unwrap_model",
]

# Prefixes added by wrappers: DataParallel / DistributedDataParallel and torch.compile.
WRAPPER_PREFIXES: tuple[str, ...] = ("module.", "_orig_mod.")
# Keys under which training checkpoints commonly keep the model's state dict.
_MODEL_KEYS: tuple[str, ...] = ("model", "state_dict", "model_state_dict")
_LIST_LIMIT = 10
# torch.save's legacy format: pickle protocol 2, then the long 0x1950A86A20F9469CFC6C
_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"


# --------------------------------------------------------------------------------------------
# atomic writing
# --------------------------------------------------------------------------------------------


def _umask() -> int:
    """The process umask without changing it (reads /proc on Linux; 0o022 elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    return 0o022


def _tmp_prefix(target: Path) -> str:
    host = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())[:40] or "host"
    return f".{target.name}.tmp-{host}-"


def _remove_stale_temps(target: Path) -> None:
    """Delete temp files left by earlier writers of ``target`` on this host that have died."""
    prefix = _tmp_prefix(target)
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        if not name.startswith(prefix):
            continue
        pid_text = name[len(prefix):].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            try:
                os.unlink(target.parent / name)
            except OSError:
                pass
        except (PermissionError, OSError):
            continue  # alive (or not ours to judge)


def _fsync_dir(folder: Path) -> None:
    if os.name != "posix":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
    """Call ``write(fileobj)`` on a temp file next to ``path`` and move it over ``path`` atomically.

    Creates missing parent folders. On any error the temp file is removed and ``path`` is left
    as it was.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise CheckpointError(f"{target} is a directory; give a file path such as {target / 'checkpoint.pt'}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CheckpointError(f"cannot create folder {target.parent} for {target.name}: {exc.strerror or exc}") from exc
    _remove_stale_temps(target)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f"{_tmp_prefix(target)}{os.getpid()}-", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the mode a plain open() would have given it.
        try:
            mode = target.stat().st_mode & 0o777 if target.exists() else 0o666 & ~_umask()
            os.chmod(tmp, mode)
        except OSError:
            pass
        os.replace(tmp, target)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    _fsync_dir(target.parent)
    return target


def save_checkpoint(path: str | os.PathLike, /, **state: Any) -> Path:
    """Save ``state`` (a dict of named things) to ``path`` atomically with ``torch.save``.

    >>> save_checkpoint("runs/last.pt", model=model.state_dict(), optimizer=opt.state_dict(), epoch=3)

    Either the old file or the complete new one is at ``path`` afterwards, never a partial
    write, even if the process is killed meanwhile. Keep values to tensors, containers and plain
    Python types so that :func:`load_checkpoint` can read the file with ``weights_only=True``.
    Returns the path written.
    """
    if not state:
        raise UsageError("save_checkpoint needs something to save: save_checkpoint(path, model=model.state_dict(), ...)")

    def write(fh: IO[bytes]) -> None:
        torch.save(state, fh)

    try:
        return atomic_write(path, write)
    except CheckpointError:
        raise
    except Exception as exc:
        full = _disk_full(exc)
        if full is not None:  # torch.save reports it as an "enforce fail" RuntimeError caused by the OSError
            raise CheckpointError(
                f"no space left on device while writing {path} ({full.strerror or 'disk full'}); "
                "free some space or save elsewhere (the previous file, if any, is unchanged)"
            ) from exc
        if isinstance(exc, OSError):
            raise CheckpointError(f"could not write checkpoint {path}: {exc.strerror or exc} (the previous file, if any, is unchanged)") from exc
        # pickling errors: lambdas, open files, locks ...
        raise CheckpointError(
            f"could not save checkpoint {path}: {type(exc).__name__}: {_first_line(exc)} "
            "(save state dicts, tensors and plain Python values, not objects such as lambdas or open files; "
            "the previous file, if any, is unchanged)"
        ) from exc


# --------------------------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------------------------


def _disk_full(exc: BaseException) -> OSError | None:
    """The out-of-space OSError behind ``exc`` (itself, its cause or its context), if any."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT):
            return e
        todo += [e.__cause__, e.__context__]
    return None


def _first_line(exc: BaseException) -> str:
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip()
    return text.splitlines()[0] if text else repr(exc)


def default_map_location(
    location: str,
    *,
    cuda_available: bool,
    cuda_count: int,
    mps_available: bool,
) -> str | None:
    """Where a storage saved at ``location`` should go: ``"cpu"`` if that device does not exist here.

    Returns ``None`` to keep the saved device. Pure, so the decision can be tested on any machine.
    """
    if location.startswith("cuda"):
        if not cuda_available or cuda_count == 0:
            return "cpu"
        _, _, index = location.partition(":")
        if index.isdigit() and int(index) >= cuda_count:
            return "cpu"
        return None
    if location.startswith("mps") and not mps_available:
        return "cpu"
    return None


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def _auto_map_location() -> Callable[[Any, str], Any] | None:
    cuda_available = torch.cuda.is_available()
    mps = _mps_available()
    cuda_count = torch.cuda.device_count() if cuda_available else 0

    def restore(storage: Any, location: str) -> Any:
        if default_map_location(location, cuda_available=cuda_available, cuda_count=cuda_count, mps_available=mps) == "cpu":
            return storage  # storages arrive on the CPU; returning them keeps them there
        return None  # torch's default: put it back where it was saved

    return restore


def _sniff(path: Path) -> str | None:
    """A CheckpointError message if the file clearly is not a torch checkpoint, else None."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        return f"cannot read checkpoint {path}: {exc.strerror or exc}"
    if size == 0:
        return f"checkpoint {path} is empty (0 bytes), probably from an interrupted copy or save; use an earlier checkpoint"
    if head.startswith(b"PK\x03\x04"):
        if not zipfile.is_zipfile(path):
            return (
                f"checkpoint {path} is truncated or corrupted (its zip archive has no end); "
                "it was probably cut off while being written or copied: use an earlier checkpoint or copy it again"
            )
        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError) as exc:
            return f"checkpoint {path} is corrupted ({exc}); use an earlier checkpoint or copy it again"
        if not any(n.endswith("data.pkl") for n in names):
            return f"{path} is a zip archive but not a PyTorch checkpoint (no data.pkl inside); give a file written by torch.save or save_checkpoint"
        return None
    if head.startswith(_LEGACY_MAGIC):  # torch's legacy (pre-1.6) format: a pickle starting with a magic number
        return None
    if head[:1] == b"\x80":
        return (
            f"{path} is a plain pickle file, not a PyTorch checkpoint; only if you trust it, read it with "
            "pickle.load (unpickling can run code), or re-save its tensors with save_checkpoint"
        )
    if len(head) >= 9 and head[8:9] == b"{":
        n = int.from_bytes(head[:8], "little")
        if 0 < n < size:
            return f"{path} is a safetensors file, not a torch checkpoint; load it with safetensors.torch.load_file({str(path)!r})"
    return f"{path} is not a PyTorch checkpoint (it starts with {head[:8]!r}); give a file written by torch.save or save_checkpoint"


def _is_legacy(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(_LEGACY_MAGIC)) == _LEGACY_MAGIC
    except OSError:
        return False


def _refused(exc: BaseException, path: Path) -> str | None:
    """The one-line reason when ``weights_only=True`` refused the file, naming the offending
    global; ``None`` when ``exc`` is not such a refusal. Covers both torch file formats."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    if "Weights only load failed" not in text and "WeightsUnpickler" not in text:
        return None
    blocked = re.search(r"unsupported GLOBAL ([\w.]+) whose module ([\w.]+) is blocked", text)
    if blocked:
        return (
            f"checkpoint {path} was refused by weights_only=True: it calls {blocked.group(1)}, from module "
            f"{blocked.group(2)} that is never allowed (the file tries to run code when loaded); do not load it unless you made it"
        )
    match = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", text)
    names = [match.group(1)] if match else []
    if not names:
        try:
            names = list(torch.serialization.get_unsafe_globals_in_checkpoint(path))
        except Exception:
            names = []
    if names:
        return (
            f"checkpoint {path} holds {', '.join(names)}, which weights_only=True refuses to unpickle; "
            f"only if you trust this file, load it with load_checkpoint(path, weights_only=False), "
            f"or allow that class with torch.serialization.add_safe_globals([{names[0]}])"
        )
    # otherwise torch puts the unpickler's own reason after "WeightsUnpickler error:" and a blank line
    tail = text.split("WeightsUnpickler error:", 1)[-1]
    reason = next((ln.strip() for ln in tail.split("\n\n", 1)[-1].splitlines() if ln.strip()), "")
    return (
        f"checkpoint {path} was refused by weights_only=True ({reason[:200] or 'it holds more than tensors and plain values'}); "
        "only if you trust this file, load it with load_checkpoint(path, weights_only=False)"
    )


def load_checkpoint(
    path: str | os.PathLike,
    map_location: Any = None,
    weights_only: bool = True,
) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint` (or ``torch.save``).

    ``weights_only=True`` (the default) refuses pickled code, so an untrusted file cannot run
    anything. With ``map_location=None`` tensors go back to the device they were saved from when
    that device exists here, otherwise to the CPU (a GPU checkpoint loads on a CPU-only machine).
    Any other ``map_location`` is passed to ``torch.load``. Returns what was saved (a dict for
    :func:`save_checkpoint` files). Every failure raises one :class:`CheckpointError`.
    """
    p = Path(path).expanduser()
    if not p.exists():
        hint = ""
        if p.parent.is_dir():
            near = sorted(x.name for x in p.parent.iterdir() if x.suffix in {".pt", ".pth", ".ckpt", ".bin"})[:5]
            if near:
                hint = f"; checkpoints in {p.parent}: {', '.join(near)}"
        raise CheckpointError(f"checkpoint {p} not found (check the path){hint}")
    if p.is_dir():
        raise CheckpointError(f"{p} is a directory, not a checkpoint file; give the path of the .pt file inside it")
    problem = _sniff(p)
    if problem:
        raise CheckpointError(problem)
    location = _auto_map_location() if map_location is None else map_location
    try:
        return torch.load(p, map_location=location, weights_only=weights_only)
    except Exception as exc:
        refused = _refused(exc, p) if weights_only else None
        if refused:
            raise CheckpointError(refused) from exc
        message = _first_line(exc) if str(exc).strip() else f"{type(exc).__name__}: the data ends early"
        truncated = ("central directory", "failed reading", "truncated", "ran out of input")
        if any(t in message.lower() for t in truncated) or isinstance(exc, (EOFError, zipfile.BadZipFile)) or _is_legacy(p):
            raise CheckpointError(
                f"checkpoint {p} is truncated or corrupted ({message[:160]}); use an earlier checkpoint or copy it again"
            ) from exc
        if "deserialize object on" in message:
            raise CheckpointError(
                f"checkpoint {p} was saved on a device this machine lacks ({message[:160]}); pass map_location='cpu'"
            ) from exc
        raise CheckpointError(f"cannot load checkpoint {p}: {type(exc).__name__}: {message[:300]}") from exc


# --------------------------------------------------------------------------------------------
# state dicts
# --------------------------------------------------------------------------------------------


@dataclass
class LoadResult:
    """What :func:`load_state_dict` did. ``ok`` is True when everything matched exactly."""

    loaded: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    mismatched: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    renamed: str | None = None  # e.g. "stripped 'module.'" when prefixes were fixed

    @property
    def ok(self) -> bool:
        return not (self.missing or self.unexpected or self.mismatched)

    @property
    def skipped(self) -> list[str]:
        """Checkpoint keys that were not loaded (unexpected or of the wrong shape)."""
        return self.unexpected + [name for name, _, _ in self.mismatched]

    def __str__(self) -> str:
        head = f"loaded {len(self.loaded)} tensors"
        if self.renamed:
            head += f" ({self.renamed})"
        return head if self.ok else f"{head}; {describe_mismatch(self.missing, self.unexpected, self.mismatched)}"


def unwrap_model(model: nn.Module) -> nn.Module:
    """The plain module inside DataParallel / DistributedDataParallel / ``torch.compile`` wrappers."""
    while True:
        if isinstance(model, (nn.DataParallel, nn.parallel.DistributedDataParallel)):
            model = model.module
        elif type(model).__name__ == "OptimizedModule" and isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        else:
            return model


def _wrapper_prefix(keys: list[str]) -> str:
    """The chain of wrapper prefixes (``module.``, ``_orig_mod.``) that every key starts with."""
    prefix = ""
    if not keys:
        return prefix
    rest = keys
    while True:
        for p in WRAPPER_PREFIXES:
            if all(k.startswith(p) and len(k) > len(p) for k in rest):
                prefix += p
                rest = [k[len(p):] for k in rest]
                break
        else:
            return prefix


def fix_prefixes(state_keys: list[str], model_keys: list[str]) -> tuple[dict[str, str], str | None]:
    """Map checkpoint keys to model keys across wrapper prefixes.

    Returns ``(mapping old->new, description)``; the mapping is the identity (and description
    None) unless the checkpoint and the model differ by a wrapper prefix that sits on *all* keys
    of one side and the renaming makes more keys match.
    """
    identity = {k: k for k in state_keys}
    src = _wrapper_prefix(state_keys)
    dst = _wrapper_prefix(model_keys)
    if src == dst:
        return identity, None
    # Only change the part that differs: keep the common leading prefixes.
    common = os.path.commonprefix([src, dst])
    while common and not common.endswith("."):
        common = common[:-1]
    drop, add = src[len(common):], dst[len(common):]
    mapping = {k: common + add + k[len(common) + len(drop):] for k in state_keys}
    model_set = set(model_keys)
    before = sum(k in model_set for k in state_keys)
    after = sum(v in model_set for v in mapping.values())
    if after <= before:
        return identity, None
    parts = []
    if drop:
        parts.append(f"stripped {drop!r}")
    if add:
        parts.append(f"added {add!r}")
    return mapping, " and ".join(parts) + " on every key"


def _shape(value: Any) -> tuple[int, ...] | None:
    return tuple(value.shape) if isinstance(value, torch.Tensor) else None


def _fmt_shape(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _fmt_list(items: list[str]) -> str:
    shown = ", ".join(items[:_LIST_LIMIT])
    if len(items) > _LIST_LIMIT:
        shown += f", ... and {len(items) - _LIST_LIMIT} more"
    return shown


def describe_mismatch(
    missing: list[str],
    unexpected: list[str],
    mismatched: list[tuple[str, tuple[int, ...], tuple[int, ...]]],
) -> str:
    """One readable line: missing keys, unexpected keys, shape mismatches."""
    parts = []
    if missing:
        parts.append(f"{len(missing)} missing in checkpoint: {_fmt_list(missing)}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected in checkpoint: {_fmt_list(unexpected)}")
    if mismatched:
        shapes = [f"{name} (checkpoint {_fmt_shape(a)} vs model {_fmt_shape(b)})" for name, a, b in mismatched]
        parts.append(f"{len(mismatched)} shape mismatches: {_fmt_list(shapes)}")
    return "; ".join(parts)


def extract_state_dict(obj: Any) -> Mapping[str, Any]:
    """The model state dict inside ``obj``: itself, or its "model"/"state_dict"/"model_state_dict" entry."""
    if isinstance(obj, nn.Module):
        return unwrap_model(obj).state_dict()
    if not isinstance(obj, Mapping):
        raise UsageError(f"expected a state dict (a mapping of names to tensors) or a checkpoint dict, got {type(obj).__name__}")
    if not all(isinstance(v, torch.Tensor) for v in obj.values()):
        for key in _MODEL_KEYS:
            inner = obj.get(key)
            if isinstance(inner, nn.Module):
                return unwrap_model(inner).state_dict()
            if isinstance(inner, Mapping):
                return inner
    return obj


def load_state_dict(model: nn.Module, state_dict: Mapping[str, Any], strict: bool = True) -> LoadResult:
    """Load ``state_dict`` into ``model``, fixing wrapper prefixes and reporting every mismatch.

    * ``state_dict`` may be a checkpoint dict holding it under "model", "state_dict" or
      "model_state_dict".
    * ``model`` may be wrapped in DataParallel/DDP or ``torch.compile``: it is unwrapped.
    * ``module.`` / ``_orig_mod.`` prefixes are stripped or added when one side has them on every
      key and the other does not (never by blindly cutting characters).
    * ``strict=True``: any missing key, unexpected key or shape mismatch raises one
      :class:`StateDictError` listing all of them, and nothing is loaded.
      ``strict=False``: loads what fits and returns a :class:`LoadResult` saying what was skipped.
    """
    if not isinstance(model, nn.Module):
        raise UsageError(f"load_state_dict needs an nn.Module as first argument, got {type(model).__name__}")
    target = unwrap_model(model)
    source = extract_state_dict(state_dict)
    model_sd = target.state_dict()
    mapping, renamed = fix_prefixes(list(source.keys()), list(model_sd.keys()))
    renamed_sd = {mapping[k]: v for k, v in source.items()}

    missing = [k for k in model_sd if k not in renamed_sd]
    unexpected = [k for k in renamed_sd if k not in model_sd]
    mismatched: list[tuple[str, tuple[int, ...], tuple[int, ...]]] = []
    fitting: dict[str, Any] = {}
    for key, value in renamed_sd.items():
        if key not in model_sd:
            continue
        have, want = _shape(value), _shape(model_sd[key])
        if have is not None and want is not None and have != want:
            mismatched.append((key, have, want))
        else:
            fitting[key] = value
    result = LoadResult(loaded=list(fitting), missing=missing, unexpected=unexpected, mismatched=mismatched, renamed=renamed)
    if strict and not result.ok:
        hint = ""
        if unexpected and missing and not renamed:
            hint = " (the key names differ: was the checkpoint saved from a differently named or wrapped model?)"
        err = StateDictError(
            f"state dict does not fit {type(target).__name__}: {describe_mismatch(missing, unexpected, mismatched)}{hint}; "
            "nothing was loaded (use strict=False to load the matching tensors)"
        )
        err.result = result  # type: ignore[attr-defined]
        raise err
    try:
        target.load_state_dict(fitting, strict=False)
    except RuntimeError as exc:
        raise StateDictError(f"could not load state dict into {type(target).__name__}: {_first_line(exc)[:300]}") from exc
    return result


# --------------------------------------------------------------------------------------------
# safetensors
# --------------------------------------------------------------------------------------------


def save_safetensors(
    model_or_state_dict: nn.Module | Mapping[str, Any],
    path: str | os.PathLike,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """Write the tensors of a model (or state dict) to ``path`` in the safetensors format, atomically.

    Tensors that share memory (tied weights) or are views are copied to contiguous tensors of
    their own, which safetensors requires. Non-tensor entries are skipped with a warning.
    Needs the ``safetensors`` package (``pip install safetensors``).
    """
    try:
        from safetensors.torch import save as st_save
    except ImportError as exc:
        raise UsageError("save_safetensors needs the safetensors package: pip install safetensors (or torchwise[safetensors])") from exc
    source = extract_state_dict(model_or_state_dict)
    tensors: dict[str, torch.Tensor] = {}
    skipped = []
    seen: set[tuple[str, int]] = set()
    for key, value in source.items():
        if not isinstance(value, torch.Tensor):
            skipped.append(str(key))
            continue
        t = value.detach()
        storage = t.untyped_storage()
        ident = (str(t.device), storage.data_ptr())
        owns_storage = t.is_contiguous() and t.storage_offset() == 0 and storage.nbytes() == t.numel() * t.element_size()
        if ident in seen or not owns_storage:
            t = t.contiguous().clone()
        else:
            seen.add(ident)
        tensors[str(key)] = t.cpu()
    if skipped:
        warnings.warn(f"save_safetensors: skipped non-tensor entries: {_fmt_list(skipped)}", stacklevel=2)
    meta = {str(k): str(v) for k, v in (metadata or {}).items()} or None
    data = st_save(tensors, metadata=meta)
    try:
        return atomic_write(path, lambda fh: fh.write(data))
    except OSError as exc:
        raise CheckpointError(f"could not write {path}: {exc.strerror or exc}") from exc

"""Exceptions with one clear line: what was wrong and what is expected.

The CLI prints any :class:`TorchwiseError` as ``torchwise CMD: error: <message>`` and exits 2,
never with a traceback. Library callers can catch the specific subclasses. Imports nothing.
"""

from __future__ import annotations


class TorchwiseError(Exception):
    """Base class of every error torchwise raises on purpose."""


class UsageError(TorchwiseError, ValueError):
    """Bad arguments or bad input values (a bad device string, an unknown precision...)."""


class TaskError(TorchwiseError):
    """A ``file.py:function`` / ``module:function`` Task reference that cannot be resolved."""


class CheckpointError(TorchwiseError):
    """A checkpoint that is missing, truncated, not a checkpoint, or refused by ``weights_only``."""


class StateDictError(TorchwiseError):
    """A state dict that does not fit the model (missing/unexpected keys, shape mismatches)."""


class DataError(TorchwiseError):
    """A batch, loader or label the caller gave that cannot be used as it is."""


class TrainingError(TorchwiseError):
    """Training cannot go on (repeated non-finite steps, a micro-batch of 1 out of memory...)."""

"""A small CNN on scikit-learn's handwritten digits (8x8 images, 10 classes; ships with
scikit-learn, nothing is downloaded).

The task lives in the package, ``src/torchwise/examples/digits.py``, so that it also runs from an
installed wheel (``torchwise demo``, or ``torchwise train torchwise.examples.digits:task``); this
file keeps the short path of a clone:

    torchwise summary examples/digits.py:task
    torchwise train examples/digits.py:task
"""

from __future__ import annotations

from torchwise.examples.digits import DigitsCNN, load_digits_tensors, task

__all__ = ["DigitsCNN", "load_digits_tensors", "task"]

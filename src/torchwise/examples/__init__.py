"""Examples that ship inside the package, so that they run from an installed wheel.

- :mod:`torchwise.examples.digits`: a small CNN on scikit-learn's handwritten digits as a
  :class:`torchwise.Task` (``torchwise train torchwise.examples.digits:task``);
- ``digits_script.py.txt``: the same data in a plain PyTorch training script with three classic
  mistakes, for ``torchwise lint`` and ``torchwise doctor -- python digits_script.py``. It ships
  as text, not as a module: importing it would train, and linting the package would flag it;
  the demo copies it to ``digits_script.py`` in its folder.

``torchwise demo`` runs them one after the other. They need the ``torch`` and ``examples``
extras: ``pip install 'torchwise[torch,examples]'``.
"""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).resolve().parent
DIGITS_TASK = "torchwise.examples.digits:task"
PITFALLS_SCRIPT = FOLDER / "digits_script.py.txt"

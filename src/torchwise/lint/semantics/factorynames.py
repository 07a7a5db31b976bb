"""The names of torch's tensor factories and typed legacy constructors, defined once.

Each is the last part of a ``torch.`` name (``torch.zeros`` is ``"zeros"``). The helpers and
rules that ask "does this call make a new tensor?" build the set they test from these; where
one needs a few more names or fewer, it says so beside its own set. Imports nothing.
"""

from __future__ import annotations

# a tensor of the sizes given, filled with one value (or left uninitialized): torch.zeros(b, d)
FILLED = frozenset({"zeros", "ones", "empty", "full"})
# factories that draw from the random generator (normal/bernoulli/multinomial are left out:
# given tensors, they already run on their device)
RANDOM = frozenset({"rand", "randn", "randint", "randperm"})
# a tensor of the sizes given, filled or drawn: torch.randn(b, d)
SHAPED = FILLED | {"rand", "randn"}
# the factories most code calls: filled, drawn, ranges and torch.tensor of data
COMMON = FILLED | {"rand", "randn", "randint", "arange", "linspace", "tensor"}
# the window functions of signal processing: torch.hann_window(n)
WINDOWS = frozenset({"hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"})
# factories shaped like a tensor they are given (and made on its device)
LIKE = frozenset({"zeros_like", "ones_like", "rand_like", "randn_like"})
# the dtype prefixes of the typed legacy constructors (torch.FloatTensor, torch.cuda.LongTensor)
TYPED_PREFIXES = ("Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte", "Bool")
# the typed legacy constructors (TW513): they always allocate on the CPU, whatever they are given
LEGACY = frozenset({"Tensor", *(f"{t}Tensor" for t in TYPED_PREFIXES)})

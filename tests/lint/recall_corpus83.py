"""The recall corpus, after the first look of set 41: an option whose argparse default is set with
``parser.set_defaults(...)`` (a ``--pin_mem`` / ``--no_pin_mem`` pair) - the default that decides
whether a loader is pinned is the one ``set_defaults`` gives. ``recall_corpus.py`` adds these to its lists.
"""

from __future__ import annotations

from recall_shapes import ProjectShape, Shape, d

FIND: list[Shape] = []
QUIET: list[Shape] = []
PROJECTS: list[ProjectShape] = []

_PAIR = d("""
    import argparse
    import torch
    from torch.utils.data import DataLoader
    parser = argparse.ArgumentParser()
    parser.add_argument('--pin_mem', action='store_true')
    parser.add_argument('--no_pin_mem', action='store_false', dest='pin_mem')
    parser.set_defaults(pin_mem=DEFAULT)
    args = parser.parse_args()
    loader = DataLoader(list(range(10)), batch_size=2, num_workers=2, pin_memory=args.pin_mem)
    model = torch.nn.Linear(2, 2).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in loader:
        loss = model(x.cuda(non_blocking=True)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
""")

FIND += [
    Shape("TW203", "a --pin_mem/--no_pin_mem pair whose set_defaults turns pinning off", _PAIR.replace("DEFAULT", "False"), 9),
]
QUIET += [
    Shape("TW203", "look-alike: the same pair with set_defaults(pin_mem=True) - pinned unless the user says no",
          _PAIR.replace("DEFAULT", "True")),
]

"""A branch of the training loop behind a switch the user must turn on to get a picture (TW207):
``if cfg.show_flow:`` for ``add_argument('--show_flow', action='store_true')`` around a copy of the
step's flow to the host and ``cv2.imwrite(...)``. In a run with the defaults the branch never
runs; turned on, its copy is the point of the switch (a picture to look at), not a pitfall of the
step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.optiondefaults import option_default

# calls that write or show a picture
_PICTURE_WRITERS = frozenset({"imwrite", "imsave", "save_image", "savefig", "imshow", "add_image", "add_images",
                              "add_figure", "save_images"})


def picture_switch(ctx: Context, if_node: AST) -> bool:
    """``if_node`` tests only an option that is off by default (an argparse ``store_true`` or a
    ``default=False`` of this file, a dataclass field, a config constant) and its branch writes or
    shows a picture."""
    test = if_node.test
    if if_node.__class__ is not ast.If or test.__class__ not in (ast.Name, ast.Attribute):
        return False
    if not any(n.__class__ is ast.Call and last_name(n.func) in _PICTURE_WRITERS
               for stmt in if_node.body for n in ast.walk(stmt)):
        return False
    return option_default(ctx, test) is False

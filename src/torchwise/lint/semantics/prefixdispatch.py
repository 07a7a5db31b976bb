"""Methods called by a name built at run time: ``getattr(self, '_' + mode)(*args)`` or
``getattr(self, f"forward_{mode}")(x)`` (a base class's ``forward`` dispatching to
``self._sample`` / ``self._sample_beam`` of its subclasses). A method whose name starts with
such a prefix is reachable though its name occurs only in its ``def``. Text only, once per
project."""

from __future__ import annotations


from torchwise.lint.engine import Context
from torchwise.lint.engine.lazyre import lazy_compile

_DISPATCH = lazy_compile(r"""getattr\([ \t]*self[ \t]*,[ \t]*(?:["'](\w+)["'][ \t]*\+|f["'](\w+)\{)""")


def dispatched_by_prefix(ctx: Context, name: str) -> bool:
    """Does some file of the project call ``getattr(self, '<prefix>' + ...)`` with a prefix that
    ``name`` starts with (and is longer than)?"""
    prefixes = ctx.project.answers.get("prefixdispatch")
    if prefixes is None:
        found: set[str] = set()
        for _, text in ctx.project.files:
            if "getattr(" in text:
                found |= {a or b for a, b in _DISPATCH.findall(text)}
        prefixes = ctx.project.answers["prefixdispatch"] = tuple(found)
    return any(name.startswith(p) and len(name) > len(p) for p in prefixes)

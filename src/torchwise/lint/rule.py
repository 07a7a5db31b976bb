"""The base class every lint rule derives from."""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterator

from torchwise.lint.findings import Finding

if TYPE_CHECKING:
    from torchwise.lint.engine import Context


# what every per-call rule's doc says about code that never runs (added to its "What it flags")
PER_CALL_NOTE = """\
  Code that never runs gets no finding (the advice is about what happens when it runs): a
  function or method nothing in the project calls, or that only such functions call; a branch
  on a local flag bound once to a constant (`multi = False` ... `if multi:`), on a class option
  no construction sets, or on a parameter no call passes (`def loss(..., kind="ce")` with
  `if kind == "hinge":`, every call leaving the default). Public names of an installable package
  or in `__all__` count as called (their callers are outside the project)."""


class Rule:
    """A static check for one catalog practice.

    Subclasses set ``code`` (the catalog code), ``name`` (short, kebab-case), ``doc`` (what it
    flags, why it matters, an example, the fix) and implement :meth:`check`. ``triggers`` is a
    cheap pre-filter: when none of these substrings occurs in a file, the rule is skipped for it.
    ``fixable`` says whether some of its findings come with a safe automatic fix.
    """

    code: str = ""
    name: str = ""
    doc: str = ""
    triggers: tuple[str, ...] = ()
    fixable: bool = False
    # advice (performance, reproducibility, devices) that test code follows on purpose or need not follow
    skip_tests: bool = False
    # advice about what happens when the code runs (a copy per batch, a sync per step, a load on
    # another machine): code that never runs - nothing calls it, or a branch no caller selects -
    # gets none (ruling R5 of issue 22). Every-occurrence rules (deprecated APIs, legacy
    # constructors, weights_only, a biased conv before BatchNorm) keep it False.
    per_call: bool = False

    def check(self, ctx: "Context") -> Iterator[Finding]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def title(self) -> str:
        """The practice's title from the catalog (read lazily; the catalog imports nothing heavy)."""
        try:
            from torchwise.catalog import get_practice

            return get_practice(self.code).title
        except Exception:  # catalog missing or code unknown: fall back to the rule's own name
            return self.name

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "skip_tests" not in cls.__dict__ and cls.code[2:3] in ("2", "3", "4"):
            cls.skip_tests = True
        if cls.__dict__.get("per_call") and "\n\nWhy it matters" in cls.doc and PER_CALL_NOTE not in cls.doc:
            cls.doc = cls.doc.replace("\n\nWhy it matters", "\n" + PER_CALL_NOTE + "\n\nWhy it matters", 1)

    def applies_to(self, source: str) -> bool:
        return not self.triggers or any(t in source for t in self.triggers)

    def __repr__(self) -> str:
        return f"<rule {self.code} {self.name}>"

"""``[tool.torchwise.lint]`` in ``pyproject.toml``: select, ignore, exclude, per-file-ignores.

The configuration that applies to a file is the nearest ``pyproject.toml`` with a
``[tool.torchwise.lint]`` table, found by walking up from the file's folder. Patterns in
``exclude`` and ``per-file-ignores`` are globs relative to that file's folder; a pattern without
a slash also matches any single path component (``"legacy"`` excludes every ``legacy/`` folder).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass, field
from pathlib import Path

from torchwise.core.errors import UsageError

_KEYS = {"select", "ignore", "exclude", "per-file-ignores", "per_file_ignores", "extend-ignore", "extend-select"}


@dataclass(frozen=True)
class LintConfig:
    """Settings read from one ``pyproject.toml`` (``root`` is its folder; None: no config)."""

    root: Path | None = None
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = field(default_factory=tuple)

    def relative(self, path: Path) -> str | None:
        if self.root is None:
            return None
        try:
            return Path(os.path.abspath(path)).relative_to(self.root).as_posix()
        except ValueError:
            return None

    def excludes(self, path: Path) -> bool:
        rel = self.relative(path)
        return rel is not None and any(match(rel, p) for p in self.exclude)

    def ignored_for(self, path: Path) -> tuple[str, ...]:
        rel = self.relative(path)
        if rel is None:
            return ()
        out: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if match(rel, pattern):
                out.extend(codes)
        return tuple(out)


def match(rel: str, pattern: str) -> bool:
    """Does the relative posix path ``rel`` match a glob ``pattern`` (file, folder or component)?"""
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.rstrip("/")
    if not pattern:
        return False
    if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*"):
        return True
    parts = rel.split("/")
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in parts)
    # a folder pattern such as "src/legacy" matches everything below it
    for i in range(1, len(parts)):
        if fnmatch.fnmatchcase("/".join(parts[:i]), pattern):
            return True
    return False


def _strings(value: object, key: str, source: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise UsageError(f"{source}: [tool.torchwise.lint] {key} must be a list of strings, got {value!r}")


def parse_config(data: dict, source: Path) -> LintConfig:
    """Validate the ``[tool.torchwise.lint]`` table ``data`` read from ``source``."""
    if not isinstance(data, dict):
        raise UsageError(f"{source}: [tool.torchwise.lint] must be a table")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise UsageError(
            f"{source}: unknown key(s) in [tool.torchwise.lint]: {', '.join(unknown)}; "
            "expected select, ignore, exclude, per-file-ignores"
        )
    select = _strings(data["select"], "select", source) if "select" in data else None
    if "extend-select" in data:
        select = (select or ("ALL",)) + _strings(data["extend-select"], "extend-select", source)
    ignore = _strings(data.get("ignore", []), "ignore", source) + _strings(data.get("extend-ignore", []), "extend-ignore", source)
    exclude = _strings(data.get("exclude", []), "exclude", source)
    pfi_raw = data.get("per-file-ignores", data.get("per_file_ignores", {}))
    if not isinstance(pfi_raw, dict):
        raise UsageError(f"{source}: [tool.torchwise.lint] per-file-ignores must be a table of pattern = [codes]")
    pfi = tuple((str(k), _strings(v, f"per-file-ignores[{k!r}]", source)) for k, v in pfi_raw.items())
    return LintConfig(source.parent.resolve(), select, ignore, exclude, pfi)


_CACHE: dict[Path, LintConfig] = {}


def load_pyproject(path: Path) -> LintConfig | None:
    """The lint config in ``path`` (a pyproject.toml), or None if it has no torchwise section."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise UsageError(f"{path}: reading pyproject.toml needs Python 3.11+ or the 'tomli' package") from None
    try:
        with open(path, "rb") as fh:
            doc = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    section = doc.get("tool", {}).get("torchwise", {})
    if not isinstance(section, dict) or "lint" not in section:
        return None
    return parse_config(section["lint"], Path(path))


def find_config(start: Path) -> LintConfig:
    """The config for files in folder ``start``: the nearest pyproject.toml with a
    ``[tool.torchwise.lint]`` table, walking up; an empty config when there is none."""
    start = Path(os.path.abspath(start))
    if start in _CACHE:
        return _CACHE[start]
    visited = []
    current = start
    found = LintConfig()
    while True:
        if current in _CACHE:
            found = _CACHE[current]
            break
        visited.append(current)
        candidate = current / "pyproject.toml"
        if candidate.is_file():
            cfg = load_pyproject(candidate)
            if cfg is not None:
                found = cfg
                break
        if current.parent == current:
            break
        current = current.parent
    for v in visited:
        _CACHE[v] = found
    return found


def clear_cache() -> None:
    _CACHE.clear()

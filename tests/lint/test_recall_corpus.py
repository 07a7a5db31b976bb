"""Recall: every shape of the recall corpus is found where it should be, every look-alike stays
quiet, and every rule has shapes to find."""

from __future__ import annotations


import pytest

from lint_cases import POSITIVE
from recall_corpus import FIND, PROJECTS, QUIET, ProjectShape, Shape
from torchwise.lint import lint_paths, lint_source
from torchwise.lint.rules import all_rules
from torchwise.lint.engine import legacy


def _ids(items: list) -> list[str]:
    counts: dict[str, int] = {}
    out = []
    for item in items:
        counts[item.code] = counts.get(item.code, -1) + 1
        out.append(f"{item.code}-{counts[item.code]}")
    return out


def test_every_rule_has_shapes_to_find():
    covered = {s.code for s in FIND} | {p.code for p in PROJECTS if p.expect} | {c for c, cases in POSITIVE.items() if cases}
    missing = [r.code for r in all_rules() if r.code not in covered and r.code != "TW514"]
    assert not missing, missing  # TW514 is checked in test files only (test_precision.py)


@pytest.mark.parametrize("shape", FIND, ids=_ids(FIND))
def test_shape_is_found(shape: Shape):
    legacy.parse(shape.source)  # a shape may be a pre-0.4 file (async=)
    found = lint_source(shape.source, shape.path, select=[shape.code])
    assert shape.line in [f.line for f in found], (
        f"{shape.code} missed ({shape.seen}); found on lines {[f.line for f in found]}\n{shape.source}")


@pytest.mark.parametrize("shape", QUIET, ids=_ids(QUIET))
def test_look_alike_is_quiet(shape: Shape):
    legacy.parse(shape.source)  # a shape may be a pre-0.4 file (async=)
    found = lint_source(shape.source, shape.path, select=[shape.code])
    assert not found, f"{shape.code} false positive ({shape.seen}):\n" + "\n".join(f.format() for f in found)


def lint_project(tmp_path, project: ProjectShape) -> list[tuple[str, int]]:
    for name, text in project.files.items():
        path = tmp_path / "proj" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    found = lint_paths([str(tmp_path / "proj")], select=[project.code], use_config=False, jobs=1)
    root = str(tmp_path / "proj") + "/"
    return sorted((f.path.replace("\\", "/").split(root.replace("\\", "/"), 1)[-1], f.line) for f in found)


@pytest.mark.parametrize("project", PROJECTS, ids=_ids(PROJECTS))
def test_project_shape(tmp_path, project: ProjectShape):
    for name, text in project.files.items():
        if name.endswith(".py"):  # (a project may carry configs and shell scripts that name its modules)
            legacy.parse(text)
    assert lint_project(tmp_path, project) == sorted(project.expect), project.seen

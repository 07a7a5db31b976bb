"""Public example scripts for ``benchmarks/doctor_bugs.py``: unpack, prepare the data, nothing else.

The scripts are never committed here. ``benchmarks/doctor_bugs/public.json`` names each one (repo,
commit, path, arguments) and how its data is replaced:

- ``torchvision``: the script's torchvision imports are served by ``doctor_bugs/public/fakevision``
  (put on PYTHONPATH for these runs only): synthetic datasets of the real shapes and class counts,
  tensor transforms, a ``save_image`` that writes nothing. torchvision is not installed here and
  nothing may be downloaded.
- ``files``: a generator writes the data files the script reads (e.g. a small synthetic
  wikitext-2 folder).
- ``substitutions``: exact textual replacements, each of which must match (none are needed today).

A checkout is found at ``PUBLIC/<owner>+<name>``; ``unpack`` extracts the recorded commit there from
a bare mirror (the ``fetch`` tool's ``/work/.mirror/<owner>+<name>/repo``) with ``git archive``.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "doctor_bugs"
FAKEVISION = HERE / "public" / "fakevision"


def load_public(path: Path = HERE / "public.json") -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["scripts"]


def repo_dir(public: Path, repo: str) -> Path:
    return public / repo.replace("/", "+")


def unpack(entries: list[dict[str, Any]], public: Path, mirror: Path) -> list[str]:
    """Extract each script's folder at its recorded commit into ``public`` (kept if already there).

    File by file from the bare mirror: a snapshot may lack its largest blobs (data files the
    stand-in data replaces anyway); those are left out and named in the notes returned.
    """
    notes = []
    for repo, commit, folder in sorted({(e["repo"], e["commit"], str(Path(e["path"]).parent)) for e in entries}):
        target = repo_dir(public, repo) / folder
        marker = target / ".git-commit"
        if marker.is_file() and marker.read_text().strip() == commit:
            continue
        git = ["git", "--git-dir", str(mirror / repo.replace("/", "+") / "repo")]
        where = [] if folder == "." else ["--", folder + "/"]
        listing = subprocess.run([*git, "ls-tree", "-r", "-z", commit, *where], capture_output=True, check=False)
        if listing.returncode != 0:
            notes.append(f"{repo}: cannot list {folder} at {commit[:12]} in {mirror} (fetch github:{repo} first)")
            continue
        missing = []
        for item in filter(None, listing.stdout.split(b"\0")):
            meta, name = item.decode().split("\t", 1)
            blob = subprocess.run([*git, "cat-file", "blob", meta.split()[2]], capture_output=True, check=False)
            if blob.returncode != 0:
                missing.append(name)
                continue
            path = repo_dir(public, repo) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(blob.stdout)
        if missing:
            notes.append(f"{repo}: {len(missing)} file(s) absent from the mirror, left out: {', '.join(missing[:3])}")
        target.mkdir(parents=True, exist_ok=True)
        marker.write_text(commit + "\n")
    return notes


def missing_reason(entry: dict[str, Any], public: Path) -> str | None:
    """Why ``entry`` cannot run from ``public`` (None when it can)."""
    source = repo_dir(public, entry["repo"]) / entry["path"]
    if not source.is_file():
        return f"{entry['repo']}/{entry['path']} not found under {public} (see --mirror)"
    marker = source.parent / ".git-commit"
    if marker.is_file() and marker.read_text().strip() != entry["commit"]:
        return f"{entry['repo']} is unpacked at {marker.read_text().strip()[:12]}, not the recorded {entry['commit'][:12]}"
    return None


def prepare(entry: dict[str, Any], public: Path, work: Path) -> Path:
    """Copy the script's folder into ``work`` at its path in the repo (so that relative paths such as
    ``../../data`` stay inside ``work``), apply the data rule; return the script's path there."""
    source = repo_dir(public, entry["repo"]) / entry["path"]
    target = work / "repo" / Path(entry["path"]).parent
    shutil.copytree(source.parent, target, dirs_exist_ok=True)
    work = target
    for rule in entry.get("substitutions", []):
        target = work / rule.get("file", source.name)
        text = target.read_text(encoding="utf-8")
        if rule["find"] not in text:
            raise ValueError(f"{entry['id']}: substitution text not found in {target.name}: {rule['find'][:60]!r}")
        target.write_text(text.replace(rule["find"], rule["replace"]), encoding="utf-8")
    for generator in entry.get("files", []):
        FILES[generator](work)
    return work / source.name


def sentences(n: int, seed: int) -> str:
    """``n`` lines of text from a small grammar (240 content words), one sentence a line."""
    rng = random.Random(seed)
    nouns = [f"noun{i}" for i in range(120)]
    verbs = [f"verb{i}" for i in range(60)]
    adjectives = [f"adj{i}" for i in range(60)]
    lines = []
    for _ in range(n):
        words = ["the", rng.choice(adjectives), rng.choice(nouns), rng.choice(verbs), "the", rng.choice(nouns)]
        if rng.random() < 0.5:
            words += ["with", "a", rng.choice(adjectives), rng.choice(nouns)]
        lines.append(" " + " ".join(words) + " . ")
    return "\n".join(lines) + "\n"


def write_wikitext2(work: Path) -> None:
    """``data/wikitext-2/{train,valid,test}.txt`` as word_language_model reads them (about 20k tokens)."""
    folder = work / "data" / "wikitext-2"
    folder.mkdir(parents=True, exist_ok=True)
    for seed, (name, lines) in enumerate((("train", 2000), ("valid", 200), ("test", 200))):
        (folder / f"{name}.txt").write_text(sentences(lines, seed), encoding="utf-8")


def write_ptb(work: Path) -> None:
    """``data/train.txt`` as the tutorial's language model reads it (Penn Treebank layout)."""
    (work / "data").mkdir(parents=True, exist_ok=True)
    (work / "data" / "train.txt").write_text(sentences(2000, 0), encoding="utf-8")


FILES = {"wikitext2": write_wikitext2, "ptb": write_ptb}

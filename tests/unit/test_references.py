"""Every reference in the repository resolves inside it or in upstream's source: comments and
docs cite upstream's files (``pkg/controllers/...``) or this repository's docs, never section
numbers of a document that does not ship with the code."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("lws_operator", "testbed/lws_testbed", "tests", "bench", "docs", "README.md")
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"}

# Built from pieces so that this file does not match itself.
_WORD = "contr" + "act"
FORBIDDEN = (
    re.compile(_WORD + r"\s+\d+\.\d+", re.IGNORECASE),
    re.compile(re.escape("upstream-" + _WORD), re.IGNORECASE),
    re.compile(re.escape("shared/" + "reference"), re.IGNORECASE),
)


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        root = REPO / name
        if root.is_file():
            out.append(root)
            continue
        out.extend(
            path
            for path in sorted(root.rglob("*"))
            if path.is_file() and not SKIPPED_DIRS & set(path.relative_to(REPO).parts)
        )
    return out


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def test_the_patterns_catch_what_they_are_for() -> None:
    for sample in (
        f"(see {_WORD} 4.12)",
        f"{_WORD.title()} 3.1: the leader",
        f"``upstream-{_WORD}.md`` section 6",
        "../shared/" + "reference/x.md",
    ):
        assert any(p.search(sample) for p in FORBIDDEN), sample
    assert not any(p.search(f"the import-linter {_WORD}s in pyproject.toml") for p in FORBIDDEN)


def test_no_reference_points_outside_the_repository() -> None:
    files = _files()
    texts = {path: text for path in files if (text := _text(path)) is not None}
    # The scan really covers the code, the tests and the docs (this file included).
    assert len(texts) > 200, len(texts)
    assert Path(__file__).resolve() in texts
    assert REPO / "README.md" in texts
    assert {path.suffix for path in texts} >= {".py", ".md"}
    offenders = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path, text in texts.items()
        for number, line in enumerate(text.splitlines(), start=1)
        if any(p.search(line) for p in FORBIDDEN)
    ]
    assert not offenders, "cite upstream's source file or a doc in docs/ instead:\n" + "\n".join(
        offenders
    )

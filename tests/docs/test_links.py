"""Every relative link of the README and docs/ names a file that exists (and an anchor a
heading of it), so moving a page or renaming a section cannot leave a dead link."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    found = set()
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") and not line.startswith("#!"):
            title = line.lstrip("#").strip().lower()
            found.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return found


def test_every_relative_link_resolves() -> None:
    dead = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        # Links inside fenced code are examples, not links.
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue  # http(s), mailto: checked by nobody here
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.exists():
                dead.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
                dead.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not dead, "dead links:\n" + "\n".join(dead)


def test_the_readme_is_a_front_page() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 250
    # Exactly two set-up commands: the worked example and the tests.
    assert readme.count("./scripts/demo.sh") == 1 and readme.count("./scripts/test.sh") >= 1
    # Every docs page is reachable from it.
    linked = set(re.findall(r"\]\(docs/([^)#]+)", readme))
    pages = {p.name for p in (ROOT / "docs").iterdir() if p.suffix in (".md", ".json")}
    assert pages <= linked, f"docs pages the README does not link: {sorted(pages - linked)}"

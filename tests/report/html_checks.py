"""Reading a rendered page as a person (and a printer) would: its tags, its text, its
headings and charts, and anything it would fetch from elsewhere (the stdlib's parser)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html.parser import HTMLParser

# What would make a page fetch something: a URL with a scheme or protocol-relative.
REMOTE = re.compile(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", re.I)
FETCHING_ATTRS = ("src", "href", "srcset", "poster", "data", "action", "xlink:href")


@dataclass
class Tag:
    name: str
    attrs: dict[str, str]
    parents: tuple[str, ...]


class Page(HTMLParser):
    VOID = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
        | {"track", "wbr"}
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[Tag] = []
        self.text_parts: list[str] = []
        self.styles: list[str] = []
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(Tag(tag, {k: v or "" for k, v in attrs}, tuple(self.stack)))
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(Tag(tag, {k: v or "" for k, v in attrs}, tuple(self.stack)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            if tag in self.stack:
                while self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack and self.stack[-1] == "style":
            self.styles.append(data)
        elif not self.stack or self.stack[-1] not in ("script",):
            self.text_parts.append(data)

    @property
    def text(self) -> str:
        """The visible text, whitespace collapsed."""
        return re.sub(r"\s+", " ", " ".join(self.text_parts))

    def named(self, name: str) -> list[Tag]:
        return [t for t in self.tags if t.name == name]

    def external_references(self) -> list[str]:
        found = []
        for tag in self.tags:
            for attr in FETCHING_ATTRS:
                value = tag.attrs.get(attr)
                if value is not None and REMOTE.match(value):
                    found.append(f"<{tag.name} {attr}={value!r}>")
            # Anything that loads: scripts, frames, objects, images, style sheets.
            loads = tag.name in ("script", "iframe", "object", "embed", "img")
            if loads or (tag.name == "link" and "stylesheet" in tag.attrs.get("rel", "")):
                found.append(f"<{tag.name}>")
        for css in self.styles:
            for match in re.finditer(r"@import|url\(", css):
                found.append(f"style: {match.group(0)}")
        return found

    def headings(self) -> list[int]:
        return [int(t.name[1]) for t in self.tags if re.fullmatch(r"h[1-6]", t.name)]


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    return page

"""The policy bundle: the installed ``policies`` package's Rego modules and data.

Only non-test modules are part of the bundle: ``*_test.rego`` files are run by the real
OPA (``opa test policies``) and never decide. The revision is a sha256 over the sorted
file names and contents, so the same files give the same revision on every machine.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from pathlib import Path
from typing import Any

DATA_FILE = "data.json"
TEST_SUFFIX = "_test.rego"


@dataclass(frozen=True)
class PolicyBundle:
    """Rego modules by path relative to the bundle root, and the data document."""

    revision: str
    modules: dict[str, str] = field(repr=False)
    data: dict[str, Any] = field(repr=False)
    # data.json exactly as the revision covers it (None: the canonical text of `data`).
    data_text: str | None = field(default=None, repr=False, compare=False)

    def files(self) -> dict[str, str]:
        """Every file of the bundle by path, as the revision covers them.

        ``files_revision(bundle.files()) == bundle.revision``: anyone holding the files (an
        OPA bundle tarball, say) recomputes the revision from them.
        """
        data_text = self.data_text if self.data_text is not None else _data_text(self.data)
        return {**self.modules, DATA_FILE: data_text}

    @classmethod
    def from_sources(cls, modules: dict[str, str], data: dict[str, Any]) -> PolicyBundle:
        """A bundle from sources in memory; its revision covers modules and data."""
        for path in modules:
            if path.endswith(TEST_SUFFIX):
                raise ValueError(f"test module {path} cannot be part of a policy bundle")
        data_text = _data_text(data)
        return cls(
            revision=files_revision({**modules, DATA_FILE: data_text}),
            modules=dict(sorted(modules.items())),
            data=data,
            data_text=data_text,
        )


def _data_text(data: dict[str, Any]) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def files_revision(files_by_name: dict[str, str]) -> str:
    """The revision of a bundle's files: sha256 over their sorted names and contents."""
    digest = hashlib.sha256()
    for name in sorted(files_by_name):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(files_by_name[name].encode("utf-8") + b"\0")
    return f"sha256:{digest.hexdigest()}"


def policies_root() -> Path:
    """The directory of the installed ``policies`` package."""
    return Path(str(files("policies")))


def read_bundle(root: Path) -> PolicyBundle:
    """Read a bundle directory: every non-test ``.rego`` file below it and its data.json."""
    modules = {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*.rego"))
        if not path.name.endswith(TEST_SUFFIX)
    }
    if not modules:
        raise FileNotFoundError(f"no Rego modules under {root}")
    data_path = root / DATA_FILE
    data_text = data_path.read_text(encoding="utf-8") if data_path.is_file() else "{}"
    data = json.loads(data_text)
    if not isinstance(data, dict):
        raise ValueError(f"{data_path} must hold a JSON object")
    return PolicyBundle(
        revision=files_revision({**modules, DATA_FILE: data_text}),
        modules=modules,
        data=data,
        data_text=data_text,
    )


@lru_cache(maxsize=1)
def installed_revision() -> str | None:
    """The installed bundle's revision, for saying whether an allow needs a recheck;
    None when the bundle cannot be read (a read of decisions must not fail on it)."""
    try:
        return load_bundle().revision
    except Exception:  # any failure reading the policies leaves "unknown", not an error
        return None


def load_bundle() -> PolicyBundle:
    """The bundle shipped with capgate (read once per process)."""
    return read_bundle(policies_root())

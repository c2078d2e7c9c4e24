"""The bundle's modules compiled to WebAssembly by OPA's own compiler, once, cached.

The embedded engine (registry.policy.embedded) evaluates what ``opa build -t wasm``
writes: OPA's planner and OPA's built-ins, so an in-process decision is OPA's decision.
Compiling needs the pinned OPA binary (``scripts/ci/opa.sh`` builds it with Go and
caches it; ``CAPGATE_OPA_BINARY`` names another copy of the same version). Only the
modules are compiled: the data document is handed to the module at load time, so a
data change needs no new build.

The compiled module is cached under ``${CAPGATE_CACHE:-~/.cache/capgate}/policy-wasm``
by the digest of the modules and the OPA version. ``opa build`` is deterministic (the
same modules and OPA give the same bytes: tests/policy/test_wasm_build.py), so the
module's sha256 is a property of the release, recorded beside each build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from registry.policy.bundle import PolicyBundle, files_revision

OPA_VERSION = "1.22.3"
ENTRYPOINT = "capgate/gate/decision"
BUILD_TIMEOUT_S = 120.0
_INSTALL_HINT = (
    "run scripts/ci/opa.sh (builds OPA with Go, cached) or set CAPGATE_OPA_BINARY "
    f"to an OPA {OPA_VERSION} binary"
)


class WasmBuildError(RuntimeError):
    """The bundle could not be compiled by OPA (no OPA, the wrong OPA, a compile error)."""


@dataclass(frozen=True)
class CompiledPolicy:
    """OPA's WebAssembly module for one set of modules."""

    modules_digest: str
    opa_version: str
    wasm: bytes

    @property
    def wasm_digest(self) -> str:
        return f"sha256:{hashlib.sha256(self.wasm).hexdigest()}"


def cache_root() -> Path:
    root = os.environ.get("CAPGATE_CACHE") or str(Path.home() / ".cache" / "capgate")
    return Path(root)


def modules_digest(bundle: PolicyBundle) -> str:
    """What the compiled module depends on: the modules alone (data is loaded later)."""
    return files_revision(dict(bundle.modules))


def _candidates() -> list[Path]:
    named = os.environ.get("CAPGATE_OPA_BINARY")
    if named:
        return [Path(named)]
    found = [cache_root() / f"opa-v{OPA_VERSION}" / "bin" / "opa"]
    on_path = shutil.which("opa")
    if on_path:
        found.append(Path(on_path))
    return found


@lru_cache(maxsize=8)
def _version_of(binary: Path) -> str | None:
    try:
        out = subprocess.run(
            [str(binary), "version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return None


def opa_binary() -> Path:
    """The pinned OPA: CAPGATE_OPA_BINARY, else scripts/ci/opa.sh's cache, else PATH."""
    seen: list[str] = []
    for candidate in _candidates():
        if not candidate.is_file():
            seen.append(f"{candidate} (absent)")
            continue
        version = _version_of(candidate)
        if version == OPA_VERSION:
            return candidate
        seen.append(f"{candidate} (version {version or 'unknown'})")
    raise WasmBuildError(
        f"the embedded engine runs the bundle compiled by OPA {OPA_VERSION}, and no such OPA "
        f"was found ({'; '.join(seen)}): {_INSTALL_HINT}"
    )


_build_lock = threading.Lock()


def compiled_policy(bundle: PolicyBundle, entrypoint: str = ENTRYPOINT) -> CompiledPolicy:
    """The bundle's modules compiled by the pinned OPA, from the cache when built before."""
    digest = modules_digest(bundle)
    key = digest[7:] if entrypoint == ENTRYPOINT else _entry_key(digest, entrypoint)
    target = cache_root() / "policy-wasm" / f"opa-{OPA_VERSION}" / f"{key}.wasm"
    with _build_lock:
        if target.is_file():
            return CompiledPolicy(digest, OPA_VERSION, target.read_bytes())
        wasm = _build(bundle, opa_binary(), entrypoint)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Two processes may build the same modules at once: each writes its own file and
        # renames it into place, so a reader never sees half a module.
        fd, temporary = tempfile.mkstemp(dir=target.parent, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(wasm)
        os.replace(temporary, target)
        return CompiledPolicy(digest, OPA_VERSION, wasm)


def _entry_key(digest: str, entrypoint: str) -> str:
    return hashlib.sha256(f"{digest}\0{entrypoint}".encode()).hexdigest()


def _build(bundle: PolicyBundle, binary: Path, entrypoint: str) -> bytes:
    print(
        f"capgate: compiling the policy bundle with OPA {OPA_VERSION} (once per bundle)",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="capgate-wasm-") as work:
        source = Path(work) / "bundle"
        for name, text in bundle.modules.items():
            path = source / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        output = Path(work) / "bundle.tar.gz"
        command = [
            str(binary),
            "build",
            "--target",
            "wasm",
            "--entrypoint",
            entrypoint,
            "--output",
            str(output),
            # Relative: OPA writes the source paths into the module (for the locations of
            # runtime errors), so a temporary directory's name would change its bytes.
            source.name,
        ]
        try:
            done = subprocess.run(
                command,
                cwd=work,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise WasmBuildError(f"opa build could not run: {exc}") from exc
        if done.returncode != 0:
            message = (done.stderr or done.stdout).strip()[:2000]
            raise WasmBuildError(f"the bundle does not compile (opa build -t wasm): {message}")
        with tarfile.open(output, "r:gz") as archive:
            for member in archive.getmembers():
                if member.name.lstrip("/") == "policy.wasm":
                    extracted = archive.extractfile(member)
                    if extracted is not None:
                        return extracted.read()
    raise WasmBuildError("opa build -t wasm wrote no policy.wasm")

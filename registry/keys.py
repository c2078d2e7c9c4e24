"""capgate's Ed25519 signing key: decision attestations and audit checkpoints.

Configured: ``CAPGATE_SIGNING_KEY`` names a PEM file (PKCS#8, unencrypted) holding an
Ed25519 private key. Every API replica of one registry must share it, or their
attestations verify against different public keys.

Embedded default: with nothing configured, a key is generated once, on first use, in the
user data directory next to the default SQLite registry (``signing-key.pem``, mode 0600)
and reused afterwards.

A key's id is the sha256 (hex) of its raw 32-byte public key. Public keys are
SubjectPublicKeyInfo PEM (a private key PEM is accepted where a public key is asked for).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from registry.errors import InvalidInput, Unavailable

ENV_VAR = "CAPGATE_SIGNING_KEY"
DEFAULT_KEY_FILE = "signing-key.pem"


def key_id(public_key: Ed25519PublicKey) -> str:
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


def public_key_pem(public_key: Ed25519PublicKey) -> str:
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def private_key_pem(private_key: Ed25519PrivateKey) -> bytes:
    return private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@dataclass(frozen=True)
class SigningKey:
    """A private key, its id, and where it came from (for messages)."""

    private_key: Ed25519PrivateKey
    key_id: str
    source: str

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    def public_pem(self) -> str:
        return public_key_pem(self.public_key)


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InvalidInput(f"{path}: {what} file not found") from None
    except OSError as exc:
        raise InvalidInput(f"{path}: cannot read the {what}: {exc.strerror}") from None


def private_key_from_pem(data: bytes, source: str) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise InvalidInput(f"{source}: not an unencrypted PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise InvalidInput(f"{source}: not an Ed25519 private key")
    return key


def public_key_from_pem(data: bytes, source: str) -> Ed25519PublicKey:
    """A public key PEM; a private key PEM is accepted too (its public half is used)."""
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        return private_key_from_pem(data, source).public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise InvalidInput(f"{source}: not an Ed25519 public key")
    return key


def load_private_key(path: str | Path) -> SigningKey:
    """The signing key in a PEM file."""
    file = Path(path).expanduser()
    key = private_key_from_pem(_read(file, "signing key"), str(file))
    return SigningKey(private_key=key, key_id=key_id(key.public_key()), source=str(file))


def load_public_key(path: str | Path) -> Ed25519PublicKey:
    file = Path(path).expanduser()
    return public_key_from_pem(_read(file, "public key"), str(file))


def data_dir_path(name: str) -> Path:
    """A file beside the default SQLite registry, in the user data directory."""
    from platformdirs import user_data_dir

    return Path(user_data_dir("capgate", appauthor=False)) / name


def default_key_path() -> Path:
    return data_dir_path(DEFAULT_KEY_FILE)


def create_key_file_once(path: Path, make_pem: Callable[[], bytes], *, what: str, env: str) -> None:
    """Write a newly made key to `path` unless one is there (mode 0600; never overwrites).

    Written to a private temporary file and hard-linked into place, so a concurrent
    first use never sees half a key and never replaces the key another process made.
    """
    if path.exists():
        return
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", dir=path.parent)
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "wb") as out:
                out.write(make_pem())
                out.flush()
                os.fsync(out.fileno())
            # Another process that made it first wins: its key is used.
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            os.unlink(temporary)
    except OSError as exc:
        raise Unavailable(
            f"cannot create the {what} {path}: {exc.strerror} (set {env} to a key file)"
        ) from None


def ensure_default_key(path: Path) -> None:
    create_key_file_once(
        path,
        lambda: private_key_pem(Ed25519PrivateKey.generate()),
        what="signing key",
        env=ENV_VAR,
    )


@lru_cache(maxsize=8)
def _load_cached(path: str, _mtime_ns: int, _size: int) -> SigningKey:
    return load_private_key(path)


def signing_key() -> SigningKey:
    """The configured key (CAPGATE_SIGNING_KEY), else the embedded default, made once."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        path = Path(configured).expanduser()
        try:
            stat = path.stat()
        except OSError:
            raise Unavailable(f"{ENV_VAR}: {path}: signing key file not found") from None
    else:
        path = default_key_path()
        ensure_default_key(path)
        stat = path.stat()
    try:
        return _load_cached(str(path), stat.st_mtime_ns, stat.st_size)
    except InvalidInput as exc:
        # A broken configured key is the server's problem, not the caller's input.
        raise Unavailable(f"{ENV_VAR}: {exc.message}" if configured else exc.message) from None


def public_path_for(private_path: Path) -> Path:
    """Where `capgate audit keygen` puts the public half: key.pem -> key.pub.pem."""
    return private_path.with_name(f"{private_path.stem}.pub{private_path.suffix or '.pem'}")


def generate_key_pair(private_path: Path, public_path: Path | None = None) -> tuple[Path, str]:
    """Write a new private key (mode 0600) and its public key; never overwrite either.

    Returns the public key's path and the key id.
    """
    public_path = public_path or public_path_for(private_path)
    for existing in (private_path, public_path):
        if existing.exists():
            raise InvalidInput(f"{existing}: already exists; capgate never overwrites a key")
    key = Ed25519PrivateKey.generate()
    try:
        private_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(private_key_pem(key))
        public_path.write_text(public_key_pem(key.public_key()))
    except OSError as exc:
        raise InvalidInput(f"cannot write the key pair: {exc}") from None
    return public_path, key_id(key.public_key())

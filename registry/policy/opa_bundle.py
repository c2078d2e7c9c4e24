"""capgate's policy bundle as an OPA bundle: a deterministic, signed tarball.

OPA sidecars pull it from ``GET /v1/bundles/capgate.tar.gz``. Its layout is what
``opa build`` writes:

* ``/.manifest``: ``{"revision": <the bundle's content digest>, "roots": ["capgate",
  "system/log"]}``. The revision is :attr:`PolicyBundle.revision`, the sha256 over the
  file names and contents below, so anyone holding the tarball recomputes it. The roots
  make every path under ``data.capgate`` and ``data.system.log`` owned by the bundle:
  OPA refuses to change any of it through its REST API (``PUT``/``DELETE
  /v1/policies``, ``PUT``/``PATCH /v1/data``), so neither a decision nor its decision
  log (``system.log.mask``/``drop``) can be altered that way, and a module under them
  loaded beside the bundle is erased when the bundle activates.
* one ``.rego`` file per module and ``/data.json``, byte for byte the files the
  revision covers.
* ``/.signatures.json``: ``{"signatures": [<JWT>]}``, OPA's bundle signature. The JWT
  (RS256 for an RSA key, ES256/384/512 for an EC key; header ``kid``) carries the claim
  ``files``: ``[{"name", "hash", "algorithm": "SHA-256"}]`` for every other file. OPA
  hashes ``.rego`` files as bytes and ``data.json``/``.manifest`` as parsed JSON
  (objects with their keys sorted, numbers as written), and refuses a bundle when the
  JWT does not verify against the key it is configured with, when a file's hash
  differs, or when a file is missing from or extra to the claim. :func:`verify_tarball`
  checks the same rules here.

The tarball is a pure function of the bundle and the key (sorted entries, zero
timestamps and owners, gzip without a timestamp, deterministic RSA signatures), so
every API replica serves the same bytes for the same revision and key.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import posixpath
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jwt
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from registry.errors import InvalidInput, Unavailable
from registry.keys import create_key_file_once, data_dir_path
from registry.policy.bundle import DATA_FILE, PolicyBundle, files_revision

PrivateKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

BUNDLE_NAME = "capgate"
# capgate's policies and data; and OPA's decision log mask/drop policies, so that no one
# can hide or alter what OPA reports of capgate's decisions by adding them over OPA's API.
ROOTS = ("capgate", "system/log")
MANIFEST_FILE = ".manifest"
SIGNATURES_FILE = ".signatures.json"
HASH_ALGORITHM = "SHA-256"
DEFAULT_KEY_ID = "capgate"
DEFAULT_KEY_FILE = "bundle-signing-key.pem"
KEY_ENV_VAR = "CAPGATE_BUNDLE_SIGNING_KEY"
MEDIA_TYPE = "application/gzip"

_STRUCTURED = (DATA_FILE, MANIFEST_FILE)
_KEY_KINDS = "the bundle signing key must be RSA or EC (P-256, P-384, P-521), as OPA verifies"
_EC_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


class BundleVerificationError(ValueError):
    """A tarball that OPA would refuse to activate."""


# ---- OPA's file hashes --------------------------------------------------------------


class _Number(str):
    """A JSON number kept as written: OPA hashes json.Number by its literal."""


def _go_json_string(value: str) -> str:
    """A string as Go's encoding/json writes it with SetEscapeHTML(false)."""
    text = json.dumps(value, ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _hash_walk(value: Any, out: Any) -> None:
    """OPA's bundle.hasher.walk: objects with sorted keys, arrays in order, no spaces."""
    if isinstance(value, dict):
        out.update(b"{")
        for index, key in enumerate(sorted(value)):
            if index:
                out.update(b",")
            out.update(_go_json_string(key).encode("utf-8"))
            out.update(b":")
            _hash_walk(value[key], out)
        out.update(b"}")
    elif isinstance(value, list):
        out.update(b"[")
        for index, item in enumerate(value):
            if index:
                out.update(b",")
            _hash_walk(item, out)
        out.update(b"]")
    elif isinstance(value, _Number):
        out.update(str.__str__(value).encode("ascii"))
    elif isinstance(value, str):
        out.update(_go_json_string(value).encode("utf-8"))
    elif value is True:
        out.update(b"true")
    elif value is False:
        out.update(b"false")
    elif value is None:
        out.update(b"null")
    else:  # pragma: no cover - json.loads gives nothing else
        raise TypeError(f"cannot hash {type(value).__name__}")


def _is_structured(name: str) -> bool:
    return posixpath.basename(name) in _STRUCTURED


def file_hash(name: str, content: bytes) -> str:
    """The SHA-256 hex digest OPA computes for a bundle file (bundle.VerifyBundleFile)."""
    digest = hashlib.sha256()
    if _is_structured(name):
        text = content.decode("utf-8-sig")
        parsed = json.loads(text, parse_float=_Number, parse_int=_Number)
        _hash_walk(parsed, digest)
    else:
        digest.update(content)
    return digest.hexdigest()


# ---- the signing key ----------------------------------------------------------------


@dataclass(frozen=True)
class BundleSigningKey:
    """A private key for bundle signatures, the JWT algorithm it implies, and its id."""

    private_key: PrivateKey
    algorithm: str
    key_id: str = DEFAULT_KEY_ID
    source: str = "memory"

    @classmethod
    def from_pem(
        cls, data: bytes, *, key_id: str = DEFAULT_KEY_ID, source: str = "memory"
    ) -> BundleSigningKey:
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            raise InvalidInput(f"{source}: not an unencrypted PEM private key ({exc})") from None
        if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey):
            raise InvalidInput(f"{source}: {_KEY_KINDS}")
        return cls(
            private_key=key, algorithm=_algorithm_for(key, source), key_id=key_id, source=source
        )

    @classmethod
    def generate(cls, *, key_id: str = DEFAULT_KEY_ID) -> BundleSigningKey:
        """A fresh RSA 2048 key (tests, and the embedded default)."""
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return cls(private_key=key, algorithm="RS256", key_id=key_id, source="generated")

    def public_key(self) -> PublicKey:
        return self.private_key.public_key()

    def public_pem(self) -> str:
        """The verification key for OPA's ``keys.<id>.key``."""
        return (
            self.public_key()
            .public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
            .decode("ascii")
        )

    def private_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def opa_key_config(self) -> dict[str, Any]:
        """The ``keys`` entry of an OPA configuration that verifies this key's bundles."""
        return {self.key_id: {"algorithm": self.algorithm, "key": self.public_pem()}}


def _algorithm_for(key: PrivateKey, source: str) -> str:
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < 2048:
            raise InvalidInput(f"{source}: an RSA bundle signing key needs at least 2048 bits")
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name in _EC_ALGORITHMS:
        return _EC_ALGORITHMS[key.curve.name]
    raise InvalidInput(f"{source}: {_KEY_KINDS}")


def default_key_path() -> Path:
    return data_dir_path(DEFAULT_KEY_FILE)


def _ensure_default_key(path: Path) -> None:
    create_key_file_once(
        path,
        lambda: BundleSigningKey.generate().private_pem(),
        what="bundle signing key",
        env=KEY_ENV_VAR,
    )


@lru_cache(maxsize=8)
def _load_cached(path: str, key_id: str, _mtime_ns: int, _size: int) -> BundleSigningKey:
    return BundleSigningKey.from_pem(Path(path).read_bytes(), key_id=key_id, source=path)


def load_signing_key(path: str | None, key_id: str | None = None) -> BundleSigningKey:
    """The configured key (a PEM file), else the embedded default, generated once.

    The default lives beside the default SQLite registry; every API replica of one
    registry must share one configured key, or OPA refuses the other replicas' bundles.
    """
    if path:
        file = Path(path).expanduser()
        try:
            stat = file.stat()
        except OSError:
            raise Unavailable(f"{KEY_ENV_VAR}: {file}: bundle signing key file not found") from None
    else:
        file = default_key_path()
        _ensure_default_key(file)
        stat = file.stat()
    try:
        return _load_cached(str(file), key_id or DEFAULT_KEY_ID, stat.st_mtime_ns, stat.st_size)
    except InvalidInput as exc:
        raise Unavailable(f"{KEY_ENV_VAR}: {exc.message}") from None


# ---- building -----------------------------------------------------------------------


def manifest_text(bundle: PolicyBundle, roots: Iterable[str] = ROOTS) -> str:
    return json.dumps({"revision": bundle.revision, "roots": list(roots)}, sort_keys=True, indent=2)


def signature_token(files: dict[str, bytes], key: BundleSigningKey) -> str:
    """The JWT OPA verifies: the ``files`` claim over every file, signed, with ``kid``."""
    claim = [
        {"name": name, "hash": file_hash(name, content), "algorithm": HASH_ALGORITHM}
        for name, content in sorted(files.items())
    ]
    return jwt.encode(
        {"files": claim},
        key.private_key,
        algorithm=key.algorithm,
        headers={"kid": key.key_id},
    )


def _tarball(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name in sorted(files):
            content = files[name]
            info = tarfile.TarInfo("/" + name)
            info.size = len(content)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(content))
    return gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)


@dataclass(frozen=True)
class OpaBundle:
    """One built bundle: its revision (the ETag) and the tarball bytes."""

    revision: str
    tarball: bytes

    @property
    def etag(self) -> str:
        return f'"{self.revision}"'


def build_opa_bundle(
    bundle: PolicyBundle, key: BundleSigningKey | None, *, roots: Iterable[str] = ROOTS
) -> OpaBundle:
    """The bundle's tarball, signed with `key` (unsigned with None: tests of refusal)."""
    files = {name: text.encode("utf-8") for name, text in bundle.files().items()}
    if MANIFEST_FILE in files or SIGNATURES_FILE in files:
        raise ValueError("a policy bundle cannot hold .manifest or .signatures.json itself")
    files[MANIFEST_FILE] = manifest_text(bundle, roots).encode("utf-8")
    if key is not None:
        token = signature_token(files, key)
        files[SIGNATURES_FILE] = json.dumps({"signatures": [token]}).encode("utf-8")
    return OpaBundle(revision=bundle.revision, tarball=_tarball(files))


# ---- reading back -------------------------------------------------------------------


def read_tarball(tarball: bytes) -> dict[str, bytes]:
    """The files of a bundle tarball by name (no leading slash)."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
            for member in archive.getmembers():
                if not member.isfile():
                    continue
                extracted = archive.extractfile(member)
                assert extracted is not None
                files[member.name.lstrip("/")] = extracted.read()
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise BundleVerificationError(f"not a bundle tarball: {exc}") from exc
    return files


def verify_tarball(tarball: bytes, public_key: PublicKey, *, algorithm: str) -> str:
    """Check a tarball as OPA does and return the revision its files hash to.

    Raises BundleVerificationError when OPA would refuse it, or when the manifest's
    revision is not the content digest of its policy files.
    """
    files = read_tarball(tarball)
    signatures = files.pop(SIGNATURES_FILE, None)
    if signatures is None:
        raise BundleVerificationError("bundle missing .signatures.json file")
    tokens = json.loads(signatures).get("signatures") or []
    if len(tokens) != 1:
        raise BundleVerificationError(".signatures.json: expected exactly one JWT")
    try:
        claims = jwt.decode(tokens[0], public_key, algorithms=[algorithm])
    except jwt.PyJWTError as exc:
        raise BundleVerificationError(f"failed to verify JWT signature: {exc}") from exc
    signed = {item["name"]: item for item in claims.get("files", [])}
    for name, content in files.items():
        item = signed.pop(name, None)
        if item is None:
            raise BundleVerificationError(f"file {name} not included in bundle signature")
        if item.get("algorithm") != HASH_ALGORITHM or item.get("hash") != file_hash(name, content):
            raise BundleVerificationError(f"{name}: digest mismatch")
    if signed:
        raise BundleVerificationError(
            f"file(s) {sorted(signed)} specified in bundle signatures but not found"
        )
    manifest = json.loads(files.pop(MANIFEST_FILE, b"{}"))
    revision = files_revision({name: content.decode("utf-8") for name, content in files.items()})
    if manifest.get("revision") != revision:
        raise BundleVerificationError(
            f"the manifest names revision {manifest.get('revision')}, its files hash to {revision}"
        )
    return revision

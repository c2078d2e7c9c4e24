"""The OPA bundle capgate serves: OPA's file hashes, signatures and layout, checked
against the real ``opa`` binary."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from registry.errors import InvalidInput
from registry.policy.bundle import PolicyBundle, load_bundle
from registry.policy.embedded import EmbeddedEngine
from registry.policy.opa_bundle import (
    BundleSigningKey,
    BundleVerificationError,
    _tarball,
    build_opa_bundle,
    file_hash,
    read_tarball,
    verify_tarball,
)
from registry.policy.opa_server import OpaServerEngine
from tests.policy.conftest import load_case
from tests.support.opa_server import OpaStartError, running_opa, signing_key_for_tests

# Structured files are hashed as parsed JSON: keys sorted, strings as Go escapes them,
# numbers exactly as written.
TRICKY_DATA = (
    '{"z": [1.0, 1e3, -0, 12345678901234567890, 0.1, true, null],\n'
    ' "a": {"quote\\"and\\\\back": "tab\\t nl\\n ctl\\u0001 bell\\b ff\\f",\n'
    '       "unicode": "caf\\u00e9 \\u2028 \\u2029 <&> \\u007f \\ud83d\\ude00"},\n'
    ' "m": "\u00e9 direct"}\n'
)


def _jwt_payload(token: str) -> dict[str, Any]:
    body = token.split(".")[1]
    payload: dict[str, Any] = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    return payload


@pytest.mark.opa
def test_success_file_hashes_are_the_ones_opa_sign_computes(
    opa_binary: Path, tmp_path: Path
) -> None:
    bundle_dir = tmp_path / "bundle"
    (bundle_dir / "x").mkdir(parents=True)
    files = {
        "data.json": TRICKY_DATA.encode(),
        "x/data.json": b'{"k": [2.50, "v"]}',
        ".manifest": b'{"roots": ["capgate", "system/log"], "revision": "sha256:abc"}',
        "x/p.rego": "package capgate.x\n\n# caf\u00e9\nv := 1\n".encode(),
    }
    for name, content in files.items():
        (bundle_dir / name).write_bytes(content)
    key_file = tmp_path / "key.pem"
    key_file.write_bytes(signing_key_for_tests().private_pem())
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(
        [str(opa_binary), "sign", "--signing-key", str(key_file), "--bundle", ".",
         "--output-file-path", str(out)],
        check=True, capture_output=True, timeout=60, cwd=bundle_dir,
    )  # fmt: skip
    (token,) = json.loads((out / ".signatures.json").read_text())["signatures"]
    theirs = {item["name"]: item for item in _jwt_payload(token)["files"]}
    assert set(theirs) == set(files)
    for name, content in files.items():
        assert theirs[name]["algorithm"] == "SHA-256"
        assert file_hash(name, content) == theirs[name]["hash"], name


def test_success_tarball_is_deterministic_and_recomputes_its_revision() -> None:
    key = signing_key_for_tests()
    first = build_opa_bundle(load_bundle(), key)
    assert build_opa_bundle(load_bundle(), key).tarball == first.tarball
    assert first.etag == f'"{load_bundle().revision}"'
    assert verify_tarball(first.tarball, key.public_key(), algorithm="RS256") == first.revision
    files = read_tarball(first.tarball)
    assert sorted(files) == sorted(
        [".manifest", ".signatures.json", "data.json", *load_bundle().modules]
    )
    token = json.loads(files[".signatures.json"])["signatures"][0]
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header == {"alg": "RS256", "kid": "capgate", "typ": "JWT"}
    signed = {item["name"] for item in _jwt_payload(token)["files"]}
    assert signed == set(files) - {".signatures.json"}


def _rebuilt(tarball: bytes, **changes: bytes | None) -> bytes:
    files = read_tarball(tarball)
    for name, content in changes.items():
        if content is None:
            files.pop(name)
        else:
            files[name] = content
    return _tarball(files)


def test_fail_tampering_is_detected_as_opa_would() -> None:
    key = signing_key_for_tests()
    good = build_opa_bundle(load_bundle(), key).tarball

    def check(tarball: bytes) -> str:
        return verify_tarball(tarball, key.public_key(), algorithm="RS256")

    with pytest.raises(BundleVerificationError, match=r"gate/gate\.rego: digest mismatch"):
        check(_rebuilt(good, **{"gate/gate.rego": b"package capgate.gate\n"}))
    with pytest.raises(BundleVerificationError, match="not included in bundle signature"):
        check(_rebuilt(good, **{"extra/extra.rego": b"package capgate.extra\n"}))
    with pytest.raises(BundleVerificationError, match="not found"):
        check(_rebuilt(good, **{"lib/result.rego": None}))
    with pytest.raises(BundleVerificationError, match=r"missing \.signatures\.json"):
        check(_rebuilt(good, **{".signatures.json": None}))
    with pytest.raises(BundleVerificationError, match="signature"):
        verify_tarball(good, BundleSigningKey.generate().public_key(), algorithm="RS256")
    # A manifest signed over files whose digest it does not name is refused too.
    base = load_bundle()
    lying = PolicyBundle(revision="sha256:" + "1" * 64, modules=base.modules, data=base.data)
    with pytest.raises(BundleVerificationError, match="its files hash to"):
        check(build_opa_bundle(lying, key).tarball)
    with pytest.raises(BundleVerificationError, match="not a bundle tarball"):
        check(b"not gzip")


@pytest.mark.opa
def test_fail_real_opa_refuses_a_tampered_or_foreign_bundle(
    opa_binary: Path, tmp_path: Path
) -> None:
    key = signing_key_for_tests()
    tampered = _rebuilt(
        build_opa_bundle(load_bundle(), key).tarball,
        **{"gate/gate.rego": b"package capgate.gate\n\ndecision := 1\n"},
    )
    bundle_file = tmp_path / "tampered.tar.gz"
    bundle_file.write_bytes(tampered)
    public = tmp_path / "key.pub"
    public.write_text(key.public_pem())
    args = ["--verification-key", str(public), "--verification-key-id", "capgate"]
    tampered_args = [*args, "--bundle", str(bundle_file)]
    with (
        pytest.raises(OpaStartError, match="digest mismatch"),
        running_opa(opa_binary, empty=True, args=tampered_args),
    ):
        pass
    with (
        pytest.raises(OpaStartError, match="failed to verify JWT signature"),
        running_opa(opa_binary, key=BundleSigningKey.generate(), args=args),
    ):
        pass


@pytest.mark.opa
def test_success_ec_signing_key_verified_by_opa(opa_binary: Path) -> None:
    ec_key = ec.generate_private_key(ec.SECP256R1())
    key = BundleSigningKey(private_key=ec_key, algorithm="ES256", key_id="capgate-ec")
    doc = load_case("compliant.json")
    with running_opa(opa_binary, key=key) as url:
        engine = OpaServerEngine(url)
        assert engine.decide(doc) == EmbeddedEngine().decide(doc)
        engine.close()


def test_fail_signing_keys_opa_cannot_verify_are_refused() -> None:
    from cryptography.hazmat.primitives import serialization

    def pem(key: Any) -> bytes:
        data: bytes = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
        return data

    with pytest.raises(InvalidInput, match="RSA or EC"):
        BundleSigningKey.from_pem(pem(ed25519.Ed25519PrivateKey.generate()))
    with pytest.raises(InvalidInput, match="at least 2048 bits"):
        BundleSigningKey.from_pem(pem(rsa.generate_private_key(65537, 1024)))
    with pytest.raises(InvalidInput, match="not an unencrypted PEM private key"):
        BundleSigningKey.from_pem(b"-----BEGIN PRIVATE KEY-----\nnope\n")
    p384 = BundleSigningKey.from_pem(pem(ec.generate_private_key(ec.SECP384R1())), key_id="k")
    assert (p384.algorithm, p384.key_id) == ("ES384", "k")
    assert p384.opa_key_config()["k"]["algorithm"] == "ES384"

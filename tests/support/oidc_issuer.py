"""A real OIDC issuer on loopback: its own RSA keys, a discovery document and a JWKS.

Tokens are signed here with PyJWT; capgate fetches the keys over HTTP and verifies
them with its own code path. Nothing about the verification is stubbed.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm


@dataclass
class SigningKey:
    kid: str
    private: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )

    def jwk(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(RSAAlgorithm.to_jwk(self.private.public_key()))
        return {**data, "kid": self.kid, "use": "sig", "alg": "RS256"}


@dataclass
class LoopbackIssuer:
    url: str
    keys: list[SigningKey]
    jwks_requests: int = 0

    def token(
        self,
        subject: str = "alice",
        *,
        audience: str = "capgate",
        key: SigningKey | None = None,
        lifetime_s: float = 300,
        issuer: str | None = None,
        **claims: Any,
    ) -> str:
        now = time.time()
        signer = key or self.keys[0]
        body = {
            "iss": issuer or self.url,
            "sub": subject,
            "aud": audience,
            "iat": int(now),
            "exp": int(now + lifetime_s),
            "jti": uuid.uuid4().hex,
            **claims,
        }
        return jwt.encode(body, signer.private, algorithm="RS256", headers={"kid": signer.kid})

    def rotate(self) -> SigningKey:
        """Publish a new key first in the set (old keys stay until dropped)."""
        fresh = SigningKey(kid=f"k{len(self.keys) + 1}-{uuid.uuid4().hex[:6]}")
        self.keys.insert(0, fresh)
        return fresh


@contextmanager
def running_issuer() -> Iterator[LoopbackIssuer]:
    issuer: LoopbackIssuer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/.well-known/openid-configuration":
                body = {"issuer": issuer.url, "jwks_uri": issuer.url + "/jwks.json"}
            elif self.path == "/jwks.json":
                issuer.jwks_requests += 1
                body = {"keys": [k.jwk() for k in issuer.keys]}
            else:
                self.send_error(404)
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    issuer = LoopbackIssuer(
        url=f"http://127.0.0.1:{server.server_address[1]}", keys=[SigningKey("k1")]
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()

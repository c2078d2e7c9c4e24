"""API-token identities kept per process, confirmed in the request's own reading session.

Looking a token up costs a database session of its own on every request (a connection
checked out and pinged, BEGIN, one SELECT, ROLLBACK): about 2 ms of CPU a gate check,
server and database together (docs/production.md, *Gate throughput*). A route whose
handler opens a reading session first thing (`POST /v1/gate/checks`) may instead take
the identity this process verified for the same token within the last TTL_S seconds,
which lets the access table decide before the handler runs, and must then *confirm*
it in that session before reading anything else: the token is looked up again there,
exactly as `authenticate_token` does, and anything but the same identity (revoked,
expired, deleted, changed) refuses the request (401) with nothing read or stored. So a
revocation is honoured at once, in every process, as without the cache.

Keyed by the SHA-256 of the whole presented token: the secret itself is not kept.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from registry.auth.identity import Identity
from registry.auth.tokens import authenticate_token
from registry.errors import Unauthenticated

# How long a verified identity may stand in for the provisional check (seconds), and
# how many tokens a process remembers.
TTL_S = 30.0
MAX_ENTRIES = 1024


@dataclass(frozen=True)
class Pending:
    """A cached identity the handler must confirm in its reading session (`confirm`)."""

    identity: Identity
    presented: str

    def confirm(self, session: Session, *, now: datetime) -> None:
        """Raise Unauthenticated unless the token still verifies to the same identity."""
        current = authenticate_token(session, self.presented, now=now)
        if current != self.identity:
            raise Unauthenticated(
                f"API token {current.via.removeprefix('token:')} changed since it was verified"
            )


# What a handler passes to the gate: confirms the request's token in a session.
Confirmation = Callable[[Session], None]


class TokenCache:
    def __init__(self, ttl_s: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self._ttl_s = ttl_s
        self._max = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[float, Identity]] = OrderedDict()

    @staticmethod
    def _key(presented: str) -> str:
        return hashlib.sha256(presented.encode("utf-8")).hexdigest()

    def get(self, presented: str) -> Pending | None:
        key = self._key(presented)
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if time.monotonic() - entry[0] > self._ttl_s:
                del self._entries[key]
                return None
            return Pending(entry[1], presented)

    def keep(self, presented: str, identity: Identity) -> None:
        key = self._key(presented)
        with self._lock:
            self._entries[key] = (time.monotonic(), identity)
            self._entries.move_to_end(key)
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def forget(self, presented: str) -> None:
        with self._lock:
            self._entries.pop(self._key(presented), None)

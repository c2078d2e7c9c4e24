"""Signed decisions: every gate decision as an in-toto statement in a DSSE envelope.

``dsse`` signs and verifies envelopes (Ed25519 from ``cryptography``), ``statement``
turns a decision into an in-toto Statement v1, ``keys`` finds the server's signing key,
``store`` keeps one envelope per decision, and ``verify`` checks an envelope offline
against a public key and a caller's expectations. Nothing is imported here: the CLI
must start fast.
"""

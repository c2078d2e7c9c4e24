"""A stored decision input is checked against its digest on every read: by hashing its
text (fast) and, when that does not match, by its parsed content (as before)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from registry.digest import canonical_json, content_digest
from registry.errors import Tampered
from registry.gate.service import stored_input

DIGEST = "sha256:" + "ab" * 32


def row(document: dict[str, Any], *, text: str | None = None) -> Any:
    stored = {**document, "recomputation_digest": DIGEST}
    return SimpleNamespace(
        id="d1", input=text or canonical_json(stored), input_digest=content_digest(document)
    )


def test_intact_input_reads_back() -> None:
    document = {"plan": {"ref": "p@v1"}, "zones": [1, 2]}
    assert stored_input(row(document)) == {**document, "recomputation_digest": DIGEST}


def test_a_nested_member_of_the_same_name_does_not_make_it_look_altered() -> None:
    """The nested member sorts first, so the text cut takes it: the slow path decides."""
    document = {"a": {"recomputation_digest": DIGEST}, "z": 1}
    assert stored_input(row(document))["a"] == {"recomputation_digest": DIGEST}


def test_input_that_is_not_canonical_text_but_intact_reads_back() -> None:
    document = {"b": 1, "a": 2}
    text = '{"b": 1, "a": 2, "recomputation_digest": "' + DIGEST + '"}'
    assert stored_input(row(document, text=text))["a"] == 2


def test_fail_altered_input_is_refused() -> None:
    document = {"outcome_inputs": {"replicas": 9}}
    altered = row(document)
    altered.input = altered.input.replace("9", "3")
    with pytest.raises(Tampered, match="its input does not hash to its input digest"):
        stored_input(altered)


def test_what_orjson_reads_otherwise_reads_back_as_json_reads_it() -> None:
    """The input is parsed by orjson where it reads the same as json (issue 29: parsing
    was a third of a listed page's time); orjson would read an integer beyond 64 bits
    as a float. Such an input reads back exactly, and an altered one is still refused."""
    document = {"plan": {"ref": "p@v1"}, "tokens": 2**70, "low": -(2**63) - 1, "x": -0.5}
    stored = stored_input(row(document))
    assert stored == {**document, "recomputation_digest": DIGEST}
    assert type(stored["tokens"]) is int and type(stored["low"]) is int
    altered = row(document)
    altered.input = altered.input.replace(str(2**70), str(2**70 + 1))
    with pytest.raises(Tampered):
        stored_input(altered)
    spaced = '{"tokens": [ 1180591620717411303424], "recomputation_digest": "' + DIGEST + '"}'
    assert stored_input(row({"tokens": [2**70]}, text=spaced))["tokens"] == [2**70]

"""The base of every part of the gate input document: strict and frozen.

An unknown field is refused (a malformed input is an error, never an allow), and a part
once built is not changed. `RecordIdentity` is how the document names a record version.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class InputModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RecordIdentity(InputModel):
    ref: str = Field(description="name@vN")
    digest: str

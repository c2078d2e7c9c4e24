"""The other half of the differential suite: the same test in a second file, so that
pytest's loadfile distribution runs the two halves (1,500 inputs each, each with its own
seed) on the two workers side by side."""

from __future__ import annotations

from tests.policy.test_differential_a import test_engines_agree_on_generated_inputs

__all__ = ["test_engines_agree_on_generated_inputs"]

"""The gate input document now lives in registry.policy.input_document.

It is the contract between the registry and the policy engines, so it sits in the
policy package (below the gate, which assembles it). These names stay importable from
here only for registry/gate/service.py, which imports them under this path; import
registry.policy.input_document everywhere else.
"""

from registry.policy.input_document import CalibrationInput, ManifestsInput

__all__ = ["CalibrationInput", "ManifestsInput"]

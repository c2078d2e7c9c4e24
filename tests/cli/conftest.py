"""The CLI's gate tests need the real OPA server fixtures of the policy tests."""

from tests.policy.conftest import opa_binary, opa_url  # noqa: F401 - pytest fixtures

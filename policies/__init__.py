"""capgate's policy bundle: Rego modules (one package per policy) and policies/data.json.

This package holds no Python code; it exists so that the bundle ships with capgate and
``registry.policy.bundle`` can find it with importlib.resources.
"""

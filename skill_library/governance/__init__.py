"""Governance: evaluation suites, evaluations and canary rollout (lifecycle primitives: G)."""

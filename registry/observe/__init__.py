"""Production signal: vLLM's Prometheus series read back as an observed workload."""

"""Record schemas: workload profiles, provider profiles, load-test evidence, capacity plans."""

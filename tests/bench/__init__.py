"""Scheduling benchmarks, run by `make bench` (`python -m tests.bench`); not part of `make test`.

- `mix`: the Karpenter-style mixed workload at 1k to 20k pods: throughput, fleet, price, peak memory.
- `packing`: the price of our fleet against linear-programming lower bounds on generic workloads.
- `fixtures`: the cluster both use (default NodePool, AL2023 EC2NodeClass, full offline catalog) and
  the audit of invariants every result must keep.

Module names avoid the `test_` prefix on purpose: pytest collects `tests/`, and these are not tests.
The smoke test that keeps them working is `tests/unit/test_bench_smoke.py`.
"""

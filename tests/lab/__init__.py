"""Tests of lab/: the studies, evaluations and benchmarks, and the `throwbox lab` commands."""

"""Tests of lab/cli/: the `throwbox lab ...` commands."""

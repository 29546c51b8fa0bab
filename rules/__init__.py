"""High Roll Dice rules engine: pure game logic (no I/O, no web framework)."""

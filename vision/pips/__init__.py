"""Face stage: the top face 1..6 of each die, from a learned classifier and a classical pip count."""

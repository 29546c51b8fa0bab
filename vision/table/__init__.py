"""Table stage: what belongs to the table, not the roll: calibration markers and table marks set aside,
and where a die lies on the calibrated table (felt, throw box, layout box)."""

"""Frame in, Roll out: capture, settle, detect, pips, validity, reader."""

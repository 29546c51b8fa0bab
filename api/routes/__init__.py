"""One router per module; `api.main` includes them all."""

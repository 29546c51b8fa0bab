"""The throwbox service (FastAPI) and command line: the only package that knows HTTP."""

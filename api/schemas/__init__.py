"""Pydantic models of the HTTP edge (request and response bodies); nothing outside api/ uses them."""

"""Pydantic models of the HTTP edge (request and response bodies); nothing outside api/ uses them."""

# Ids are 32-bit INTEGER columns on PostgreSQL: anything larger can name nothing, so it is refused (422)
# at the edge instead of overflowing in the database driver.
DB_INT_MAX = 2**31 - 1

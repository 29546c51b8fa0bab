"""Alembic environment: migrates the connection `api.db.session.Database.migrate` hands over."""

from __future__ import annotations

from alembic import context

from api.db.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through api.db.session.Database.migrate, which passes a connection")

context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()

"""Storage: SQLAlchemy 2 models, the engine/session, and Alembic migrations run at start-up."""

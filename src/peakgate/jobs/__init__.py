"""Durable async jobs: documents and batch segment lists, stored in SQLite and run at batch priority."""

"""Model workers: every engine behind the `Backend` protocol."""

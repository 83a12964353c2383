"""The ingest steps, one module each, run in order and timed by name by
domain/ingest/pipeline.py."""

"""Paths and transitions over a range (reads; what a seal counts is aggregates/paths.py),
and their API, pages and routes (api, views, urls)."""

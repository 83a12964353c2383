"""Paths and transitions over a range (reads; what a seal counts is domain/aggregates/paths.py),
and their API, pages and routes (api, views, urls)."""

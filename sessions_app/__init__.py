"""Clickstream sessions app: collector, Cassandra tables, selectors, analyst UI."""

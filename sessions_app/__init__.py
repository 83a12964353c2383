"""Clickstream: the collector, the Cassandra tables, aggregates and the analyst UI, by domain."""

"""Retention cohorts, lifecycle and stickiness: reads, API and pages (docs/retention.md)."""

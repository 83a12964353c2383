"""The ledger: what writers and jobs agree on above the tables.

Retention policies, suppression, sites and their admin log, partition widths and shards.
"""

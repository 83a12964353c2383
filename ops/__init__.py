"""Local stack tooling: Cassandra and Redis launchers, `make run` and `make test` drivers."""

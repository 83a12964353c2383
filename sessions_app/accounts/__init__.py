"""User accounts: API tokens."""

"""The write side: validation, sessionization and the single event writer."""

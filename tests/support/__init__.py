"""Helpers the tests share: plain functions and constants, split by topic.

Fixtures stay in conftest files (pytest finds them there); a test module imports its
helpers from here (or from its own package's helper module), never from another test
module or a conftest (tests/test_structure.py checks it).
"""

"""Goals: a site's named conversions, each one step kind's matcher (domain/goals/kinds.py)."""

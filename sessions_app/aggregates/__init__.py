"""aggregates"""

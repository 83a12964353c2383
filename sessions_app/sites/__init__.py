"""sites"""

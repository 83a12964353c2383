"""erasure"""

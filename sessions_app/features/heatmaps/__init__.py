"""A page's heatmap over a range and the overlay's token (reads; what a seal counts is
domain/aggregates/heatmaps.py), the overlay's read (overlay), the page (views) and routes (urls)."""

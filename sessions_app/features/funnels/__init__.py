"""Funnels: step kinds (kinds), definitions (spec, defs), day scans and their queue (scan,
queue), the outcome table (table), results over a range (results, answers), and the API,
pages and routes (api, views, urls)."""

"""Clickstream project package; importing it loads the Celery app for @shared_task."""

from .celery import app as celery_app

__all__ = ("celery_app",)

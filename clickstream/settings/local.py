"""Developer settings for `make run`: debug on, a fixed local-only secret key."""

from .base import *

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env("DJANGO_SECRET_KEY", default="local-only-insecure-key-not-for-production")

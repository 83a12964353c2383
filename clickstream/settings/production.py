"""Production settings: the default of manage.py, wsgi.py, asgi.py and celery.py.

Secrets come from the environment; HTTPS only (redirect, HSTS, secure cookies).
`manage.py check --deploy` reports nothing with a real secret key and host names
(tests/test_deploy.py).
"""

from django.core.exceptions import ImproperlyConfigured

from .base import *

DEBUG = False
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set. The production settings (what manage.py, wsgi.py, "
        "asgi.py and celery.py use when DJANGO_SETTINGS_MODULE is unset) need it. For "
        "development set DJANGO_SETTINGS_MODULE=clickstream.settings.local (make run does)."
    )

# HTTPS: plain HTTP is redirected, except the load balancers' liveness probe; browsers
# are told to use HTTPS only (HSTS); cookies travel over HTTPS only.
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=365 * 86_400)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = env.bool("DJANGO_SECURE_COOKIES", default=True)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a proxy that ends TLS, the request's scheme comes from its X-Forwarded-Proto,
# but only when the operator says the proxy sets that header: otherwise any client
# could send it and pass for HTTPS.
if env.bool("TRUST_X_FORWARDED_PROTO", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

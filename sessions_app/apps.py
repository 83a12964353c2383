from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps

from sessions_app.foundation.core.cql import shutdown_at_exit


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Clickstream"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Register the Celery tasks in every process: services enqueue some of them by
        # name (erasure's job) so that they need not import tasks.py, which imports them.
        # Inside ready(): tasks.py imports models, which Django loads after this module.
        from sessions_app import tasks  # noqa: F401

        # Every process, also one that connects only through cqlengine (manage.py
        # sync_cassandra), shuts its cluster down before the driver's exit hooks.
        shutdown_at_exit()


class RoleAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with a site that lets in the admin role only (403 for others)."""

    default = False  # sessions_app's own config stays SessionsAppConfig
    default_site = "sessions_app.admin_site.RoleAdminSite"

from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class SessionsAppConfig(AppConfig):
    name = "sessions_app"
    verbose_name = "Clickstream"
    default_auto_field = "django.db.models.BigAutoField"


class RoleAdminConfig(admin_apps.AdminConfig):
    """django.contrib.admin with a site that lets in the admin role only (403 for others)."""

    default = False  # sessions_app's own config stays SessionsAppConfig
    default_site = "sessions_app.admin_site.RoleAdminSite"

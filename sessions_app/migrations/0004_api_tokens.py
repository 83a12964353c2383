import hashlib

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

OLD_TOKENS = "authtoken_token"  # rest_framework.authtoken, which stored keys in clear


def tokens_rehash(apps, schema_editor):
    """Keep the keys of the old token table working, stored as digests; empty that table."""
    connection = schema_editor.connection
    if OLD_TOKENS not in connection.introspection.table_names():
        return
    api_token = apps.get_model("sessions_app", "ApiToken")
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT key, user_id FROM {OLD_TOKENS}")  # noqa: S608 - a constant
        rows = cursor.fetchall()
        for key, user_id in rows:
            api_token.objects.create(
                user_id=user_id,
                name="from before hashed tokens",
                digest=hashlib.sha256(key.encode()).hexdigest(),
                prefix=key[:8],
            )
        cursor.execute(f"DELETE FROM {OLD_TOKENS}")  # noqa: S608 - a constant


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0003_site_membership"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="ApiToken",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("name", models.CharField(max_length=100)),
                ("digest", models.CharField(max_length=64, unique=True)),
                ("prefix", models.CharField(max_length=12)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("expires_at", models.DateTimeField(blank=True, null=True)),
                ("last_used_at", models.DateTimeField(blank=True, null=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "user",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="api_tokens",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
            ],
            options={"ordering": ["-created_at"]},
        ),
        migrations.RunPython(tokens_rehash, migrations.RunPython.noop),
    ]

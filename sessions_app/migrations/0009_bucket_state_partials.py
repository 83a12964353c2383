from django.db import migrations, models


class Migration(migrations.Migration):
    """Hours that exist before the per-batch tallies did are sealed from their raw rows."""

    dependencies = [
        ("sessions_app", "0008_user_bucket_width"),
    ]

    operations = [
        # Existing rows: False (their hours have rows no tally covers) ...
        migrations.AddField(
            model_name="bucketstate",
            name="partials",
            field=models.BooleanField(default=False),
        ),
        # ... new ones: True.
        migrations.AlterField(
            model_name="bucketstate",
            name="partials",
            field=models.BooleanField(default=True),
        ),
    ]

import django.core.validators
from django.db import migrations, models

import sessions_app.foundation.models.sites


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_site_vitals"),
    ]

    operations = [
        migrations.AddField(
            model_name="site",
            name="replay",
            field=models.BooleanField(
                default=False,
                help_text="Record session replays (every input masked). Update the snippet after a change.",
            ),
        ),
        migrations.AddField(
            model_name="site",
            name="replay_sample",
            field=models.PositiveSmallIntegerField(
                default=100,
                help_text="Percent of sessions recorded (0-100).",
                validators=[
                    django.core.validators.MinValueValidator(0),
                    django.core.validators.MaxValueValidator(100),
                ],
            ),
        ),
        migrations.AddField(
            model_name="site",
            name="replay_mask_text",
            field=models.BooleanField(
                default=False,
                help_text="Mask every text of the page in replays, not only [data-cs-mask] elements.",
            ),
        ),
        migrations.AddField(
            model_name="site",
            name="replay_exclude",
            field=models.JSONField(
                blank=True,
                default=list,
                help_text="URL path patterns never recorded, e.g. /account/*, /checkout/pay.",
                validators=[sessions_app.foundation.models.sites.validate_replay_exclude],
            ),
        ),
        migrations.AddField(
            model_name="site",
            name="replay_retention_days",
            field=models.PositiveSmallIntegerField(
                default=30,
                help_text="Days a replay is kept (its chunks' TTL).",
                validators=[
                    django.core.validators.MinValueValidator(1),
                    django.core.validators.MaxValueValidator(365),
                ],
            ),
        ),
    ]

"""Sites (SQL): the tenant of every Cassandra row, its tracker key and allowed origins."""

from __future__ import annotations

import re
import secrets
import uuid
from typing import Any
from zoneinfo import available_timezones

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

# A URL parameter name for the tracker's data-redact list; "-name" keeps one.
_PARAM_NAME = re.compile(r"^-?[A-Za-z0-9_.\-\[\]]{1,64}$")
REDACT_PARAMS_MAX = 50


def validate_redact_params(value: Any) -> None:
    """A list of at most 50 URL parameter names, each optionally prefixed with "-"."""
    if not isinstance(value, list) or len(value) > REDACT_PARAMS_MAX:
        raise ValidationError(f"a list of at most {REDACT_PARAMS_MAX} parameter names")
    bad = [v for v in value if not isinstance(v, str) or not _PARAM_NAME.match(v)]
    if bad:
        raise ValidationError(
            f"not a parameter name: {bad[0]!r} (letters, digits, _ . - [ ]; '-' first keeps it)"
        )


# A path pattern of pages never recorded: "/account/*" ("*" any characters).
_PATH_PATTERN = re.compile(r"^/[^\s,]{0,199}$")
REPLAY_EXCLUDE_MAX = 50
REPLAY_RETENTION_MAX_DAYS = 365  # tables/replay_chunks.MAX_RETENTION_DAYS


def validate_replay_exclude(value: Any) -> None:
    """A list of at most 50 URL path patterns, each starting with "/" ("*": any characters)."""
    if not isinstance(value, list) or len(value) > REPLAY_EXCLUDE_MAX:
        raise ValidationError(f"a list of at most {REPLAY_EXCLUDE_MAX} path patterns")
    bad = [v for v in value if not isinstance(v, str) or not _PATH_PATTERN.match(v)]
    if bad:
        raise ValidationError(
            f"not a path pattern: {str(bad[0])[:64]!r} (starts with /, no spaces or commas)"
        )


def validate_time_zone(value: Any) -> None:
    """An IANA time zone name (e.g. Europe/Berlin), as the zoneinfo database knows it."""
    if value not in available_timezones():
        raise ValidationError(
            f"not a time zone: {str(value)[:64]!r} (an IANA name, e.g. Europe/Berlin)"
        )


def new_site_key() -> str:
    """Return a fresh public tracker key (not a secret: it ships in page source)."""
    return "cs_" + secrets.token_urlsafe(18)


def new_heatmap_salt() -> str:
    """Return a fresh signing salt for a site's heatmap overlay tokens (a secret)."""
    return secrets.token_urlsafe(24)


class Site(models.Model):
    """A tracked website; `id` is the stable key of its Cassandra partitions."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    key = models.CharField(max_length=64, unique=True, default=new_site_key)
    allowed_origins = models.JSONField(default=list, blank=True)
    # URL parameters the tracker drops besides its default secret names (token, key, password,
    # code, session, auth ...); "-name" keeps one of those. Rendered into the snippet.
    redact_params = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_redact_params],
        help_text="URL query/fragment parameters the tracker drops besides its defaults "
        '(token, key, password, code, session, auth …), e.g. ["email", "phone"]; '
        '"-code" keeps one the defaults would drop. Update the snippet after a change.',
    )
    enabled = models.BooleanField(default=True)
    # The zone the site's days are counted in: "Today", the chart's hours and days, a
    # custom range's dates (periods.py). An IANA name; UTC until an admin sets it.
    time_zone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_time_zone],
        help_text="IANA time zone of the site's days and hours, e.g. Europe/Berlin.",
    )
    # Part of the key that signs the site's heatmap overlay tokens (features/heatmaps/reads.py):
    # a site admin rotates it to revoke every "View on page" link issued before.
    heatmap_salt = models.CharField(max_length=64, default=new_heatmap_salt, editable=False)
    # Shards of each site_events_by_bucket hour (a shard suffix against hot partitions), from
    # the expected event rate and the partition budget (buckets.shards_for).
    event_shards = models.PositiveSmallIntegerField(default=1)
    # Whether the tracker loads its web vitals script (docs/vitals.md): data-vitals in the
    # snippet, so off costs the site's visitors nothing.
    vitals = models.BooleanField(
        default=False,
        help_text="Measure Core Web Vitals (LCP, INP, CLS, FCP, TTFB) on the site's pages. "
        "Update the snippet after a change.",
    )
    # Session replay (docs/replay.md): the tracker loads its recorder only when on and the
    # session falls in the sample (data-replay in the snippet); inputs are always masked.
    replay = models.BooleanField(
        default=False,
        help_text="Record session replays (every input masked). Update the snippet after a change.",
    )
    replay_sample = models.PositiveSmallIntegerField(
        default=100,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
        help_text="Percent of sessions recorded (0-100).",
    )
    replay_mask_text = models.BooleanField(
        default=False,
        help_text="Mask every text of the page in replays, not only [data-cs-mask] elements.",
    )
    replay_exclude = models.JSONField(
        default=list,
        blank=True,
        validators=[validate_replay_exclude],
        help_text="URL path patterns never recorded, e.g. /account/*, /checkout/pay.",
    )
    replay_retention_days = models.PositiveSmallIntegerField(
        default=30,
        validators=[MinValueValidator(1), MaxValueValidator(REPLAY_RETENTION_MAX_DAYS)],
        help_text="Days a replay is kept (its chunks' TTL).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        # The collector caches key → site, and all sites' origins, for a few seconds per
        # process (sessions_app/features/collector/views.py).
        cache.delete_many([f"site-key:{self.key}", "site-origins"])

    @property
    def replay_attrs(self) -> dict[str, str]:
        """The snippet's replay attributes (none when replay is off)."""
        if not self.replay:
            return {}
        attrs = {"data-replay": str(self.replay_sample)}
        if self.replay_mask_text:
            attrs["data-replay-mask"] = "text"
        if self.replay_exclude:
            attrs["data-replay-exclude"] = ",".join(self.replay_exclude)
        return attrs

    @property
    def redact_attr(self) -> str:
        """The snippet's data-redact value: the redact_params, comma-separated."""
        return ",".join(self.redact_params)


class SiteMembership(models.Model):
    """A user's access to one site: an analyst reads it, an admin also manages it.

    A user sees a site only through a membership (or as a Django superuser); the
    check is permissions.site_for, used by every site-scoped page and API route.
    """

    ANALYST = "analyst"
    ADMIN = "admin"
    ROLES = [(ANALYST, "analyst"), (ADMIN, "admin")]

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="site_memberships"
    )
    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=8, choices=ROLES, default=ANALYST)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "site"], name="one_membership_per_user_site")
        ]
        ordering = ["site", "user"]

    def __str__(self) -> str:
        return f"{self.user} in {self.site}: {self.role}"


class RedoWatermark(models.Model):
    """Transaction-log minutes of a site already checked by the redo task (a FillState).

    Every entry logged before `redone_through` is applied, or kept in view as an
    UnappliedLogEntry: the redo never moves past an entry it could not apply.
    """

    site = models.OneToOneField(Site, on_delete=models.CASCADE, primary_key=True)
    redone_through = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.site_id} redone through {self.redone_through.isoformat()}"


class UnappliedLogEntry(models.Model):
    """A transaction-log entry the redo could not apply: retried every run until it
    applies or its log TTL ends, and reported by /healthz/deep."""

    site = models.ForeignKey(Site, on_delete=models.CASCADE)
    minute = models.DateTimeField()  # the entry's log bucket
    shard = models.SmallIntegerField()
    batch_id = models.UUIDField()
    logged_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=1)
    error = models.TextField(blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["site", "minute", "shard", "batch_id"], name="unapplied_log_entry_key"
            )
        ]
        indexes = [models.Index(fields=["site", "logged_at"])]

    def __str__(self) -> str:
        return f"{self.batch_id} (site {self.site_id}) unapplied since {self.logged_at.isoformat()}"


class BucketState(models.Model):
    """Where a site's bucket stands: open → sealed → reopened by late data → sealed again.

    `version` changes with every late event, so a seal that started before the
    late event arrived cannot mark the bucket sealed (the next sweep reseals it).
    """

    OPEN = "open"
    SEALED = "sealed"
    REOPENED = "reopened"
    STATES = [(OPEN, "open"), (SEALED, "sealed"), (REOPENED, "reopened")]

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="bucket_states")
    granularity = models.CharField(max_length=8, default="hour")
    bucket = models.DateTimeField()
    state = models.CharField(max_length=8, choices=STATES, default=OPEN)
    late_events = models.PositiveIntegerField(default=0)
    version = models.PositiveIntegerField(default=0)
    seals = models.PositiveIntegerField(default=0)
    sealed_at = models.DateTimeField(null=True, blank=True)
    # Hour buckets: how many site_events_by_bucket shards writes of this hour used
    # (the highest shard + 1, only ever raised), so readers fan out over every shard
    # the hour ever had even after Site.event_shards changed.
    shards = models.PositiveSmallIntegerField(default=1)
    # Hour buckets: whether the applier's per-batch tallies (bucket_partials) cover
    # every raw row, so a seal may merge them instead of scanning the rows. False
    # once an erasure edited the hour's raw rows; such an hour is sealed from its rows.
    partials = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["site", "granularity", "bucket"], name="one_state_per_bucket"
            ),
        ]
        indexes = [models.Index(fields=["granularity", "state", "bucket"])]
        ordering = ["bucket"]

    def __str__(self) -> str:
        return f"{self.site_id} {self.granularity} {self.bucket.isoformat()} {self.state}"


class UserBucketWidth(models.Model):
    """A user whose event partitions outgrew the budget: a finer width from a time on.

    user_events_by_bucket is partitioned by (site, user, bucket start); this row
    says that from `effective_from` (a bucket boundary of the width before) this
    user's buckets are `width` wide. Writers and readers both follow the history,
    so every event is found (adaptive per-entity bucket width).
    """

    site = models.ForeignKey(Site, on_delete=models.CASCADE, related_name="user_widths")
    user_key = models.CharField(max_length=256)
    width = models.CharField(max_length=8)
    effective_from = models.DateTimeField()
    reason = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["site", "user_key", "effective_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["site", "user_key", "effective_from"], name="one_width_change_per_time"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user_key}: {self.width} from {self.effective_from.isoformat()}"

"""Base settings; the only module that reads the environment (django-environ)."""

from __future__ import annotations

import mimetypes
import socket
from datetime import timedelta
from pathlib import Path

import environ
from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, ExecutionProfile
from cassandra.policies import DCAwareRoundRobinPolicy, TokenAwarePolicy

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()

STATE_DIR = Path(env("CLICKSTREAM_STATE_DIR", default=str(BASE_DIR / ".state")))

SECRET_KEY = env("DJANGO_SECRET_KEY", default="")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    # First, so its sync_cassandra/AppConfig patches load before any cqlengine model.
    "django_cassandra_engine",
    "sessions_app.apps.RoleAdminConfig",  # django.contrib.admin, gated by the admin role
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "sessions_app",
]

MIDDLEWARE = [
    "sessions_app.middleware.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "sessions_app.middleware.SiteContextMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "sessions_app.middleware.ContentSecurityPolicyMiddleware",
]

ROOT_URLCONF = "clickstream.urls"
WSGI_APPLICATION = "clickstream.wsgi.application"
ASGI_APPLICATION = "clickstream.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The shared frame and partials, then each feature's own pages
        # (sessions_app/features/<name>/templates/).
        "DIRS": [
            BASE_DIR / "templates",
            *sorted((BASE_DIR / "sessions_app" / "features").glob("*/templates")),
        ],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Databases -------------------------------------------------------------
# SQL (`default`) holds auth, admin, Django sessions, sites and bookkeeping;
# Cassandra (`cassandra`) holds every event-sized table.
CASSANDRA_HOSTS = env.list("CASSANDRA_HOSTS", default=["127.0.0.1"])
CASSANDRA_PORT = env.int("CASSANDRA_PORT", default=9042)
CASSANDRA_KEYSPACE = env("CASSANDRA_KEYSPACE", default="clickstream")
CASSANDRA_LOCAL_DC = env("CASSANDRA_LOCAL_DC", default="datacenter1")
# "SimpleStrategy:1" or "NetworkTopologyStrategy:dc1=3,dc2=3"
CASSANDRA_REPLICATION = env("CASSANDRA_REPLICATION", default="SimpleStrategy:1")
CASSANDRA_WRITE_CONSISTENCY = env("CASSANDRA_WRITE_CONSISTENCY", default="LOCAL_QUORUM")
CASSANDRA_READ_CONSISTENCY = env("CASSANDRA_READ_CONSISTENCY", default="LOCAL_QUORUM")
CASSANDRA_REQUEST_TIMEOUT = env.float("CASSANDRA_REQUEST_TIMEOUT", default=5.0)


def _connection_class() -> dict[str, type]:
    """The driver's reactor: its default (libev), or asyncore for gevent workers
    (`CASSANDRA_REACTOR=asyncore`, the bench's BENCH_SERVER=gevent; bench/RESULTS.md)."""
    if env("CASSANDRA_REACTOR", default="") == "asyncore":
        # Only when chosen: the asyncore reactor imports the stdlib's deprecated asyncore.
        from cassandra.io.asyncorereactor import AsyncoreConnection

        return {"connection_class": AsyncoreConnection}
    return {}


CASSANDRA_USER = env("CASSANDRA_USER", default="")
CASSANDRA_PASSWORD = env("CASSANDRA_PASSWORD", default="")


def cassandra_replication(spec: str) -> dict[str, object]:
    """Turn "SimpleStrategy:1" / "NetworkTopologyStrategy:dc1=3" into engine options."""
    strategy, _, factors = spec.partition(":")
    if strategy == "SimpleStrategy":
        return {"strategy_class": strategy, "replication_factor": int(factors or 1)}
    if strategy == "NetworkTopologyStrategy":
        per_dc = dict(item.split("=", 1) for item in factors.split(",") if item)
        return {"strategy_class": strategy, **{dc: int(n) for dc, n in per_dc.items()}}
    raise ValueError(f"CASSANDRA_REPLICATION: unknown strategy {strategy!r}")


DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{STATE_DIR / 'clickstream.sqlite3'}"),
    "cassandra": {
        "ENGINE": "django_cassandra_engine",
        "NAME": CASSANDRA_KEYSPACE,
        "TEST": {"NAME": f"test_{CASSANDRA_KEYSPACE}"},
        "HOST": ",".join(CASSANDRA_HOSTS),
        "USER": CASSANDRA_USER,
        "PASSWORD": CASSANDRA_PASSWORD,
        "OPTIONS": {
            "replication": cassandra_replication(CASSANDRA_REPLICATION),
            "connection": {
                "port": CASSANDRA_PORT,
                # Without lazy_connect, django.setup() connects at import time,
                # before Celery forks and before the settings are final.
                "lazy_connect": True,
                "retry_connect": True,
                "protocol_version": 4,
                "connect_timeout": 10,
                **_connection_class(),
                # Requests go out at once: with Nagle's algorithm on, a request the
                # driver writes in more than one piece (a 5 KB replay chunk, a batch)
                # waited for the node's delayed ACK, 40 ms (docs/configuration.md).
                "sockopts": [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
                "execution_profiles": {
                    EXEC_PROFILE_DEFAULT: ExecutionProfile(
                        load_balancing_policy=TokenAwarePolicy(
                            DCAwareRoundRobinPolicy(local_dc=CASSANDRA_LOCAL_DC)
                        ),
                        consistency_level=getattr(ConsistencyLevel, CASSANDRA_READ_CONSISTENCY),
                        request_timeout=CASSANDRA_REQUEST_TIMEOUT,
                    )
                },
            },
        },
    },
}
DATABASE_ROUTERS: list[str] = []
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis and Celery ------------------------------------------------------
REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:6380/0")
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default=REDIS_URL)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=240)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=300)
CELERY_RESULT_EXPIRES = timedelta(hours=6)
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TIMEZONE = "UTC"
CELERY_ENABLE_UTC = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The visibility timeout must exceed every countdown/eta and the hard time
# limit, or Redis redelivers a task that is still running.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
# Analysis fan-out (funnel day scans) has its own queue and worker (`-Q analysis`), so
# scans never wait in front of sealing, erasure or the heartbeat (the worker `-Q celery`).
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_ROUTES = {
    "sessions_app.tasks.funnel_day": {"queue": "analysis"},
    # A goal's backfill recounts many hours: beside funnel scans, never ahead of a seal.
    "sessions_app.tasks.backfill_goal": {"queue": "analysis"},
}

# The beat schedule lives here and nowhere else.
CELERY_BEAT_SCHEDULE = {
    "pipeline-heartbeat": {
        "task": "sessions_app.tasks.pipeline_heartbeat",
        "schedule": timedelta(seconds=30),
        "options": {"expires": 25},
    },
    "seal-due-buckets": {
        "task": "sessions_app.tasks.seal_due_buckets",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 55},
    },
    "redo-transaction-log": {
        "task": "sessions_app.tasks.redo_transaction_log",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 55},
    },
    "purge-expired-partitions": {
        "task": "sessions_app.tasks.purge_expired_partitions",
        "schedule": timedelta(hours=1),
        "options": {"expires": 3300},
    },
    "adjust-event-shards": {
        "task": "sessions_app.tasks.adjust_event_shards",
        "schedule": timedelta(hours=1),
        "options": {"expires": 3300},
    },
    "resume-erasures": {
        "task": "sessions_app.tasks.resume_erasures",
        "schedule": timedelta(minutes=5),
        "options": {"expires": 290},
    },
    # Goal backfills that found no place on the analysis queue, or whose task was lost.
    "resume-goal-backfills": {
        "task": "sessions_app.tasks.resume_goal_backfills",
        "schedule": timedelta(minutes=1),
        "options": {"expires": 55},
    },
}

# Health: a worker heartbeat older than this makes /healthz report the beat
# or worker as stale.
HEALTH_HEARTBEAT_MAX_AGE = timedelta(seconds=env.int("HEALTH_HEARTBEAT_MAX_AGE", default=120))
# How long the deep check's broadcast ping waits for the Celery workers' replies (it
# always waits this long: it collects every worker's).
HEALTH_PING_SECONDS = 1.0

# --- Auth, i18n, static ------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Password logins (login page, admin) go through the throttle of
# sessions_app/domain/system/logins.py: this many failures of one account, or from one client
# address, within the window lock it for LOGIN_LOCKOUT_SECONDS (0 = no limit).
AUTHENTICATION_BACKENDS = ["sessions_app.domain.system.logins.ThrottledModelBackend"]
LOGIN_FAILURES_PER_ACCOUNT = env.int("LOGIN_FAILURES_PER_ACCOUNT", default=5)
LOGIN_FAILURES_PER_IP = env.int("LOGIN_FAILURES_PER_IP", default=20)
LOGIN_FAILURE_WINDOW_SECONDS = env.int("LOGIN_FAILURE_WINDOW_SECONDS", default=900)
LOGIN_LOCKOUT_SECONDS = env.int("LOGIN_LOCKOUT_SECONDS", default=900)
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
# The chart library from npm (package.json; `make run`/`make test` and the image install
# it), served as static/vendor/uplot/ without committing third-party code.
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/uplot", BASE_DIR / "node_modules" / "uplot" / "dist"),
    # The session replay player (docs/replay.md): its UMD build and stylesheet.
    ("vendor/rrweb-player", BASE_DIR / "node_modules" / "rrweb-player" / "dist"),
]
# The player's UMD build is a .cjs file: JavaScript, served as such (nosniff).
mimetypes.add_type("text/javascript", ".cjs")
WHITENOISE_MIMETYPES = {".cjs": "text/javascript"}  # WhiteNoise (DEBUG off) has its own map
STATIC_ROOT = STATE_DIR / "staticfiles"
CASSANDRA_REQUIRED_KEYSPACE_PREFIX = ""

# --- Clickstream -------------------------------------------------------------
CLICKSTREAM_ADMIN_PASSWORD = env("CLICKSTREAM_ADMIN_PASSWORD", default="")
# Width of the user-events-by-bucket partitions (see ARCHITECTURE.md, sizing).
USER_EVENTS_BUCKET = env("USER_EVENTS_BUCKET", default="day")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {"cassandra": {"level": "WARNING"}},
}

# --- Collector ---------------------------------------------------------------
COLLECT_MAX_BODY_BYTES = env.int("COLLECT_MAX_BODY_BYTES", default=256 * 1024)
COLLECT_MAX_EVENTS = env.int("COLLECT_MAX_EVENTS", default=500)
# Fixed one-second windows in Redis; 0 disables a limit.
COLLECT_RATE_PER_SITE = env.int("COLLECT_RATE_PER_SITE", default=500)
COLLECT_RATE_PER_IP = env.int("COLLECT_RATE_PER_IP", default=50)
# Events a second, counted like requests; a client (an IP, an IPv6 /64) gets at most half
# of its site's budget of either.
COLLECT_EVENTS_PER_SITE = env.int("COLLECT_EVENTS_PER_SITE", default=10_000)
COLLECT_EVENTS_PER_IP = env.int("COLLECT_EVENTS_PER_IP", default=1_000)
# Session replay (POST /replay, docs/replay.md): a chunk's compressed body and what it
# inflates to, the span of one chunk, and a session's recording (bytes, minutes).
REPLAY_MAX_CHUNK_BYTES = env.int("REPLAY_MAX_CHUNK_BYTES", default=512 * 1024)
REPLAY_MAX_INFLATED_BYTES = env.int("REPLAY_MAX_INFLATED_BYTES", default=8 * 1024 * 1024)
REPLAY_MAX_CHUNK_SECONDS = env.int("REPLAY_MAX_CHUNK_SECONDS", default=600)
REPLAY_MAX_SESSION_BYTES = env.int("REPLAY_MAX_SESSION_BYTES", default=20 * 1024 * 1024)
REPLAY_MAX_SESSION_MINUTES = env.int("REPLAY_MAX_SESSION_MINUTES", default=120)
# Every stored replay byte of a site in a UTC day (chunks and the stylesheets they bring).
REPLAY_MAX_SITE_BYTES_PER_DAY = env.int("REPLAY_MAX_SITE_BYTES_PER_DAY", default=2 * 1024**3)
# Number of reverse proxies in front of the app whose X-Forwarded-For to trust.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)
SESSION_INACTIVITY = timedelta(minutes=env.int("SESSION_INACTIVITY_MINUTES", default=30))
SESSION_MAX_DURATION = timedelta(hours=env.int("SESSION_MAX_HOURS", default=24))
# Session enrichment at ingest (device, browser, OS, country, language, source): off only
# to measure its cost (`make bench` runs the ingest figures both ways).
INGEST_ENRICHMENT = env.bool("INGEST_ENRICHMENT", default=True)
# A Server-Timing header on /collect's answers: each ingest step's milliseconds, the
# Python garbage collector's during the request and the total (`python -m bench.tail`
# reads them from gunicorn's access log). Off by default: it tells the internet how long
# each step of the collector takes.
COLLECT_SERVER_TIMING = env.bool("COLLECT_SERVER_TIMING", default=False)
# Event keys offered by the user profile's rolling counters (the first is the default;
# any other key can be asked for with ?counter=).
ROLLING_COUNTER_EVENTS = env.list(
    "ROLLING_COUNTER_EVENTS", default=["pageview", "click", "login", "purchase"]
)
# A clock difference (received_at - sent_at) below this is transit time, not skew.
CLOCK_SKEW_TOLERANCE = timedelta(seconds=env.int("CLOCK_SKEW_TOLERANCE_SECONDS", default=60))
MAX_EVENT_AGE = timedelta(days=env.int("MAX_EVENT_AGE_DAYS", default=30))
# An event whose hour bucket ended more than this long before it arrived is late
# (the bucket may already be sealed).
ALLOWED_LATENESS = timedelta(minutes=env.int("ALLOWED_LATENESS_MINUTES", default=10))
DEDUP_TTL = timedelta(hours=env.int("DEDUP_TTL_HOURS", default=48))
# Retention per policy (days) while no RetentionPolicy row exists; admins change them on /retention/
# (sessions_app.foundation.tables.retention_specs.SPECS has the bounds). New rows are written with
# USING TTL from the policy. Aggregate hours must outlive the longest rolling-counter window (12
# months), whose edges are filled from hours.
RETENTION_DEFAULT_DAYS = {
    "raw_events": env.int("RETENTION_RAW_EVENTS_DAYS", default=400),
    "sessions": env.int("RETENTION_SESSIONS_DAYS", default=400),
    "aggregates_hour": env.int("AGGREGATE_HOUR_RETENTION_DAYS", default=400),
    "aggregates_day": env.int("AGGREGATE_DAY_RETENTION_DAYS", default=3 * 366),
    "aggregates_month": env.int("AGGREGATE_MONTH_RETENTION_DAYS", default=10 * 366),
    "failed_events": env.int("RETENTION_FAILED_EVENTS_DAYS", default=14),
    "transaction_log": env.int("RETENTION_TRANSACTION_LOG_DAYS", default=7),
}
# Tombstones (purge, erasure) must reach every replica before compaction may drop
# them: keep this longer than the interval between full repairs (ARCHITECTURE.md).
CASSANDRA_GC_GRACE_SECONDS = env.int("CASSANDRA_GC_GRACE_SECONDS", default=10 * 86_400)
# Partition keys one purge run may probe (and so delete), across all sites and tables.
PURGE_MAX_PARTITIONS = env.int("PURGE_MAX_PARTITIONS", default=20_000)
FEED_SHARDS = env.int("FEED_SHARDS", default=4)
# POST /collect and /v1/* skip Django's middleware (clickstream/fastpath.py).
COLLECT_FAST_PATH = env.bool("COLLECT_FAST_PATH", default=True)
# site_sessions partitions per (site, day): sessions/day x ~0.5 KB / SESSION_SHARDS
# should stay under 100 MB (64 for 10 M sessions a day). Set before ingesting: rows
# already written stay in the shard their session id hashed to.
SESSION_SHARDS = env.int("SESSION_SHARDS", default=2)
TXLOG_SHARDS = env.int("TXLOG_SHARDS", default=4)
TXLOG_REDO_GRACE = timedelta(seconds=env.int("TXLOG_REDO_GRACE_SECONDS", default=60))
TXLOG_REDO_WINDOW = timedelta(hours=env.int("TXLOG_REDO_WINDOW_HOURS", default=2))
FAILED_EVENT_PAYLOAD_BYTES = 8 * 1024
# The applier queue (sessions_app/domain/ingest/applier.py): the collector answers once a
# plan is in the transaction log and hands it through Redis to `manage.py run_applier`,
# which writes many plans at once; with no applier alive, or this many plans waiting,
# the collector writes the plan itself. An applier leaves plans older than
# APPLY_QUEUE_MAX_AGE_SECONDS to the redo task; it stays below
# ERASURE_SETTLE_SECONDS - SUPPRESSION_CACHE_SECONDS, so an erasure's deletes always
# come after any write from the queue (the redo reads the log, which an erasure edits).
APPLY_QUEUE = env.bool("APPLY_QUEUE", default=True)
APPLY_QUEUE_MAX_PLANS = env.int("APPLY_QUEUE_MAX_PLANS", default=2000)
APPLY_QUEUE_MAX_AGE_SECONDS = env.int("APPLY_QUEUE_MAX_AGE_SECONDS", default=10)
APPLIER_BATCH_PLANS = env.int("APPLIER_BATCH_PLANS", default=32)
# A plan that waited longer than this in the applier queue is logged (a warning, at most
# once a minute per applier): events visible within 2 s is the freshness goal
# (`make bench`'s accepted -> visible row); /healthz/deep shows the queue's oldest wait.
APPLIER_LAG_WARN_SECONDS = env.float("APPLIER_LAG_WARN_SECONDS", default=2.0)
# Adaptive user buckets: a user whose busiest hour, kept up for a whole bucket of
# USER_EVENTS_BUCKET, would pass the budget gets hour buckets from the next bucket on.
USER_EVENT_ROW_BYTES = env.int("USER_EVENT_ROW_BYTES", default=500)
USER_PARTITION_BUDGET_BYTES = env.int("USER_PARTITION_BUDGET_BYTES", default=100_000_000)
# Expected bytes of a site_events_by_bucket row, for shard counts (buckets.shards_for).
SITE_EVENT_ROW_BYTES = env.int("SITE_EVENT_ROW_BYTES", default=400)

# Erasure: how long each process caches a site's suppressed keys (the collector's
# check), and how long an erasure waits after suppressing before it deletes, so that
# no request that passed the check before the suppression writes after the delete.
SUPPRESSION_CACHE_SECONDS = env.int("SUPPRESSION_CACHE_SECONDS", default=5)
ERASURE_SETTLE_SECONDS = env.int("ERASURE_SETTLE_SECONDS", default=20)

# Seconds a seal waits for the next page of a bucket scan before giving up.
CASSANDRA_SCAN_TIMEOUT = env.int("CASSANDRA_SCAN_TIMEOUT_SECONDS", default=60)

# --- Analyst reads -----------------------------------------------------------------
# Multi-bucket reads: "auto" uses one IN query up to ACTIVITY_IN_MAX_BUCKETS buckets
# and parallel queries (ACTIVITY_PARALLEL_WINDOW at a time) beyond, each reading
# ACTIVITY_PARALLEL_IN_BUCKETS consecutive buckets with an IN list (1: one bucket a
# query; never more than ACTIVITY_IN_MAX_BUCKETS).
ACTIVITY_READ_STRATEGY = env("ACTIVITY_READ_STRATEGY", default="auto")
ACTIVITY_IN_MAX_BUCKETS = env.int("ACTIVITY_IN_MAX_BUCKETS", default=4)
ACTIVITY_PARALLEL_WINDOW = env.int("ACTIVITY_PARALLEL_WINDOW", default=32)
ACTIVITY_PARALLEL_IN_BUCKETS = env.int("ACTIVITY_PARALLEL_IN_BUCKETS", default=4)

# Session timelines (sessions_app/domain/sessions/timeline.py): a closed session's API payload is
# materialized in its session_events partition and served from there until an event
# is written after it. The copy is stamped this many seconds before the read it was
# built from, so a write still in flight (driver retries, an app host whose clock is
# behind) invalidates it too: keep it above CASSANDRA_REQUEST_TIMEOUT plus the clock
# skew between app hosts.
TIMELINE_MATERIALIZE = env.bool("TIMELINE_MATERIALIZE", default=True)
TIMELINE_MATERIALIZE_MARGIN = timedelta(
    seconds=env.int("TIMELINE_MATERIALIZE_MARGIN_SECONDS", default=30)
)
# An open session's events older than this (before the stamp of the read that stores
# them) are kept as a materialized prefix; reads add the rows after it. Inserts of
# events older than half of it when they are sent mark the partition `backfilled`,
# which invalidates the prefix: only an event written later than the prefix's stamp
# can be missing from it, and such an event is either newer than the prefix's end
# (read as a row) or older than the half lag when written (marked).
TIMELINE_PREFIX_LAG = timedelta(seconds=env.int("TIMELINE_PREFIX_LAG_SECONDS", default=120))
# A prefix is stored (or extended) only when it gains at least this many events.
TIMELINE_PREFIX_MIN_EVENTS = env.int("TIMELINE_PREFIX_MIN_EVENTS", default=100)

# The dashboard's "Right now" box asks for the last five minutes this often (ms).
REALTIME_REFRESH_MS = 5000

# Web processes (clickstream/wsgi.py): Python's cycle collector runs after this many
# net new container objects. A request holds thousands at once (a timeline's rows);
# at Python's default of 700 every such request ran several collections that
# promoted its rows and triggered full-heap ones (up to ~120 ms: the API's p95).
WEB_GC_THRESHOLD = env.int("WEB_GC_THRESHOLD", default=20_000)
# Celery worker processes and the applier (sessions_app/foundation/core/garbage.tune_gc):
# the same for a seal's hundreds of thousands of short-lived rows and an applier round's
# plans.
WORKER_GC_THRESHOLD = env.int("WORKER_GC_THRESHOLD", default=20_000)

# Requests an hour each API token may make (Plausible's API: 600 an hour); a token over
# it gets 429 with Retry-After until its hour ends (docs/api.md).
API_TOKEN_RATE = env.int("API_TOKEN_RATE", default=600)
# Requests a minute each share link answers (page views and password attempts); over it
# a viewer gets 429 with Retry-After until the minute ends (docs/sharing.md).
SHARE_LINK_RATE = env.int("SHARE_LINK_RATE", default=120)
REST_FRAMEWORK = {
    # Token first: an unauthenticated request gets 401 with WWW-Authenticate: Token.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "sessions_app.features.web.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # ?format= belongs to the export endpoints (csv/json), not renderer selection.
    "URL_FORMAT_OVERRIDE": None,
    # Signed in; each route then checks the user's access to its site (SiteView).
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["sessions_app.features.web.renderers.ORJSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "sessions_app.features.web.schema.RegistrySchema",
    "EXCEPTION_HANDLER": "sessions_app.features.web.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "clickstream API",
    "DESCRIPTION": "Sessions, timelines and activity across time buckets. Auth: login "
    "session or `Authorization: Token KEY` (/account/tokens/ or manage.py create_api_token "
    "USERNAME); a token reads only its user's sites.",
    "VERSION": "1.0.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # No deep links: Swagger UI puts each operation's link inside its expand button (a
    # control in a control: axe's nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
}
# Analyst pages: no inline script, everything from this origin.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; "
    "form-action 'self'"
)

# Funnels (features/funnels/results.py): a result needing more uncached sealed days than
# FUNNEL_INLINE_DAYS queues one Celery task a day (progress on the page).
FUNNEL_INLINE_DAYS = env.int("FUNNEL_INLINE_DAYS", default=2)
# The analysis queue (domain/jobs/analysis_queue.py): a site's funnel day scans and goal
# backfills together, at most ANALYSIS_TASKS_PER_SITE queued or running at once (the rest
# wait: a funnel's days for the page's next refresh, a goal's backfill for a free place or
# the next beat); a lost task's place lapses ANALYSIS_TASK_TTL s after it was taken or
# last renewed (a backfill renews its place at every bucket).
ANALYSIS_TASK_TTL = env.int("ANALYSIS_TASK_TTL", default=600)
ANALYSIS_TASKS_PER_SITE = env.int("ANALYSIS_TASKS_PER_SITE", default=8)

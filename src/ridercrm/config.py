"""Settings, read from RIDERCRM_* environment variables and validated at start-up."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from ridercrm.fields import ALIASES, SITE_ZONES
from ridercrm.netsafety import AllowList
from ridercrm.ratelimit import check_storage, parse_limits


class Settings(BaseSettings):
    """Everything an operator can configure. Each field is RIDERCRM_<NAME>."""

    model_config = SettingsConfigDict(env_prefix="RIDERCRM_", extra="ignore")

    database_url: str = Field(
        default="sqlite:///ridercrm.db",
        description="SQLAlchemy URL. SQLite file (default) or postgresql+psycopg://...",
    )
    base_path: str = Field(
        default="", description="Prefix of every API path, e.g. /services/apexrest"
    )
    max_body_bytes: int = Field(
        default=1024 * 1024, ge=1, description="Largest request body (413 above)"
    )
    max_items: int = Field(default=200, ge=1, description="Most items in one request (413 above)")
    max_header_bytes: int = Field(
        default=16 * 1024,
        ge=1024,
        description="`serve`: largest request line and header block (431 above)",
    )
    max_headers: int = Field(
        default=100, ge=1, description="`serve`: most header fields in one request (431 above)"
    )
    header_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="`serve`: a request's whole header block must arrive within this (408)",
    )
    body_timeout_seconds: float = Field(
        default=20.0,
        gt=0,
        description="`serve`: a request's whole body must arrive within this after its headers (408)",
    )
    admin_key_file: str = Field(
        default="ridercrm-admin-key.txt",
        min_length=1,
        description=(
            "`serve`: where the first-start admin key is written (owner-only) when standard"
            " error is not a terminal"
        ),
    )
    idempotency_ttl_hours: float = Field(
        default=24.0, gt=0, description="How long Idempotency-Key replays last"
    )
    idempotency_lock_seconds: float = Field(
        default=60.0,
        gt=0,
        description="After this, an unfinished request's Idempotency-Key may be retaken",
    )
    audit_retention_days: int = Field(
        default=365, ge=1, description="Default age for `audit purge`"
    )
    audit_redact: bool = Field(
        default=False,
        description=(
            "Store audit request and response bodies with the values of personal fields"
            " (names, date of birth, e-mail, phones, licence, address) replaced by"
            " [redacted]; a body that cannot be read is replaced by a note"
        ),
    )
    counts_fold_seconds: float = Field(
        default=5.0,
        gt=0,
        description=(
            "How often `serve` folds the dashboard's weekly count deltas into the counts"
            " (the figures are exact either way; folding keeps the deltas few)"
        ),
    )
    audit_batch_max: int = Field(
        default=200,
        ge=1,
        le=10_000,
        description=(
            "Audit records of reads and refusals committed together at most (group"
            " commit; each request is answered once its record is committed)"
        ),
    )
    audit_gather_ms: float = Field(
        default=2.0,
        ge=0,
        le=100,
        description=(
            "How long the audit writer waits for the records of requests still in flight"
            " before it commits a batch of reads' and refusals' records (0: never waits)"
        ),
    )
    sqlite_busy_timeout_ms: int = Field(default=30_000, ge=0, description="SQLite busy timeout")
    sqlite_writer_queue: bool = Field(
        default=True,
        description=(
            "SQLite writers queue in arrival order on <database>.writelock instead of"
            " polling the write lock: far shorter latency tails, less peak throughput"
        ),
    )
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description=(
            "SQLite's synchronous setting: FULL, every acknowledged commit survives a"
            " power loss; NORMAL, it survives a crash of the process (SIGKILL) but the"
            " last commits before a power loss or OS crash may be lost"
        ),
    )
    sqlite_checkpoint_seconds: float = Field(
        default=1.0,
        ge=0,
        description=(
            "How often `serve` copies SQLite's log into the database from a thread of its"
            " own (a passive checkpoint), so that no request pays for it; 0: SQLite's"
            " automatic checkpoints, run by the commit that fills 1,000 pages of log"
        ),
    )
    sqlite_cache_mb: int = Field(
        default=64, ge=1, description="SQLite page cache per connection, in MiB"
    )
    sqlite_page_size: int = Field(
        default=1024,
        ge=512,
        le=65536,
        description=(
            "The page size of a new SQLite store, in bytes (a power of two; an existing"
            " store keeps its own): a write rewrites whole pages, and the keys a new"
            " person adds land each on its own page of a large index"
        ),
    )
    sqlite_mmap_mb: int = Field(
        default=2048,
        ge=0,
        description="SQLite memory-mapped I/O per connection (address space, not RAM)",
    )
    db_pool_size: int = Field(
        default=10,
        ge=1,
        description=(
            "Connections per worker (PostgreSQL): the pool's, as many overflow, and at most"
            " as many on the event loop (light reads, reads' audit records)"
        ),
    )
    log_level: str = Field(default="INFO", description="Python logging level")
    log_json: bool = Field(default=True, description="One JSON object per log line")
    # Off by default: the original service had no limit, and a client that re-syncs in a
    # tight loop must not start getting 429s after changing only its base URL. Operators
    # turn it on; 1200/minute is the value the README recommends.
    rate_limit: str = Field(
        default="off",
        description=(
            "Requests per API key in any moving window, e.g. 1200/minute; several joined by ';'"
            " must all hold (1200/minute;50/second also caps bursts); 'off' or empty: no limit"
        ),
    )
    explain_rate_limit: str = Field(
        default="100/hour",
        description=(
            'Match requests with "explain": true per API key in any moving window (429 past'
            " it), counted apart from RIDERCRM_RATE_LIMIT: an explanation tells more than the"
            " answer, so its use is bounded; 'off' or empty: no limit"
        ),
    )
    match_cache_entries: int = Field(
        default=4096,
        ge=1,
        le=1_048_576,
        description=(
            "Entries each of the matcher's caches keeps per worker (normalised and compared"
            " names, their OCR folds, birth dates' digits; stored identities a quarter as"
            " many): about 12 MiB per worker when full at the default; memory grows while"
            " they fill, then stays flat"
        ),
    )
    refused_rate_limit: str = Field(
        default="120/minute",
        description=(
            "Requests refused without a valid API key (401, unknown paths) per client"
            " address in any moving window; past it they are answered 429 and get no audit"
            " record, so a flood cannot fill the disk; 'off' or empty: no limit"
        ),
    )
    ready_min_free_mb: int = Field(
        default=32,
        ge=0,
        description=(
            "/readyz answers 503 when the SQLite database's filesystem has less free space"
            " than this (MiB)"
        ),
    )
    rate_limit_storage: str = Field(
        default="",
        description=(
            "Where rate-limit counters live: empty or 'memory' (each worker process counts"
            " alone), or a Redis URL such as redis://127.0.0.1:6379/0 (shared by all workers"
            " and hosts using it)"
        ),
    )
    rate_limit_key_prefix: str = Field(
        default="ridercrm",
        min_length=1,
        description="Prefix of the rate-limit keys in Redis; one per deployment sharing a Redis",
    )
    match_threshold: float = Field(
        default=18.0,
        description=(
            "Matching: the least total match weight (bits, the sum of the per-field weights)"
            " a candidate needs to be the answer"
        ),
    )
    match_personal_threshold: float = Field(
        default=1.0,
        description=(
            "Matching: the least weight given name, date of birth and licence together must"
            " carry, so that a household's shared surname and contact details never match alone"
        ),
    )
    match_ambiguity_margin: float = Field(
        default=6.0,
        ge=0,
        description=(
            "Matching: two accepted candidates within this many bits that look like different"
            " people give no answer"
        ),
    )

    webhook_allowed_hosts: str = Field(
        default="",
        description=(
            "Webhook endpoints that may be on loopback, private or link-local addresses:"
            " comma-separated host names or CIDR ranges, each at every port or at one"
            " (host:port, [v6]:port), e.g. 127.0.0.1:9000,10.0.0.0/8,hooks.lan"
        ),
    )
    webhook_retry_schedule: str = Field(
        default="5,300,1800,7200,18000,36000,36000",
        description=(
            "Seconds to wait before each retry of a failed webhook delivery, comma-separated"
            " (each with ±20% jitter; Retry-After may lengthen a wait); after the last the"
            " delivery fails and its endpoint is disabled"
        ),
    )
    webhook_timeout_seconds: float = Field(
        default=10.0, gt=0, le=300, description="Time a webhook receiver has to answer"
    )
    webhook_lease_seconds: float = Field(
        default=60.0,
        gt=0,
        description=(
            "A claimed delivery is sent again by any deliverer after this long without an"
            " outcome (its deliverer died); keep it above the timeout"
        ),
    )
    webhook_poll_seconds: float = Field(
        default=0.25, gt=0, le=60, description="How often an idle deliverer looks for events"
    )
    webhook_concurrency: int = Field(
        default=16, ge=1, le=256, description="Webhook requests one deliverer sends at once"
    )
    webhook_secret_grace_hours: float = Field(
        default=24.0,
        ge=0,
        description="After a secret rotation, how long the old secret also signs",
    )
    event_retention_days: float = Field(
        default=30.0,
        gt=0,
        le=3650,
        description=(
            "Events: delivered events and their delivery log older than this many days are"
            " purged by the deliverer (hourly) and by `ridercrm webhooks purge`"
        ),
    )
    webhook_deliverer: bool = Field(
        default=True,
        description="`ridercrm serve` runs a webhook deliverer beside the server",
    )
    duplicates_review_threshold: float = Field(
        default=12.0,
        description=(
            "Duplicates: the least total match weight (bits) a pair of stored people needs"
            " to be proposed for review by `ridercrm duplicates scan`"
        ),
    )
    duplicates_recheck: bool = Field(
        default=True,
        description=(
            "Duplicates: `ridercrm serve` re-checks the people each write touched, in the"
            " background, once a first scan was made"
        ),
    )
    duplicates_recheck_seconds: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description="Duplicates: how often the background re-check looks for touched people",
    )
    duplicates_auto_merge_threshold: float | None = Field(
        default=None,
        description=(
            "Duplicates: clusters whose weakest pair reaches this weight are merged by the"
            " scan without review; unset (the default) merges nothing automatically"
        ),
    )

    # --- course sessions (docs/decisions.md, "Course sessions") ---
    sessions_required: bool = Field(
        default=False,
        description="Operation 1: a booking that names no course session fails"
        " (`No such course session.`)",
    )
    waitlist_hold_hours: float = Field(
        default=24.0,
        gt=0,
        le=24 * 30,
        description="How long a freed seat is held for the first person waiting (fractions"
        " allowed, e.g. 0.002)",
    )
    waitlist_timer_seconds: float = Field(
        default=1.0,
        gt=0,
        le=3600,
        description="How often the deliverer's timer ends lapsed offers and passes them on",
    )
    sessions_flag_days: int = Field(
        default=7,
        ge=0,
        le=365,
        description="Console: flag sessions short of cover or under their minimum this many"
        " days ahead",
    )

    # --- staff console (src/ridercrm/web/console, docs/console.md) ---
    console_session_hours: float = Field(
        default=12.0, gt=0, le=24 * 30, description="Console: a sign-in lasts this long"
    )
    console_lockout_attempts: int = Field(
        default=5, ge=1, le=100, description="Console: failed sign-ins in a row that lock"
    )
    console_lockout_minutes: float = Field(
        default=15.0, gt=0, description="Console: how long a locked account stays locked"
    )
    console_secure_cookies: str = Field(
        default="auto",
        pattern="^(auto|always|never)$",
        description=(
            "Console: mark cookies Secure: auto (when the request came over https, as seen"
            " by the server or by X-Forwarded-Proto from a trusted proxy), always, never"
        ),
    )
    console_admin_user: str = Field(
        default="admin",
        min_length=1,
        max_length=80,
        pattern=r"^[^\s/\\?#](?:[^/\\?#\x00-\x1f]*[^\s/\\?#])?$",
        description="`serve`: the name of the console admin created on the first start",
    )
    timezone: str = Field(
        default="Australia/Melbourne",
        description=(
            "The business's time zone (IANA name): the console shows every time but course"
            " times (the site's local wall time) in it; times are stored in UTC"
        ),
    )
    console_admin_file: str = Field(
        default="ridercrm-console-admin.txt",
        min_length=1,
        description=(
            "`serve`: where the first-start console admin's sign-in is written"
            " (owner-only) when standard error is not a terminal"
        ),
    )

    # --- notifications (src/ridercrm/notifications, docs/notifications.md) ---
    smtp_url: str = Field(
        default="",
        description=(
            "Notifications: the SMTP server for e-mail, smtp://user:pass@host:587?starttls=true"
            " (smtps:// for TLS from the start); unset: e-mail messages are kept as unsent"
        ),
    )
    notify_from: str = Field(
        default="Rider Training <bookings@localhost>",
        min_length=3,
        description="Notifications: the From of e-mails (its domain ends every Message-ID)",
    )
    notify_business: str = Field(
        default="Rider Training",
        min_length=1,
        description="Notifications: the business's name as messages sign it",
    )
    reminders: str = Field(
        default="48h,2h",
        description=(
            "Notifications: reminders before each course, comma-separated (48h, 90m, 1d;"
            " empty for none); one whose moment passed before the booking is skipped"
        ),
    )
    sms_url: str = Field(
        default="",
        description=(
            "Notifications: the SMS gateway's Messages URL (the Twilio form shape: To, From,"
            " Body; basic auth); unset: SMS messages are kept as unsent"
        ),
    )
    sms_username: str = Field(
        default="", description="Notifications: the SMS gateway's user (Twilio: the account SID)"
    )
    sms_password: str = Field(
        default="", description="Notifications: the SMS gateway's password (Twilio: auth token)"
    )
    sms_from: str = Field(
        default="", description="Notifications: the sender of SMS (a number or sender id)"
    )
    sms_quiet_hours: str = Field(
        default="21:00-08:00",
        description=(
            "Notifications: site-local hours in which no SMS is sent (off: none); one due"
            " then goes when they end, or not at all if the course has begun"
        ),
    )
    notify_retry_schedule: str = Field(
        default="30,120,600,1800,7200",
        description=(
            "Notifications: seconds before each retry of a message that failed for a"
            " passing reason (±20% jitter); after the last it is failed"
        ),
    )
    notify_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        le=300,
        description=(
            "Notifications: time an SMTP server or gateway has (an SMTP server acknowledging"
            " a whole message has what is left of the lease)"
        ),
    )
    notify_lease_seconds: float = Field(
        default=120.0,
        gt=0,
        description=(
            "Notifications: a claimed message is sent again after this long without an"
            " outcome (its deliverer died); keep it above the timeout"
        ),
    )
    public_url: str = Field(
        default="http://localhost:8000",
        description=(
            "Notifications: the service's address as riders reach it, for the"
            " stop-reminders link (the base path is added)"
        ),
    )
    notify_secret: str = Field(
        default="",
        description=(
            "Notifications: the secret that signs stop-reminders links; unset: one is made"
            " and kept in the database"
        ),
    )
    digest_to: str = Field(
        default="",
        description=(
            "Notifications: the staff digest of tomorrow's sessions goes to these addresses,"
            " per site (somerton=desk@example.com,kilsyth=...) or one address for every site;"
            " unset: no digest"
        ),
    )
    digest_at: str = Field(
        default="17:00",
        description="Notifications: the site-local time the staff digest of tomorrow is written",
    )
    digest_timer_seconds: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="How often the deliverer's timer looks for staff digests to write",
    )

    @field_validator("base_path")
    @classmethod
    def _normalise_base_path(cls, value: str) -> str:
        value = value.strip().rstrip("/")
        if value and not value.startswith("/"):
            value = "/" + value
        return value

    @field_validator("rate_limit", "explain_rate_limit", "refused_rate_limit")
    @classmethod
    def _check_rate_limit(cls, value: str) -> str:
        parse_limits(value)
        return value.strip()

    @field_validator("sqlite_page_size")
    @classmethod
    def _check_page_size(cls, value: int) -> int:
        if value & (value - 1):
            raise ValueError("a power of two from 512 to 65536")
        return value

    @field_validator("rate_limit_storage")
    @classmethod
    def _check_rate_limit_storage(cls, value: str) -> str:
        return check_storage(value)

    @field_validator("webhook_allowed_hosts")
    @classmethod
    def _check_allowed_hosts(cls, value: str) -> str:
        AllowList.parse(value)
        return value.strip()

    @field_validator("webhook_retry_schedule")
    @classmethod
    def _check_retry_schedule(cls, value: str) -> str:
        parse_schedule(value)
        return value.strip()

    @field_validator("timezone")
    @classmethod
    def _check_timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value.strip())
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{value!r} is not a time zone (e.g. Australia/Melbourne)") from None
        return value.strip()

    @property
    def zone(self) -> ZoneInfo:
        """The business's time zone (RIDERCRM_TIMEZONE)."""
        return ZoneInfo(self.timezone)

    @field_validator("notify_retry_schedule")
    @classmethod
    def _check_notify_schedule(cls, value: str) -> str:
        parse_schedule(value)
        return value.strip()

    @field_validator("reminders")
    @classmethod
    def _check_reminders(cls, value: str) -> str:
        parse_reminders(value)
        return value.strip()

    @field_validator("sms_quiet_hours")
    @classmethod
    def _check_quiet_hours(cls, value: str) -> str:
        QuietHours.parse(value)
        return value.strip()

    @field_validator("digest_to")
    @classmethod
    def _check_digest_to(cls, value: str) -> str:
        parse_digest_to(value)
        return value.strip()

    @field_validator("digest_at")
    @classmethod
    def _check_digest_at(cls, value: str) -> str:
        parse_digest_at(value)
        return value.strip()

    @field_validator("smtp_url")
    @classmethod
    def _check_smtp_url(cls, value: str) -> str:
        from urllib.parse import urlsplit

        value = value.strip()
        if value and (
            urlsplit(value).scheme not in ("smtp", "smtps") or not urlsplit(value).hostname
        ):
            raise ValueError("must look like smtp://user:pass@host:587?starttls=true (or smtps://)")
        return value

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def parse_schedule(text: str) -> tuple[float, ...]:
    """Read "5,300,1800" (seconds before each retry); raise ValueError on a bad entry."""
    delays = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        try:
            delay = float(raw)
        except ValueError:
            raise ValueError(f"{raw.strip()!r} is not a number of seconds") from None
        if not delay >= 0 or delay == float("inf"):
            raise ValueError(f"{raw.strip()!r} is not a number of seconds")
        delays.append(delay)
    return tuple(delays)


_OFFSET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


_LONGEST_REMINDER = dt.timedelta(days=366)


def parse_reminders(text: str) -> tuple[tuple[str, dt.timedelta], ...]:
    """Read RIDERCRM_REMINDERS ("48h,2h", "1d,90m", "" for none): each offset before the
    course, with its label; raise ValueError naming a bad entry."""
    offsets = []
    for raw in text.split(","):
        if not raw.strip():
            continue
        found = _OFFSET.match(raw)
        if found is None:
            raise ValueError(
                f"{raw.strip()!r} is not a time before the course (e.g. 48h, 90m, 1d, 30s)"
            )
        seconds = float(found.group(1)) * _UNIT_SECONDS[found.group(2).lower()]
        if seconds > _LONGEST_REMINDER.total_seconds():
            # A reminder years ahead is a typo, and one before year 1 could not be stored.
            raise ValueError(f"{raw.strip()!r} is more than a year before the course")
        offsets.append((raw.strip().lower(), dt.timedelta(seconds=seconds)))
    return tuple(offsets)


def parse_digest_to(text: str) -> dict[str, str]:
    """Read RIDERCRM_DIGEST_TO: ``site=address`` pairs separated by commas (a site named
    as the interface names it, any case), or one bare address for every site (also
    ``*=address``, which the named sites override). Return {site: address} with the
    interface's spelling of each site; raise ValueError naming a bad entry."""
    sites = {site.lower(): site for site in SITE_ZONES}
    # "ipswich" names the site the interface spells "ipswitch", as everywhere else.
    sites.update({alias: site for alias, site in ALIASES.items() if site in SITE_ZONES})
    everywhere = ""
    named: dict[str, str] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        site, equals, address = entry.rpartition("=")
        address = address.strip()
        if "@" not in address or any(char.isspace() for char in address):
            raise ValueError(f"{entry!r}: {address!r} is not an e-mail address")
        site = site.strip().lower()
        if not equals or site == "*":
            everywhere = address
        elif site in sites:
            named[sites[site]] = address
        else:
            raise ValueError(f"{entry!r}: no site {site!r} (sites: {', '.join(SITE_ZONES)})")
    if everywhere:
        return {site: named.get(site, everywhere) for site in SITE_ZONES}
    return named


def parse_digest_at(text: str) -> dt.time:
    """Read RIDERCRM_DIGEST_AT ("17:00"): a site-local time of day."""
    try:
        return dt.time.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time of day such as 17:00") from None


@dataclass(frozen=True)
class QuietHours:
    """A nightly window of site-local time in which no SMS is sent (start > end: overnight)."""

    start: dt.time
    end: dt.time

    @classmethod
    def parse(cls, text: str) -> QuietHours | None:
        """Read "21:00-08:00"; "" or "off": no quiet hours; raise ValueError otherwise."""
        if text.strip().lower() in ("", "off", "none"):
            return None
        try:
            first, second = (part.strip() for part in text.split("-"))
            start = dt.time.fromisoformat(first)
            end = dt.time.fromisoformat(second)
        except ValueError:
            raise ValueError(f"{text!r} is not a time range such as 21:00-08:00") from None
        if start == end:
            raise ValueError(f"{text!r}: quiet hours that start and end together")
        return cls(start, end)

    def contains(self, local: dt.time) -> bool:
        if self.start < self.end:
            return self.start <= local < self.end
        return local >= self.start or local < self.end

    def next_allowed(self, moment: dt.datetime, zone: ZoneInfo) -> dt.datetime:
        """The moment itself if it is outside the quiet hours at the site, else the end of
        the quiet hours (UTC)."""
        local = moment.astimezone(zone)
        if not self.contains(local.time().replace(tzinfo=None)):
            return moment
        day = local.date()
        if self.start > self.end and local.time() >= self.start:
            day += dt.timedelta(days=1)
        end = dt.datetime.combine(day, self.end, tzinfo=zone)
        return end.astimezone(dt.UTC)

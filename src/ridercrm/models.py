"""Every ORM model, imported once so the metadata is complete (Alembic, tests)."""

from ridercrm.audit.models import AuditRecord, AuditSubject
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import Base
from ridercrm.duplicates.models import (
    DuplicateCluster,
    DuplicatePair,
    DuplicateScan,
    PersonMerge,
)
from ridercrm.events.models import Delivery, Event, WebhookEndpoint, WebhookTotal
from ridercrm.keys.models import ApiKey
from ridercrm.notifications.models import (
    Message,
    MessageTemplate,
    NotificationSecret,
    ReminderStop,
)
from ridercrm.people.models import Person, PersonKey
from ridercrm.products.models import Product
from ridercrm.reports.models import CourseWeekCount, CourseWeekDelta
from ridercrm.sessions.models import CourseSession, WaitlistEntry
from ridercrm.staff.models import StaffSession, StaffSignInFailure, StaffUser
from ridercrm.transfer.models import ImportRun
from ridercrm.web.idempotency.models import IdempotencyRecord

__all__ = [
    "ApiKey",
    "Asset",
    "AssetStatusChange",
    "AuditRecord",
    "AuditSubject",
    "Base",
    "CourseSession",
    "CourseWeekCount",
    "CourseWeekDelta",
    "Delivery",
    "DuplicateCluster",
    "DuplicatePair",
    "DuplicateScan",
    "Event",
    "IdempotencyRecord",
    "ImportRun",
    "Message",
    "MessageTemplate",
    "NotificationSecret",
    "Person",
    "PersonKey",
    "PersonMerge",
    "Product",
    "ReminderStop",
    "StaffSession",
    "StaffSignInFailure",
    "StaffUser",
    "WaitlistEntry",
    "WebhookEndpoint",
    "WebhookTotal",
]

"""Notifications: confirmations, reminders, results and seat offers by e-mail and SMS
(docs/notifications.md)."""

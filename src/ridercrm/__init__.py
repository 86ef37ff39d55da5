"""ridercrm: a self-hosted CRM service for a motorcycle rider-training business."""

__version__ = "0.1.0"

"""The data files a user may edit and how they are read: thresholds, platforms, racks, repair catalogs, Xid and
SXid catalogs."""

from .alerts import AlertPolicy, load_alerts
from .catalogs import load_sxid_catalog, load_xid_catalog
from .platforms import all_platforms, platform_for_model, platform_name
from .racks import all_racks
from .thresholds import Rule, Thresholds, load_thresholds
from .unread import unread_outputs
from .verification import VerificationPolicy, load_verification
from .watch import WatchPolicy, load_watch

__all__ = [
    "AlertPolicy",
    "Rule",
    "Thresholds",
    "VerificationPolicy",
    "WatchPolicy",
    "all_platforms",
    "all_racks",
    "load_alerts",
    "load_sxid_catalog",
    "load_thresholds",
    "load_verification",
    "load_watch",
    "load_xid_catalog",
    "platform_for_model",
    "platform_name",
    "unread_outputs",
]

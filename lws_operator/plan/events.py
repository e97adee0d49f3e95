"""The Events the operator posts, as values: planners say what to announce, the recorder
(``kube/events.py``) writes them. Reasons, actions and notes are upstream's, word for word,
where upstream has them (tools and runbooks match on them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

NORMAL: Final = "Normal"
WARNING: Final = "Warning"

# Reasons (upstream's constants).
GROUPS_PROGRESSING: Final = "GroupsProgressing"
GROUPS_UPDATING: Final = "GroupsUpdating"
CREATING_REVISION: Final = "CreatingRevision"
RECREATE_GROUP: Final = "RecreateGroup"
FAILED_CREATE: Final = "FailedCreate"
FAILED_UPDATE: Final = "FailedUpdate"

# Actions.
CREATE: Final = "Create"
UPDATE: Final = "Update"
DELETE: Final = "Delete"


@dataclass(frozen=True)
class Event:
    type: str
    reason: str
    action: str
    note: str

    def failed(self, message: str) -> Event:
        """This Event with the API server's answer appended (for the Failed* events)."""
        return Event(self.type, self.reason, self.action, f"{self.note}: {message}")


def normal(reason: str, action: str, note: str) -> Event:
    return Event(NORMAL, reason, action, note)


def warning(reason: str, action: str, note: str) -> Event:
    return Event(WARNING, reason, action, note)

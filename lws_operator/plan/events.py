"""The Events the operator posts, as values: planners say what to announce, the recorder
(``kube/events.py``) writes them. Reasons, actions and notes are upstream's, word for word,
where upstream has them (tools and runbooks match on them)."""

from __future__ import annotations

from collections.abc import Hashable
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


# Warnings remembered as reported, per object, at most this many (a plain bound).
REPORTED_MAX = 4096


class ReportedOnce:
    """The Warnings already reported about one object, by what each is about: one report
    each. A plain bound: past ``REPORTED_MAX`` it starts afresh (at worst one report again)."""

    def __init__(self) -> None:
        self._seen: set[Hashable] = set()

    def first(self, about: Hashable) -> bool:
        """Whether ``about`` is reported now (and remember it)."""
        if len(self._seen) >= REPORTED_MAX:
            self._seen.clear()
        if about in self._seen:
            return False
        self._seen.add(about)
        return True

    def __len__(self) -> int:
        return len(self._seen)

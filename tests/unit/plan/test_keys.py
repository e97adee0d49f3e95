"""The keys (plan/keys.py): an owner key is found as the (namespace, name) pair the watches and
kopf's index hand out, and a revision key read from a label is the one computed."""

from __future__ import annotations

from lws_operator.api import constants as c
from lws_operator.plan.keys import OwnerKey, RevisionKey
from lws_operator.plan.lws.revision import revision_key_of


def test_an_owner_key_is_found_by_its_plain_pair() -> None:
    kept = {OwnerKey("ns", "a"): 1}
    assert kept[("ns", "a")] == 1  # type: ignore[index]
    assert OwnerKey("ns", "a").namespace == "ns" and OwnerKey("ns", "a").name == "a"


def test_a_revision_key_is_read_from_its_label() -> None:
    obj = {"metadata": {"labels": {c.REVISION_KEY: "abc"}}}
    assert revision_key_of(obj) == RevisionKey("abc")
    assert revision_key_of({"metadata": {}}) is None and revision_key_of(None) is None

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from lws_operator.api import constants as c
from lws_operator.api.models import LeaderWorkerSetSpec
from lws_operator.plan.lws import revision as rev


def spec(**template: Any) -> LeaderWorkerSetSpec:
    lwt = {
        "size": 2,
        "workerTemplate": {
            "spec": {"containers": [{"name": "w", "image": "nginx:1.27"}]},
        },
        **template,
    }
    return LeaderWorkerSetSpec.model_validate({"replicas": 3, "leaderWorkerTemplate": lwt})


def test_fnv1_matches_go_hash_fnv_new32() -> None:
    assert rev.fnv1_32(b"") == 0x811C9DC5
    assert rev.fnv1_32(b"a") == 0x050C5D7E  # FNV-1 ("a" is 0xe40c292c under FNV-1a)
    assert rev.fnv1_32(b"foobar") == 0x31F0B262


def test_safe_encode_uses_the_kubernetes_alphabet() -> None:
    # rand.SafeEncodeString maps each character c to alphabet[c % 27].
    assert rev.safe_encode("0123456789") == "".join(
        "bcdfghjklmnpqrstvwxz2456789"[ord(ch) % 27] for ch in "0123456789"
    )
    key = rev.revision_key(spec())
    assert key and set(key) <= set("bcdfghjklmnpqrstvwxz2456789") and len(key) <= 10


def test_only_the_template_and_network_config_are_revisioned() -> None:
    base = spec()
    more = LeaderWorkerSetSpec.model_validate({**base.to_dict(), "replicas": 7})
    other_rollout = LeaderWorkerSetSpec.model_validate(
        {**base.to_dict(), "startupPolicy": "LeaderReady"}
    )
    assert rev.revision_key(more) == rev.revision_key(base) == rev.revision_key(other_rollout)
    assert rev.revision_key(spec(size=3)) != rev.revision_key(base)
    unique = LeaderWorkerSetSpec.model_validate(
        {**base.to_dict(), "networkConfig": {"subdomainPolicy": "UniquePerReplica"}}
    )
    assert rev.revision_key(unique) != rev.revision_key(base)


def test_content_replaces_wholesale_like_upstream() -> None:
    content = rev.revision_content(spec())
    assert content["spec"]["leaderWorkerTemplate"]["$patch"] == "replace"
    assert content["spec"]["networkConfig"] == {"subdomainPolicy": "Shared", "$patch": "replace"}


def upstream_revision(s: LeaderWorkerSetSpec) -> dict[str, Any]:
    """What upstream v0.10.0 (Go) stores for the same spec: zero values where Go emits them."""
    lwt = copy.deepcopy(s.leader_worker_template.to_dict())
    lwt["workerTemplate"]["metadata"] = {"creationTimestamp": None}
    for container in lwt["workerTemplate"]["spec"]["containers"]:
        container["resources"] = {}
    return {
        "metadata": {"labels": {c.REVISION_KEY: "upstreamkey"}},
        "data": {
            "spec": {
                "leaderWorkerTemplate": {**lwt, "$patch": "replace"},
                "networkConfig": {"subdomainPolicy": "Shared", "$patch": "replace"},
            }
        },
        "revision": 1,
    }


def test_upstream_revision_with_go_zero_values_matches_semantically() -> None:
    s = spec()
    assert rev.matches(upstream_revision(s), s)
    assert not rev.matches(upstream_revision(s), spec(size=4))


def test_revision_without_defaults_matches_the_defaulted_spec() -> None:
    s = spec()
    stored = upstream_revision(s)
    del stored["data"]["spec"]["leaderWorkerTemplate"]["restartPolicy"]
    del stored["data"]["spec"]["networkConfig"]
    assert rev.matches(stored, s)


def test_garbage_revision_is_no_match() -> None:
    assert not rev.matches({}, spec())
    assert not rev.matches({"data": {"spec": "x"}}, spec())
    assert not rev.matches({"data": {"spec": {"leaderWorkerTemplate": {"size": "x"}}}}, spec())


def test_spec_at_revision_takes_the_recorded_template_and_keeps_the_rest() -> None:
    old = spec(size=2)
    new = LeaderWorkerSetSpec.model_validate({**spec(size=5).to_dict(), "replicas": 9})
    recorded = rev.controller_revision(
        lws_name="x",
        namespace="ns",
        lws_uid="u",
        key="k",
        number=1,
        content=rev.revision_content(old),
    )
    at = rev.spec_at_revision(new, recorded)
    assert at.leader_worker_template.size == 2
    assert at.replicas == 9


def test_controller_revision_object() -> None:
    body = rev.controller_revision(
        lws_name="a" * 300,
        namespace="ns",
        lws_uid="u1",
        key="abc",
        number=3,
        content={"spec": {}},
    )
    assert body["metadata"]["name"] == "a" * 220 + "-abc-3"
    assert body["metadata"]["labels"] == {c.SET_NAME_LABEL: "a" * 300, c.REVISION_KEY: "abc"}
    (owner,) = body["metadata"]["ownerReferences"]
    assert owner["uid"] == "u1" and owner["controller"] is True
    assert body["revision"] == 3


@given(st.integers(1, 64), st.sampled_from(["Shared", "UniquePerReplica"]))
def test_key_is_stable_and_matches_itself(size: int, policy: str) -> None:
    s = LeaderWorkerSetSpec.model_validate(
        {**spec(size=size).to_dict(), "networkConfig": {"subdomainPolicy": policy}}
    )
    content = rev.revision_content(s)
    assert rev.revision_key(s) == rev.safe_encode(str(rev.fnv1_32(rev.content_bytes(content))))
    assert rev.matches({"data": content}, s)


def _lws(**template: Any) -> Any:
    from lws_operator.api.models import LeaderWorkerSet

    return LeaderWorkerSet.model_validate(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.KIND,
            "metadata": {"name": "demo", "namespace": "ns", "uid": "u"},
            "spec": spec(**template).to_dict(),
        }
    )


def _stored(lws: Any, key: str, number: int = 1, owner: str = "u") -> dict[str, Any]:
    body = rev.controller_revision(
        lws_name="demo",
        namespace="ns",
        lws_uid=owner,
        key=key,
        number=number,
        content=rev.revision_content(lws.spec),
    )
    body["metadata"]["uid"] = f"rev-{key}"
    return body


def _choose(lws: Any, sts_key: str | None, revisions: list[dict[str, Any]]) -> Any:
    sts = None if sts_key is None else {"metadata": {"labels": {c.REVISION_KEY: sts_key}}}
    return rev.choose_revision(
        lws,
        leader_sts=sts,
        revisions={r["metadata"]["name"]: r for r in revisions},
        matches=lambda r: rev.matches(dict(r), lws.spec),
    )


def test_a_new_lws_gets_a_first_revision() -> None:
    lws = _lws()
    choice = _choose(lws, None, [])
    assert (choice.key, choice.changed) == (rev.revision_key(lws.spec), False)
    assert choice.create is not None and choice.create["revision"] == 1
    assert choice.note.endswith("for a newly created LeaderWorkerSet")


def test_the_leader_statefulsets_revision_is_kept_while_it_holds_the_spec() -> None:
    lws = _lws()
    assert _choose(lws, "old-key", [_stored(lws, "old-key")]) == rev.RevisionChoice(
        "old-key", False
    )


def test_a_changed_template_gets_a_new_revision_and_starts_a_rollout() -> None:
    old, new = _lws(), _lws(size=3)
    choice = _choose(new, "k1", [_stored(old, "k1")])
    assert choice.changed and choice.key == rev.revision_key(new.spec)
    assert choice.create is not None and choice.create["revision"] == 2
    assert choice.note == f"Creating revision with key {choice.key} for updated LWS"
    back = _choose(old, "k2", [_stored(old, "k1"), _stored(new, "k2", 2)])
    assert back == rev.RevisionChoice("k1", True)  # back to an existing revision: no new one


def test_a_leader_statefulset_without_its_revision_gets_the_spec_under_its_key() -> None:
    lws = _lws()
    choice = _choose(lws, "theirs", [])
    assert (choice.key, choice.changed) == ("theirs", False)
    assert choice.create is not None and choice.note == "Creating missing revision with key theirs"


def test_history_keeps_the_current_revision_and_what_others_own() -> None:
    lws = _lws()
    revisions = {
        r["metadata"]["name"]: r
        for r in (_stored(lws, "a"), _stored(lws, "b", 2), _stored(lws, "c", 3, owner="other"))
    }
    assert rev.revisions_to_delete(revisions, key="b", lws_uid="u") == ["demo-a-1"]

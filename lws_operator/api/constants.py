"""Every name of the LeaderWorkerSet API that other tools can observe, in one place.

Values are those of upstream kubernetes-sigs/lws v0.10.0 (``api/leaderworkerset/v1/types.go``,
``pkg/utils/accelerators/tpu.go``): Kueue, HPA, dashboards and users match on them, so they must
never change.
"""

from __future__ import annotations

from typing import Final

# --- The resource -------------------------------------------------------------------------

GROUP: Final = "leaderworkerset.x-k8s.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "LeaderWorkerSet"
LIST_KIND: Final = "LeaderWorkerSetList"
PLURAL: Final = "leaderworkersets"
SINGULAR: Final = "leaderworkerset"
SHORT_NAMES: Final = ("lws",)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

# --- Labels and annotations ---------------------------------------------------------------

_PREFIX: Final = "leaderworkerset.sigs.k8s.io/"

# Labels.
SET_NAME_LABEL: Final = _PREFIX + "name"
GROUP_INDEX_LABEL: Final = _PREFIX + "group-index"
WORKER_INDEX_LABEL: Final = _PREFIX + "worker-index"
GROUP_UNIQUE_HASH_LABEL: Final = _PREFIX + "group-key"
REVISION_KEY: Final = _PREFIX + "template-revision-hash"
SUBGROUP_INDEX_LABEL: Final = _PREFIX + "subgroup-index"
SUBGROUP_UNIQUE_HASH_LABEL: Final = _PREFIX + "subgroup-key"

# Annotations.
SIZE_ANNOTATION: Final = _PREFIX + "size"
REPLICAS_ANNOTATION: Final = _PREFIX + "replicas"
LEADER_POD_NAME_ANNOTATION: Final = _PREFIX + "leader-name"
EXCLUSIVE_KEY_ANNOTATION: Final = _PREFIX + "exclusive-topology"
SUBGROUP_EXCLUSIVE_KEY_ANNOTATION: Final = _PREFIX + "subgroup-exclusive-topology"
SUBGROUP_SIZE_ANNOTATION: Final = _PREFIX + "subgroup-size"
SUBGROUP_POLICY_TYPE_ANNOTATION: Final = _PREFIX + "subgroup-policy-type"
SUBDOMAIN_POLICY_ANNOTATION: Final = _PREFIX + "subdomainPolicy"
LEADER_REQUESTS_TPUS_ANNOTATION: Final = _PREFIX + "leader-requests-tpus"
RECREATE_GROUP_AFTER_START_ANNOTATION: Final = _PREFIX + "experimental-recreate-group-after-start"
# Upstream KEP-820 (provisional): each group's restart count. Here on the LWS's history
# ConfigMap, as a JSON object {"<group index>": count} (docs/compatibility.md F3).
GROUP_RESTART_COUNT_ANNOTATION: Final = _PREFIX + "group-restart-count"
# Ours: a request to recreate groups now, "<index>[,<index>...][@<token>]" (kubectl lws recreate).
RECREATE_GROUPS_ANNOTATION: Final = "lws-operator.x-k8s.io/recreate-groups"
# Seconds a failed group's pods are given to stop (plan/lws/restart.failed_group_grace).
FAILED_GROUP_GRACE_ANNOTATION: Final = "lws-operator.x-k8s.io/failed-group-grace-seconds"

# Set on every LWS pod when a gang-scheduling provider is configured (Volcano).
POD_GROUP_NAME_ANNOTATION: Final = "scheduling.k8s.io/group-name"
VOLCANO_QUEUE_ANNOTATION: Final = "scheduling.volcano.sh/queue-name"

# --- Environment variables injected into every container of an LWS pod --------------------

LWS_LEADER_ADDRESS: Final = "LWS_LEADER_ADDRESS"
LWS_GROUP_SIZE: Final = "LWS_GROUP_SIZE"
LWS_WORKER_INDEX: Final = "LWS_WORKER_INDEX"
# Not injected by upstream v0.10.0; this project adds it (design: seed document).
LWS_GROUP_INDEX: Final = "LWS_GROUP_INDEX"

# TPU variables, injected into TPU-requesting containers.
TPU_RESOURCE_NAME: Final = "google.com/tpu"
TPU_WORKER_HOSTNAMES: Final = "TPU_WORKER_HOSTNAMES"
TPU_WORKER_ID: Final = "TPU_WORKER_ID"
TPU_NAME: Final = "TPU_NAME"
TPU_PROCESS_ADDRESSES: Final = "TPU_PROCESS_ADDRESSES"
TPU_PROCESS_PORT: Final = "TPU_PROCESS_PORT"
TPU_DEFAULT_PROCESS_PORT: Final = 8476

# --- Status condition types ---------------------------------------------------------------

CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
CONDITION_UPDATE_IN_PROGRESS: Final = "UpdateInProgress"
# Upstream KEP-820: a group exceeded spec.leaderWorkerTemplate.maxGroupRestarts.
CONDITION_FAILED: Final = "Failed"
REASON_MAX_GROUP_RESTARTS_EXCEEDED: Final = "MaxGroupRestartsExceeded"

# --- Limits -------------------------------------------------------------------------------

MAX_REPLICAS: Final = 1_000_000
MAX_INT32: Final = 2**31 - 1
# Kubernetes label values and DNS labels are at most 63 characters.
DNS_LABEL_MAX: Final = 63
# The StatefulSet controller's revision hash (label controller-revision-hash=<sts>-<hash>) is at
# most 10 characters: a uint32 printed in decimal, then re-encoded one character per digit.
STS_REVISION_HASH_MAX: Final = 10

# The field manager of the operator's server-side applies: upstream's, so that taking over its
# objects changes no ownership.
FIELD_MANAGER: Final = "lws"

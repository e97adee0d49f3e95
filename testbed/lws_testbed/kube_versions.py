"""What differs between the Kubernetes versions the local cluster runs (``make ...
KUBE_VERSION=1.33.13``): the feature gates and API versions of the native gang-scheduling API,
and the controllers kube-controller-manager knows. Pure: ``local.py`` reads every
version-specific setting from here, nowhere else checks a version.

Each fact names the Kubernetes source it was read from, in the Go module cache
(``$(go env GOMODCACHE)/k8s.io/kubernetes@v1.xx.y/<path>``).

Native gang scheduling (Workload and PodGroup in ``scheduling.k8s.io``):

* 1.31, 1.33: no such API; no ``GenericWorkload``/``GangScheduling`` gate
  (``k8s.io/kubernetes@v1.31.0 pkg/features/kube_features.go`` and
  ``@v1.33.13``: neither name is defined). A component given a gate it does not know refuses
  to start, so none is passed.
* 1.36: ``scheduling.k8s.io/v1alpha2`` (``k8s.io/kubernetes@v1.36.5
  pkg/registry/scheduling/rest/storage_scheduling.go``: ``v1alpha2Storage``, workloads and
  podgroups only when ``GenericWorkload`` is on); ``GenericWorkload`` and ``GangScheduling`` are
  alpha, off by default (``pkg/features/kube_features.go``), and the scheduler adds its
  GangScheduling plugin only with the ``GangScheduling`` gate
  (``pkg/scheduler/apis/config/v1/default_plugins.go``). Alpha API versions are off unless
  ``--runtime-config`` turns them on (``pkg/controlplane/instance.go``,
  ``alphaAPIGroupVersionsDisabledByDefault``).
* 1.37: ``scheduling.k8s.io/v1beta1`` (and ``v1alpha3``, which adds CompositePodGroups behind
  the alpha ``CompositePodGroup`` gate; not needed) (``k8s.io/kubernetes@v1.37.2
  pkg/registry/scheduling/rest/storage_scheduling.go``: ``v1beta1Storage``, workloads and
  podgroups only when ``GenericWorkload`` is on). ``GenericWorkload`` is beta but still off by
  default and ``GangScheduling`` is no longer a gate (``pkg/features/kube_features.go``); the
  scheduler adds its GangScheduling plugin whenever ``GenericWorkload`` is on
  (``pkg/scheduler/apis/config/v1/default_plugins.go``). ``v1beta1`` is in
  ``betaAPIGroupVersionsDisabledByDefault`` (``pkg/controlplane/instance.go``): it too needs
  ``--runtime-config``. kube-controller-manager and kube-scheduler watch PodGroups through
  ``v1beta1`` (``cmd/kube-controller-manager/app/scheduling.go``,
  ``pkg/scheduler/eventhandlers.go``).

The real node (``realnode``) runs the cluster's own kubelet and kube-proxy with the same
configuration on every version: every KubeletConfiguration field it sets exists from 1.31.0 to
1.37.2 (``pkg/kubelet/apis/config/types.go``), ``failCgroupV1`` included (default false in
1.31 and 1.33, true in 1.36 and 1.37: ``pkg/kubelet/apis/config/v1beta1/defaults.go``; the
node sets it false), and so does every KubeProxyConfiguration field
(``pkg/proxy/apis/config/types.go``). Debian 12's
containerd 1.6 lacks the CRI RuntimeConfig call; the 1.37 kubelet still falls back to its
configured cgroupDriver then, and only counts the runtime in ``kubelet_cri_losing_support``
("1.38.0"; ``k8s.io/kubernetes@v1.37.2 cmd/kubelet/app/server.go``, getCgroupDriverFromCRI). A
1.37.2 node with containerd 1.6.20 registered Ready and ran containers, so no version needs an
older kubelet.

``MaxUnavailableStatefulSet`` is left at each version's default (alpha off in 1.31 and 1.33,
beta off in 1.36, beta on in 1.37: ``pkg/features/kube_features.go``): the operator detects
it at run time.
"""

from __future__ import annotations

from dataclasses import dataclass

from lws_testbed import binaries

# What LWS needs (StatefulSets, garbage collection, namespaces, service accounts, endpoints),
# plus what tests of failures and gangs use (node lifecycle and taint eviction for lost nodes,
# pod GC, disruption budgets, PodGroup protection), the type checking of the LWS admission
# policy, the HPA (it drives DisaggregatedSet role scalers through their scale subresource),
# and what kubectl users expect. kube-controller-manager refuses a name it does not know
# (``--controllers``); every name is in ``cmd/kube-controller-manager/names/controller_names.go``
# of 1.31.0, 1.33.13, 1.36.5 and 1.37.2 except ``podgroup-protection-controller`` (1.36 and
# later: PODGROUP_CONTROLLERS).
KCM_CONTROLLERS: tuple[str, ...] = (
    "statefulset-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "endpointslice-mirroring-controller",
    "replicaset-controller",
    "deployment-controller",
    "job-controller",
    "pod-garbage-collector-controller",
    "disruption-controller",
    "horizontal-pod-autoscaler-controller",
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    # Storage: bind claims to pre-created PersistentVolumes (no provisioner runs), and
    # let claims and volumes be deleted once nothing uses them.
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "validatingadmissionpolicy-status-controller",
)
# Only where the gang API exists (``k8s.io/kubernetes@v1.36.5
# cmd/kube-controller-manager/names/controller_names.go``; absent from @v1.33.13 and
# @v1.31.0). It runs only with GenericWorkload on (``@v1.37.2
# cmd/kube-controller-manager/app/scheduling.go``: ``requiredFeatureGates``).
PODGROUP_CONTROLLERS: tuple[str, ...] = ("podgroup-protection-controller",)


class UnsupportedKubeVersion(binaries.BinariesError):
    """A Kubernetes version the project does not support (not in ``KUBE_VERSIONS``)."""


@dataclass(frozen=True)
class GangApi:
    """The native gang-scheduling API a version serves."""

    group_version: str  # e.g. "scheduling.k8s.io/v1alpha2"
    # For kube-apiserver, kube-controller-manager and kube-scheduler alike.
    feature_gates: tuple[str, ...]


# By minor. 1.31 and 1.33: none.
_GANG_APIS: dict[int, GangApi] = {
    36: GangApi("scheduling.k8s.io/v1alpha2", ("GenericWorkload", "GangScheduling")),
    37: GangApi("scheduling.k8s.io/v1beta1", ("GenericWorkload",)),
}
_KNOWN_MINORS = (31, 33, 36, 37)


@dataclass(frozen=True)
class KubeVersion:
    """The settings of the local cluster for one Kubernetes version."""

    version: str  # e.g. "1.36.5"
    gang_api: GangApi | None
    kcm_controllers: tuple[str, ...]

    @property
    def minor(self) -> int:
        return binaries.kube_minor(self.version)

    @property
    def feature_gates(self) -> str:
        """The ``--feature-gates`` value of kube-apiserver, kube-controller-manager and
        kube-scheduler ("" when none: then the flag is left out)."""
        gates = self.gang_api.feature_gates if self.gang_api else ()
        return ",".join(f"{g}=true" for g in gates)

    @property
    def runtime_config(self) -> str:
        """kube-apiserver's ``--runtime-config`` value ("" when none)."""
        return f"{self.gang_api.group_version}=true" if self.gang_api else ""

    def component_flags(self, *, apiserver: bool = False) -> list[str]:
        """The flags above, for a component's command line (none when empty)."""
        out = []
        if self.feature_gates:
            out.append(f"--feature-gates={self.feature_gates}")
        if apiserver and self.runtime_config:
            out.append(f"--runtime-config={self.runtime_config}")
        return out


def for_version(version: str, supported: tuple[str, ...] | None = None) -> KubeVersion:
    """The settings of ``version``; UnsupportedKubeVersion when it is not one of ``supported``
    (default: ``KUBE_VERSIONS`` of versions.env) or its minor is unknown here."""
    supported = binaries.supported_kube_versions() if supported is None else supported
    minor = _minor_or_none(version)
    if version not in supported or minor not in _KNOWN_MINORS:
        raise UnsupportedKubeVersion(
            f"Kubernetes {version} is not supported (KUBE_VERSION): pick one of "
            f"{', '.join(supported)}"
        )
    gang = _GANG_APIS.get(minor)
    controllers = KCM_CONTROLLERS + (PODGROUP_CONTROLLERS if gang else ())
    return KubeVersion(version=version, gang_api=gang, kcm_controllers=controllers)


def selected() -> KubeVersion:
    """The settings of the version ``$LWS_KUBE_VERSION`` selects (default: versions.env's
    ``KUBE_VERSION``); UnsupportedKubeVersion for one outside ``KUBE_VERSIONS``."""
    return for_version(binaries.pins()["KUBE_VERSION"])


def _minor_or_none(version: str) -> int | None:
    parts = version.split(".")
    if len(parts) != 3 or parts[0] != "1" or not all(p.isdigit() for p in parts):
        return None
    return int(parts[1])

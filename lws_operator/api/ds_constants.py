"""Every name of the DisaggregatedSet API that other tools can observe, in one place.

Values are those of upstream kubernetes-sigs/lws v0.10.0 (``api/disaggregatedset/v1/``,
``pkg/controllers/disaggregatedset/``): child LeaderWorkerSets, their Services and the role
scalers are found by these names and labels, so they must never change.
"""

from __future__ import annotations

from typing import Final

# --- The resources ------------------------------------------------------------------------

GROUP: Final = "disaggregatedset.x-k8s.io"
VERSION: Final = "v1"
API_VERSION: Final = f"{GROUP}/{VERSION}"

KIND: Final = "DisaggregatedSet"
LIST_KIND: Final = "DisaggregatedSetList"
PLURAL: Final = "disaggregatedsets"
SINGULAR: Final = "disaggregatedset"
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

SCALER_KIND: Final = "DisaggregatedSetRoleScaler"
SCALER_LIST_KIND: Final = "DisaggregatedSetRoleScalerList"
SCALER_PLURAL: Final = "disaggregatedsetrolescalers"
SCALER_SINGULAR: Final = "disaggregatedsetrolescaler"
SCALER_SHORT_NAMES: Final = ("dsrs",)
SCALER_CRD_NAME: Final = f"{SCALER_PLURAL}.{GROUP}"

# --- Labels and annotations on child LeaderWorkerSets, their pods and Services -------------

SET_NAME_LABEL: Final = f"{GROUP}/name"
ROLE_LABEL: Final = f"{GROUP}/role"
SLICE_LABEL: Final = f"{GROUP}/slice"
REVISION_LABEL: Final = f"{GROUP}/revision"
# The replicas an old revision's LeaderWorkerSet had when a rollout started (the baseline of
# the proportional drain).
INITIAL_REPLICAS_ANNOTATION: Final = f"{GROUP}/initial-replicas"
# Also set on the pod templates: `app=<ds>-<slice>-<role>`.
APP_LABEL: Final = "app"

# The private headless Service of a child LeaderWorkerSet is named <lws>-prv.
SERVICE_SUFFIX: Final = "-prv"

# --- Status -------------------------------------------------------------------------------

CONDITION_AVAILABLE: Final = "Available"
CONDITION_PROGRESSING: Final = "Progressing"
SCALER_CONDITION_READY: Final = "Ready"

# --- Limits -------------------------------------------------------------------------------

MIN_ROLES: Final = 2
MAX_ROLES: Final = 10
MAX_SLICES: Final = 100
# Object names (the scaler's <ds>-<role>) are DNS subdomains: at most 253 characters.
MAX_NAME: Final = 253

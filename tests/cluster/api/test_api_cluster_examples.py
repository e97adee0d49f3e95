"""Every manifest in examples/ is accepted by the API server and stored as offline
validation and the models expect."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lws_operator.api import LeaderWorkerSet, validate
from lws_operator.api import constants as c
from lws_operator.api import ds_constants as dc
from lws_operator.api.ds_models import DisaggregatedSet
from lws_operator.kube.client import Kube
from tests.cluster.conftest import FIELD_MANAGER, lws_path
from tests.cluster.disaggregated.helpers import ds_path

# Where each kind of example goes, and the model that reads it.
KINDS = {c.KIND: (lws_path, LeaderWorkerSet), dc.KIND: (ds_path, DisaggregatedSet)}

EXAMPLES = {
    path.name: [d for d in yaml.safe_load_all(path.read_text()) if d]
    for path in sorted((Path(__file__).parents[3] / "examples").glob("*.yaml"))
}


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 10


@pytest.mark.parametrize("example", EXAMPLES)
async def test_example_applies(kube: Kube, api_namespace: str, example: str) -> None:
    assert EXAMPLES[example], example
    for doc in EXAMPLES[example]:
        name = doc["metadata"]["name"]
        path, model = KINDS[doc["kind"]]
        stored = await kube.apply(path(api_namespace, name), doc, field_manager=FIELD_MANAGER)
        assert validate(stored) == []
        assert stored["spec"] == model.model_validate(stored).to_dict()["spec"]

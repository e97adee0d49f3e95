"""The DisaggregatedSet half of the plan: pure decisions about a set's child
LeaderWorkerSets, its revisions, rollout and status."""

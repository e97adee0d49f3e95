"""The LeaderWorkerSet half of the plan: pure decisions about groups, their pods,
StatefulSets, Services, rollouts, failures and status."""

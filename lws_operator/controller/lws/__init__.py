"""The LeaderWorkerSet controller: its cache, its reconcile and the eviction webhook's answers."""

"""The DisaggregatedSet controller: its cache and its reconcile."""

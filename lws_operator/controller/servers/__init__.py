"""The operator's HTTPS servers and their certificates: admission webhooks and metrics."""

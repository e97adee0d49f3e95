"""What every controller runs on: informers, the work queue, leader election and logging."""

"""What a run records: metrics, trackers, progress, throughput and the run's facts."""

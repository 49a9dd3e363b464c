"""Tidewater benchmark suite: side-by-side throughput, latency, batch, replay, serving and Flink."""

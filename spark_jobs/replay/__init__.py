"""Kappa replay: a new speed version rebuilt from the Kafka log, then switched to."""

"""Tidewater's definitions (the bottom layer): pipelines, contracts, naming, config, speed versions."""

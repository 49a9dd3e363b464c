"""Tidewater's definitions: what the data is (pipelines, contracts, config, catalog, CLI)."""

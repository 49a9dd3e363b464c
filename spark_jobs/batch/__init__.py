"""The batch layer: exact windows from bronze, staged, audited, published, reconciled."""

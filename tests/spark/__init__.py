"""The pure-transform tier: one plain local[1] Spark session for the package (conftest.py)."""

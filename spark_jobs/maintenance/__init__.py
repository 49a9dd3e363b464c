"""Housekeeping of the lakehouse (``tidewater maintenance``)."""

"""Tidewater's application layer: the ``tidewater`` CLI, its command groups and the demo.

Top of the three layers (``tidewater`` > jobs and services > ``lakehouse`` definitions); nothing
below imports it (``make lint`` enforces this with import-linter).
"""

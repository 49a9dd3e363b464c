"""The speed layer: one long-running streaming job per pipeline, its queries, sinks and control."""

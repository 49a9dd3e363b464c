"""Analyses of a pipeline's history that change nothing: ``whatif`` (the watermark delay, chosen from bronze)."""

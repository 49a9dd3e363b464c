"""This process's environment for the length of a block: what the processes it starts meanwhile inherit."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def exported(values: dict[str, str]) -> Iterator[dict[str, str]]:
    """``values`` in ``os.environ`` while the block runs; then each variable as it was (unset if it was)."""
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield values
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

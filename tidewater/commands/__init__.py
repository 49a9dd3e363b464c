"""CLI command groups; each module exposes ``register(subparsers)``."""

from __future__ import annotations

import argparse
from typing import TypeAlias

from lakehouse.config import TidewaterConfig, load_config
from lakehouse.pipeline import Pipeline, available_pipelines, load_pipeline

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``register`` receives: ``parser.add_subparsers()`` of the ``tidewater`` parser."""


def config_from(args: argparse.Namespace) -> TidewaterConfig:
    return load_config(getattr(args, "config", None))


def pipeline_from(args: argparse.Namespace, cfg: TidewaterConfig) -> Pipeline:
    return load_pipeline(args.pipeline, cfg.pipelines)


def add_pipeline_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pipeline", help=f"pipeline name ({', '.join(available_pipelines())})")


def progress(message: str) -> None:
    print(f"… {message}", flush=True)

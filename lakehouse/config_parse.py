"""Raw YAML and environment values -> Tidewater's typed config dataclasses (``lakehouse.config``).

``build(cls, raw)`` makes one dataclass from a mapping, field by field through ``coerce``, which
converts a value to its field's type or raises a :class:`ConfigError` naming the key and the form
expected; ``set_dotted`` places one environment override (``kafka.port``) into the raw mapping.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

from lakehouse.errors import ConfigError


def coerce(key: str, value: Any, typ: Any, default: Any) -> Any:
    """Convert one raw value to the field's type, or raise a ConfigError that names the key."""
    type_name = typ if isinstance(typ, str) else getattr(typ, "__name__", str(typ))
    if type_name == "int":
        expected = f"an integer, e.g. {default if isinstance(default, int) else 4}"
        if isinstance(value, bool):
            raise ConfigError(key, value, expected)
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ConfigError(key, value, expected) from None
    if type_name == "bool":
        if isinstance(value, bool) or str(value).lower() in ("true", "false", "1", "0"):
            return value if isinstance(value, bool) else str(value).lower() in ("true", "1")
        raise ConfigError(key, value, "true or false")
    if type_name == "str":
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConfigError(key, value, "a string")
        return str(value)
    if type_name == "Path":
        if not isinstance(value, (str, Path)) or not str(value):
            raise ConfigError(key, value, "a folder path, e.g. .tidewater")
        return Path(value)
    if is_dataclass(default):
        if not isinstance(value, dict):
            raise ConfigError(key, value, f"a mapping with keys {[f.name for f in fields(default)]}")
        return build(type(default), value, prefix=f"{key}.", base=default)
    if "dict" in type_name:
        if not isinstance(value, dict):
            raise ConfigError(key, value, "a mapping, e.g. {sensor_readings: {watermark: '5 minutes'}}")
        return value
    return value


def build(cls: type, raw: dict[str, Any], prefix: str = "", base: Any = None) -> Any:
    base = base if base is not None else cls()
    known = {f.name: f for f in fields(cls)}
    kwargs = {}
    for key, value in raw.items():
        if key not in known or key == "source":
            raise ConfigError(
                f"{prefix}{key}", value, f"one of the known keys: {', '.join(k for k in known if k != 'source')}"
            )
        kwargs[key] = coerce(f"{prefix}{key}", value, known[key].type, getattr(base, key))
    return cls(**{**{f.name: getattr(base, f.name) for f in fields(cls)}, **kwargs})


def set_dotted(raw: dict[str, Any], dotted: str, value: str) -> None:
    node = raw
    *parents, leaf = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {}) if isinstance(node.get(part, {}), dict) else {}
    node[leaf] = value

"""The node host's settings on the kit's side: where nodes run and what they are handed.

Each setting comes from its environment variable when that is set, else from the YAML file that
``NODEHOST_CONFIG`` names (checked against ``config.schema.json``), else its default. A bad value, from either
place, is a :class:`ConfigError` whose one line names the variable or the file and key: the backend raises it
from ``capabilities()``, so ``certify`` ends with a usage error (exit 2) before anything runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .process import DEFAULT_POOL_SIZE

CONFIG_ENV = "NODEHOST_CONFIG"
#: setting -> its environment variable (a comma-separated list for the list settings)
ENV = {
    "hosts": "NODEHOST_HOSTS",
    "device_ids": "NODEHOST_DEVICE_IDS",
    "device_ips": "NODEHOST_DEVICE_IPS",
    "pool": "NODEHOST_POOL",
    "device_memory": "NODEHOST_DEVICE_MEMORY",
}
SCHEMA: dict[str, Any] = json.loads(Path(__file__).with_name("config.schema.json").read_text(encoding="utf-8"))


class ConfigError(ValueError):
    """A setting that cannot be used (one line: where it came from and what is wrong)."""


@dataclass(frozen=True)
class Settings:
    hosts: tuple[str, ...] = ()
    device_ids: tuple[int, ...] = ()
    device_ips: tuple[str, ...] = ()
    pool: int = DEFAULT_POOL_SIZE
    device_memory: str = "auto"
    #: setting -> where its value came from ("$NODEHOST_POOL", "<file>", or "default")
    source: Mapping[str, str] = field(default_factory=dict)


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings whose variable is set, as the schema's types (a variable that is set but empty is unset)."""
    out: dict[str, Any] = {}
    for name, var in ENV.items():
        text = environ.get(var, "").strip()
        if not text:
            continue
        prop = SCHEMA["properties"][name]
        if prop.get("type") == "array":
            items = [x.strip() for x in text.split(",") if x.strip()]
            out[name] = [_int(var, x) for x in items] if prop["items"]["type"] == "integer" else items
        elif prop.get("type") == "integer":
            out[name] = _int(var, text)
        else:
            out[name] = text.lower() if name == "device_memory" else text
    return out


def _int(var: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"${var}: {text!r} is not an integer") from None


def _check(data: Any, where: str) -> None:
    errors = sorted(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        err = errors[0]
        key = ".".join(str(p) for p in err.path)
        raise ConfigError(f"{where}{': ' + key if key else ''}: {err.message}")


def _read_file(path: str) -> dict[str, Any]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"${CONFIG_ENV}={path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ConfigError(f"{path}: not YAML{at}: {getattr(exc, 'problem', exc)}") from None
    data = {} if data is None else data
    _check(data, path)
    return dict(data)


def _host(spec: str, where: str) -> str:
    from .hosts import HostSpecError, check_spec

    try:
        return check_spec(spec)
    except HostSpecError as exc:
        raise ConfigError(f"{where}: hosts: {exc}") from None


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings now (cached while the variables and the file stay the same)."""
    env = os.environ if environ is None else environ
    path = env.get(CONFIG_ENV, "").strip()
    stamp: int | None = None
    if path:
        try:
            stamp = os.stat(path).st_mtime_ns
        except OSError:
            stamp = None
    return _load(tuple((v, env.get(v, "")) for v in (CONFIG_ENV, *ENV.values())), stamp)


@lru_cache(maxsize=8)
def _load(env_items: tuple[tuple[str, str], ...], _stamp: int | None) -> Settings:
    env = dict(env_items)
    path = env.get(CONFIG_ENV, "").strip()
    from_file = _read_file(path) if path else {}
    from_env = _from_env(env)
    for name, value in from_env.items():
        _check({name: value}, f"${ENV[name]}")
    values = {**from_file, **from_env}
    source = {n: (f"${ENV[n]}" if n in from_env else path if n in from_file else "default") for n in ENV}
    hosts = tuple(_host(h, source["hosts"]) for h in values.get("hosts", ()))
    ids, ips = tuple(values.get("device_ids", ())), tuple(values.get("device_ips", ()))
    if ids and ips and len(ips) != len(ids):
        raise ConfigError(f"{source['device_ips']}: {len(ips)} device ips for {len(ids)} device ids "
                          f"({source['device_ids']})")
    return Settings(hosts=hosts, device_ids=ids, device_ips=ips,
                    pool=int(values.get("pool", DEFAULT_POOL_SIZE)),
                    device_memory=str(values.get("device_memory", "auto")), source=source)

"""YAML as the CLI prints and writes records: block style, with lists of plain values inline.

A trace-fitted workload holds a joint length histogram of several hundred ``[prompt bin,
output bin, count]`` cells; in block style each cell takes four lines and the profile
runs to thousands. Lists whose items are all scalars are written in flow style
(``[3, 7, 120]``) so a profile stays readable; YAML reads both forms the same.
"""

from __future__ import annotations

from typing import Any

import yaml


class _Dumper(yaml.SafeDumper):
    pass


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    flat = bool(data) and all(isinstance(x, str | int | float | bool) or x is None for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)


_Dumper.add_representer(list, _represent_list)


def dump_yaml(document: Any) -> str:
    """``document`` as YAML text (keys in their order, Unicode kept)."""
    return yaml.dump(document, Dumper=_Dumper, sort_keys=False, allow_unicode=True)

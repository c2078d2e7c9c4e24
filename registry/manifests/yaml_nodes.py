"""Composing manifest YAML: the registry's YAML rules but with aliases, as kubectl applies them
(their expansion bounded, a billion-laughs document refused before anything walks it), the
line of every field path, and the few fields read from a document before it is decoded.
"""

from __future__ import annotations

import yaml

from registry.manifests.located import join_path
from registry.records.documents import (
    PlainLoader,
)


class ManifestLoader(yaml.SafeLoader):
    """The registry's YAML rules for manifests, but with aliases, which kubectl applies.

    Timestamps stay strings, as in records. Aliases (``*name``) and merge keys
    (``<<: *name``) are composed as PyYAML composes them, one node shared by every use,
    and a document is refused (never expanded) when its aliases would add more than
    MAX_ALIAS_EXPANSION values, or refer to themselves.
    """


ManifestLoader.yaml_implicit_resolvers = PlainLoader.yaml_implicit_resolvers

# What aliases may add to one document, expanded: a billion-laughs document (a few
# lines that expand to 10^9 values) is refused before anything walks it. Ten times a
# large manifest, far below what exhausts memory.
MAX_ALIAS_EXPANSION = 100_000


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def alias_problem(root: yaml.Node) -> str | None:
    """Why the aliases of a document are refused, or None.

    Counts the values of the document expanded, each shared node once per use, without
    expanding it: sizes are summed over the node graph, each node's once.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, closing = stack.pop()
        key = id(node)
        if closing:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        open_nodes.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in open_nodes:
                return "an alias refers to the node that holds it (a recursive alias)"
            if id(child) not in sizes:
                stack.append((child, False))
    added = sizes[id(root)] - len(sizes)
    if added > MAX_ALIAS_EXPANSION:
        return (
            f"aliases expand this document by {added} values, more than the "
            f"{MAX_ALIAS_EXPANSION} allowed (the bound on alias expansion)"
        )
    return None


def node_lines(node: yaml.Node) -> tuple[dict[str, int], dict[str, int]]:
    """The 1-based line of every field path: a key's line for mapping values (where
    ``replicas: 9`` is written), the item's own line for list items; and where the
    text of each block scalar starts.

    A value given by an alias is located at its anchor, where it is written: an anchor
    precedes its aliases, so a value that starts before its key is an alias's."""
    lines = {"": node.start_mark.line + 1}
    text_lines: dict[str, int] = {}
    stack: list[tuple[str, yaml.Node]] = [("", node)]
    while stack:
        path, current = stack.pop()
        if isinstance(current, yaml.ScalarNode) and current.style in ("|", ">"):
            text_lines[path] = current.start_mark.line + 2
        elif isinstance(current, yaml.MappingNode):
            for key_node, value_node in current.value:
                child = join_path(path, str(key_node.value))
                mark = key_node.start_mark
                if value_node.start_mark.index < mark.index:
                    mark = value_node.start_mark
                lines[child] = mark.line + 1
                stack.append((child, value_node))
        elif isinstance(current, yaml.SequenceNode):
            for index, item in enumerate(current.value):
                child = join_path(path, index)
                lines[child] = item.start_mark.line + 1
                stack.append((child, item))
    return lines, text_lines


def yaml_problem(exc: yaml.YAMLError, default_line: int) -> tuple[int, str]:
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else default_line
    problem = getattr(exc, "problem", None) or str(exc)
    return line, f"not valid YAML: {problem}"


def scalar_field(node: yaml.Node, key: str) -> str:
    """A top-level scalar of a composed document (kind, apiVersion), constructed or not."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if (
                isinstance(key_node, yaml.ScalarNode)
                and key_node.value == key
                and isinstance(value_node, yaml.ScalarNode)
            ):
                return str(value_node.value)
    return ""


def metadata_name(node: yaml.Node) -> str:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == "metadata":
                return scalar_field(value_node, "name")
    return ""


def list_items(node: yaml.Node) -> list[yaml.Node] | None:
    """The item nodes of a ``kind: List`` (what ``kubectl get -o yaml`` writes), each
    read as a manifest of its own; None for any other document."""
    if scalar_field(node, "kind") != "List" or not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == "items":
            return list(value_node.value) if isinstance(value_node, yaml.SequenceNode) else []
    return []

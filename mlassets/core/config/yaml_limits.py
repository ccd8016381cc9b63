"""YAML for configs, with limits: a safe load (``yaml.SafeLoader``: plain data only) of a bounded size, whose
aliases cannot expand past a bound (a "billion laughs" document is refused in milliseconds, before anything is
built from it) and whose mappings may not repeat a key (named with both lines).

Why bounds here: composing YAML is linear in its size, but aliases share nodes, so a few hundred bytes can stand
for billions of values, which everything that walks the parsed config (type checks, hashing) would then expand.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from mlassets.core.config.typed import ConfigError

MAX_BYTES = 1 << 20  # a config is a few kilobytes; a megabyte leaves room for long partition lists
MAX_VALUES = 100_000  # scalars and collections after every alias is expanded
_MERGE = "tag:yaml.org,2002:merge"


class _Loader(yaml.SafeLoader):
    """SafeLoader that remembers where each alias was used (name, line) to name it in an error."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases: list[tuple[str, int, Node]] = []

    def compose_node(self, parent: Node | None, index: object) -> Node:
        if self.check_event(AliasEvent):
            event = self.peek_event()
            if event.anchor in self.anchors:
                self.aliases.append((event.anchor, event.start_mark.line + 1, self.anchors[event.anchor]))
        return super().compose_node(parent, index)


def check_size(size: int, where: str) -> None:
    if size > MAX_BYTES:
        raise ConfigError(f"{where}: {size} bytes is more than a config may hold ({MAX_BYTES} bytes); is it the "
                          "right file?")


def load_yaml(text: str, where: str) -> Any:
    """``text`` parsed like ``yaml.safe_load``, within the limits above (``ConfigError`` naming ``where``)."""
    check_size(len(text.encode()), where)
    loader = _Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise ConfigError(f"{where}: nested too deeply to be a config") from None
        if node is None:
            return None
        _check(node, loader.aliases, where)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
    finally:
        loader.dispose()


def _children(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return list(node.value)
    if isinstance(node, MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _sizes(root: Node, where: str) -> dict[int, int]:
    """Each node's size with every alias expanded (by ``id``), iteratively; a node inside itself is refused."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = min(1 + sum(sizes[id(c)] for c in _children(node)), MAX_VALUES + 1)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise ConfigError(f"{where}: line {node.start_mark.line + 1}: an alias refers to a collection that "
                              "contains it (a recursive structure); a config is a tree")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)
    return sizes


def _check(root: Node, aliases: list[tuple[str, int, Node]], where: str) -> None:
    sizes = _sizes(root, where)
    if sizes[id(root)] > MAX_VALUES:
        over = [a for a in aliases if sizes.get(id(a[2]), 0) > MAX_VALUES]  # the first alias that alone is too big
        name, line, _ = (over or sorted(aliases, key=lambda a: -sizes.get(id(a[2]), 0)) or [("", 0, None)])[0]
        used = f" (line {line}: the alias *{name})" if name else ""
        raise ConfigError(f"{where}: expands to more than {MAX_VALUES} values through its aliases{used}; a config "
                          "never needs that many (a 'billion laughs' document?)")
    _duplicates(root, where)


def _duplicates(root: Node, where: str) -> None:
    """The first key given twice in one mapping, with its key path and both lines."""
    seen: set[int] = set()
    stack: list[tuple[Node, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, MappingNode):
            lines: dict[object, int] = {}
            for key, value in node.value:
                name = key.value if isinstance(key, ScalarNode) else None
                here = f"{path}.{name}" if path else str(name)
                if isinstance(key, ScalarNode) and key.tag != _MERGE:
                    line = key.start_mark.line + 1
                    if name in lines:
                        raise ConfigError(f"{where}: {here} is given twice (lines {lines[name]} and {line}); keep "
                                          "one")
                    lines[name] = line
                stack.append((value, here))
        elif isinstance(node, SequenceNode):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(node.value))

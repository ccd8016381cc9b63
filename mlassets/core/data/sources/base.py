"""What every source provides (see ``mlassets.core.data.sources`` for the contract), and deterministic sampling."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pandas as pd



class Source(Protocol):
    main_table: str

    def load(self, key: str) -> dict[str, pd.DataFrame]: ...

    def build_frame(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame: ...


class ModuleSource:
    """A built-in source module: ``MAIN_TABLE``, ``load_month(key, sample_fraction)``, ``build_frame(tables)``."""

    def __init__(self, module: ModuleType, sample_fraction: float) -> None:
        self.module, self.sample_fraction = module, sample_fraction
        self.main_table: str = module.MAIN_TABLE

    def load(self, key: str) -> dict[str, pd.DataFrame]:
        return self.module.load_month(key, self.sample_fraction)

    def build_frame(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
        return self.module.build_frame(dict(tables))


def sample(frame: pd.DataFrame, fraction: float, key: str) -> pd.DataFrame:
    """A deterministic sample of a partition's rows (the same rows for the same key on any machine)."""
    if fraction >= 1.0:
        return frame
    return frame.sample(frac=fraction, random_state=zlib.crc32(key.encode())).sort_index().reset_index(drop=True)


def quoted(value: object, limit: int = 40) -> str:
    """An offending value as a message shows it: its repr, cut at ``limit`` characters (a message names the
    value a check needs, never a line of the file)."""
    text = str(value)
    return repr(value) if len(text) <= limit else f"{text[:limit]!r}… ({len(text)} characters)"

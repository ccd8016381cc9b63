"""Tables as Parquet bytes (one object per table and partition in the store), and Parquet files as delivered."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd



def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def from_parquet_bytes(blob: bytes, columns: list[str] | None = None) -> pd.DataFrame:
    import pandas as pd

    return pd.read_parquet(io.BytesIO(blob), columns=columns)


def read_parquet_file(path: str | Path) -> pd.DataFrame:
    """A delivered Parquet file as a frame; unreadable Parquet names the file."""
    import pandas as pd
    import pyarrow as pa

    try:
        return pd.read_parquet(path)
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not readable Parquet ({exc})") from None


def parquet_rows(blob: bytes) -> int:
    """Rows of a parquet object, from its footer alone."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(io.BytesIO(blob)).metadata.num_rows

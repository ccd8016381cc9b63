"""Bearer tokens for the endpoint: issued, rotated and revoked by name (``mlassets token``), shown once, stored hashed.

A token reads ``mla_<id>_<secret>``: the id finds its row, the secret (256 random bits) is checked against the row's
salted SHA-256 with ``hmac.compare_digest``. A fast hash is enough for a random secret of that length (a slow one
guards guessable passwords) and keeps a request's check cheap. Each token carries scopes: ``predict`` (score and
read) and ``admin`` (anything that changes what is served). The file (``$MLASSETS_TOKENS``, else
``$MLASSETS_HOME/tokens.json``) is written whole, mode 0600, and re-read when it changes, so a revoked token stops
working without a restart.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from mlassets.core import paths
from mlassets.core.config import ConfigError
from mlassets.core.config.job import check_name

TOKENS_ENV = "MLASSETS_TOKENS"
SCOPES = ("predict", "admin")
SHAPE = re.compile(r"^mla_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")


@dataclass(frozen=True)
class TokenRecord:
    name: str
    id: str
    scopes: tuple[str, ...]
    salt: str
    sha256: str
    issued: str


def tokens_path() -> Path:
    return Path(os.environ.get(TOKENS_ENV) or paths.home() / "tokens.json")


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(bytes.fromhex(salt) + secret.encode()).hexdigest()


class TokenStore:
    """The hashed tokens of one file; ``verify`` re-reads it when its modification time changes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or tokens_path()
        self._seen: tuple[int, int, int] | None = None
        self._records: dict[str, TokenRecord] = {}

    def records(self) -> dict[str, TokenRecord]:
        """Name -> record, read again if the file changed since the last read."""
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._seen, self._records = None, {}
            return {}
        if self._seen != (stat.st_ino, stat.st_mtime_ns, stat.st_size):  # each write is a new file
            try:
                rows = json.loads(self.path.read_text())["tokens"]
                records = {name: TokenRecord(**{**row, "scopes": tuple(row["scopes"])}) for name, row in rows.items()}
            except (ValueError, KeyError, TypeError) as exc:
                raise ConfigError(f"{self.path}: not a token file ({type(exc).__name__}); issue the tokens again "
                                  "with mlassets token issue") from None
            self._seen, self._records = (stat.st_ino, stat.st_mtime_ns, stat.st_size), records
        return self._records

    def _write(self, records: dict[str, TokenRecord]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump({"tokens": {n: asdict(r) for n, r in sorted(records.items())}}, out, indent=1)
        os.replace(tmp, self.path)
        self._seen = None

    def issue(self, name: str, scopes: list[str], replace: bool = False) -> str:
        """A new token for ``name`` (returned once, never stored); ``replace`` rotates an existing one."""
        check_name("token name", name)
        bad = [s for s in scopes if s not in SCOPES]
        if bad or not scopes:
            raise ConfigError(f"--scope: {(bad or [''])[0]!r} is not a scope ({', '.join(SCOPES)})")
        records = dict(self.records())
        if name in records and not replace:
            raise ConfigError(f"token {name!r} exists; rotate it (mlassets token rotate {name}) or revoke it")
        if name not in records and replace:
            raise ConfigError(f"token {name!r} does not exist (mlassets token list shows the tokens)")
        token_id, secret, salt = secrets.token_hex(6), secrets.token_urlsafe(32), secrets.token_hex(16)
        records[name] = TokenRecord(name, token_id, tuple(dict.fromkeys(scopes)), salt, _digest(salt, secret),
                                    datetime.now(UTC).isoformat(timespec="seconds"))
        self._write(records)
        return f"mla_{token_id}_{secret}"

    def rotate(self, name: str) -> str:
        """A new secret for ``name``, same scopes; the old token stops working."""
        record = self.records().get(name)
        if record is None:
            raise ConfigError(f"token {name!r} does not exist (mlassets token list shows the tokens)")
        return self.issue(name, list(record.scopes), replace=True)

    def revoke(self, name: str) -> None:
        records = dict(self.records())
        if records.pop(name, None) is None:
            raise ConfigError(f"token {name!r} does not exist (mlassets token list shows the tokens)")
        self._write(records)

    def verify(self, token: str) -> TokenRecord | None:
        """The record of a genuine ``token``; None for a forged, revoked or malformed one."""
        match = SHAPE.match(token)
        if match is None:
            return None
        token_id, secret = match.groups()
        for record in self.records().values():
            if hmac.compare_digest(record.id, token_id):
                return record if hmac.compare_digest(record.sha256, _digest(record.salt, secret)) else None
        return None

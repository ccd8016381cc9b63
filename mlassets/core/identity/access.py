"""``access.yaml``: who may do what. Platform ``admins`` may do everything (prune, tokens, any team's model); a
team's ``owners`` promote, roll back, start, decide and label online tests of, adopt versions of, and serve (whose
endpoint decides online tests by itself) the models whose dataset config names the team (``fleet.team``); its
``members`` (owners too) ingest its datasets, submit fleet jobs as the team, spend its budget and retrain its datasets
with ``--again``. Running what acts for every team (the Dagster daemon and UI, the fleet's scheduler) is an admin's.

The file switches the checks on. Without it every local user acts as today (one user, one home) and the promotion
log records ``$MLASSETS_USER`` or the login name; with it the principal is the operating-system user of the process
(its uid, not an environment variable a caller could set), and every refusal is one sentence naming the user, the
team and the action. Found at ``$MLASSETS_ACCESS``, else beside ``$MLASSETS_FLEET``, else in ``$MLASSETS_HOME``.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from mlassets.core import paths
from mlassets.core.config import ConfigError
from mlassets.core.config.job import check_name
from mlassets.core.config.yaml_limits import check_size, load_yaml

ACCESS_ENV = "MLASSETS_ACCESS"
FILE = "access.yaml"
ADMIN, OWNER, MEMBER = "admin", "owner", "member"
# action: the role it needs on the team concerned (ADMIN: a platform admin, whatever the team)
ACTIONS = {"ingest": MEMBER, "submit": MEMBER, "run": MEMBER, "retrain": MEMBER, "promote": OWNER, "rollback": OWNER,
           "online": OWNER, "adopt": OWNER, "serve": OWNER, "operate": ADMIN, "prune": ADMIN, "tokens": ADMIN}


class AccessDenied(ValueError):
    """The principal may not do this; nothing was changed."""


@dataclass(frozen=True)
class TeamAccess:
    owners: tuple[str, ...] = ()
    members: tuple[str, ...] = ()


@dataclass(frozen=True)
class Access:
    admins: tuple[str, ...] = ()
    teams: dict[str, TeamAccess] = field(default_factory=dict)

    def roles(self, user: str, team: str | None) -> set[str]:
        """The roles ``user`` holds on ``team`` (an owner is a member too; an admin is both everywhere)."""
        if user in self.admins:
            return {ADMIN, OWNER, MEMBER}
        spec = self.teams.get(team or "")
        if spec is None:
            return set()
        return ({OWNER, MEMBER} if user in spec.owners else set()) | ({MEMBER} if user in spec.members else set())


def _users(key: str, value: object) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() and v == v.strip() for v in value):
        raise ConfigError(f"{key}: must be a list of user names, got {value!r}")
    return tuple(value)


def parse_access(data: object) -> Access:
    """``Access`` from a parsed ``access.yaml``; every error names the key path and the value."""
    if not isinstance(data, dict):
        raise ConfigError(f"access: must be a mapping with admins and teams, got {data!r}")
    unknown = set(data) - {"admins", "teams"}
    if unknown:
        raise ConfigError(f"{sorted(unknown)[0]}: unknown key (admins, teams)")
    teams = data.get("teams") or {}
    if not isinstance(teams, dict):
        raise ConfigError(f"teams: must be a mapping of team name to owners and members, got {teams!r}")
    parsed = {}
    for name, spec in teams.items():
        check_name(f"teams.{name}", str(name))
        if not isinstance(spec, dict):
            raise ConfigError(f"teams.{name}: must be a mapping with owners and members, got {spec!r}")
        extra = set(spec) - {"owners", "members"}
        if extra:
            raise ConfigError(f"teams.{name}.{sorted(extra)[0]}: unknown key (owners, members)")
        parsed[str(name)] = TeamAccess(_users(f"teams.{name}.owners", spec.get("owners") or []),
                                       _users(f"teams.{name}.members", spec.get("members") or []))
    return Access(_users("admins", data.get("admins") or []), parsed)


def access_path() -> Path:
    if os.environ.get(ACCESS_ENV):
        return Path(os.environ[ACCESS_ENV])
    fleet = os.environ.get("MLASSETS_FLEET")  # core.fleet.config.FLEET_ENV
    return Path(fleet).parent / FILE if fleet else paths.home() / FILE


def load_access(path: Path | None = None) -> Access | None:
    """The access rules, or None when there is no file (checks off); an explicit ``$MLASSETS_ACCESS`` must exist."""
    path = path or access_path()
    if not path.is_file():
        if os.environ.get(ACCESS_ENV) and path == Path(os.environ[ACCESS_ENV]):
            raise ConfigError(f"{ACCESS_ENV}: access file {str(path)!r} does not exist")
        return None
    check_size(path.stat().st_size, str(path))
    try:
        return parse_access(load_yaml(path.read_text(), str(path)))
    except ConfigError as exc:
        raise ConfigError(f"{path.name}: {exc}") from None


def os_user() -> str:
    """The operating-system user of this process, from its uid (not from ``$USER``, which a caller sets)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def claimed_user() -> str:
    """Single-user mode's name for the log: ``$MLASSETS_USER``, else the login name."""
    import getpass

    if os.environ.get("MLASSETS_USER"):
        return os.environ["MLASSETS_USER"]
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def authorize(action: str, team: str | None | Callable[[], str | None], what: str = "", user: str | None = None,
              access: Access | None = None) -> str:
    """The principal allowed to do ``action`` on ``team``'s ``what`` (its name, for the log), or ``AccessDenied``.
    With no access file: the single-user name (nothing checked). ``team`` may be a function, called only when the
    file exists (finding a model's team reads every dataset config)."""
    access = access if access is not None else load_access()
    if access is None:
        return user or claimed_user()
    team = team() if callable(team) else team
    user = user or os_user()
    need = ACTIONS[action]
    if need in access.roles(user, team):
        return user
    target = f" {what}" if what else ""
    if need == ADMIN:
        raise AccessDenied(f"user {user!r} may not {action}{target}: only a platform admin (access.yaml admins) "
                           "may; nothing changed")
    if team is None:
        raise AccessDenied(f"user {user!r} may not {action}{target}: no dataset config names its team, so only a "
                           "platform admin may; nothing changed")
    role = "an owner" if need == OWNER else "a member"
    raise AccessDenied(f"user {user!r} may not {action}{target} of team {team!r}: that needs {role} of team "
                       f"{team!r} in access.yaml; nothing changed")


def owning_team(model: str) -> str | None:
    """The team of the dataset config whose ``model.registered_name`` is ``model`` (its ``fleet.team``); None when
    no config names the model."""
    from mlassets.core.config import config_paths, load_config

    for path in config_paths():
        cfg = load_config(path)
        if cfg.model.registered_name == model:
            return cfg.fleet_job.team
    return None


def model_principal(action: str, model: str) -> str:
    """The user allowed to ``action`` the registered ``model`` (a role on the team its dataset config names), or
    ``AccessDenied``."""
    return authorize(action, lambda: owning_team(model), f"model {model!r}")

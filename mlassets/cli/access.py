"""``mlassets token issue|rotate|revoke|list`` (the endpoint's bearer tokens; a platform admin's once access.yaml
exists) and ``mlassets whoami`` (the principal this shell acts as, its teams and roles)."""

from __future__ import annotations

import argparse
import sys


def cmd_token(args: argparse.Namespace) -> int:
    from mlassets.core.identity.access import authorize
    from mlassets.core.identity.tokens import TokenStore

    store = TokenStore()
    if args.verb == "list":
        for record in store.records().values():
            print(f"{record.name}\t{','.join(record.scopes)}\tissued {record.issued}\tid {record.id}")
        return 0
    who = authorize("tokens", None, f"{args.verb} token {args.name!r}")
    if args.verb == "revoke":
        store.revoke(args.name)
        print(f"token {args.name!r} revoked by {who}; it no longer opens {store.path}'s endpoints")
        return 0
    token = store.issue(args.name, args.scope or ["predict"]) if args.verb == "issue" else store.rotate(args.name)
    print(token)  # the only time it is shown: the file keeps its hash
    print(f"token {args.name!r} {args.verb}d by {who} ({', '.join(store.records()[args.name].scopes)}); shown once, "
          f"stored hashed in {store.path}", file=sys.stderr)
    return 0


def cmd_whoami(args: argparse.Namespace) -> int:
    from mlassets.core.identity.access import access_path, claimed_user, load_access, os_user

    access = load_access()
    if access is None:
        print(f"{claimed_user()} (no {access_path()}: single-user mode, nothing is checked)")
        return 0
    user = os_user()
    roles = [f"{team}: {', '.join(sorted(access.roles(user, team)))}" for team in access.teams
             if access.roles(user, team)]
    admin = " (platform admin)" if user in access.admins else ""
    print(f"{user}{admin}; " + ("; ".join(roles) if roles else f"no team in {access_path()}"))
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    token = sub.add_parser("token", help="the endpoint's bearer tokens: issue, rotate, revoke, list (docs/identity.md)")
    verbs = token.add_subparsers(dest="verb", required=True)
    issue = verbs.add_parser("issue", help="a new token, printed once")
    issue.add_argument("name")
    issue.add_argument("--scope", action="append", choices=["predict", "admin"],
                       help="predict (score, read) or admin (change what is served); repeatable; default predict")
    for verb, text in (("rotate", "a new secret for a token, printed once; the old one stops working"),
                       ("revoke", "delete a token; it stops working at once")):
        verbs.add_parser(verb, help=text).add_argument("name")
    verbs.add_parser("list", help="the tokens' names, scopes and issue times (never the tokens)")
    token.set_defaults(func=cmd_token)
    whoami = sub.add_parser("whoami", help="the principal this shell acts as, with its teams and roles")
    whoami.set_defaults(func=cmd_whoami)

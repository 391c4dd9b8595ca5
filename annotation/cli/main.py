"""The ``judge-audit`` command: argument parsing only; the work is done by the library.

    judge-audit import SOURCE --db DB [--format F] [--quiet] [--progress]
    judge-audit export --db DB --out DIR [--zip]
    judge-audit export --db DB --parquet DIR [--license L]
    judge-audit demo --db DB
    judge-audit serve [--db DB] [--port P] [--host H]
    judge-audit check --db DB [--json]
    judge-audit info --db DB [--json]
    judge-audit user add NAME --role annotator|adjudicator|admin [--email E] --db DB
    judge-audit user list --db DB [--json]
    judge-audit user disable|enable NAME --db DB
    judge-audit user role NAME --role annotator|adjudicator|admin --db DB
    judge-audit user passwd NAME --db DB
    judge-audit variants --db DB --level dense|medium|sparse --out DIR [--per-count N]

``user add`` and ``user passwd`` ask for the password twice on a terminal; otherwise they
read it from the first line of stdin (``echo "$PW" | judge-audit user passwd ann1 ...``).

Exit codes: 0 success, 1 refused input (nothing written), 2 usage error.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from annotation import project_files
from annotation.accounts import auth
from annotation.cli.progress import ImportProgress
from annotation.formats.importers import FORMATS, import_path
from annotation.records import ImportRefused
from annotation.results.export import TABLE_FORMATS
from annotation.store import SchemaTooNew, Store
from annotation.store.dataset import DEFAULT_LICENSE
from annotation.store.pg import database_exists, is_url, redacted


def _import_progress(args: argparse.Namespace) -> ImportProgress | None:
    """The import's progress on stderr (:mod:`annotation.cli.progress`): with
    ``--progress``, or on a terminal unless ``--quiet``; else nothing, so a script's
    output stays as it was."""
    if args.progress or (not args.quiet and sys.stderr.isatty()):
        return ImportProgress(sys.stderr)
    return None


def cmd_import(args: argparse.Namespace) -> int:
    with Store.open(args.db) as store:
        bar = _import_progress(args)
        try:
            options = {k: v for k, v in (("split", args.split), ("images", args.images)) if v}
            summary = import_path(store, Path(args.source), fmt=args.format, user=args.user,
                                  progress=bar.stage if bar else None,
                                  record_progress=bar.records if bar else None, **options)
        except ImportRefused as exc:
            if bar:
                bar.close()
            print(f"import refused, nothing was written to {args.db}:", file=sys.stderr)
            print(exc.report(), file=sys.stderr)
            if len(exc.problems) >= 20:
                print("(stopped after 20 errors)", file=sys.stderr)
            return 1
        if bar:
            bar.close()
    if not args.quiet:
        print(summary.text())
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """The project as a bundle (``--out``) and/or a Parquet dataset with its card
    (``--parquet``, :mod:`annotation.store.dataset`)."""
    if not (args.out or args.parquet) or (args.zip and not args.out):
        print("export: give --out DIR (a bundle; --zip: a .zip) or --parquet DIR (a "
              "dataset), or both", file=sys.stderr)
        return 2
    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    if args.out:
        _export_bundle(args)
    if args.parquet:
        from annotation.store.dataset import write_dataset

        with Store.open(args.db) as store:
            counts = write_dataset(store, Path(args.parquet), license=args.license)
        if not args.quiet:
            print(f"exported to {args.parquet}: "
                  + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


def _export_bundle(args: argparse.Namespace) -> None:
    out = Path(args.out)
    with Store.open(args.db) as store:
        project = store.read_project()
    from annotation.formats.bundle import write_bundle

    if args.zip:
        with tempfile.TemporaryDirectory() as tmp:
            counts = write_bundle(project, Path(tmp) / "bundle")
            archive = shutil.make_archive(str(out.with_suffix("")), "zip", Path(tmp) / "bundle")
            target = archive
    else:
        counts = write_bundle(project, out)
        target = str(out)
    if not args.quiet:
        print(f"exported to {target}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def cmd_demo(args: argparse.Namespace) -> int:
    summary = project_files.build_demo_db(args.db if is_url(args.db) else Path(args.db))
    if not args.quiet:
        print(summary)
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        info = {
            "database": redacted(store.url) if store.url else str(Path(args.db).resolve()),
            "schema_version": store.schema_version(),
            "project": store.project_info(),
            "counts": store.counts(),
            "imports": store.import_log().to_dict("records"),
        }
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False, default=str))
        return 0
    project = info["project"]
    print(f"{project.get('name', '(empty project)')} [{project.get('benchmark', '')}]")
    print(f"database {info['database']} (schema v{info['schema_version']})")
    for table, count in info["counts"].items():
        print(f"  {table:<20} {count:>10,}")
    print("imports:")
    for row in info["imports"]:
        counts = ", ".join(f"{k} {v}" for k, v in row["counts"].items() if v)
        print(f"  #{row['import_id']} {row['started_at'][:19]} {row['format']:<10} "
              f"{row['source']}  ({counts}; {len(row['warnings'])} warnings)")
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Check the database and its images; exit 1 with the problems and what to restore."""
    from annotation.store.check import check_project

    report = check_project(args.db)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print(report.text(), file=sys.stdout if report.ok else sys.stderr)
    return 0 if report.ok else 1


def cmd_report(args: argparse.Namespace) -> int:
    from annotation.results.report import TABLES, ReportOptions, build_report, write_report
    from annotation.results.study import load_study

    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    options = ReportOptions(n_boot=args.bootstrap, seed=args.seed,
                            by=tuple(args.by or ()) or None,
                            epsilon=args.epsilon, pair=tuple(args.pair or ()),
                            unanswered=args.unanswered)
    bar = None
    if not args.quiet and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(TABLES), desc="report", unit="table", file=sys.stderr,
                   leave=False)
    start = time.perf_counter()

    def progress(name: str, detail: str = "") -> None:
        """Which table (and judge) the report is on, to stderr: a bar on a terminal, else
        one line each with the seconds elapsed (stdout stays the list of files)."""
        text = f"{name} ({detail})" if detail else name
        if bar is not None:
            bar.set_postfix_str(text)
            if not detail and name in TABLES:
                bar.update(1)
        elif not args.quiet:
            print(f"report: {text} ... {time.perf_counter() - start:.1f} s", file=sys.stderr,
                  flush=True)

    progress("loading the study")
    with Store.open(args.db) as store:
        study = load_study(store)
        title = f"judge-audit report: {store.project_info().get('name', args.db)}"

    try:
        tables = build_report(study, options, progress=progress)
    except KeyError as exc:
        print(str(exc).strip("'\""), file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
            bar = None  # the rest as lines
    progress("writing the tables and report.html")
    written = write_report(tables, Path(args.out), title=title, study=study,
                           fmt=args.table_format)
    progress("done")
    if not args.quiet:
        for path in written:
            print(path)
    return 0


def _write_results(args: argparse.Namespace, writer: Callable[[Store, Path], list[Path]]
                   ) -> int:
    """Run ``writer(store, out_dir)`` on an existing project; print the files written."""
    if not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    with Store.open(args.db) as store:
        written = writer(store, Path(args.out))
    if not args.quiet:
        for path in written:
            print(path)
    return 0


def cmd_conflicts(args: argparse.Namespace) -> int:
    """Conflict-label verification results: verified_labels.jsonl and the CSVs."""
    from annotation.results.conflicts import write_conflict_report

    return _write_results(args, write_conflict_report)


def cmd_trees(args: argparse.Namespace) -> int:
    """Diagnostic-tree results (annotation.results.trees): CSVs and reviews.jsonl."""
    from annotation.results.trees import write_tree_report

    return _write_results(args, write_tree_report)


#: Largest upload (MB) the import page accepts; bigger bundles: a folder on the server or
#: ``judge-audit import`` (the zip itself may hold up to 4 GiB uncompressed).
MAX_UPLOAD_MB = 1024
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def serve_command(launcher: Path, host: str, port: int) -> list[str]:
    """The ``streamlit run`` command line of ``judge-audit serve`` (README, Security):
    bound to ``host``; no error details, tracebacks or data export in the browser; XSRF
    and CORS protection on; uploads up to :data:`MAX_UPLOAD_MB`; no static folder and no
    agent API, whatever a ``.streamlit/config.toml`` says; no source watching and no full
    garbage collection after each run (what stalled the server under load, issue #14)."""
    return [sys.executable, "-m", "streamlit", "run", str(launcher),
            "--server.address", host, "--server.port", str(port),
            "--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "minimal", "--client.showErrorDetails", "none",
            "--client.disableDataExport", "true",
            "--server.enableXsrfProtection", "true", "--server.enableCORS", "true",
            "--server.maxUploadSize", str(MAX_UPLOAD_MB),
            "--server.enableStaticServing", "false", "--server.enableAgentApi", "false",
            # no source watching on a served study: after every script run the watcher
            # walks every loaded module on the event loop (hundreds of ms with pandas and
            # scipy loaded), which stalled every request of every annotator under load
            "--server.fileWatcherType", "none", "--server.runOnSave", "false",
            # no full garbage collection after every script run: with pandas, scipy and
            # plotly loaded it held the GIL for a tenth of a second or more per run, over
            # half of the server's time with 20 annotators (Python's own GC still runs)
            "--runner.postScriptGC", "false"]


def cmd_serve(args: argparse.Namespace) -> int:
    db: str | Path = Path(args.db) if args.db else project_files.default_demo_db()
    if args.db and is_url(args.db):
        db = args.db  # PostgreSQL (README): served as given, by as many servers as wanted
    if not args.db:
        print(f"judge-audit: preparing the demo project at {db}", file=sys.stderr)
        project_files.ensure_demo_db(Path(db))
    project_files.app_path()  # a checkout: app.py and server.py beside the package
    env = dict(os.environ, JUDGE_AUDIT_DB=db if isinstance(db, str) else str(db.resolve()),
               JUDGE_AUDIT_DEMO="0" if args.db else "1")
    cmd = serve_command(project_files.server_path(), args.host, args.port)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"judge-audit: serving {redacted(db)} on http://{shown}:{args.port}", file=sys.stderr)
    if args.host not in LOOPBACK:
        print(f"judge-audit: listening on {args.host} over plain HTTP: put it behind a "
              "reverse proxy with TLS (README, Security)", file=sys.stderr)
    sys.stderr.flush()
    # become the Streamlit server (no child process): signals reach it directly
    os.execve(sys.executable, cmd, env)
    return 0  # not reached


def cli_actor() -> str:
    """Who runs a ``user`` command, for the audit log: ``cli:<OS user>``."""
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:  # no user name in the environment
        return "cli"


def _read_password() -> str:
    """The new password: asked twice on a terminal, else the first line of stdin."""
    if sys.stdin is not None and sys.stdin.isatty():
        first = getpass.getpass("password: ")
        if getpass.getpass("password (again): ") != first:
            raise auth.AccountError("the two passwords do not match")
        return first
    line = sys.stdin.readline() if sys.stdin is not None else ""
    if not line:
        raise auth.AccountError("no password: pipe it on stdin or run on a terminal")
    return line.removesuffix("\n").removesuffix("\r")


def cmd_user(args: argparse.Namespace) -> int:
    action = args.user_command
    if action != "add" and not database_exists(args.db):
        print(f"{args.db}: no such database", file=sys.stderr)
        return 1
    actor = cli_actor()
    try:
        if action == "add":
            auth.check_name(args.name)  # before creating a database for nothing
        with Store.open(args.db) as store:
            if action == "add":
                taken = {n.lower(): n for n in auth.list_users(store)["name"]}
                if args.name.lower() in taken:  # before asking for a password
                    raise auth.DuplicateUser(
                        f"a user named {taken[args.name.lower()]!r} already exists"
                    )
                user = auth.add_user(store, args.name, args.role, _read_password(),
                                     actor=actor, email=args.email)
                print(f"added {user.role} {user.name!r}")
            elif action == "list":
                df = auth.list_users(store)
                if args.json:
                    print(json.dumps(df.to_dict("records"), indent=2, ensure_ascii=False))
                elif df.empty:
                    print("no users")
                else:
                    df["status"] = df["disabled"].map({True: "disabled", False: "enabled"})
                    df["email"] = df["email"].fillna("")
                    cols = ["name", "role", "status", "email", "created_at"]
                    print(df[cols].to_string(index=False))
            elif action in ("disable", "enable"):
                change = auth.disable_user if action == "disable" else auth.enable_user
                changed = change(store, args.name, actor)
                print(f"{args.name!r} {action}d" if changed
                      else f"{args.name!r} was already {action}d")
            elif action == "role":
                changed = auth.set_role(store, args.name, args.role, actor)
                print(f"{args.name!r} is now {args.role}" if changed
                      else f"{args.name!r} was already {args.role}")
            elif action == "passwd":
                if args.name not in set(auth.list_users(store)["name"]):
                    raise auth.UnknownUser(f"no user named {args.name!r}")
                auth.set_password(store, args.name, _read_password(), actor)
                print(f"password of {args.name!r} changed")
    except auth.AccountError as exc:
        print(f"judge-audit user {action}: {exc}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="judge-audit",
        description="Audit the VLM judges of image-generation benchmarks against humans.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("import", help="import a bundle, a TIIF-Bench or a VIF-Bench folder")
    p.add_argument("source", help="bundle folder or .zip, TIIF-Bench root, VIF-Bench release")
    p.add_argument("--db", required=True, help="project database (created if missing)")
    p.add_argument("--format", choices=FORMATS, help="skip auto-detection")
    p.add_argument("--user", help="who runs the import (kept in the import log)")
    p.add_argument("--split", choices=("auto", "test", "testmini"),
                   help="TIIF-Bench: which prompts (auto: those the eval results use)")
    p.add_argument("--images", type=Path,
                   help="TIIF-Bench: folder of generated images (default: SOURCE/output)")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.add_argument("--progress", action="store_true",
                   help="show the progress on stderr even when it is not a terminal (and "
                   "with --quiet): records read per file and judgments written")
    p.set_defaults(func=cmd_import)

    p = sub.add_parser("export", help="write the project as a bundle (--out) or as Parquet "
                       "files with a dataset card (--parquet)")
    p.add_argument("--db", required=True)
    p.add_argument("--out", help="bundle folder to write (or .zip with --zip)")
    p.add_argument("--zip", action="store_true", help="write a .zip instead of a folder")
    p.add_argument("--parquet", metavar="DIR",
                   help="folder for the Parquet files (tasks, outputs, judge and human "
                        "answers with their history, ...) and their dataset card README.md")
    p.add_argument("--license", default=DEFAULT_LICENSE,
                   help="the license: field of the dataset card (default unknown: the "
                        "Hugging Face Hub's value when none is given)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("demo", help="build the demo project database")
    p.add_argument("--db", required=True)
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("report", help="judge-validation tables (CSV, Parquet) and report.html")
    p.add_argument("--db", required=True)
    p.add_argument("--out", required=True, help="folder for the CSV files and report.html")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="bootstrap resamples for the intervals (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="same seed, same numbers")
    p.add_argument("--by", action="append", metavar="KEY",
                   help="also per group: generator, task_id, meta.<path> (nested meta by dots), "
                        "task.n_references, task.n_visual_instructions, task.vi_type or "
                        "conflict.<orientation|light|wind|pose|any>; repeat for the "
                        "combinations of several keys")
    p.add_argument("--pair", action="append", metavar="checklist:CRITERION",
                   help="also pair each judge's checklist pass rate with the human ratings of "
                        "CRITERION (TIFA/DSG style); repeatable")
    p.add_argument("--epsilon", type=float, default=0.2,
                   help="alt-test margin (0.2 experts, 0.15 skilled, 0.1 crowd)")
    p.add_argument("--unanswered", choices=("omit", "fail"), default="omit",
                   help="checklist questions a judge never answered: left out and counted "
                        "(omit, the default) or failed, i.e. scored 0 (fail: the DSG "
                        "authors' convention, to reproduce their figures)")
    p.add_argument("--format", dest="table_format", choices=TABLE_FORMATS, default="csv",
                   help="write each table as CSV (the default), Parquet, or both")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_report)

    for name, func, text, jsonl in (
        ("conflicts", cmd_conflicts, "verified conflict labels (JSONL) and their agreement "
         "tables (CSV)", "verified_labels.jsonl"),
        ("trees", cmd_trees, "diagnostic-tree localization: Table 3, Figure 11, automatic vs "
         "human and human vs human agreement (CSV), reviews.jsonl", "reviews.jsonl"),
    ):
        p = sub.add_parser(name, help=text)
        p.add_argument("--db", required=True)
        p.add_argument("--out", required=True, help=f"folder for {jsonl} and the CSVs")
        p.add_argument("--quiet", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("serve", help="start the app (the demo project without --db)")
    p.add_argument("--db", help="project database (default: the demo project)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1, this machine only; "
                        "0.0.0.0 for every interface, behind a TLS reverse proxy)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("info", help="counts per table and the import log")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("check", help="check the database and every image it names; say what "
                                     "to restore")
    p.add_argument("--db", required=True)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("user", help="manage the accounts of the app")
    users = p.add_subparsers(dest="user_command", required=True)
    u = users.add_parser("add", help="create an account (password on a terminal or stdin)")
    u.add_argument("name", help="1-64 letters, digits, '.', '_', '-', '@'")
    u.add_argument("--role", required=True, choices=auth.ROLES)
    u.add_argument("--email", help="the e-mail an OIDC sign-in maps to this account")
    u.add_argument("--db", required=True, help="project database (created if missing)")
    u = users.add_parser("list", help="the accounts (never their password hashes)")
    u.add_argument("--db", required=True)
    u.add_argument("--json", action="store_true", help="machine-readable output")
    for name, text in (("disable", "stop an account from signing in"),
                       ("enable", "allow a disabled account again"),
                       ("passwd", "set a new password (on a terminal or stdin)")):
        u = users.add_parser(name, help=text)
        u.add_argument("name")
        u.add_argument("--db", required=True)
    u = users.add_parser("role", help="make an account annotator, adjudicator or admin")
    u.add_argument("name")
    u.add_argument("--role", required=True, choices=auth.ROLES)
    u.add_argument("--db", required=True)
    p.set_defaults(func=cmd_user)

    from annotation.cli import tree as tree_cli

    tree_cli.add_parser(sub)  # judge-audit tree FORMULA | --db DB --task T --out DIR

    from annotation.cli import recovery as recovery_cli

    recovery_cli.add_parsers(sub)  # judge-audit history | backup | restore

    from annotation.cli import sampling as sampling_cli

    sampling_cli.add_parsers(sub)  # judge-audit sample | validation-set --db DB

    from annotation.cli import variants as variants_cli

    variants_cli.add_parser(sub)  # judge-audit variants --db DB --level L --out DIR

    from annotation.cli import gold as gold_cli

    gold_cli.add_parser(sub)  # judge-audit gold import | list | reset --db DB

    from annotation.cli import adjudicate as adjudicate_cli

    adjudicate_cli.add_parser(sub)  # judge-audit adjudicate list | decide --db DB


    from annotation.cli import plan as plan_cli

    plan_cli.add_parser(sub)  # judge-audit plan [--db DB] --measure M --target-width W
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SchemaTooNew as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())

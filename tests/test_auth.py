"""Accounts (annotation/accounts/auth.py) and the ``judge-audit user`` commands."""

from __future__ import annotations

import base64
import io
import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from annotation.accounts import auth
from annotation.accounts.auth import (
    AccountError,
    DuplicateUser,
    UnknownUser,
    User,
    WeakPassword,
    add_user,
    authenticate,
    create_demo_accounts,
    disable_user,
    enable_user,
    hash_password,
    is_locked,
    list_users,
    session_valid,
    set_email,
    set_password,
    set_role,
    user_from_oidc,
    verify_password,
)
from annotation.cli import main
from annotation.project_files import demo_accounts
from annotation.store import Store

PW = "correct horse battery"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
#: the demo's accounts, as its builder wrote them into data/demo
DEMO_ACCOUNTS = demo_accounts()

#: the tests that use ``store`` run on SQLite and on PostgreSQL (tests/conftest.py)
STORE_ENGINES = ("sqlite", "postgresql")


def audit(store: Store, subject: str | None = None) -> list[dict]:
    """The audit log (of one subject) as dicts, in order, with ``detail`` parsed."""
    rows = store.conn.execute(
        "SELECT event_id, at, actor, action, subject, detail FROM audit_log ORDER BY event_id"
    ).fetchall()
    out = [
        dict(zip(("event_id", "at", "actor", "action", "subject", "detail"), r)) for r in rows
    ]
    for row in out:
        row["detail"] = json.loads(row["detail"])
    return [r for r in out if subject is None or r["subject"] == subject]


def stored_hash(store: Store, name: str) -> str:
    sql = "SELECT password_hash FROM users WHERE name = ?"
    return store.conn.execute(sql, [name]).fetchone()[0]


# ---------------------------------------------------------------- hashing
def test_hash_format_and_parameters():
    encoded = hash_password(PW)
    parts = encoded.split("$")
    assert len(parts) == 6
    assert parts[:4] == ["scrypt", str(2**14), "8", "1"]
    assert len(base64.b64decode(parts[4], validate=True)) == 16
    assert len(base64.b64decode(parts[5], validate=True)) == 32
    assert PW not in encoded


def test_salts_are_random():
    hashes = {hash_password(PW) for _ in range(3)}
    assert len(hashes) == 3
    assert len({h.split("$")[4] for h in hashes}) == 3
    assert all(verify_password(PW, h) for h in hashes)


def test_verify_right_and_wrong():
    encoded = hash_password(PW)
    assert verify_password(PW, encoded) is True
    assert verify_password(PW + " ", encoded) is False
    assert verify_password("", encoded) is False
    assert verify_password(PW.upper(), encoded) is False


def test_verify_rejects_malformed_or_tampered_hashes():
    encoded = hash_password(PW)
    parts = encoded.split("$")
    assert not verify_password(PW, None)
    assert not verify_password(PW, "")
    assert not verify_password(PW, "bcrypt$" + encoded.split("$", 1)[1])
    assert not verify_password(PW, "$".join(parts[:5]))
    assert not verify_password(PW, "$".join([*parts[:4], "!!notb64", parts[5]]))
    # other parameters give another key: the hash no longer matches
    assert not verify_password(PW, "$".join([parts[0], str(2**13), *parts[2:]]))
    # absurd parameters are refused before any work
    assert not verify_password(PW, "$".join([parts[0], str(2**30), *parts[2:]]))
    assert not verify_password(PW, "$".join([parts[0], "1000", *parts[2:]]))


def test_verify_compares_in_constant_time(monkeypatch):
    calls = []
    real = auth.hmac.compare_digest

    def spy(a, b):
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", spy)
    assert verify_password(PW, hash_password(PW))
    assert len(calls) == 1


# ---------------------------------------------------------------- accounts
def test_weak_passwords_are_refused(store):
    with pytest.raises(ValueError, match="at least 8 characters"):
        add_user(store, "bob", "annotator", "1234567")
    with pytest.raises(WeakPassword):
        add_user(store, "bob", "annotator", "")
    assert list_users(store).empty
    add_user(store, "bob", "annotator", PW)
    with pytest.raises(ValueError, match="at least 8 characters"):
        set_password(store, "bob", "short", "admin")
    assert authenticate(store, "bob", PW) is not None
    add_user(store, "demo", "annotator", "weak", allow_weak=True)
    assert authenticate(store, "demo", "weak") == User("demo", "annotator", None)


# the red team's admin passwords (issue #12, D) and their kin: long enough, easy to guess
GUESSABLE = ["aaaaaaaa", "12345678", "password", "password1", "qwertyuiop", "P@ssw0rd!",
             "iloveyou2", "admin1234", "judge-audit", "11111111111", "abcdefgh"]


@pytest.mark.parametrize("password", GUESSABLE)
def test_guessable_passwords_are_refused_for_an_admin(store, password):
    """Before issue #12 each of these was accepted: the policy was 8 characters."""
    with pytest.raises(WeakPassword, match="too easy to guess") as refused:
        add_user(store, "lead", "admin", password)
    assert password == "password" or password not in str(refused.value)  # never echoed
    assert list_users(store).empty
    add_user(store, "lead", "admin", PW)
    with pytest.raises(WeakPassword, match="too easy to guess"):
        set_password(store, "lead", password, "lead")
    assert authenticate(store, "lead", PW) is not None  # unchanged


def test_a_password_made_of_the_account_name_is_refused(store):
    for name, password, email in (("margarethe", "margarethe2024", None),
                                  ("ann7", "ann7@lab.org!", "ann7@lab.org"),
                                  ("quentin", "Quentin1234", None)):
        with pytest.raises(WeakPassword, match="too easy to guess"):
            add_user(store, name, "annotator", password, email=email)
    assert list_users(store).empty


@pytest.mark.parametrize("password", ["correct horse battery", "Vq7#tz!Mw2", "tulip-orbit-"
                                      "cactus-ninety", "Zx8!mq2#Lp"])
def test_strong_passwords_are_accepted(store, password):
    add_user(store, "lead", "admin", password)
    assert authenticate(store, "lead", password) == User("lead", "admin")


def test_the_policy_is_the_cli_s_too(engine_db, monkeypatch, capsys):
    db = engine_db
    for password in ("aaaaaaaa", "12345678", "password"):
        assert run_cli(monkeypatch, ["user", "add", "root", "--role", "admin", "--db", db],
                       password + "\n") == 1
        err = capsys.readouterr().err
        assert "too easy to guess" in err
        assert password == "password" or password not in err
    assert run_cli(monkeypatch, ["user", "add", "root", "--role", "admin", "--db", db],
                   "tulip orbit cactus\n") == 0
    assert run_cli(monkeypatch, ["user", "passwd", "root", "--db", db], "12345678\n") == 1
    assert "too easy to guess" in capsys.readouterr().err
    with Store.open(db) as store:
        assert authenticate(store, "root", "tulip orbit cactus") is not None
        assert [r["action"] for r in audit(store) if r["action"].startswith("user.")] == [
            "user.add"]


def test_the_demo_accounts_bypass_the_policy_explicitly(store):
    """The documented demo passwords are public; zxcvbn scores them 2 of 4: only the demo
    builder creates them (``allow_weak=True``), and nobody else can."""
    for _, _, password in DEMO_ACCOUNTS:
        if password in ("demo-admin", "demo-alice"):
            with pytest.raises(WeakPassword):
                auth.check_password_strength(password)
    create_demo_accounts(store, DEMO_ACCOUNTS)
    for name, role, password in DEMO_ACCOUNTS:
        assert authenticate(store, name, password) == User(name, role)


@pytest.mark.parametrize(
    "name", ["", "a b", "x" * 65, "é", "bob/", "bob;drop", " bob", "ann\n"]
)
def test_invalid_names(store, name):
    with pytest.raises(AccountError, match="invalid user name"):
        add_user(store, name, "annotator", PW)
    assert list_users(store).empty


def test_valid_names_and_roles(store):
    for name in ["a", "x" * 64, "first.last", "a_b-c", "me@lab.org", "ANN9"]:
        add_user(store, name, "annotator", PW)
    assert len(list_users(store)) == 6
    with pytest.raises(AccountError, match="invalid role"):
        add_user(store, "zed", "superuser", PW)
    with pytest.raises(AccountError, match="invalid role"):
        set_role(store, "a", "root", "admin")


def test_duplicates_are_refused(store):
    add_user(store, "bob", "annotator", PW, email="bob@lab.org")
    with pytest.raises(DuplicateUser, match="already exists"):
        add_user(store, "bob", "admin", PW)
    with pytest.raises(DuplicateUser, match="'bob' already exists"):
        add_user(store, "BOB", "admin", PW)
    with pytest.raises(DuplicateUser, match="e-mail"):
        add_user(store, "robert", "admin", PW, email="Bob@Lab.org")
    assert list(list_users(store)["name"]) == ["bob"]
    assert [r["action"] for r in audit(store)] == ["user.add"]


def test_unknown_users_are_refused(store):
    for change in (
        lambda: disable_user(store, "ghost", "admin"),
        lambda: enable_user(store, "ghost", "admin"),
        lambda: set_role(store, "ghost", "admin", "admin"),
        lambda: set_password(store, "ghost", PW, "admin"),
        lambda: set_email(store, "ghost", "g@x.org", "admin"),
    ):
        with pytest.raises(UnknownUser, match="no user named 'ghost'"):
            change()
    assert audit(store) == []


def test_list_users_never_shows_hashes(store):
    add_user(store, "bob", "admin", PW, email="bob@lab.org")
    add_user(store, "carol", "annotator", PW)
    disable_user(store, "carol", "bob")
    df = list_users(store)
    assert list(df.columns) == ["name", "role", "disabled", "created_at", "email"]
    assert df.set_index("name")["disabled"].to_dict() == {"bob": False, "carol": True}
    assert "scrypt$" not in df.to_csv()
    assert stored_hash(store, "bob").startswith("scrypt$")


def test_every_change_is_audited_without_secrets(store):
    add_user(store, "root", "admin", PW, actor="setup")
    add_user(store, "carol", "annotator", PW, actor="root", email="carol@lab.org")
    assert disable_user(store, "carol", "root") is True
    assert disable_user(store, "carol", "root") is False  # no change, no event
    assert enable_user(store, "carol", "root") is True
    assert set_role(store, "carol", "admin", "root") is True
    assert set_role(store, "carol", "admin", "root") is False
    set_password(store, "carol", "another secret", "root")
    assert set_email(store, "carol", "c@lab.org", "root") is True
    rows = audit(store, "carol")
    assert [r["action"] for r in rows] == [
        "user.add", "user.disable", "user.enable", "user.role", "user.password", "user.email",
    ]
    assert {r["actor"] for r in rows} == {"root"}
    assert rows[0]["detail"] == {"role": "annotator", "email": "carol@lab.org", "password": True}
    assert rows[3]["detail"] == {"from": "annotator", "to": "admin"}
    assert rows[4]["detail"] == {}
    stamps = [datetime.fromisoformat(r["at"]) for r in rows]
    assert stamps == sorted(stamps) and all(s.tzinfo is not None for s in stamps)
    everything = json.dumps(audit(store))
    for secret in (PW, "another secret", stored_hash(store, "carol"),
                   stored_hash(store, "carol").split("$")[4], "scrypt$"):
        assert secret not in everything


def test_a_failed_change_leaves_no_audit_row(store):
    add_user(store, "root", "admin", PW)
    with pytest.raises(DuplicateUser):
        add_user(store, "root", "annotator", PW, actor="x")
    with pytest.raises(AccountError, match="last enabled admin"):
        disable_user(store, "root", "root")
    with pytest.raises(AccountError, match="last enabled admin"):
        set_role(store, "root", "annotator", "root")
    assert [r["action"] for r in audit(store)] == ["user.add"]
    add_user(store, "second", "admin", PW)
    assert disable_user(store, "root", "second") is True


def test_the_audit_log_is_append_only(store):
    add_user(store, "bob", "admin", PW)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("UPDATE audit_log SET actor = 'someone else'")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        store.conn.execute("DELETE FROM audit_log")
    assert len(audit(store)) == 1


def test_no_clear_password_in_the_database_files(db_path):
    # SQLite only: it reads the bytes of the database file and its WAL
    passwords = ["Pa55word-in-clear", "wrong-guess-1234", "the-new-password"]
    store = Store.open(db_path)
    try:
        add_user(store, "carol", "annotator", passwords[0], email="carol@lab.org")
        assert authenticate(store, "carol", passwords[1]) is None  # typed, never stored
        assert authenticate(store, "carol", passwords[0]) is not None
        set_password(store, "carol", passwords[2], "admin")
        assert authenticate(store, "carol", passwords[2]) is not None
        files = [db_path, db_path.with_name(db_path.name + "-wal")]
        data = b"".join(p.read_bytes() for p in files if p.exists())
        assert b"carol@lab.org" in data  # the files read are the ones written
        for pw in passwords:
            for encoding in ("utf-8", "utf-16-le", "utf-16-be"):
                assert pw.encode(encoding) not in data
            assert base64.b64encode(pw.encode()) not in data
    finally:
        store.close()
    data = db_path.read_bytes()  # after the checkpoint of close()
    assert b"carol@lab.org" in data
    assert not any(pw.encode() in data for pw in passwords)


# ---------------------------------------------------------------- signing in
def test_authenticate(store):
    add_user(store, "carol", "annotator", PW, email="carol@lab.org")
    assert authenticate(store, "carol", PW) == User("carol", "annotator", "carol@lab.org")
    assert authenticate(store, " Carol ", PW) == User("carol", "annotator", "carol@lab.org")
    assert authenticate(store, "carol", PW[:-1]) is None
    assert authenticate(store, "nobody", PW) is None
    rows = audit(store)
    assert [(r["action"], r["subject"], r["detail"].get("reason")) for r in rows[1:]] == [
        ("login.ok", "carol", None),
        ("login.ok", "carol", None),
        ("login.fail", "carol", "bad_password"),
        ("login.fail", "nobody", "unknown_user"),
    ]
    assert PW not in json.dumps(rows) and PW[:-1] not in json.dumps(rows)


def test_unknown_users_cost_a_hash_verification(store, monkeypatch):
    calls = []
    real = auth.verify_password
    monkeypatch.setattr(auth, "verify_password", lambda pw, h: calls.append(h) or real(pw, h))
    assert authenticate(store, "nobody", PW) is None
    assert len(calls) == 1 and calls[0].startswith("scrypt$16384$8$1$")


def test_disabled_users_are_refused(store):
    add_user(store, "root", "admin", PW)
    add_user(store, "carol", "annotator", PW)
    disable_user(store, "carol", "root")
    assert authenticate(store, "carol", PW) is None
    assert audit(store, "carol")[-1]["detail"] == {"reason": "disabled"}
    assert auth.get_user(store, "carol") is None
    enable_user(store, "carol", "root")
    assert authenticate(store, "carol", PW) == User("carol", "annotator")
    assert auth.get_user(store, "carol") == User("carol", "annotator")


def test_five_failures_lock_even_the_right_password(store):
    add_user(store, "carol", "annotator", PW)
    add_user(store, "dave", "annotator", PW)
    for i in range(4):
        assert authenticate(store, "carol", f"guess-{i}", now=T0 + timedelta(seconds=i)) is None
    assert not is_locked(store, "carol", now=T0 + timedelta(seconds=4))
    assert authenticate(store, "carol", "guess-4", now=T0 + timedelta(seconds=4)) is None
    assert is_locked(store, "carol", now=T0 + timedelta(seconds=5))
    later = T0 + timedelta(minutes=2)
    assert authenticate(store, "carol", PW, now=later) is None
    assert authenticate(store, "CAROL", PW, now=later) is None  # no way around by case
    assert audit(store, "carol")[-1]["action"] == "login.locked"
    assert authenticate(store, "dave", PW, now=later) is not None  # per account
    # the lock holds until the failures leave the 5-minute window
    assert authenticate(store, "carol", PW, now=T0 + timedelta(minutes=4, seconds=59)) is None
    passed = T0 + timedelta(minutes=5, seconds=5)
    assert not is_locked(store, "carol", now=passed)
    assert authenticate(store, "carol", PW, now=passed) == User("carol", "annotator")
    actions = [r["action"] for r in audit(store, "carol")]
    assert actions.count("login.fail") == 5
    assert actions.count("login.locked") == 3
    assert actions[-1] == "login.ok"


def test_failures_before_a_success_do_not_count(store):
    add_user(store, "carol", "annotator", PW)
    for i in range(4):
        authenticate(store, "carol", "nope-nope", now=T0 + timedelta(seconds=i))
    assert authenticate(store, "carol", PW, now=T0 + timedelta(seconds=5)) is not None
    for i in range(4):
        authenticate(store, "carol", "nope-nope", now=T0 + timedelta(seconds=10 + i))
    assert authenticate(store, "carol", PW, now=T0 + timedelta(seconds=20)) is not None


def test_unknown_names_are_rate_limited_too(store):
    for i in range(5):
        authenticate(store, "ghost", "x", now=T0 + timedelta(seconds=i))
    assert is_locked(store, "ghost", now=T0 + timedelta(seconds=6))
    assert authenticate(store, "ghost", "x", now=T0 + timedelta(seconds=6)) is None
    assert audit(store, "ghost")[-1]["action"] == "login.locked"


def test_a_new_password_lifts_the_lock(store):
    add_user(store, "carol", "annotator", PW)
    for i in range(5):
        authenticate(store, "carol", "nope-nope", now=T0 + timedelta(seconds=i))
    assert is_locked(store, "carol", now=T0 + timedelta(seconds=10))
    set_password(store, "carol", "a fresh password", "admin")
    # set_password stamps the clock: check right after it
    assert not is_locked(store, "carol")
    assert authenticate(store, "carol", "a fresh password") is not None


# ---------------------------------------------------------------- sessions
@pytest.mark.parametrize(
    ("started", "seen", "now", "valid"),
    [
        ("2025-03-01T08:00:00+00:00", "2025-03-01T08:30:00+00:00", "2025-03-01T09:00:00+00:00",
         True),
        ("2025-03-01T08:00:00+00:00", "2025-03-01T08:00:00+00:00", "2025-03-01T09:00:00+00:00",
         True),  # exactly 60 idle minutes
        ("2025-03-01T08:00:00+00:00", "2025-03-01T08:00:00+00:00", "2025-03-01T09:00:01+00:00",
         False),  # idle too long
        ("2025-03-01T08:00:00+00:00", "2025-03-01T19:59:00+00:00", "2025-03-01T20:00:00+00:00",
         True),
        ("2025-03-01T08:00:00+00:00", "2025-03-01T20:00:30+00:00", "2025-03-01T20:00:31+00:00",
         False),  # older than 12 hours although active
        ("2025-03-01T08:00:00", "2025-03-01T08:10:00", "2025-03-01T09:20:00+01:00", True),
        ("2025-03-01T08:00:00", "2025-03-01T08:10:00", "2025-03-01T10:20:00+01:00", False),
        ("2025-03-01T08:00:00+00:00", "2025-03-01T08:10:00+00:00", "2025-03-01T07:00:00+00:00",
         False),  # started in the future
        ("2025-03-01T08:00:00+00:00", "2025-03-01T07:00:00+00:00", "2025-03-01T08:10:00+00:00",
         False),  # seen before started
        ("garbage", "2025-03-01T08:00:00+00:00", "2025-03-01T08:10:00+00:00", False),
    ],
)
def test_session_valid(started, seen, now, valid):
    assert session_valid(started, seen, datetime.fromisoformat(now)) is valid


def test_session_valid_limits_are_parameters():
    args = ("2025-03-01T08:00:00+00:00", "2025-03-01T08:00:00+00:00")
    now = datetime(2025, 3, 1, 8, 20, tzinfo=UTC)
    assert session_valid(*args, now)
    assert not session_valid(*args, now, idle_minutes=15)
    assert not session_valid(*args, now, max_hours=0.25)
    assert session_valid(*args, "2025-03-01T08:20:00+00:00")


# ---------------------------------------------------------------- demo accounts
def test_demo_accounts_are_idempotent(store):
    assert create_demo_accounts(store, DEMO_ACCOUNTS) == [name for name, _, _ in DEMO_ACCOUNTS]
    assert create_demo_accounts(store, DEMO_ACCOUNTS) == []
    df = list_users(store)
    assert sorted(df["name"]) == ["admin", "alice", "ann1", "ann2", "ann3"]
    assert df.set_index("name")["role"].to_dict()["admin"] == "admin"
    assert [r["action"] for r in audit(store)] == ["user.add"] * 5
    for name, role, password in DEMO_ACCOUNTS:
        assert authenticate(store, name, password) == User(name, role)
    assert ("alice", "annotator", "demo-alice") in DEMO_ACCOUNTS
    assert ("admin", "admin", "demo-admin") in DEMO_ACCOUNTS


def test_demo_accounts_keep_an_existing_account(store):
    add_user(store, "admin", "admin", "my own admin password")
    assert "admin" not in create_demo_accounts(store, DEMO_ACCOUNTS)
    assert authenticate(store, "admin", "demo-admin") is None
    assert authenticate(store, "admin", "my own admin password") is not None


@pytest.mark.slow
def test_the_demo_project_has_the_demo_accounts(engine_db):
    db = engine_db
    assert main(["demo", "--db", db, "--quiet"]) == 0
    assert main(["demo", "--db", db, "--quiet"]) == 0
    with Store.open(db) as store:
        annotators = {r[0] for r in store.conn.execute("SELECT name FROM annotators")}
        assert annotators == {"ann1", "ann2", "ann3"}
        assert len(list_users(store)) == 5
        assert authenticate(store, "ann1", "demo-ann1") == User("ann1", "annotator")
        assert authenticate(store, "admin", "demo-admin") == User("admin", "admin")
        assert not store.conn.execute(
            "SELECT 1 FROM annotations WHERE annotator = 'alice'"
        ).fetchone()


# ---------------------------------------------------------------- OIDC
class FakeSecrets(dict):
    """Stands in for ``st.secrets``."""

    def __init__(self, data: dict | None):
        super().__init__(data or {})
        self.present = data is not None

    def load_if_toml_exists(self) -> bool:
        return self.present


FULL_AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "a-long-random-string",
    "client_id": "judge-audit",
    "client_secret": "s3cret",
    "server_metadata_url": "https://accounts.example.org/.well-known/openid-configuration",
}


def test_oidc_configured_reads_the_auth_secrets(monkeypatch):
    import streamlit

    monkeypatch.setattr(streamlit, "secrets", FakeSecrets({"auth": FULL_AUTH}))
    assert auth.oidc_configured() is True
    for key in FULL_AUTH:
        partial = {k: v for k, v in FULL_AUTH.items() if k != key}
        monkeypatch.setattr(streamlit, "secrets", FakeSecrets({"auth": partial}))
        assert auth.oidc_configured() is False, key
    monkeypatch.setattr(streamlit, "secrets", FakeSecrets({"other": 1}))
    assert auth.oidc_configured() is False
    monkeypatch.setattr(streamlit, "secrets", FakeSecrets(None))
    assert auth.oidc_configured() is False


@pytest.mark.slow
def test_oidc_configured_with_a_real_secrets_file(tmp_path):
    """Streamlit's own secrets loader, in a process with its own working directory."""
    code = "from annotation.accounts.auth import oidc_configured; print(oidc_configured())"
    env = dict(os.environ, HOME=str(tmp_path / "home"))

    def run() -> str:
        result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout.strip()

    assert run() == "False"
    (tmp_path / ".streamlit").mkdir()
    lines = ["[auth]"] + [f'{k} = "{v}"' for k, v in FULL_AUTH.items()]
    (tmp_path / ".streamlit" / "secrets.toml").write_text("\n".join(lines) + "\n")
    assert run() == "True"


def test_user_from_oidc(store):
    add_user(store, "root", "admin", PW)
    add_user(store, "carol", "annotator", PW, email="Carol@Lab.org")
    add_user(store, "sso", "annotator", None, email="sso@lab.org")
    assert user_from_oidc(store, "carol@lab.org") == User("carol", "annotator", "Carol@Lab.org")
    assert user_from_oidc(store, "sso@lab.org") == User("sso", "annotator", "sso@lab.org")
    assert authenticate(store, "sso", "") is None  # no password: OIDC only
    assert user_from_oidc(store, "stranger@lab.org") is None
    assert user_from_oidc(store, "") is None
    disable_user(store, "carol", "root")
    assert user_from_oidc(store, "carol@lab.org") is None
    events = [(r["action"], r["subject"], r["detail"].get("reason")) for r in audit(store)
              if r["action"].startswith("login.")]
    assert events == [
        ("login.ok", "carol", None),
        ("login.ok", "sso", None),
        ("login.fail", "sso", "no_password"),
        ("login.fail", None, "no_account"),
        ("login.fail", "carol", "disabled"),
    ]
    with pytest.raises(AccountError, match="needs an e-mail"):
        add_user(store, "nobody", "annotator", None)


# ---------------------------------------------------------------- the CLI
def run_cli(monkeypatch, args: list[str], stdin: str = "") -> int:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    return main(args)


def test_cli_user_commands(engine_db, monkeypatch, capsys):
    db = engine_db
    assert run_cli(monkeypatch, ["user", "add", "root", "--role", "admin", "--db", db],
                   "root password 1\n") == 0
    assert "added admin 'root'" in capsys.readouterr().out
    assert run_cli(monkeypatch, ["user", "add", "carol", "--role", "annotator",
                                 "--email", "carol@lab.org", "--db", db],
                   " spaces kept \r\nsecond line ignored\n") == 0
    with Store.open(db) as store:
        assert authenticate(store, "root", "root password 1") == User("root", "admin")
        assert authenticate(store, "carol", " spaces kept ") is not None
        assert authenticate(store, "root", "root password 1\n") is None

    capsys.readouterr()
    assert run_cli(monkeypatch, ["user", "list", "--db", db, "--json"]) == 0
    out = capsys.readouterr().out
    users = json.loads(out)
    assert [u["name"] for u in users] == ["root", "carol"]
    assert set(users[0]) == {"name", "role", "disabled", "created_at", "email"}
    assert users[1]["email"] == "carol@lab.org" and users[1]["disabled"] is False
    assert "scrypt" not in out and "password" not in out

    assert run_cli(monkeypatch, ["user", "disable", "carol", "--db", db]) == 0
    assert run_cli(monkeypatch, ["user", "role", "carol", "--role", "admin", "--db", db]) == 0
    assert run_cli(monkeypatch, ["user", "list", "--db", db]) == 0
    table = capsys.readouterr().out
    assert "carol" in table and "disabled" in table and "scrypt" not in table
    assert run_cli(monkeypatch, ["user", "enable", "carol", "--db", db]) == 0
    assert run_cli(monkeypatch, ["user", "passwd", "carol", "--db", db], "brand new pw\n") == 0
    with Store.open(db) as store:
        assert authenticate(store, "carol", "brand new pw") == User("carol", "admin",
                                                                    "carol@lab.org")
        actions = [(r["action"], r["actor"]) for r in audit(store, "carol")]
    actor = actions[0][1]
    assert actor.startswith("cli")
    assert [a for a, _ in actions] == ["user.add", "login.ok", "user.disable", "user.role",
                                       "user.enable", "user.password", "login.ok"]


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["user", "add", "carol", "--role", "annotator"], "short\n", "at least 8 characters"),
        (["user", "add", "Root", "--role", "annotator"], "long enough pw\n",
         "'root' already exists"),
        (["user", "add", "bad name", "--role", "annotator"], "long enough pw\n",
         "invalid user name"),
        (["user", "add", "carol", "--role", "annotator"], "", "no password"),
        (["user", "disable", "ghost"], "", "no user named 'ghost'"),
        (["user", "enable", "ghost"], "", "no user named 'ghost'"),
        (["user", "role", "ghost", "--role", "admin"], "", "no user named 'ghost'"),
        (["user", "passwd", "ghost"], "long enough pw\n", "no user named 'ghost'"),
        (["user", "passwd", "root"], "short\n", "at least 8 characters"),
        (["user", "disable", "root"], "", "last enabled admin"),
    ],
)
def test_cli_user_errors(engine_db, monkeypatch, capsys, args, stdin, message):
    db = engine_db
    assert run_cli(monkeypatch, ["user", "add", "root", "--role", "admin", "--db", db],
                   "root password 1\n") == 0
    capsys.readouterr()
    assert run_cli(monkeypatch, [*args, "--db", db], stdin) == 1
    captured = capsys.readouterr()
    assert message in captured.err
    with Store.open(db) as store:
        assert list(list_users(store)["name"]) == ["root"]
        assert [r["action"] for r in audit(store)] == ["user.add"]
        assert authenticate(store, "root", "root password 1") is not None


def test_cli_refuses_a_missing_database(tmp_path, monkeypatch, capsys):
    # SQLite only: a missing file (a PostgreSQL database is never created by the CLI)
    db = tmp_path / "nope.db"
    assert run_cli(monkeypatch, ["user", "list", "--db", str(db)]) == 1
    assert "no such database" in capsys.readouterr().err
    assert not db.exists()


def test_cli_role_must_be_known(tmp_path, monkeypatch):
    with pytest.raises(SystemExit) as exc:
        run_cli(monkeypatch, ["user", "add", "x", "--role", "root", "--db",
                              str(tmp_path / "p.db")], "long enough pw\n")
    assert exc.value.code == 2


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_cli_asks_twice_on_a_terminal(engine_db, monkeypatch, capsys):
    db = engine_db
    answers = iter(["typed password", "typed passwrod", "typed password", "typed password"])
    monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
    monkeypatch.setattr(sys, "stdin", FakeTerminal("not this one\n"))
    assert main(["user", "add", "carol", "--role", "admin", "--db", db]) == 1
    assert "do not match" in capsys.readouterr().err
    with Store.open(db) as store:
        assert list_users(store).empty
    assert main(["user", "add", "carol", "--role", "admin", "--db", db]) == 0
    with Store.open(db) as store:
        assert authenticate(store, "carol", "typed password") is not None
        assert authenticate(store, "carol", "not this one") is None


@pytest.mark.slow
def test_cli_in_a_real_process(tmp_path):
    # SQLite only: it reads the bytes of the database files at the end
    db = tmp_path / "p.db"

    def judge_audit(*args: str, stdin: str = "") -> subprocess.CompletedProcess:
        return subprocess.run(["judge-audit", *args, "--db", str(db)], input=stdin,
                              capture_output=True, text=True, timeout=120)

    result = judge_audit("user", "add", "carol", "--role", "annotator",
                         "--email", "carol@lab.org", stdin="piped password\n")
    assert result.returncode == 0, result.stderr
    assert "added annotator 'carol'" in result.stdout
    result = judge_audit("user", "add", "carol", "--role", "admin", stdin="piped password\n")
    assert result.returncode == 1 and "already exists" in result.stderr
    result = judge_audit("user", "add", "dave", "--role", "admin", stdin="weak\n")
    assert result.returncode == 1 and "at least 8 characters" in result.stderr
    result = judge_audit("user", "list", "--json")
    assert result.returncode == 0
    assert [u["name"] for u in json.loads(result.stdout)] == ["carol"]
    assert "scrypt" not in result.stdout
    with Store.open(db) as store:
        assert authenticate(store, "carol", "piped password") == User(
            "carol", "annotator", "carol@lab.org"
        )
    data = b"".join(p.read_bytes() for p in Path(tmp_path).glob("p.db*"))
    assert b"piped password" not in data

"""No one where they don't belong: admin pages, other people's answers, judges' outputs,
passwords, sign-in attempts, sessions and the project files (issue #7, part 5).

Everything runs on real SQLite projects in tmp folders, the pages through AppTest.

A note on URLs: the project keeps its pages in ``pages/`` beside ``app.py``, so Streamlit
also serves every file there under its own URL (``/analytics``, ``/home``, ...), running
that file directly, without ``app.py`` and its menu. The menu is therefore not a barrier:
each page must refuse by itself (``annotation.ui.widgets.require``). The tests ask for every
admin page in each way a browser can: the file itself, a page switch inside the app, and
the page's URL.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import stat
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from annotation.accounts import auth
from annotation.accounts.auth import User
from annotation.cli import main
from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui.app_state import current_user
from annotation.ui.widget_keys import widget_key
from annotation.work import verification as vf
from annotation.work import workflow
from annotation.work.verification import VerifySession
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import ensure_account, make_image, write_jsonl
from tests.helpers.conflict_fixture import write_conflict_bundle
from tests.test_hostile_input import rendered_strings

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
ADMIN_ONLY = "This page is for admins only."
#: pages that adjudicators may open too (issue #16): refused to annotators with this
ADJUDICATION_PAGES = {"pages/adjudicate.py": "This page is for adjudicators and admins only."}


def admin_pages() -> list[str]:
    """Every page app.py offers to admins only (read from app.py, so none is forgotten)."""
    source = (ROOT / "app.py").read_text(encoding="utf-8")
    every = set(re.findall(r'st\.Page\("(pages/[a-z_]+\.py)"', source))
    shared = source.split("annotate = [", 1)[1].split("]", 1)[0]
    for_annotators = set(re.findall(r'"(pages/[a-z_]+\.py)"', shared)) | {"pages/login.py"}
    return sorted(every - for_annotators)


ADMIN_PAGES = admin_pages()


def test_the_admin_pages_are_all_found():
    assert {"pages/home.py", "pages/import_data.py", "pages/assignment.py",
            "pages/analytics.py", "pages/conflict_results.py"} <= set(ADMIN_PAGES)
    assert "pages/annotate.py" not in ADMIN_PAGES and "pages/login.py" not in ADMIN_PAGES


def text_of(at: AppTest) -> str:
    """Every string of every rendered element, escapes removed: what a person can read."""
    return "\n".join(text for _, _, text in rendered_strings(at)).replace("\\", "")


def elements(at: AppTest) -> list[str]:
    """The kinds of the leaf elements rendered (layout blocks left out)."""
    kinds: list[str] = []

    def walk(node) -> None:
        children = getattr(node, "children", None)
        if children:
            for child in (children.values() if isinstance(children, dict) else children):
                walk(child)
        elif type(node).__name__ not in ("Block", "SpecialBlock"):
            kinds.append(type(node).__name__)

    walk(at._tree)
    return kinds


# ------------------------------------------------------------------ a project with secrets
JUDGES = ("judge-omega-secret", "metric-sigma-secret")
GENERATORS = ("generator-zeta-secret", "generator-eta-secret")
JUDGE_RAW = "JUDGE-RAW-SECRET"
IMPORTED = "imported-annotator"
IMPORTED_NOTE = "IMPORTED-NOTE-SECRET"
OTHER = "ann-b"
OTHER_NOTE = "ANN-B-NOTE-SECRET"


def write_secret_bundle(root: Path) -> Path:
    """Two tasks, two generators, a judge with raw text, a metric and human answers."""
    root.mkdir(parents=True, exist_ok=True)
    header = {"name": "Access test", "benchmark": "VIF-Bench",
              "criteria": [{"name": "visual_quality", "label": "Visual Quality", "min": 1,
                            "max": 10, "step": 1, "rubric": "10: flawless. 1: unusable."}],
              "judges": [{"name": JUDGES[0], "kind": "vlm"},
                         {"name": JUDGES[1], "kind": "metric", "scale": [0, 1]}]}
    (root / "bundle.json").write_text(json.dumps(header), encoding="utf-8")
    colors = iter(["red", "blue", "green", "orange", "purple", "brown", "pink", "gray"])
    tasks, outputs, judgments, annotations = [], [], [], []
    for t in (1, 2):
        task_id = f"t{t}"
        make_image(root / f"images/{task_id}.png", color=next(colors))
        questions = [{"question_id": f"{task_id}.q{k}", "text": f"Question {k} of {task_id}?",
                      "pass_answer": "yes" if k % 2 else "no"} for k in (1, 2, 3)]
        tasks.append({"task_id": task_id, "instruction": f"Instruction of {task_id}.",
                      "images": [{"path": f"images/{task_id}.png", "role": "reference",
                                  "label": "the reference"}],
                      "questions": questions})
        for g, generator in enumerate(GENERATORS):
            output_id = f"{task_id}/{generator}"
            make_image(root / f"outputs/{task_id}-{g}.png", size=(96, 96), color=next(colors))
            outputs.append({"output_id": output_id, "task_id": task_id,
                            "generator": generator, "path": f"outputs/{task_id}-{g}.png"})
            for q in questions:
                judgments.append({"judge": JUDGES[0], "output_id": output_id,
                                  "question_id": q["question_id"], "answer": "yes",
                                  "raw": f"{JUDGE_RAW} {q['question_id']}: yes, clearly"})
                annotations.append({"annotator": IMPORTED, "output_id": output_id,
                                    "question_id": q["question_id"], "answer": "no",
                                    "note": IMPORTED_NOTE})
            judgments.append({"judge": JUDGES[0], "output_id": output_id,
                              "criterion": "visual_quality", "score": 8,
                              "raw": f"{JUDGE_RAW} visual quality: 8"})
            judgments.append({"judge": JUDGES[1], "output_id": output_id,
                              "criterion": "visual_quality", "score": 0.31})
    write_jsonl(root / "tasks.jsonl", tasks)
    write_jsonl(root / "outputs.jsonl", outputs)
    write_jsonl(root / "judgments.jsonl", judgments)
    write_jsonl(root / "annotations.jsonl", annotations)
    return root


@pytest.fixture
def project(tmp_path, monkeypatch, engine_db: str) -> str:
    """The secret project; ``ann-b`` has answered every output (with notes), not submitted.
    On SQLite and on PostgreSQL (``engine_db``)."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_secret_bundle(tmp_path / "bundle"))
        for output_id in store.outputs_df().output_id:
            item = workflow.load_item(store, output_id)
            for q in item.questions:
                workflow.give_answer(store, OTHER, output_id, question_id=q.question_id,
                                     answer="cant_tell", note=OTHER_NOTE)
            workflow.give_answer(store, OTHER, output_id, criterion="visual_quality",
                                 score=2, note=OTHER_NOTE)
    for name, role in (("boss", "admin"), ("ann-a", "annotator"), (OTHER, "annotator")):
        ensure_account(db, name, role)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    return db


def page_as(page: str, name: str, role: str) -> AppTest:
    return signed_in(page, name, role)


# ------------------------------------------------------------------ admin pages
def assert_refused(at: AppTest, page: str | None = None) -> None:
    assert not at.exception
    assert [e.value for e in at.error] == [ADJUDICATION_PAGES.get(page or "", ADMIN_ONLY)]
    assert elements(at) == ["Error"], elements(at)  # nothing else: no table, no figure
    assert not at.dataframe and not at.metric and not at.title


@pytest.mark.slow
@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_an_annotator_opening_an_admin_page_is_refused(project, page):
    at = page_as(page, "ann-a", "annotator").run()
    assert_refused(at, page)
    # the same page as an admin shows its content: the refusal above is the role's doing
    admin = page_as(page, "boss", "admin").run()
    assert ADMIN_ONLY not in [e.value for e in admin.error]
    assert len(elements(admin)) > 1


@pytest.mark.parametrize("page", [p for p in ADMIN_PAGES if p not in ADJUDICATION_PAGES])
def test_an_adjudicator_opening_an_admin_page_is_refused(project, page):
    at = page_as(page, "judy", "adjudicator").run()
    assert_refused(at)


@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_a_signed_out_visitor_opening_an_admin_page_sees_only_the_sign_in_request(project,
                                                                                 page):
    at = AppTest.from_file(str(ROOT / page), default_timeout=60).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Please sign in."]
    assert elements(at) == ["Error"]


@pytest.mark.slow
def test_the_app_offers_no_admin_page_to_an_annotator(project):
    at = page_as(APP, "ann-a", "annotator").run()
    assert not at.exception
    links = {(link.proto.page, link.proto.label) for link in at.sidebar.get("page_link")}
    admin = page_as(APP, "boss", "admin").run()
    admin_links = {(link.proto.page, link.proto.label)
                   for link in admin.sidebar.get("page_link")}
    # the admin's menu has one link per admin page more; none of them is the annotator's
    extra = {label for _, label in admin_links} - {label for _, label in links}
    assert links and len(extra) == len(ADMIN_PAGES), (links, admin_links)
    assert {url for url, _ in links}.isdisjoint({Path(p).stem for p in ADMIN_PAGES}), links
    for page in ADMIN_PAGES:  # not even registered for this session
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(page)


@pytest.mark.slow
@pytest.mark.parametrize("page", ADMIN_PAGES)
def test_an_annotator_asking_for_an_admin_url_is_refused(project, page):
    """What a browser sends for ``http://host/<page>``: the hash of the page's URL path."""
    at = page_as(APP, "ann-a", "annotator").run()
    assert not at.exception
    assert hasattr(at, "_page_hash")  # AppTest's request field (no public way to set a URL)
    at._page_hash = calc_hash(Path(page).stem)
    at.run()
    assert_refused(at, page)
    # the same request from an admin opens the page
    admin = page_as(APP, "boss", "admin").run()
    admin._page_hash = calc_hash(Path(page).stem)
    admin.run()
    assert ADMIN_ONLY not in [e.value for e in admin.error]


@pytest.mark.slow
def test_an_admin_demoted_mid_session_is_signed_out_at_the_next_click(project):
    at = page_as("pages/assignment.py", "boss", "admin")
    at.run()
    assert at.dataframe  # the admin sees the tables
    with Store.open(project) as store:
        auth.add_user(store, "boss2", "admin", "another admin pw", actor="test")
        auth.set_role(store, "boss", "annotator", actor="boss2")
    at.run()
    assert [e.value for e in at.error] == ["Please sign in."]
    assert "user" not in at.session_state and not at.dataframe


# ------------------------------------------------------------------ blind annotation
def secrets_of(db: str | Path) -> list[str]:
    """What an annotator must never read: judges, generators, raw texts, output ids, other
    people's names and notes, pass answers."""
    with Store.open(db) as store:
        judgments = store.judgments_df()
        outputs = store.outputs_df()
    raws = [r for r in judgments.raw.dropna()]
    assert len(raws) >= 8 and all(r.startswith(JUDGE_RAW) for r in raws)
    return [*JUDGES, *GENERATORS, *raws, JUDGE_RAW, *outputs.output_id, IMPORTED,
            IMPORTED_NOTE, OTHER, OTHER_NOTE, "pass_answer", "pass answer", "expected"]


def panel_text(at: AppTest) -> str:
    """The answer panel's JSON, what its JavaScript draws (empty without a panel). It is
    in :func:`text_of` too (the element's ``json``); this reads it on its own, decoded."""
    found = [e for e in at.get("bidi_component") if e.proto.component_name == panel.NAME]
    return "\n".join(json.dumps(json.loads(e.proto.json), ensure_ascii=False) for e in found)


def leaked(at: AppTest, secrets: list[str]) -> list[str]:
    text = text_of(at) + "\n" + panel_text(at)
    return [s for s in secrets if s in text]


def answer_everything(at: AppTest) -> None:
    """Every question "yes" and every rating 7, through the answer panel."""
    panel.complete(at, question="yes", score=7)
    assert not at.exception
    assert not panel.open_targets(panel.spec(at))


@pytest.mark.slow
def test_an_annotator_sees_no_other_answers_no_judge_and_no_generator(project):
    secrets = secrets_of(project)
    at = page_as("pages/annotate.py", "ann-a", "annotator")
    at.session_state["annotate"] = {"annotator": "ann-a", "guidelines_seen": True}
    at.run()
    assert not at.exception
    output = at.session_state["annotate"]["output_id"]
    with Store.open(project) as store:  # ann-b and the import answered this very item
        others = store.annotations_df()
        assert {OTHER, IMPORTED} <= set(others[others.output_id == output].annotator)
    assert leaked(at, secrets) == []
    assert [s for s in secrets if s in json.dumps(panel.spec(at))] == []  # the panel's JSON
    # nothing pre-filled from anyone else's answers: no stored value, no row to build on
    targets = panel.spec(at)["targets"]
    questions = [t for t in targets if t["kind"] == "q"]
    ratings = [t for t in targets if t["kind"] == "c"]
    assert len(questions) == 3 and [t["text"] for t in ratings] == ["Visual Quality"]
    assert all(t["value"] is None and t["row"] is None for t in targets), targets
    assert not [c.value for c in at.caption if c.value.startswith(("Your answer", "Your score"))]
    answer_everything(at)
    assert leaked(at, secrets) == []
    assert [s for s in secrets if s in json.dumps(panel.spec(at))] == []
    # the page does show answers, when they are the annotator's own
    targets = panel.spec(at)["targets"]
    assert [t["value"] for t in targets if t["kind"] == "q"] == ["yes"] * len(questions)
    assert [t["value"] for t in targets if t["kind"] == "c"] == [7.0]
    assert all(isinstance(t["row"], int) for t in targets)
    panel.command(at, "submit")
    assert not at.exception
    assert at.session_state["annotate"]["output_id"] not in (None, output)
    assert leaked(at, secrets) == []
    assert [s for s in secrets if s in json.dumps(panel.spec(at))] == []


def test_the_whole_app_of_an_annotator_shows_no_secret(project):
    secrets = secrets_of(project)
    at = page_as(APP, "ann-a", "annotator")
    at.session_state["annotate"] = {"annotator": "ann-a", "guidelines_seen": True}
    at.run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Task ")  # the annotate page, sidebar included
    assert "Signed in as **ann-a**" in text_of(at).replace("\\", "")
    assert leaked(at, secrets) == []


# ------------------------------------------------------------------ blind verification
@pytest.fixture
def verify_db(tmp_path, monkeypatch, engine_db: str) -> str:
    """The conflict project, ``ver-b``'s noted verdicts given; on SQLite and PostgreSQL."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_conflict_bundle(tmp_path / "bundle"))
        # ver-b reads differently from the pre-labels and gives noted verdicts everywhere
        session = VerifySession(store, "ver-b", {})
        while session.task_id is not None:
            session.confirm_readings({(i, a): (-170 if a == "yaw" else True)
                                      for i, a in session.item.needed()})
            for check in session.item.checks:
                session.set_verdict(check.conflict, agree=False, note="VER-B-NOTE-SECRET")
            session.submit()
    for name in ("ver-a", "ver-b"):
        ensure_account(db, name)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    return db


def test_blind_verification_hides_the_automatic_decision_and_other_verifiers(verify_db):
    with Store.open(verify_db) as store:
        assert vf.get_settings(store).blind  # blind is the default
    at = page_as("pages/conflicts.py", "ver-a", "annotator").run()
    assert not at.exception
    task = at.session_state["verify"]["task_id"]
    with Store.open(verify_db) as store:
        item = vf.load_verify_item(store, task)
    rules = sorted({c.rule.rule for c in item.checks})
    assert rules and all(len(r) > 10 for r in rules)
    hidden = [*rules, "Automatic label", "Rule on the pre-labels", "Rule on your reading",
              "published label", "Agree", "Disagree", "Verified label"]
    others = ["ver-b", "VER-B-NOTE-SECRET", "-170"]
    text = text_of(at)
    assert [h for h in hidden + others if h in text] == []
    # the answer panel offers only the confirmation: no verdict, no automatic label yet
    data = panel.spec(at)
    assert data["targets"] == [] and data["enter"] == "confirm"
    assert [h for h in hidden + others if h in json.dumps(data)] == []
    # every reading field starts at the pre-label, not at ver-b's reading
    with Store.open(verify_db) as store:
        theirs = vf.my_readings(store, "ver-b", task)
    differs = 0
    for ref in item.references:
        for attr in ref.attributes:
            key = widget_key("r", task, ref.index, attr, state=at.session_state)
            pre = ref.prelabel.get(attr)
            if attr == "yaw":
                assert at.slider(key=key).value == int(round(pre))
            else:
                assert at.checkbox(key=key).value is bool(pre)
            differs += theirs[(ref.index, attr)] != pre
    assert differs  # ver-b's readings would show if leaked
    panel.command(at, "confirm")  # Confirm my reading (Enter)
    assert not at.exception
    text = text_of(at)
    # now the decision shows (so it was hidden, not absent), still nothing of ver-b's
    assert "Automatic label" in text and all(r in text for r in rules)
    assert [o for o in others if o in text] == []
    # the verdicts are in the panel now, none pre-filled from ver-b's disagreements
    data = panel.spec(at)
    assert [t["kind"] for t in data["targets"]] == ["v"] * len(item.checks)
    assert all(t["value"] is None and t["row"] is None for t in data["targets"])
    assert all([o[0] for o in t["options"]] == ["agree", "disagree"] for t in data["targets"])
    assert [o for o in others if o in json.dumps(data)] == []


# ------------------------------------------------------------------ passwords
PASSWORDS = {"set": "Cl34r-Initial-Pw", "wrong": "Typo-Guess-Pw-77", "ghost": "Ghost-User-Pw-1",
             "new": "Fresh-Changed-Pw", "short": "Sh0rt!x"}


def forms_of(password: str) -> list[bytes]:
    return [password.encode("utf-8"), password.encode("utf-16-le"),
            password.encode("utf-16-be"), base64.b64encode(password.encode())]


def run_cli(args: list[str], stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from annotation.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *args],
                          input=stdin, capture_output=True, text=True, timeout=120,
                          cwd=ROOT)


@pytest.mark.slow
def test_passwords_are_never_stored_shown_or_logged(tmp_path, monkeypatch, caplog):
    # SQLite only: it reads the bytes of the database file, its WAL and shared memory
    caplog.set_level(logging.DEBUG)
    db = tmp_path / "p.db"
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    outputs = []
    # the CLI: add an account, then change its password
    result = run_cli(["user", "add", "carol", "--role", "annotator", "--email", "c@lab.org",
                      "--db", str(db)], PASSWORDS["set"] + "\n")
    assert result.returncode == 0, result.stderr
    outputs += [result.stdout, result.stderr]
    # the sign-in page: a wrong password, an unknown name, the right password
    for name, password in (("carol", PASSWORDS["wrong"]), ("nobody", PASSWORDS["ghost"]),
                           ("carol", PASSWORDS["set"])):
        at = AppTest.from_file(str(ROOT / "pages" / "login.py"), default_timeout=60).run()
        at.text_input[0].input(name)
        at.text_input[1].input(password)
        at.button[0].click().run()
        assert not at.exception
        shown = [text for kind, _, text in rendered_strings(at) if kind != "TextInput"]
        assert not any(password in text for text in shown)
        outputs.append("\n".join(shown))
    assert at.session_state["user"] == User("carol", "annotator", "c@lab.org")
    result = run_cli(["user", "passwd", "carol", "--db", str(db)], PASSWORDS["new"] + "\n")
    assert result.returncode == 0, result.stderr
    outputs += [result.stdout, result.stderr]
    with Store.open(db) as store:
        assert auth.authenticate(store, "carol", PASSWORDS["new"]) is not None
        audit = store.query_df("SELECT * FROM audit_log")
        stored_hash = store.conn.execute(
            "SELECT password_hash FROM users WHERE name = 'carol'").fetchone()[0]
    assert {"user.add", "user.password", "login.ok", "login.fail"} <= set(audit.action)
    assert stored_hash.startswith("scrypt$")
    files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
    # read in another process: this one serves the project (AppTest opened it), and the
    # guard refuses ordinary reads of a served database (annotation/store/guard.py)
    data = b"".join(subprocess.run([sys.executable, "-c", "import sys; sys.stdout.buffer."
                                    "write(open(sys.argv[1], 'rb').read())", str(p)],
                                   capture_output=True, check=True).stdout
                    for p in files if p.exists())
    assert b"c@lab.org" in data and stored_hash.encode() in data  # the right files are read
    audit_text = audit.to_csv()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for password in PASSWORDS.values():
        for form in forms_of(password):
            assert form not in data, password
        assert password not in audit_text
        assert password not in logged
        assert not any(password in text for text in outputs)
        assert password not in stored_hash


@pytest.mark.slow
def test_cli_user_add_refuses_a_short_password_and_never_echoes_it(tmp_path):
    # SQLite only: it reads the bytes of the database files
    db = tmp_path / "p.db"
    short = PASSWORDS["short"]
    assert len(short) == auth.MIN_PASSWORD_LENGTH - 1
    result = run_cli(["user", "add", "dave", "--role", "annotator", "--db", str(db)],
                     short + "\n")
    assert result.returncode == 1
    assert "at least 8 characters" in result.stderr
    assert short not in result.stdout + result.stderr
    too_long = "L0ng-" * 205  # 1025 characters
    result = run_cli(["user", "add", "dave", "--role", "annotator", "--db", str(db)],
                     too_long + "\n")
    assert result.returncode == 1 and "too long" in result.stderr
    assert "L0ng-L0ng" not in result.stdout + result.stderr
    with Store.open(db) as store:
        assert auth.list_users(store).empty
        assert store.query_df("SELECT * FROM audit_log").empty
    data = b"".join(p.read_bytes() for p in tmp_path.glob("p.db*"))
    assert short.encode() not in data and b"L0ng-L0ng" not in data
    exactly = "Exact8!x"  # the minimum length, but zxcvbn counts it as 10^8 guesses only
    result = run_cli(["user", "add", "dave", "--role", "annotator", "--db", str(db)],
                     exactly + "\n")
    assert result.returncode == 1 and "too easy to guess" in result.stderr
    assert exactly not in result.stdout + result.stderr
    nine = "Ex4ct9!qz"  # one random character more is enough
    result = run_cli(["user", "add", "dave", "--role", "annotator", "--db", str(db)],
                     nine + "\n")
    assert result.returncode == 0, result.stderr
    assert nine not in result.stdout + result.stderr
    with Store.open(db) as store:
        assert auth.authenticate(store, "dave", nine) == User("dave", "annotator")


# ------------------------------------------------------------------ rate limiting
@pytest.mark.slow
def test_five_failed_sign_ins_lock_the_account_on_the_sign_in_page(project):
    password = "pw-ann-a-123"  # ensure_account's password
    for i in range(5):
        at = AppTest.from_file(str(ROOT / "pages" / "login.py"), default_timeout=60).run()
        at.text_input[0].input("ann-a")
        at.text_input[1].input(f"wrong guess {i}")
        at.button[0].click().run()
        assert "Wrong name or password" in at.error[0].value
    # the sixth attempt, with the right password, by any spelling of the name: refused
    for spelling in ("ann-a", "ANN-A", "  ann-a  "):
        at = AppTest.from_file(str(ROOT / "pages" / "login.py"), default_timeout=60).run()
        at.text_input[0].input(spelling)
        at.text_input[1].input(password)
        at.button[0].click().run()
        assert "locked" in at.error[0].value and "user" not in at.session_state
    with Store.open(project) as store:
        actions = list(store.query_df(
            "SELECT action FROM audit_log WHERE subject = 'ann-a' ORDER BY event_id").action)
        assert actions[-8:] == ["login.fail"] * 5 + ["login.locked"] * 3
        assert auth.is_locked(store, "ann-a")
        # another account is not affected; the lock ends when the failures are 5 minutes old
        assert auth.authenticate(store, OTHER, f"pw-{OTHER}-123") is not None
        later = datetime.now(UTC) + timedelta(minutes=5, seconds=30)
        assert auth.authenticate(store, "ann-a", password, now=later) is not None


# ------------------------------------------------------------------ sessions
def _ago(**delta: float) -> str:
    return (datetime.now(UTC) - timedelta(**delta)).isoformat(timespec="microseconds")


def age_sessions(db: str | Path, name: str, started: str, seen: str) -> None:
    """Move the stored times of ``name``'s sessions back (what the clock would do)."""
    with Store.open(db) as store:
        store.conn.execute("UPDATE sessions SET created_at = ?, last_seen = ? WHERE user = ?",
                           [started, seen, name])


@pytest.mark.parametrize(("started", "seen", "valid"), [
    ({"minutes": 59}, {"minutes": 59}, True),      # idle 59 minutes
    ({"minutes": 61}, {"minutes": 61}, False),     # idle 61 minutes
    ({"hours": 11, "minutes": 58}, {"minutes": 1}, True),   # active, under 12 hours
    ({"hours": 12, "minutes": 1}, {"minutes": 1}, False),   # active, but over 12 hours
])
def test_a_session_expires_when_idle_or_too_old(project, started, seen, valid):
    at = page_as("pages/annotate.py", "ann-a", "annotator")
    at.session_state["annotate"] = {"annotator": "ann-a", "guidelines_seen": True}
    age_sessions(project, "ann-a", _ago(**started), _ago(**seen))
    at.run()
    assert not at.exception
    with Store.open(project) as store:
        last_seen = store.conn.execute(
            "SELECT last_seen FROM sessions WHERE user = 'ann-a'").fetchone()[0]
    if valid:
        assert at.subheader[0].value.startswith("Task ")
        # activity slides the idle window: the stored last_seen is now
        assert datetime.fromisoformat(last_seen) > datetime.now(UTC) - timedelta(minutes=1)
    else:
        assert [e.value for e in at.error] == ["Please sign in."]
        assert [w.value for w in at.warning] == ["Your session expired. Please sign in again."]
        assert elements(at) == ["Warning", "Error"], elements(at)
        assert "user" not in at.session_state


def test_an_expired_session_in_the_app_lands_on_the_sign_in_page(project):
    at = page_as(APP, "ann-a", "annotator")
    age_sessions(project, "ann-a", _ago(minutes=90), _ago(minutes=90))
    at.run()
    assert not at.exception
    assert at.title[0].value == "judge-audit"
    assert any("Your session expired" in i.value for i in at.info)
    assert not at.sidebar.get("page_link")


def test_session_validity_with_a_fake_clock():
    t0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
    start = t0.isoformat()
    assert auth.session_valid(start, start, t0 + timedelta(minutes=60))
    assert not auth.session_valid(start, start, t0 + timedelta(minutes=60, seconds=1))
    seen = (t0 + timedelta(hours=11, minutes=59)).isoformat()
    assert auth.session_valid(start, seen, t0 + timedelta(hours=12))
    assert not auth.session_valid(start, seen, t0 + timedelta(hours=12, seconds=1))
    # a session state without its times is signed out, not trusted
    state = {"user": User("x", "admin"), "signed_in_at": "garbage", "last_seen": start}
    assert current_user(state) is None and "user" not in state


# ------------------------------------------------------------------ the project files
# SQLite only (this section): the file modes of the project file and its media folder
def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_project_is_readable_by_its_owner_only(tmp_path, example_bundle):
    old = os.umask(0)  # even with a permissive umask
    try:
        db = tmp_path / "new" / "study.db"
        with Store.open(db) as store:
            import_path(store, example_bundle)
            wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
            assert wal.exists() and shm.exists()
            assert (mode(db), mode(wal), mode(shm)) == (0o600, 0o600, 0o600)
            media = store.media_dir
            assert media.is_dir() and mode(media) == 0o700
            assert any(p.is_file() for p in media.rglob("*"))
    finally:
        os.umask(old)


@pytest.mark.slow
def test_the_cli_creates_private_project_files(tmp_path, example_bundle):
    db = tmp_path / "cli.db"
    result = run_cli(["user", "add", "root", "--role", "admin", "--db", str(db)],
                     "a long enough pw\n")
    assert result.returncode == 0, result.stderr
    assert mode(db) == 0o600
    assert main(["import", str(example_bundle), "--db", str(db), "--quiet"]) == 0
    assert mode(db) == 0o600 and mode(db.with_name("cli_media")) == 0o700


def test_existing_files_keep_their_mode(tmp_path, example_bundle):
    db = tmp_path / "shared.db"
    Store.open(db).close()
    media = tmp_path / "shared_media"
    media.mkdir()
    os.chmod(db, 0o640)
    os.chmod(media, 0o750)
    with Store.open(db) as store:
        import_path(store, example_bundle)
    assert mode(db) == 0o640 and mode(media) == 0o750


def test_a_database_opened_by_another_user_stays_unreadable_to_others(tmp_path):
    """Before the fix, a new database took the umask's 0644: world-readable."""
    old = os.umask(0o022)
    try:
        db = tmp_path / "p.db"
        with Store.open(db) as store:
            auth.add_user(store, "root", "admin", "a long enough pw", actor="test")
        assert mode(db) & 0o077 == 0
    finally:
        os.umask(old)

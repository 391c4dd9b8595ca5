"""What an annotator's browser receives is pixels only, and an unreadable image is a
placeholder for that image alone (issue #12, items 3 and 4).

Item 3: "a JPEG reached the annotator with ``gpt-image-1`` and ``OpenAI`` in its EXIF and
comment; a PNG with ``nano-banana`` in a text chunk; a PNG with HTML appended was served
unchanged". The pages run in AppTest on a project imported from real hostile files
(tests/helpers/hostile_images.py); every image element's bytes are taken from Streamlit's media
storage, exactly what the server would send, and searched for any trace of the original:
the annotate page in every view (strip, output, layout overlay, compare with each input,
enlarge), the verification page and the diagnostic-tree page (its image and the
box-select chart).

Item 4: "a moved media folder or a corrupt image showed ``FileNotFoundError`` /
``UnidentifiedImageError`` with paths, and the page died before the Flag button was drawn".
The demo project with its media folder moved, or with images damaged: the page runs, each
unreadable image is the drawn placeholder, the others are real, the item can be answered
and flagged, and no server path or error name is in any rendered element.
"""

from __future__ import annotations

import io
import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf.message import Message
from PIL import Image
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

from annotation.formats.importers import import_path
from annotation.store import Store
from annotation.ui import render
from annotation.ui.widget_keys import widget_key
from annotation.work import workflow
from tests.helpers import panel
from tests.helpers.apptest import signed_in
from tests.helpers.bundles import read_jsonl
from tests.helpers.conflict_fixture import write_conflict_bundle
from tests.helpers.hostile_images import (
    hostile_jpeg,
    hostile_png,
    traces,
    write_hostile_image_bundle,
)
from tests.helpers.tree_fixture import write_tree_bundle

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "pages"


def placeholders() -> set[bytes]:
    """The placeholder at each size a page asks for."""
    return {render.placeholder_png(side) for side in
            (render.STRIP_SIZE, render.CHECK_SIZE, render.NODE_SIZE, render.LARGE_SIZE,
             render.ENLARGE_SIZE)}


# ------------------------------------------------------------------ what the browser gets
@pytest.fixture
def media(monkeypatch) -> dict[str, bytes]:
    """Every file Streamlit's media storage is given, by file id: the bytes behind each
    ``/media/<id>.<ext>`` URL an element carries."""
    stored: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def keep(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        stored[file_id] = self.get_file(file_id).content
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", keep)
    return stored


def _nodes(at: AppTest) -> Iterator:
    stack = [at._tree]
    while stack:
        node = stack.pop()
        children = getattr(node, "children", None)
        if children:
            stack.extend(children.values() if isinstance(children, dict) else children)
        yield node


def shown_images(at: AppTest, media: dict[str, bytes]) -> list[bytes]:
    """The bytes of every image element on the page now (``st.image``)."""
    found = []
    for node in _nodes(at):
        proto = getattr(node, "proto", None)
        if proto is not None and proto.DESCRIPTOR.name == "ImageList":
            for img in proto.imgs:
                found.append(media[img.url.rsplit("/", 1)[1].split(".")[0]])
    return found


def rendered_strings(at: AppTest) -> list[str]:
    """Every string field of every element (what the browser receives besides media)."""
    out: list[str] = []

    def walk(message: Message) -> None:
        for field, value in message.ListFields():
            values = value if field.is_repeated else [value]
            if field.type == field.TYPE_MESSAGE:
                if not field.message_type.GetOptions().map_entry:
                    for item in values:
                        walk(item)
            elif field.type == field.TYPE_STRING:
                out.extend(values)

    for node in _nodes(at):
        proto = getattr(node, "proto", None)
        if isinstance(proto, Message):
            walk(proto)
    return out


def assert_clean(images: list[bytes]) -> None:
    assert images, "no image on the page"
    for data in images:
        assert traces(data) == [], traces(data)


def page_as(page: str, name: str, db: str | Path) -> AppTest:
    return signed_in(str(PAGES / page), name, db=db)


# ------------------------------------------------------------------ the hostile project
@pytest.fixture
def hostile_db(tmp_path, monkeypatch, engine_db: str) -> str:
    """The hostile-image project, on SQLite and on PostgreSQL (``engine_db``)."""
    db = engine_db
    with Store.open(db) as store:
        import_path(store, write_hostile_image_bundle(tmp_path / "bundle"))
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    return db


def test_the_checker_finds_every_trace_in_the_imported_files(hostile_db):
    """The sweep is not vacuous: the stored originals carry every trace it looks for."""
    with Store.open(hostile_db) as store:
        shas = list(store.images_df()["sha256"]) + list(store.outputs_df()["sha256"])
        found = {t.split(" ")[0] + " " + t.split(" ")[-1]
                 for sha in shas for t in traces(store.file_path(sha).read_bytes())}
    for expected in ("the 'gpt-image'", "the 'nano-banana'", "the '<html'", "PNG tEXt",
                     "PNG iTXt", "PNG zTXt", "PNG eXIf", "PNG iCCP", "JPEG comment",
                     "JPEG segment", "64 IEND"):
        assert expected in found, (expected, found)


@pytest.mark.slow
def test_every_view_of_the_annotate_page_sends_pixels_only(hostile_db, media):
    at = page_as("annotate.py", "ann", hostile_db)
    at.run()
    assert not at.exception
    seen = shown_images(at, media)
    assert len(seen) == 6  # four references and one visual instruction, and the output
    item = at.session_state["annotate"]["item"]
    at.toggle(key="guides").set_value(True).run()  # the layout overlay
    seen += shown_images(at, media)
    for index in range(5):  # compare with each input, side by side, large
        at.selectbox(key=widget_key("compare", item.output_id, state=at.session_state)
                     ).set_value(index).run()
        assert not at.exception
        seen += shown_images(at, media)
    before = len(shown_images(at, media))
    panel.command(at, "enlarge")  # E in the answer panel
    assert not at.exception
    enlarged = shown_images(at, media)
    assert len(enlarged) == before + 1  # and the output in the enlarge dialog
    seen += enlarged
    distinct = set(seen)
    assert_clean(list(distinct))
    # 5 inputs at 256, the output plain and overlaid, the JPEG and the large PNG at 1024
    # (small PNGs are the same bytes at every size)
    assert len(distinct) >= 9
    sizes = {Image.open(io.BytesIO(d)).size for d in distinct}
    assert (150, 200) in sizes  # the 200x150 JPEG with EXIF orientation 6, turned
    turned = next(d for d in distinct if Image.open(io.BytesIO(d)).size == (150, 200))
    # the red quadrant was top-left as stored; a quarter turn clockwise puts it top-right
    assert Image.open(io.BytesIO(turned)).convert("RGB").getpixel((140, 10))[0] > 180
    # neither URLs nor any other string of the page carries a stored hash or a path
    with Store.open(hostile_db) as store:
        shas = set(store.images_df()["sha256"]) | set(store.outputs_df()["sha256"].dropna())
        folder = store.media_dir.parent  # where the project's media live, on each engine
    strings = "\n".join(rendered_strings(at))
    assert not [s for s in shas if s[:16] in strings]
    assert str(folder) not in strings and "_media" not in strings


@pytest.mark.slow
def test_every_stored_image_at_every_size_is_pixels_only(hostile_db):
    """The one function every page uses, on every stored image (small ones included: a
    300x300 RGBA PNG with HTML after IEND was served as stored before), at every size a
    page asks for, plain and with the overlay."""
    with Store.open(hostile_db) as store:
        shas = list(store.images_df()["sha256"]) + list(store.outputs_df()["sha256"])
        meta = store.tasks_df()["meta"].iloc[0]
        for sha in shas:
            for side in (render.STRIP_SIZE, render.CHECK_SIZE, render.NODE_SIZE,
                         render.LARGE_SIZE, render.ENLARGE_SIZE):
                served = render.browser_image(store, sha, side)
                assert served.available and traces(served.data) == [], (sha, side)
                assert served.format == Image.open(io.BytesIO(served.data)).format
            overlaid = render.browser_image(store, sha, render.LARGE_SIZE, task_meta=meta)
            assert overlaid.available and traces(overlaid.data) == []


def _hostile_copies(root: Path, rels: list[str]) -> None:
    """Replace each image of a fixture bundle with a hostile one of the same size."""
    for rel in rels:
        path = root / rel
        with Image.open(path) as im:
            size = im.size
        if path.suffix == ".png":  # RGBA: what was served as stored when small
            hostile_png(path, size, "RGBA")
        else:
            hostile_jpeg(path, size)


def test_the_verification_page_sends_pixels_only(tmp_path, monkeypatch, media, engine_db):
    root = write_conflict_bundle(tmp_path / "bundle")
    rels = sorted({i["path"] for t in read_jsonl(root / "tasks.jsonl") for i in t["images"]
                   if i.get("path")})
    _hostile_copies(root, rels)
    db = engine_db
    with Store.open(db) as store:
        import_path(store, root)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as("conflicts.py", "verifier", db)
    at.run()
    assert not at.exception
    assert_clean(shown_images(at, media))


def test_the_tree_page_sends_pixels_only_also_in_its_box_select_chart(tmp_path, monkeypatch,
                                                                    media, engine_db):
    root = write_tree_bundle(tmp_path / "bundle")
    rels = [o["path"] for o in read_jsonl(root / "outputs.jsonl") if o.get("path")]
    _hostile_copies(root, rels)
    db = engine_db
    with Store.open(db) as store:
        import_path(store, root)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as("trees.py", "reviewer", db)
    at.run()
    assert not at.exception
    seen = shown_images(at, media)
    box = next(s for s in at.selectbox if s.label.startswith("First node"))
    box.set_value(box.options[1]).run()  # a review exists: the box-select chart is drawn
    assert not at.exception
    seen += shown_images(at, media)
    assert_clean(seen)
    charts = [c.proto.spec for c in at.get("plotly_chart")]
    assert charts, "no box-select chart"
    assert not [w for w in ("gpt-image", "nano-banana", "<html", "OpenAI")
                if any(w in spec for spec in charts)]


def test_no_page_puts_an_image_on_screen_by_another_way():
    """Every page shows images through annotation.ui.widgets.show_image (or, for pixels in a
    chart, render.browser_image): no st.image, no thumbnail paths, no media paths."""
    offenders = []
    for page in sorted(PAGES.glob("*.py")) + [ROOT / "app.py"]:
        text = page.read_text(encoding="utf-8")
        for pattern in (r"st\.image\(", r"render\.thumbnail", r"render\.overlay_png",
                        r"file_path\(", r"media_path\(", r"media_dir"):
            if re.search(pattern, text):
                offenders.append(f"{page.name}: {pattern}")
    assert offenders == []


def test_the_cache_holds_clean_files_named_by_content_only(hostile_db):
    """render.thumbnail (the cache under browser_image) never returns the stored file, and
    every cached file is pixels only, named by the stored file's hash: no task, output or
    generator id."""
    with Store.open(hostile_db) as store:
        shas = set(store.images_df()["sha256"]) | set(store.outputs_df()["sha256"])
        for sha in shas:
            for side in (render.STRIP_SIZE, render.LARGE_SIZE):
                path = render.thumbnail(store, sha, side)
                assert path != store.file_path(sha)
                assert traces(path.read_bytes()) == [], (path.name, side)
        cached = [p for p in store.media_dir.rglob("*") if p.is_file()
                  and p.parent.parent.name != store.media_dir.name]
    assert len(cached) >= len(shas)
    for path in cached:
        assert path.stem in shas
        assert traces(path.read_bytes()) == []


# ------------------------------------------------------------------ item 4: placeholders
@pytest.fixture
def demo_db(served_demo: Path) -> Path:
    # SQLite only (served_demo's default): these tests move or damage the files of the
    # project's media folder beside the database file
    return served_demo


def open_first_item(db: Path) -> AppTest:
    at = page_as("annotate.py", "alice", db)
    at.run()
    assert not at.exception
    if any(b.label.startswith("I have read") for b in at.button):
        next(b for b in at.button if b.label.startswith("I have read")).click().run()
    assert not at.exception
    return at


def can_flag(at: AppTest) -> bool:
    """The answer panel is drawn and offers its Flag command (F)."""
    return "flag" in [c[0] for c in panel.spec(at)["commands"]]


def assert_no_server_detail(at: AppTest, db: Path) -> None:
    strings = "\n".join(rendered_strings(at))
    for leak in (str(db.parent), "_media", "FileNotFoundError", "UnidentifiedImageError",
                 "Traceback", "No such file", "cannot identify"):
        assert leak not in strings, leak
    with Store.open(db) as store:
        shas = set(store.images_df()["sha256"]) | set(store.outputs_df()["sha256"].dropna())
    assert not [s for s in shas if s[:16] in strings]


def assert_answerable_and_flaggable(at: AppTest, db: Path) -> None:
    output_id = at.session_state["annotate"]["output_id"]
    first = panel.open_targets(panel.spec(at))[0]
    receipt = panel.answer(at, first, "yes")  # Y, delivered as the panel's outbox does
    assert receipt["status"] == "ok", receipt
    assert not at.exception
    panel.command(at, "flag")  # F: the flag dialog
    assert not at.exception
    at.radio[0].set_value("broken_image").run()
    next(b for b in at.button if b.label == "Flag" and b.proto.type == "primary").click().run()
    assert not at.exception
    with Store.open(db) as store:
        answers = store.annotations_df()
        assert len(answers[(answers.annotator == "alice")
                           & (answers.output_id == output_id)]) == 1
        flags = workflow.flags_df(store)
        assert list(flags.output_id) == [output_id]
        assert list(flags.reason) == ["broken_image"]


@pytest.mark.slow
def test_a_moved_media_folder_shows_placeholders_and_the_item_works(demo_db, media, caplog):
    shutil.move(demo_db.with_name("demo_media"), demo_db.with_name("moved_media"))
    with caplog.at_level(logging.WARNING, logger="annotation.ui.render"):
        at = open_first_item(demo_db)
    images = shown_images(at, media)
    assert images and all(d in placeholders() for d in images)
    assert can_flag(at)
    assert_no_server_detail(at, demo_db)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "FileNotFoundError" in logged and "demo_media" in logged  # on the server only
    assert_answerable_and_flaggable(at, demo_db)


@pytest.mark.slow
def test_damaged_images_are_placeholders_and_only_they(demo_db, media):
    """Every output's file overwritten with garbage, every Image_0 truncated: the output
    and Image_0 are placeholders, every other input is a real image."""
    with Store.open(demo_db) as store:
        outputs = set(store.outputs_df()["sha256"].dropna())
        images = store.images_df()
        first = set(images[images.idx == 0]["sha256"]) - outputs
        for sha in outputs:
            store.file_path(sha).write_bytes(b"GIF89a this is not an image at all")
        for sha in first:
            path = store.file_path(sha)
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 3])
        others = set(images[images.idx > 0]["sha256"]) - outputs - first
    at = open_first_item(demo_db)
    shown = shown_images(at, media)
    cards = [d for d in shown if d in placeholders()]
    real = [d for d in shown if d not in cards]
    item = at.session_state["annotate"]["item"]
    expected_bad = 1 + sum(1 for im in item.images if im.sha256 in first)
    assert len(cards) == expected_bad
    assert len(real) == sum(1 for im in item.images if im.sha256 in others) > 0
    assert can_flag(at)
    assert_no_server_detail(at, demo_db)
    assert_answerable_and_flaggable(at, demo_db)


@pytest.mark.parametrize("page", ["conflicts.py", "trees.py"])
def test_the_verification_and_tree_pages_survive_a_moved_media_folder(tmp_path, monkeypatch,
                                                                       media, page):
    write = write_conflict_bundle if page == "conflicts.py" else write_tree_bundle
    db = tmp_path / "p.db"
    with Store.open(db) as store:
        import_path(store, write(tmp_path / "bundle"))
    shutil.move(db.with_name("p_media"), tmp_path / "elsewhere")
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = page_as(page, "someone", db)
    at.run()
    assert not at.exception
    images = shown_images(at, media)
    assert images and all(d in placeholders() | {render.placeholder_png(384),
                                                 render.placeholder_png(512)} for d in images)
    if page == "trees.py":  # a review opens the box-select part: no chart on a placeholder
        box = next(s for s in at.selectbox if s.label.startswith("First node"))
        box.set_value(box.options[1]).run()
        assert not at.exception
        assert not at.get("plotly_chart")
        assert any("unavailable" in c.value for c in at.caption)
    assert_no_server_detail(at, db)


def test_the_placeholder_is_drawn_and_says_so():
    data = render.placeholder_png(render.LARGE_SIZE)
    with Image.open(io.BytesIO(data)) as im:
        assert im.format == "PNG" and im.size == (640, 480)
        colors = im.convert("L").getcolors(maxcolors=100_000)
    assert len(colors) > 2  # a frame and the words, not a flat card
    assert traces(data) == []


# ------------------------------------------------------------------ outputs served alike
def write_two_generator_bundle(root: Path) -> Path:
    """The documented example with two outputs of one task whose files differ the way two
    generators' do: a 300x200 PNG with transparency and a 1500x1000 JPEG."""
    from tests.helpers.bundles import write_doc_example, write_jsonl

    write_doc_example(root)
    outputs = read_jsonl(root / "outputs.jsonl")
    outputs[1].update(path="outputs/modelB/t1.jpg", missing=False)
    write_jsonl(root / "outputs.jsonl", outputs)
    Image.new("RGBA", (300, 200), (200, 30, 30, 128)).save(root / outputs[0]["path"])
    (root / "outputs/modelB").mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (1500, 1000), (30, 30, 200)).save(root / outputs[1]["path"], "JPEG")
    return root


def served_format(data: bytes) -> tuple[str | None, tuple[int, int]]:
    with Image.open(io.BytesIO(data)) as im:
        return im.format, im.size


def test_generated_outputs_are_served_alike_whatever_the_generator_wrote(tmp_path,
                                                                        engine_db):
    """Format and resolution of the bytes must not tell generators apart in a blind study:
    every output is JPEG with its longer side exactly the size asked for."""
    with Store.open(engine_db) as store:
        import_path(store, write_two_generator_bundle(tmp_path / "bundle"))
        shas = list(store.outputs_df().sort_values("generator")["sha256"])
        for side in (render.NODE_SIZE, render.LARGE_SIZE, render.ENLARGE_SIZE):
            served = {served_format(render.browser_image(store, sha, side,
                                                         generated=True).data)
                      for sha in shas}
            assert served == {("JPEG", (side, round(side * 2 / 3)))}, (side, served)
        overlay = render.overlay_png(store, shas[0], {"layout": {"boxes": [
            {"subject": "a", "box": [0.1, 0.1, 0.5, 0.5]}]}}, render.LARGE_SIZE)
        assert served_format(overlay)[1] == (render.LARGE_SIZE, round(render.LARGE_SIZE * 2 / 3))


def test_the_annotate_page_shows_each_output_the_same_way(tmp_path, monkeypatch, media,
                                                         engine_db):
    """The one output to annotate is the small transparent PNG: it reaches the page as the
    same 1024 px JPEG any other generator's output would be (it went out as itself, PNG
    300x200, before)."""
    from tests.helpers.bundles import write_doc_example

    root = write_doc_example(tmp_path / "bundle")
    path = root / read_jsonl(root / "outputs.jsonl")[0]["path"]
    Image.new("RGBA", (300, 200), (200, 30, 30, 128)).save(path)
    db = engine_db
    with Store.open(db) as store:
        import_path(store, root)
    monkeypatch.setenv("JUDGE_AUDIT_DB", str(db))
    at = signed_in(str(PAGES / "annotate.py"), "ann", db=db, guidelines_seen=True)
    at.run()
    assert not at.exception
    shown = {served_format(d) for d in shown_images(at, media)}
    assert ("JPEG", (render.LARGE_SIZE, round(render.LARGE_SIZE * 2 / 3))) in shown
    assert not {size for _, size in shown} & {(300, 200), (1500, 1000)}

"""judge-audit: the Streamlit entry point. Layout only; the library does the work.

The sign-in page is registered in every state (so a rerun after signing in, which
requests it again, finds it); signed in, it forwards to the role's first page. The menu is
drawn here with page links, so it lists only the pages the user's role may open.

Who is signed in comes from the session cookie on every rerun (annotation.ui.app_state); right
after a sign-in this page hands the browser its cookie (annotation.ui.web_session), which
reloads the page with it.
"""

import streamlit as st

from annotation.accounts.auth import oidc_configured, user_from_oidc
from annotation.ui import app_state
from annotation.ui.app_state import current_user, open_store, sign_in, sign_out
from annotation.ui.incidents import run_guarded
from annotation.ui.web_session import cookie_step
from annotation.ui.widgets import inert
from annotation.work.compare import has_items as has_compare_items

st.set_page_config(page_title="judge-audit", page_icon=":material/fact_check:", layout="wide")

store = open_store(st.session_state)
user = current_user(st.session_state, store)
if (user is None and oidc_configured() and getattr(st.user, "is_logged_in", False)
        and not st.session_state.get("oidc_checked")):
    st.session_state["oidc_checked"] = True  # one attempt (and one audit row) per session
    oidc_user = user_from_oidc(store, st.user.get("email"))  # type: ignore[arg-type]
    if oidc_user is not None:
        sign_in(st.session_state, oidc_user, store,
                user_agent=st.context.headers.get("User-Agent"))
        user = current_user(st.session_state, store)


def cookie_refused() -> None:
    st.session_state.pop("signing_in", None)
    st.session_state["cookie_refused"] = True


# the one-time handoff code goes to this browser once, never into the page
handoff = st.session_state.pop(app_state.HANDOFF_KEY, None)
if handoff:
    st.session_state["signing_in"] = True
    cookie_step("set", handoff, key="session-cookie-set", on_failed=cookie_refused)
elif st.session_state.pop(app_state.CLEAR_COOKIE_KEY, False) and user is None:
    cookie_step("clear", key="session-cookie-clear")

login = st.Page("pages/login.py", title="Sign in", icon=":material/login:", url_path="login")
annotate = [
    st.Page("pages/annotate.py", title="Annotate outputs", icon=":material/edit_note:"),
    st.Page("pages/conflicts.py", title="Verify conflict labels", icon=":material/rule:"),
    st.Page("pages/trees.py", title="Review diagnostic trees", icon=":material/account_tree:"),
    *([st.Page("pages/compare.py", title="Compare outputs", icon=":material/compare:")]
      if user is not None and has_compare_items(store) else []),  # pairs, rankings (#17)
]
adjudicate = st.Page("pages/adjudicate.py", title="Adjudicate", icon=":material/gavel:")
if user is None:
    menu: dict[str, list] = {}
elif user.role == "admin":
    menu = {
        "Project": [
            st.Page("pages/home.py", title="Overview", icon=":material/home:"),
            st.Page("pages/import_data.py", title="Import", icon=":material/upload:"),
            st.Page("pages/assignment.py", title="Assignment & progress",
                    icon=":material/group:"),
        ],
        "Annotate": [*annotate, adjudicate],
        "Analyze": [
            st.Page("pages/analytics.py", title="Judge validation", icon=":material/monitoring:"),
            st.Page("pages/conflict_results.py", title="Conflict labels",
                    icon=":material/compare_arrows:"),
            st.Page("pages/tree_results.py", title="Tree localization",
                    icon=":material/account_tree:"),
        ],
    }
elif user.role == "adjudicator":  # settles disputed answers; no admin pages
    menu = {"Adjudicate": [adjudicate]}
else:
    menu = {"Annotate": annotate}

first = next((p for pages in menu.values() for p in pages), None)
st.session_state["home_page"] = first
others = [p for pages in menu.values() for p in pages if p is not first]
navigation = st.navigation(([first] if first else []) + [login] + others, position="hidden")

if user is not None:
    with st.sidebar:
        for section, pages in menu.items():
            st.caption(section)
            for page in pages:
                st.page_link(page)
        st.divider()
        st.caption(f"Signed in as **{inert(user.name)}** ({user.role})")
        if st.button("Sign out", icon=":material/logout:"):
            sign_out(st.session_state, store)
            if oidc_configured() and getattr(st.user, "is_logged_in", False):
                st.logout()
            st.rerun()
run_guarded(navigation.run)  # an unexpected error: a short message and an incident id

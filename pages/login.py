"""Sign in: a password form, an OIDC button where configured, demo accounts in demo mode."""

import streamlit as st

from annotation.accounts.auth import authenticate, oidc_configured
from annotation.project_files import demo_accounts
from annotation.ui.app_state import SIGNED_OUT_KEY, current_user, demo_mode, open_store, sign_in
from annotation.ui.widgets import inert

store = open_store(st.session_state)
if current_user(st.session_state, store) is not None and st.session_state.get("home_page"):
    st.switch_page(st.session_state["home_page"])
left, middle, right = st.columns([1, 2, 1])
with middle:
    st.title("judge-audit")
    st.caption(inert(store.project_info().get("name", "")))
    if st.session_state.get("signing_in"):  # app.py is handing this browser its cookie
        st.info("Signing in ...", icon=":material/hourglass_top:")
        st.stop()
    if st.session_state.pop("cookie_refused", False):
        st.error("Signing in needs the session cookie: serve the app with `judge-audit serve` "
                 "and allow cookies for this site.")
    if message := st.session_state.pop(SIGNED_OUT_KEY, None):
        st.info(message)
    with st.form("login"):
        name = st.text_input("Name", autocomplete="username")
        password = st.text_input("Password", type="password", autocomplete="current-password")
        submitted = st.form_submit_button("Sign in", type="primary", width="stretch")
    if submitted:
        user = authenticate(store, name, password)
        if user is None:
            st.error("Wrong name or password, or the account is disabled or locked after "
                     "repeated failures (wait 5 minutes).")
        else:
            sign_in(st.session_state, user, store,
                    user_agent=st.context.headers.get("User-Agent"))
            st.rerun()
    if oidc_configured():
        st.button("Sign in with your organization", on_click=st.login, width="stretch")
    if demo_mode():
        with st.container(border=True):
            st.markdown("**Demo project**: these accounts exist only here.")
            st.dataframe(
                [{"name": n, "role": r, "password": p} for n, r, p in demo_accounts()],
                hide_index=True, width="stretch",
            )

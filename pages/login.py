"""Sign in: a password form, an OIDC button where configured, demo accounts in demo mode."""

import streamlit as st

from annotation.app_state import current_user, demo_mode, open_store, sign_in
from annotation.auth import DEMO_ACCOUNTS, authenticate, oidc_configured
from annotation.widgets import inert

store = open_store(st.session_state)
if current_user(st.session_state) is not None and st.session_state.get("home_page"):
    st.switch_page(st.session_state["home_page"])
left, middle, right = st.columns([1, 2, 1])
with middle:
    st.title("judge-audit")
    st.caption(inert(store.project_info().get("name", "")))
    if st.session_state.pop("expired", False):
        st.info("Your session expired. Please sign in again.")
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
            sign_in(st.session_state, user)
            st.rerun()
    if oidc_configured():
        st.button("Sign in with your organization", on_click=st.login, width="stretch")
    if demo_mode():
        with st.container(border=True):
            st.markdown("**Demo project**: these accounts exist only here.")
            st.dataframe(
                [{"name": n, "role": r, "password": p} for n, r, p in DEMO_ACCOUNTS],
                hide_index=True, width="stretch",
            )

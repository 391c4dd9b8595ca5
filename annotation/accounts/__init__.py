"""Who may sign in, and their signed-in sessions."""

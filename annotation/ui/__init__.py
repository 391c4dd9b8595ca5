"""What only app.py and pages/ use: app state, widgets, image rendering, the server."""

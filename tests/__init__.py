"""judge-audit's tests (a package: helpers are imported as ``tests.helpers.<module>``)."""

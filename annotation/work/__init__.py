"""The human workflows: who sees which unit next, and what they answered."""

"""A certification run's life inside pytest: its context and state, its start, each test's phases and deadlines,
the smoke check, the hypothesis profiles, the report rows and attempts, and the run's end."""

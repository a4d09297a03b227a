"""The harness rules: each keeps one habit of a long task (see ``agent.harness`` for the list)."""

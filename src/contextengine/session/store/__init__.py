"""Where sessions are kept: the session folders (default) or a shared PostgreSQL database."""

"""Turns on workers (#15): server replicas record and enqueue turns, Celery workers run them."""

"""The framework comparison benchmark's parts (``benchmarks/frameworks.py`` drives them).

``task`` (stdlib only) is shared with the peer drivers, which run in another venv.
"""

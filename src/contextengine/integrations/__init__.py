"""Integrations: contextengine's rules inside other agent frameworks (optional extras).

``mirror.ContextMirror`` is the framework-neutral core; ``pydantic_ai``, ``openai_agents``
and ``langchain`` adapt it to each framework and need that framework installed
(``pip install 'contextengine[pydantic-ai]'`` and so on; importing one without it raises
``MissingIntegration`` naming the extra).
"""

"""The code map (R17): a ranked map of the workspace's definitions, sized to a budget.

Its injector is ``contextengine.memory.code_map.CodeMapInjector``; its tool
``contextengine.tools.code_map.CodeMapTool``."""

from contextengine.codemap.code_map import CodeMap, CodeMapView, Focus
from contextengine.codemap.grammars import CodeMapUnavailable

__all__ = ["CodeMap", "CodeMapUnavailable", "CodeMapView", "Focus"]

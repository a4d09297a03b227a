"""The code map (R17): a ranked map of the workspace's definitions, sized to a budget.

Its injector is ``contextengine.memory.code_map.CodeMapInjector``; its tool
``contextengine.codemap.tool.CodeMapTool``."""

from contextengine.codemap.code_map import CodeMap, CodeMapView, Focus
from contextengine.codemap.grammars import CodeMapUnavailable

__all__ = ["CodeMap", "CodeMapUnavailable", "CodeMapView", "Focus"]

"""The code map (R17): a ranked map of the workspace's definitions, sized to a budget."""

from contextengine.codemap.code_map import CodeMap, CodeMapView, Focus
from contextengine.codemap.grammars import CodeMapUnavailable
from contextengine.codemap.injector import CodeMapInjector

__all__ = ["CodeMap", "CodeMapInjector", "CodeMapUnavailable", "CodeMapView", "Focus"]

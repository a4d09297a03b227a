"""Compression: per-tool history forms, externalization to artifacts, and recovery."""

from contextengine.compress.compressors import (
    Category,
    Compressed,
    compress,
    compress_observation,
    tool_category,
)
from contextengine.compress.externalize import (
    THRESHOLDS,
    CompressedRef,
    Externalizer,
    UnrecoverableRef,
    is_compressed_ref,
    over_threshold,
)
from contextengine.compress.observation import ObservationProcessor, ProcessedObservation

__all__ = [
    "THRESHOLDS",
    "Category",
    "Compressed",
    "CompressedRef",
    "Externalizer",
    "ObservationProcessor",
    "ProcessedObservation",
    "UnrecoverableRef",
    "compress",
    "compress_observation",
    "is_compressed_ref",
    "over_threshold",
    "tool_category",
]

"""Working memory (task_plan / findings / progress), its rules, lessons, long-term memory,
and the context injectors; the memory tools are ``contextengine.tools.memory``."""

from contextengine.memory.code_map import CodeMapInjector
from contextengine.memory.injectors import (
    FileInjector,
    Injection,
    InjectionFailure,
    Injector,
    LessonsInjector,
    LongTermMemoryInjector,
    ProjectKnowledgeInjector,
    default_injectors,
    run_injectors,
)
from contextengine.memory.lessons import Lesson, LessonStore
from contextengine.memory.longterm import LongTermMemory, MemoryDoc, MemoryHit, session_documents
from contextengine.memory.plan import Phase, Plan, PlanStep, PlanUpdate, PlanUpdateError, Risk
from contextengine.memory.reboot import REBOOT_QUESTIONS, HumanHelp, human_help, reboot_prompt
from contextengine.memory.rules import RuleState
from contextengine.memory.scope import SessionScope
from contextengine.memory.status import task_status
from contextengine.memory.working_memory import FileChange, WorkingMemory, atomic_write

__all__ = [
    "REBOOT_QUESTIONS",
    "CodeMapInjector",
    "FileChange",
    "FileInjector",
    "HumanHelp",
    "Injection",
    "InjectionFailure",
    "Injector",
    "Lesson",
    "LessonStore",
    "LessonsInjector",
    "LongTermMemory",
    "LongTermMemoryInjector",
    "MemoryDoc",
    "MemoryHit",
    "Phase",
    "Plan",
    "PlanStep",
    "PlanUpdate",
    "PlanUpdateError",
    "ProjectKnowledgeInjector",
    "Risk",
    "RuleState",
    "SessionScope",
    "WorkingMemory",
    "atomic_write",
    "default_injectors",
    "human_help",
    "reboot_prompt",
    "run_injectors",
    "session_documents",
    "task_status",
]

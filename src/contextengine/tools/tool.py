"""The tool protocol: a name, a description, an argument model and a typed ``run``."""

from __future__ import annotations

from typing import ClassVar, Protocol, TypeVar

from pydantic import BaseModel

from contextengine.toolkit.base import ToolOutcome
from contextengine.tools.context import ToolContext

ArgsT = TypeVar("ArgsT", bound=BaseModel)


class Tool(Protocol[ArgsT]):
    """A tool whose calls' arguments validate against ``Args`` (an ``ArgsT``) and are given
    to ``run`` as one; a set of different tools is a sequence of ``Tool[Any]``.

    A tool class may also declare ``traits`` (``toolkit.traits``) and, in the ``tools``
    package, ``default: ClassVar[bool] = True`` to be one of ``default_toolset()``'s tools.
    """

    name: ClassVar[str]
    description: ClassVar[str]

    # Read-only, so a nested ``class Args(BaseModel)`` satisfies it.
    @property
    def Args(self) -> type[ArgsT]:
        """The pydantic model the call's arguments validate against."""
        ...

    def run(self, args: ArgsT, ctx: ToolContext) -> ToolOutcome:
        """Execute with validated arguments inside the context's workspace."""
        ...

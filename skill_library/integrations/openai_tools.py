"""Moved to :mod:`skill_library.presentation.openai_tools` (below the facade); this import path
stays for code that uses it."""

from __future__ import annotations

from skill_library.presentation.openai_tools import MAX_TOOL_NAME as MAX_TOOL_NAME
from skill_library.presentation.openai_tools import Api as Api
from skill_library.presentation.openai_tools import ToolMessage as ToolMessage
from skill_library.presentation.openai_tools import argument_problem as argument_problem
from skill_library.presentation.openai_tools import as_openai_tools as as_openai_tools
from skill_library.presentation.openai_tools import description_of as description_of
from skill_library.presentation.openai_tools import dispatch as dispatch
from skill_library.presentation.openai_tools import skill_tool as skill_tool
from skill_library.presentation.openai_tools import strict_parameters as strict_parameters

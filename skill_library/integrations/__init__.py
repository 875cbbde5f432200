"""Meet agents in the formats they already speak.

- :mod:`~skill_library.integrations.prompt_block`: a planner's prompt block (``render``; the
  code lives in :mod:`skill_library.presentation`, below the facade)
- :mod:`~skill_library.integrations.openai_tools`: OpenAI function tools and ``dispatch``
  (likewise)
- :mod:`~skill_library.integrations.mcp_server`: an MCP server (needs the ``[mcp]`` extra)
- :mod:`~skill_library.integrations.agent_skills`: Agent Skills folders, export and import

Each module takes a :class:`~skill_library.library.SkillLibrary` (or its results) and only
calls its public methods; the facade's ``export_agent_skills``/``import_agent_skills``
delegate here (``render``/``as_openai_tools``/``dispatch`` to skill_library.presentation).
"""

"""What the library shows an agent, from the data the facade holds: the planner's prompt block
(:mod:`~skill_library.presentation.prompt_block`) and fetched skills as OpenAI function tools
with ``dispatch`` (:mod:`~skill_library.presentation.openai_tools`). They sit below the facade
(``SkillLibrary.render``, ``as_openai_tools`` and ``dispatch`` delegate here); the integrations
(MCP, Agent Skills, the old import paths ``skill_library.integrations.prompt_block`` and
``.openai_tools``) use them from above.
"""

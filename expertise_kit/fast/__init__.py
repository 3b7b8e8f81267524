"""The pre-task hook's path: standard library only, nothing imported that it does not use.

Reading the render cache, classifying a task and rendering the prompt section all run on every agent
turn, so no module here may import git, YAML, pydantic, click, ``json``, ``re`` or ``typing``.
"""

"""`python -m skill_library.cli`: the same as the `skills` console script."""

from skill_library.cli import main

main()

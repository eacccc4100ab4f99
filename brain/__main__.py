"""`python -m brain` runs the command line."""

from brain.cli import main

main()

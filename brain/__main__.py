"""`python -m brain` runs the command line (a warm daemon answers recall on the fast path)."""

from brain.fastpath import main

main()

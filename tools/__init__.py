"""The repository's tools: build, execute, convert and check the book, the Colab copies and the workshop kit.

The entry point is `python3 tools/run.py COMMAND` (setup, book, test, notebooks, colab, workshop, cards, ...).
The modules import one another as this package; each can also run alone from the repository root as
`python -m tools.NAME` (what run.py does, inside the project's environment).
"""

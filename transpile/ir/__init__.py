"""Shared IR tools: what every pass uses and no pass owns.

    anno.py       annotations on nodes (`Anno`): the documented way passes talk to each other
    nodes.py      building nodes: names, constants, assignments, calls, function definitions
    analysis.py   reads, writes, activity, definedness over structured statements
    naming.py     fresh, readable, deterministic names
    program.py    a Program: the IR functions of one generated module, its constants
    templates.py  binding a rule template from rules/ to a call site
    rewrites.py   small IR-to-IR rewrites more than one pass makes first
"""

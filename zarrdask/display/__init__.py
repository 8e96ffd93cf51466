"""Displays: the text and HTML of nodes (``describe.py``, ``html.py``, ``html_grid.py``)
and of plans (``plans.py``), built from one kit of parts (``kit.py``: stylesheet, folding
sections, tables). They read what they show through Protocols of its public faces."""

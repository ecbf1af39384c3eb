"""``setanon report``: what a run did, whether its guarantee holds, what it cost, as a page.

``data`` computes the aggregates in the DBMS, ``build`` and ``tradeoff`` assemble the content,
``plots`` draws it with matplotlib, ``run_page`` / ``tradeoff_page`` lay out a self-contained
HTML file, and ``command`` is the click command.
"""

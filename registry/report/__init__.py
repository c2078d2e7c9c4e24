"""Reports for people: one self-contained HTML file per plan and decision.

``data`` reads what a report shows from the registry (one read transaction, nothing
written), ``warmup`` lays out the warm-up timeline, ``svg`` draws charts as inline SVG,
``charts`` builds the report's charts from its data, ``trail`` finds the audit events that
recorded its inputs, and ``render`` turns it into HTML with the Jinja2 templates under
``templates/`` (reusable by any page: a base layout and an embeddable report body).
"""

"""Glue for running the kit's notebooks, interactively in JupyterLab or in batch under papermill.

Figures are shown through one renderer that emits both plotly's own mimetype (which JupyterLab
renders natively) and a plain HTML div that does not load plotly.js: the report pipeline embeds
plotly.js once per page, so a report renders offline and never reaches a CDN.
"""

from __future__ import annotations

import json

import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

RENDERER = "dflash"


class ReportRenderer(MimetypeRenderer):
    def to_mimebundle(self, fig_dict):
        html = pio.to_html(
            fig_dict,
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            default_width="100%",
            default_height=520,
            validate=False,
            config={"displaylogo": False, "responsive": True},
        )
        # JupyterLab wants plain JSON; plotly's encoder turns numpy datetimes and arrays into it.
        plain = json.loads(pio.to_json(fig_dict, validate=False))
        return {"application/vnd.plotly.v1+json": plain, "text/html": html}


def setup() -> None:
    """Call once at the top of a notebook: figures render in JupyterLab and in the HTML report."""
    import pandas as pd

    pio.renderers[RENDERER] = ReportRenderer()
    pio.renderers.default = RENDERER
    pd.set_option("display.max_colwidth", 160)
    pd.set_option("display.max_rows", 200)

"""GraphWidget's height: 0 (automatic) by default, at least 260 px when given, kept by save_html."""

import json
import re

from nbgrad.widget import GraphWidget


def test_height_defaults_to_automatic_and_is_clamped():
    assert GraphWidget().height == 0
    assert GraphWidget(height=700).height == 700
    assert GraphWidget(height=100).height == 260
    widget = GraphWidget(height=700)
    widget.height = -5
    assert widget.height == 0


def test_save_html_keeps_the_height(tmp_path):
    page = GraphWidget(height=720).save_html(tmp_path / "graph.html").read_text()
    state = re.search(
        r'<script type="application/json" id="nbgrad-state">(.*?)</script>', page
    ).group(1)
    assert json.loads(state)["height"] == 720

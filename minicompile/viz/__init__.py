"""Pictures of every stage's artifact, as graphviz SVG (needs Graphviz's ``dot`` program).

    from minicompile.viz import draw_graph
    draw_graph(gm)                       # an FX graph; displays inline in Jupyter
    draw_graph(gm, highlight={"cos"})    # node names drawn in a highlight colour
"""

from .fx_graph import draw_graph, node_label

__all__ = ["draw_graph", "node_label"]

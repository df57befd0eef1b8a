"""The shared layer's size arithmetic: below every stage, imported by any of them.

Real PyTorch keeps these outside its compiler stages too (torch/fx/experimental and
torch/utils/_sympy), because Dynamo, AOT autograd and Inductor all compute with the same
symbolic sizes. Files:

    functions.py        FloorDiv, ModularIndexing (torch/utils/_sympy/functions.py) and
                        sym_to_sympy: an int or torch.SymInt as SymPy over our functions
    sym_node.py         SymNode: the object behind a torch.SymInt (torch/fx/experimental/sym_node.py)
    symbolic_shapes.py  ShapeEnv: symbols, hints, duck sizing, 0/1 specialization, guards, and the
                        fake-tensor helpers (torch/fx/experimental/symbolic_shapes.py)

The old paths ``minicompile.dynamo.symbolic_shapes`` and ``minicompile.dynamo.sym_node`` re-export
these for notebooks and exercises.
"""

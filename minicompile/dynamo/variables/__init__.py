"""VariableTrackers: the symbolic values of the interpreter (mirrors torch/_dynamo/variables/).

    base.py        VariableTracker (reconstruct, children, call_function, ...), KnownCallableVariable
    builder.py     VariableBuilder / SourcelessBuilder: real values -> trackers (with guards)
    constant.py    ConstantVariable: values known at trace time
    builtin.py     BuiltinVariable: builtins and ``operator`` as a handler table
    torch.py       TorchVariable: torch.*, torch.nn.functional, torch.Tensor methods as functions
    tensor.py      TensorVariable: a tensor in the graph (call_op adds a node)
    symnode.py     SymNodeVariable: a symbolic int/float/bool in the graph
    lists.py       tuples, lists, torch.Size, range, slice, set, the FOR_ITER iterator
    deques.py      DequeVariable: collections.deque built while tracing
    dicts.py       ConstDictVariable and dict views
    floats.py      UnspecializedFloatVariable: a float argument that is a graph input
    functions.py   user functions, methods, closures (inlined), functools.partial
    iter.py        itertools and the ``operator`` getters
    misc.py        modules, attributes, super(), user objects, context managers
    nn_module.py   NNModuleVariable: an nn.Module instance (its forward inlined)
    optimizer.py   OptimizerVariable: a torch.optim optimizer (_init_group run eagerly, its state)

The modules import each other (a tracker's method can make any other kind): the one place an
import cycle is allowed (tests/test_structure.py).
"""

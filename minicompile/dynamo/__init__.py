"""Mini Dynamo: a symbolic CPython bytecode interpreter that turns Python into FX graphs.

File map (each mirrors the file of the same name under torch/_dynamo/ unless noted):

    eval_frame.py        optimize(), the per-code-object cache, OptimizedModule; no PEP 523 hook:
                         the wrapper returned by optimize() is the frame interception
    convert_frame.py     trace one frame on a cache miss -> CacheEntry (guard + transformed fn)
    bytecode.py          dis -> one instruction set for CPython 3.11 and 3.12 (bytecode_transformation
                         .py's cleaned_instructions); imports no torch
    symbolic_convert.py  InstructionTranslator / InliningInstructionTranslator, handler registry
    handlers_data.py     handlers: stack, loads/stores, operators, containers   (symbolic_convert.py)
    handlers_flow.py     handlers: jumps, loops, calls, functions, with, return (symbolic_convert.py)
    variables/           VariableTracker subclasses (variables/*.py), builder.py = VariableBuilder
    source.py            where each value came from: L['x'], G['w'], L['self'].fc.weight
    output_graph.py      the FX graph, graph inputs, compile with the backend
    codegen.py           the transformed function as Python source (codegen.py emits bytecode)
    guards.py            Guard, guard kinds as a codegen table, the generated guard(L, G)
    explain.py           mc.explain(fn)(*args) -> ExplainOutput
    exc.py               Unsupported (the reason + user line of everything not captured)
    symbolic_shapes.py, sym_node.py: re-export minicompile/shapes/ (the shared layer)
    bytecode_transformation.py, resume_execution.py: later stages

Read in this order: eval_frame -> convert_frame -> symbolic_convert -> handlers_* -> variables/.
"""

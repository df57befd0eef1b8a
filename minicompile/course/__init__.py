"""Course tooling: helpers notebooks and tests use to show and compare the stages. It sits
above every stage (it may import any of them; no stage imports it) and has no counterpart in
torch. Files:

    artifacts.py          compile_with_artifacts: every stage's artifact of one function
    compare.py            our AOT graphs next to eager autograd's and real AOTAutograd's; timings
    levels.py             one program at the ATen, core ATen and prims levels, op counts, bytes
    instruction_table.py  docs/instructions.md, generated from the interpreter's handler registry
    compile_profile.py    a compile's time per stage, the graphs inductor made, a step's time per kernel
    training.py           one model trained by eager and by compilers side by side; loss and speed plots
    roofline.py           kernels' intensity against FLOP/s and GB/s, under the device's peaks
    coalescing.py         the sectors a warp touches in a generated kernel; transposes flat and tiled
    reduction_choice.py   persistent or looped reductions: both rules, both kernels forced and timed
    occupancy.py          registers, shared memory and occupancy of compiled Triton kernels
    notebook_metadata.py  the notebooks' metadata as JupyterLab writes it (a git clean filter)

Also course tooling, in their own places: viz/ (graph renderings), grading/ and grade.py
(exercises), bench.py (benchmarks).
"""

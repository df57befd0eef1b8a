"""The model suites of the benchmark (``bash course.sh bench --suite huggingface|timm|all``),
the role of PyTorch's benchmarks/dynamo/ harness.

Reading map:

    zoo.py          ModelSpec and the sizes every suite builds its models at
    huggingface.py  transformers architectures from small configs (offline, random weights)
    timm_models.py  timm image classifiers (random weights, small images)
    accuracy.py     same(): tolerance, then float64 as the judge; cosine for bfloat16
    runner.py       one model, one mode: eager, torch.compile, minicompile, counts, times, memory
    report.py       markdown tables, summary, JSON
    cli.py          the command line; each model in a child process on CUDA
"""

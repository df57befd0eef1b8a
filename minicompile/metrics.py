"""Counters a learner can read after running compiled code (mirrors torch/_dynamo/utils.counters
and torch/_inductor/metrics.py).

    import minicompile as mc
    mc.metrics.reset(); cfn(x)
    mc.metrics.frames_compiled, mc.metrics.graph_breaks, mc.metrics.num_bytes_accessed
"""

from dataclasses import MISSING, dataclass, field, fields


@dataclass
class Metrics:
    frames_compiled: int = 0  # frames (or resume functions) turned into compiled entries
    recompiles: int = 0  # compiles of a code object that already had an entry
    # partial graphs ended by an unsupported instruction, and frames that fell back to eager:
    # the break reasons explain() lists
    graph_breaks: int = 0
    graphs_compiled: int = 0  # FX graphs handed to a backend
    kernels_generated: int = 0  # kernels emitted by inductor's code generators (a later stage)
    # bytes read + written by the last compiled graph's kernels: a loop kernel counts the distinct
    # elements it touches; library (extern) calls such as mm, conv and sdpa count their whole
    # inputs and outputs
    num_bytes_accessed: int = 0
    guard_failures: int = 0  # cache entries rejected by their guards
    eager_fallbacks: int = 0  # frames run eagerly because nothing could be compiled
    # why, for each eager fallback: the frame's break, or what a compiler could not compile
    fallback_reasons: list = field(default_factory=list)
    # graphs whose kernels a backend could not write or compile, run by the reference backend
    # instead (correct, slow): the errors, which are bugs of that backend
    backend_fallbacks: list = field(default_factory=list)

    def reset(self) -> None:
        for f in fields(self):
            setattr(self, f.name, f.default_factory() if f.default is MISSING else f.default)

    def increment(self, name: str, n: int = 1) -> None:
        setattr(self, name, getattr(self, name) + n)

    def fell_back(self, reason: str) -> None:
        """A frame (or a graph) runs eagerly, for ``reason``."""
        self.eager_fallbacks += 1
        self.fallback_reasons.append(reason)

    def as_dict(self) -> dict[str, int | list]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v}" for k, v in self.as_dict().items())
        return f"Metrics({body})"


metrics = Metrics()

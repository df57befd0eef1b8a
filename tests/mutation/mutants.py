"""The curated mutants ``python -m tests.mutate`` plants, one at a time (see tests/mutate.py).

Each is a plausible one-line bug in a core mechanism: the file, a distinctive snippet of the
original code (it must occur exactly once in the file, or the script says so), its replacement,
and the targeted test files (or ``file::test`` ids, or ``file -k expr``) that must fail with it.
To update after a refactor: fix ``original`` to the new spelling of the same line. A mutant that
cannot change any answer is marked ``equivalent=...`` with the reason; it is applied and run but
not counted.

The first nine are the blind spots of issue 17 (bugs the suite once did not notice); the others
cover the remaining mechanisms of guards, graph breaks, AOT autograd, decompositions, inductor
lowering and fusion, graph passes, the memory plan and kernel-local values of the code
generators.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str  # relative to the repository root
    original: str  # a snippet that occurs exactly once in ``file``
    replacement: str
    tests: tuple[str, ...]  # pytest arguments: files, node ids, "-k", expressions
    why: str = ""  # the bug, in words
    equivalent: str | None = None  # why no test can catch it (not counted in the kill rate)


BS = "tests/test_blind_spots.py"

MUTANTS: list[Mutant] = [
    # ---- the blind spots of issue 17 -----------------------------------------------------------
    Mutant("guard_ignores_strides", "minicompile/dynamo/guards.py",
           'for what, dims in (("shape", spec.shape), ("stride()", spec.stride)):',
           'for what, dims in (("shape", spec.shape),):',
           (BS, "-k", "transpose"),
           "TENSOR_MATCH checks sizes but not strides: a graph traced for a contiguous input "
           "is reused for its transpose"),
    Mutant("property_test_finds_stride_change", "minicompile/dynamo/guards.py",
           'for what, dims in (("shape", spec.shape), ("stride()", spec.stride)):',
           'for what, dims in (("shape", spec.shape),):',
           (f"{BS}::test_guard_property_stride_and_requires_grad",),
           "the same planted bug, caught by the hypothesis property test alone (every run)"),
    Mutant("property_test_finds_requires_grad_change", "minicompile/dynamo/guards.py",
           """parts.append(f"{'' if spec.requires_grad else 'not '}{v}.requires_grad")""",
           "pass",
           (f"{BS}::test_guard_property_stride_and_requires_grad",),
           "TENSOR_MATCH forgets requires_grad, caught by the property test alone"),
    Mutant("other_module_global_unguarded", "minicompile/dynamo/symbolic_convert.py",
           "return AttrSource(GlobalSource(alias), name)",
           "return None",
           (BS, "-k", "other_module"),
           "a global read by an inlined helper of another module gets no source, so no guard"),
    Mutant("break_in_no_grad_runs_native_call_with_grad", "minicompile/dynamo/graph_break.py",
           "if grad_now != tx.output.initial_grad_mode:  # the graph left grad mode",
           "if False:  # the graph left grad mode",
           (BS, "-k", "grad_mode"),
           "the native call at a break inside `with torch.no_grad()` runs with grad enabled"),
    Mutant("inference_input_mutation_dropped", "minicompile/aot_autograd/runtime_wrappers.py",
           "_copy_back_mutations(args, sig.mutated_inputs, outs[n:sig.num_fwd_outputs])",
           "pass",
           (BS, "-k", "inference_input_mutation or running_stats"),
           "the inference wrapper forgets to copy mutated inputs back (x.add_, BN stats)"),
    Mutant("output_view_ignores_input_offset", "minicompile/aot_autograd/joint.py",
           "return base.as_strided(size, stride, base.storage_offset() + offset)",
           "return base.as_strided(size, stride, offset)",
           (BS, "-k", "offset_input"),
           "an output view of an input is rebuilt at the offset relative to the input, as if "
           "the input started its storage"),
    Mutant("logsumexp_no_inf_mask", "minicompile/decompositions/softmax.py",
           "aten.full_like.default(m, 0), m)  # all -inf rows",
           "m, m)  # all -inf rows",
           (BS, "-k", "special or masked"),
           "logsumexp of a fully masked row computes -inf - -inf = nan instead of -inf"),
    Mutant("softmax_without_max_subtraction", "minicompile/decompositions/softmax.py",
           "e = aten.exp.default(aten.sub.Tensor(xf, aten.amax.default(xf, [dim], True)))",
           "e = aten.exp.default(xf)",
           (BS, "-k", "special"),
           "softmax forgets to subtract the row max: exp overflows on large rows"),
    Mutant("layer_norm_one_pass_variance", "minicompile/decompositions/norms.py",
           "var = aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(centered, centered), "
           "dims, True), n)\n    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))  # (B, 1)",
           "var = aten.sub.Tensor(aten.div.Tensor(aten.sum.dim_IntList(aten.mul.Tensor(xf, xf), "
           "dims, True), n), aten.mul.Tensor(mean, mean))\n"
           "    rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))  # (B, 1)",
           (BS, "-k", "special"),
           "layer norm's variance as E[x^2] - E[x]^2: catastrophic cancellation on "
           "near-constant rows"),
    Mutant("fusion_row_bound_forgets_pointwise_of_reduction", "minicompile/inductor/fusion.py",
           "            if runs_per_row(writer, n, r):",
           "            if writer.is_reduction():",
           (BS, "-k", "independent_oracle"),
           "a pointwise value computed from a reduction is treated as recomputable anywhere, so "
           "a kernel may read it from another row"),
    Mutant("unfold_ignores_step", "minicompile/inductor/lowerings/views.py",
           "old[dim] = index[dim] * step + index[-1]",
           "old[dim] = index[dim] + index[-1]",
           (BS, "-k", "windows"),
           "unfold's windows advance by 1 instead of step"),
    # ---- guards --------------------------------------------------------------------------------
    Mutant("grad_mode_guard_always_true", "minicompile/dynamo/guards.py",
           'else "not torch.is_grad_enabled()"],',
           'else "True"],',
           (BS, "-k", "grad_mode_change"),
           "a graph traced under no_grad is reused with grad enabled"),
    Mutant("float_guard_confuses_signed_zero", "minicompile/dynamo/guards.py",
           "(e != e or e == 0 or abs(e) == float(\"inf\"))",
           "(e != e or abs(e) == float(\"inf\"))",
           (BS, "-k", "signed_zero"),
           "a float guard compares -0.0 == 0.0 as equal, so 1 / x keeps the wrong sign"),
    Mutant("dedupe_across_guard_kinds", "minicompile/dynamo/guards.py",
           "key = (g.name, g.kind, g.expected if g.kind is GuardKind.SHAPE_ENV else None)",
           "key = (g.name, g.expected if g.kind is GuardKind.SHAPE_ENV else None)",
           ("tests/test_guards.py", "tests/test_recompiles.py"),
           "two guards of different kinds on one source are deduplicated into one"),
    Mutant("identity_implies_any_class", "minicompile/dynamo/guard_manager.py",
           "if cls.__flags__ & _IMMUTABLETYPE and not issubclass(cls, types.ModuleType):",
           "if True:",
           ("tests/test_guard_manager.py",),
           "the guard tree drops a module's type test after its identity check, though "
           "module.__class__ can be reassigned"),
    Mutant("tensor_check_passes_a_tied_weight_twice", "minicompile/dynamo/guard_manager.py",
           "key = self.root.identity(g.source)",
           "key = g.source",
           ("tests/test_guard_manager.py",),
           "a Parameter read under two paths goes to torch's C tensor check twice, which "
           "refuses aliased arguments: every call falls back to the Python checks"),
    # ---- graph breaks --------------------------------------------------------------------------
    Mutant("break_drops_side_effect_replay", "minicompile/dynamo/graph_break.py",
           "lines = graph_lines + w.codegen.prelude + w.temps + temps + replay + body",
           "lines = graph_lines + w.codegen.prelude + w.temps + temps + body",
           ("tests/test_graph_breaks_side_effects.py",),
           "mutations traced before a break are not replayed before the native instruction"),
    Mutant("break_leaves_grad_mode_changed", "minicompile/dynamo/graph_break.py",
           "if out.initial_grad_mode != torch.is_grad_enabled():  # leave grad mode as we found it",
           "if False:",
           ("tests/test_graph_breaks.py",),
           "the graph before a break inside no_grad does not restore grad mode"),
    # ---- AOT autograd --------------------------------------------------------------------------
    Mutant("functionalize_rebinds_earlier_readers", "minicompile/aot_autograd/functionalize.py",
           "order.get(user, -1) > order[after]",
           "order.get(user, -1) >= 0",
           ("tests/test_aot_autograd.py",),
           "readers of a tensor *before* its in-place update are rewritten to read the new value"),
    Mutant("training_input_mutation_dropped", "minicompile/aot_autograd/runtime_wrappers.py",
           "_copy_back_mutations(args, inside, [outs[k] for k in inside_at])",
           "pass",
           ("tests/test_aot_autograd.py",),
           "the training wrapper forgets to copy mutated inputs back (BN running stats)"),
    Mutant("written_input_copied_unseen_by_autograd",
           "minicompile/aot_autograd/runtime_wrappers.py",
           "args[i].copy_(new)",
           "args[i].detach().copy_(new)",
           ("tests/test_input_mutation.py", "-k", "requires_grad"),
           "an input that requires grad, written in place, takes its new value where autograd "
           "does not see it: its later readers differentiate through its old value"),
    Mutant("written_input_saved_as_it_is", "minicompile/aot_autograd/runtime_wrappers.py",
           "tensors = _apart_from(tensors, [args[i] for i in with_grad])",
           "pass",
           ("tests/test_input_mutation.py", "-k", "old_value_in_backward"),
           "the backward reads an input that requires grad, saved before the write, after it"),
    Mutant("functionalize_drops_defaults", "minicompile/aot_autograd/functionalize.py",
           "_fill_defaults(node, op)  # the variant",
           "pass  # the variant",
           ("tests/test_regressions.py",),
           "issue 17's first bug: x.bernoulli_() becomes bernoulli.p(x) with p missing"),
    # ---- decompositions ------------------------------------------------------------------------
    Mutant("var_default_correction_zero", "minicompile/decompositions/reductions.py",
           "n - (1 if correction is None else correction)",
           "n - (0 if correction is None else correction)",
           ("tests/test_decompositions.py",),
           "var/std default to the biased estimator"),
    Mutant("layer_norm_eps_outside_rsqrt", "minicompile/decompositions/norms.py",
           "rstd = aten.rsqrt.default(aten.add.Tensor(var, eps))  # (B, 1)",
           "rstd = aten.add.Tensor(aten.rsqrt.default(var), eps)  # (B, 1)",
           ("tests/test_decompositions.py",),
           "eps added after the rsqrt instead of under it"),
    Mutant("relu_grad_at_zero", "minicompile/decompositions/activations.py",
           "aten.where.self(aten.le.Scalar(x, threshold),",
           "aten.where.self(aten.lt.Scalar(x, threshold),",
           (BS, "-k", "relu_grad"),
           "threshold_backward passes the gradient where x == threshold (relu at exactly 0)"),
    # ---- inductor lowering and fusion ----------------------------------------------------------
    Mutant("clamp_upper_bound_reads_lower", "minicompile/inductor/lowerings/pointwise.py",
           "v = ops.minimum(v, bs[k])",
           "v = ops.minimum(v, bs[0])",
           ("tests/test_lowering.py",),
           "clamp(x, lo, hi) lowered with lo as the upper bound too"),
    Mutant("fusion_skips_row_check", "minicompile/inductor/fusion.py",
           "if not rows_line_up(writes[dep.name], dep, n):",
           "if False:",
           (BS, "-k", "independent_oracle"),
           "fusion never checks that reads of row-bound values stay in their row"),
    Mutant("diagonal_offset_sign", "minicompile/inductor/lowerings/views.py",
           "sympy.Integer(-offset), sympy.Integer(0))",
           "sympy.Integer(0), sympy.Integer(-offset))",
           (BS, "-k", "windows"),
           "a diagonal below the main one is read above it"),
    Mutant("split_reduction_masks_with_zero", "minicompile/inductor/lowerings/reductions.py",
           "return ops.masked(inside, value, _neutral(reduction_type, src_dtype))",
           "return ops.masked(inside, value, 0)",
           ("tests/test_lowering.py", "-k", "split"),
           "the lanes past the end of a split reduction contribute 0: a max of negatives is 0"),
    Mutant("split_reduction_reads_past_the_end", "minicompile/inductor/lowerings/reductions.py",
           "if splits * chunk == n:",
           "if True:",
           ("tests/test_lowering.py", "-k", "split"),
           "the last chunk of a split reduction is not masked where it runs past the end"),
    Mutant("duplicate_outputs_share_a_buffer", "minicompile/inductor/graph.py",
           "isinstance(x, IRNode) and any(x is y for y in leaves[:k])",
           "isinstance(x, IRNode) and False",
           ("tests/test_fx_passes.py", "-k", "merged_by_cse"),
           "two equal outputs merged by CSE come back as one tensor twice"),
    Mutant("noop_clone_returned_as_input", "minicompile/inductor/fx_passes/pattern_matcher.py",
           "return fresh and not any(u.op == \"output\" for u in new_users)",
           "return True",
           ("tests/test_fx_passes.py", "-k", "fresh_tensor"),
           "x.clone() returned to the caller becomes x itself: writes into it reach the input"),
    Mutant("rewrite_returns_a_view_of_an_input", "minicompile/inductor/fx_passes/pattern_matcher.py",
           "if new is None or not forwardable(node, new):",
           "if new is None or not same_meta(node, new):",
           ("tests/test_fx_passes.py", "-k", "view_of_an_input_fresh or snapshot"),
           "x[:, 0] * 1 returned as x[:, 0]: writes into the result reach the caller's input"),
    Mutant("noop_ignores_storage_offset", "minicompile/inductor/fx_passes/pattern_matcher.py",
           "if any(u.target in _READS_STORAGE for u in old_users):",
           "if False:",
           (BS, "-k", "offset_input"),
           "the clone an offset input is scattered into is removed: writes land at other offsets"),
    Mutant("offset_writes_ignore_the_input_start", "minicompile/aot_autograd/functionalize.py",
           'origin = base.meta.get("view_origin", base_val.storage_offset())',
           "origin = base_val.storage_offset()",
           (BS, "-k", "offset_input or 2d_window"),
           "later writes through views of an offset input count from the copy's start"),
    Mutant("memory_plan_frees_at_first_use", "minicompile/inductor/memory_planning.py",
           "for b in (b for b in lifetimes if b.last == i and not b.is_output):",
           "for b in (b for b in lifetimes if b.first == i and not b.is_output):",
           ("tests/test_codegen_seam.py", "tests/test_scheduler.py", "tests/test_blind_spots.py"),
           "a buffer's storage is handed to the next buffer while it is still to be read"),
    Mutant("memory_plan_reuses_outputs", "minicompile/inductor/memory_planning.py",
           "            b.last = len(kernels)",
           "            pass",
           ("tests/test_codegen_seam.py", "tests/test_scheduler.py", "tests/test_blind_spots.py"),
           "a returned buffer's storage is reused for a later buffer, overwriting the output",
           equivalent="outputs are protected twice: they live to the end of the plan, and "
                      "assign_storage never frees a buffer marked is_output; removing either one "
                      "leaves the other (test_a_returned_buffer_is_never_reused fails when both go)"),
    Mutant("kernel_reads_a_local_before_it_is_computed", "minicompile/inductor/codegen/common.py",
           "if producer.level != \"element\" or producer.is_reduction():",
           "if False:",
           (BS, "-k", "independent_oracle"),
           "a per-row value read before its row is reduced is recomputed per element instead",
           equivalent="the check is an assertion on the scheduler's order: with the fusion rules "
                      "as they are no kernel reads a per-row value before computing it, so no "
                      "program reaches it (tests/test_codegen_seam.py shows a broken fusion rule "
                      "giving wrong answers, which is what the assertion turns into an error)"),
]

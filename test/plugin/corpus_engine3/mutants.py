"""The mutation table of the third engine-style corpus, and its outcomes.

THIRD CORPUS (run_corpus.py --global --corpus-dir corpus_engine3): a
Megatron-LM-style training engine ported to C++/libtorch, sequence
parallelism plus a Mixture-of-Experts layer with expert parallelism
(mesh dp x ep x tp; activations [s, b, h] with the sequence S(0) on tp;
all_gather before the column-parallel linear, reduce_scatter after the
row-parallel one; LayerNorms in the sequence-parallel region whose weight
gradients the optimizer sums over tp; a top-k router, capacity slots,
all_to_all dispatch ep S(1) -> S(0) and combine back, batched expert GEMMs;
TORCH_MODULE holders, a sequence_parallel_ layout flag, size-1 guards, a
TransformerConfig), written and annotated by a new user from the user docs
only, in strict global mode. The other files hold the code after the user's
workarounds; first_try.cpp keeps the shapes as first written, whose false
alarms and strict unknowns are recorded below so that the harness says when
the plugin learns them.

Format and meaning of the fields: as corpus_engine2/mutants.py (`original`
found once in `file`, `replacement` with the same number of lines, `at` the
line where a user wants the error, default the first line of `original`;
`expected` caught / elsewhere / missed as today's plugin does; `typeable`
whether an SPMD type, global types included, can express the bug). The `at`
lines were chosen before the mutants were run: the collective or op that is
wrong; for a reduction left out, the line where the unreduced value is used.

Predicted before the first run and recorded otherwise: dispatch_wrong_axis
(predicted caught: the all_to_all over tp of a tp = V value passes, the ep
shard is caught at the experts' call), router_topk_over_tokens (predicted
caught, as softmax is: missed), sp_layernorm_grad_not_reduced and
router_grad_not_reduced (predicted caught; missed while the step used a
reduction helper typed only on dp and ep, caught since train.cpp declares
SPMD_MESH and inlines the collectives), aux_counts_summed_over_experts
(marked typeable before the run, wrongly).
"""

MUTANTS = [
    # ---- tensor-parallel mappings (mappings.cpp) ----
    dict(id="sp_gather_wrong_dim", file="mappings.cpp",
         original="""  return spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  return spmd::all_gather(input, tp, S(-1), R);""",
         desc="the sequence shard gathered along the hidden dim",
         typeable=True, expected="caught"),
    dict(id="sp_gather_as_all_reduce", file="mappings.cpp",
         original="""  return spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  return spmd::all_reduce(input, tp, P, R);""",
         desc="all_reduce of the sequence shard instead of its all_gather",
         typeable=True, expected="caught"),
    dict(id="sp_gather_dst_invariant", file="mappings.cpp",
         original="""  return spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  return spmd::all_gather(input, tp, S(0), I);""",
         desc="gather to I: the backward would not reduce-scatter the "
              "column-parallel input's gradient",
         typeable=True, expected="caught"),
    dict(id="sp_reduce_scatter_wrong_dim", file="mappings.cpp",
         original="""  return spmd::reduce_scatter(input, tp, P, S(0));""",
         replacement="""  return spmd::reduce_scatter(input, tp, P, S(2));""",
         desc="reduce_scatter onto the hidden dim instead of the sequence",
         typeable=True, expected="caught"),
    dict(id="sp_reduce_scatter_as_all_reduce", file="mappings.cpp",
         original="""  return spmd::reduce_scatter(input, tp, P, S(0));""",
         replacement="""  return spmd::all_reduce(input, tp, P, R);""",
         desc="all_reduce where the sequence-parallel region needs a "
              "reduce_scatter",
         typeable=True, expected="caught"),
    dict(id="sp_reduce_scatter_wrong_axis", file="mappings.cpp",
         original="""  return spmd::reduce_scatter(input, tp, P, S(0));""",
         replacement="""  return spmd::reduce_scatter(input, ep, P, S(0));""",
         desc="the tp pending sum reduce-scattered over the ep group",
         typeable=True, expected="caught"),
    dict(id="sp_reduce_scatter_guard_inverted", file="mappings.cpp",
         original="""  if (world_size == 1) {""",
         replacement="""  if (world_size > 1) {""",
         at="""    return input;
  }
  return spmd::reduce_scatter""",
         desc="size-1 guard inverted: the pending sum returned unreduced on "
              "many ranks",
         typeable=True, expected="caught"),
    dict(id="copy_to_as_all_reduce", file="mappings.cpp",
         original="""  return spmd::convert(input, tp, I, R);""",
         replacement="""  return spmd::all_reduce(input, tp, P, R);""",
         desc="copy-to region written as an all_reduce of the replicated "
              "input (tp copies summed)",
         typeable=True, expected="caught"),
    dict(id="reduce_from_dst_replicate", file="mappings.cpp",
         original="""  return spmd::all_reduce(input, tp, P, I);""",
         replacement="""  return spmd::all_reduce(input, tp, P, R);""",
         desc="reduce-from region to R: the backward would all-reduce the "
              "already whole gradient",
         typeable=True, expected="caught"),
    dict(id="scatter_to_sp_wrong_dim", file="mappings.cpp",
         original="""  return spmd::convert(input, tp, I, S(0));""",
         replacement="""  return spmd::convert(input, tp, I, S(1));""",
         desc="embeddings split along the batch instead of the sequence",
         typeable=True, expected="caught"),
    # ---- linear layers and LayerNorm (layers.cpp) ----
    dict(id="column_sp_gather_missing", file="layers.cpp",
         original="""    input_parallel = gather_from_sequence_parallel_region(input, ps_);""",
         replacement="""    input_parallel = input;""",
         desc="column-parallel linear on the sequence shard without the "
              "all_gather",
         typeable=True, expected="elsewhere"),
    dict(id="column_copy_in_sp_branch", file="layers.cpp",
         original="""    input_parallel = gather_from_sequence_parallel_region(input, ps_);""",
         replacement="""    input_parallel = copy_to_tensor_model_parallel_region(input, ps_);""",
         desc="the copy-to region used on the sequence shard",
         typeable=True, expected="caught"),
    dict(id="column_sp_flag_inverted", file="layers.cpp",
         original="""  if (sequence_parallel_) {
    input_parallel = gather""",
         replacement="""  if (!sequence_parallel_) {
    input_parallel = gather""",
         at="""    input_parallel = gather_from_sequence_parallel_region""",
         desc="sequence_parallel_ test inverted in the column-parallel layer",
         typeable=True, expected="caught"),
    dict(id="row_reduce_scatter_missing", file="layers.cpp",
         original="""    output = reduce_scatter_to_sequence_parallel_region(output_parallel, ps_);""",
         replacement="""    output = output_parallel;""",
         desc="row-parallel output left a pending sum in the SP layout",
         typeable=True, expected="elsewhere"),
    dict(id="row_all_reduce_in_sp", file="layers.cpp",
         original="""    output = reduce_scatter_to_sequence_parallel_region(output_parallel, ps_);""",
         replacement="""    output = reduce_from_tensor_model_parallel_region(output_parallel, ps_);""",
         desc="all-reduce instead of reduce-scatter in the SP layout",
         typeable=True, expected="elsewhere"),
    dict(id="row_bias_before_reduce", file="layers.cpp",
         original="""  auto output_parallel = at::linear(input, weight_);""",
         replacement="""  auto output_parallel = at::linear(input, weight_, bias_);""",
         desc="row-parallel bias added to every rank's partial sum",
         typeable=True, expected="caught"),
    dict(id="row_bias_not_converted", file="layers.cpp",
         original="""      output = output + spmd::convert(bias_.value(), tp, I, R);""",
         replacement="""      output = output + bias_.value();""",
         desc="bias added on the token shard without convert(I, R): its "
              "gradient would not be summed over tp",
         typeable=True, expected="caught"),
    dict(id="row_bias_all_reduced", file="layers.cpp",
         original="""      output = output + spmd::convert(bias_.value(), tp, I, R);""",
         replacement="""      output = output + spmd::all_reduce(bias_.value(), tp, P, R);""",
         desc="the replicated bias all-reduced (tp copies summed)",
         typeable=True, expected="caught"),
    # ---- attention (attention.cpp) ----
    dict(id="qkv_split_along_heads", file="attention.cpp",
         original="""  auto chunks = qkv.chunk(3, -1);""",
         replacement="""  auto chunks = qkv.chunk(3, 2);""",
         desc="q, k, v split along the tp-sharded heads dim",
         typeable=True, expected="caught"),
    dict(id="query_permuted_wrongly", file="attention.cpp",
         original="""  auto q = query.permute({1, 2, 0, 3});""",
         replacement="""  auto q = query.permute({1, 0, 2, 3});""",
         desc="query permuted to [b, s, np, hn]: heads and sequence mixed",
         typeable=True, expected="elsewhere"),
    dict(id="proj_fed_block_input", file="attention.cpp",
         original="""  return linear_proj_(merged);""",
         replacement="""  return linear_proj_(hidden);""",
         desc="the output projection fed the block input",
         typeable=True, expected="caught"),
    dict(id="proj_built_without_sp", file="attention.cpp",
         original="""                                       kSequenceParallel, ps));""",
         replacement="""                                       !kSequenceParallel, ps));""",
         desc="row-parallel projection constructed in the non-SP layout",
         typeable=True, expected="elsewhere"),
    # ---- the block (model.cpp) ----
    dict(id="decoder_scatter_missing", file="model.cpp",
         original="""  auto hidden = scatter_to_sequence_parallel_region(embeddings, ps);""",
         replacement="""  auto hidden = embeddings;""",
         desc="embeddings enter the layers without the scatter to the "
              "sequence-parallel region",
         typeable=True, expected="elsewhere"),
    dict(id="decoder_gather_dst_invariant", file="model.cpp",
         original="""  return gather_from_sequence_parallel_region(hidden, ps);""",
         replacement="""  return spmd::all_gather(hidden, tp, S(0), I);""",
         desc="final gather to I (the output layer's gradient not "
              "reduce-scattered)",
         typeable=True, expected="caught"),
    dict(id="final_layernorm_after_gather", file="model.cpp",
         original="""  hidden = final_layernorm(hidden);
  return gather_from_sequence_parallel_region(hidden, ps);""",
         replacement="""  auto full = gather_from_sequence_parallel_region(hidden, ps);
  return final_layernorm(full);""",
         at="""  return final_layernorm(full);""",
         desc="final LayerNorm on the gathered sequence: every tp rank "
              "computes its weight gradient on all tokens, then the "
              "optimizer sums tp copies",
         typeable=True, expected="caught"),
    dict(id="aux_loss_reduced_over_ep", file="model.cpp",
         original="""    aux_total = aux_total + aux_loss;""",
         replacement="""    aux_total = aux_total + spmd::all_reduce(aux_loss, ep, P, R);""",
         desc="each layer's load-balancing loss all-reduced over ep before "
              "backward (ep copies of its gradient)",
         typeable=True, expected="caught"),
    # ---- mixture of experts (moe.cpp) ----
    dict(id="dispatch_dims_swapped", file="moe.cpp",
         original="""    expert_input = spmd::all_to_all(dispatch, ep, S(1), S(0));""",
         replacement="""    expert_input = spmd::all_to_all(dispatch, ep, S(0), S(1));""",
         desc="all_to_all dispatch with split and concat dims swapped",
         typeable=True, expected="caught"),
    dict(id="combine_dims_swapped", file="moe.cpp",
         original="""    combined = spmd::all_to_all(expert_output, ep, S(0), S(1));""",
         replacement="""    combined = spmd::all_to_all(expert_output, ep, S(1), S(0));""",
         desc="all_to_all combine with split and concat dims swapped",
         typeable=True, expected="caught"),
    dict(id="dispatch_wrong_axis", file="moe.cpp",
         original="""    expert_input = spmd::all_to_all(dispatch, ep, S(1), S(0));""",
         replacement="""    expert_input = spmd::all_to_all(dispatch, tp, S(1), S(0));""",
         desc="tokens dispatched over the tp group instead of ep",
         typeable=True, expected="elsewhere"),
    dict(id="dispatch_as_all_gather", file="moe.cpp",
         original="""    expert_input = spmd::all_to_all(dispatch, ep, S(1), S(0));""",
         replacement="""    expert_input = spmd::all_gather(dispatch, ep, S(1), R);""",
         desc="every rank's slots gathered to every rank instead of sent to "
              "the experts' owners",
         typeable=True, expected="elsewhere"),
    dict(id="dispatch_missing", file="moe.cpp",
         original="""    expert_input = spmd::all_to_all(dispatch, ep, S(1), S(0));""",
         replacement="""    expert_input = dispatch;""",
         desc="local slots fed to this rank's experts without the dispatch",
         typeable=True, expected="elsewhere"),
    dict(id="combine_missing", file="moe.cpp",
         original="""    combined = spmd::all_to_all(expert_output, ep, S(0), S(1));""",
         replacement="""    combined = expert_output;""",
         desc="expert outputs unpermuted without the combine all_to_all",
         typeable=True, expected="elsewhere"),
    dict(id="combine_as_reduce_scatter", file="moe.cpp",
         original="""    combined = spmd::all_to_all(expert_output, ep, S(0), S(1));""",
         replacement="""    combined = spmd::reduce_scatter(expert_output, ep, P, S(1));""",
         desc="combine written as a reduce_scatter of the expert outputs",
         typeable=True, expected="caught"),
    dict(id="dispatch_guard_inverted", file="moe.cpp",
         original="""  if (ps_.ep_world_size() > 1) {
    expert_input""",
         replacement="""  if (ps_.ep_world_size() == 1) {
    expert_input""",
         desc="size-1 guard inverted: no dispatch on many ep ranks",
         typeable=True, expected="elsewhere"),
    dict(id="router_softmax_over_tokens", file="moe.cpp",
         original="""  auto scores = logits.softmax(-1);""",
         replacement="""  auto scores = logits.softmax(0);""",
         desc="router softmax over the (sequence-sharded) tokens",
         typeable=True, expected="caught"),
    dict(id="router_topk_over_tokens", file="moe.cpp",
         original="""  return scores.topk(topk_, -1);""",
         replacement="""  return scores.topk(topk_, 0);""",
         desc="top-k over the tokens instead of the experts",
         typeable=True, expected="missed"),
    dict(id="aux_counts_not_reduced", file="moe.cpp",
         original="""  auto tokens_per_expert = spmd::all_reduce(routing_map.sum({0}), tp, P, I);""",
         replacement="""  auto tokens_per_expert = routing_map.sum({0});""",
         desc="load-balancing counts of this rank's tokens only",
         typeable=True, expected="elsewhere"),
    dict(id="aux_probs_reduced_to_replicate", file="moe.cpp",
         original="""  auto probs_per_expert = spmd::all_reduce(probs.sum({0}), tp, P, I);""",
         replacement="""  auto probs_per_expert = spmd::all_reduce(probs.sum({0}), tp, P, R);""",
         desc="router probabilities reduced to R (the loss's gradient summed "
              "tp times)",
         typeable=True, expected="elsewhere"),
    dict(id="aux_counts_summed_over_experts", file="moe.cpp",
         original="""  auto routing_map = expert_hits.sum({1});""",
         replacement="""  auto routing_map = expert_hits.sum({2});""",
         at="""  auto tokens_per_expert = spmd::all_reduce(""",
         desc="one-hot summed over the experts instead of the k choices "
              "(k counts instead of E: a size, not a type; marked typeable "
              "before the run, wrongly: the token sum still reduces the shard)",
         typeable=False, expected="missed"),
    dict(id="aux_total_tokens_local", file="moe.cpp",
         original="""  const int64_t total_tokens = tokens.size(0) * ps_.tp_world_size();""",
         replacement="""  const int64_t total_tokens = tokens.size(0);""",
         desc="the loss normalised by this rank's token count (a scalar)",
         typeable=False, expected="missed"),
    dict(id="router_weight_unused_probs", file="moe.cpp",
         original="""      compute_capacity_slots(probs, top_indices, num_experts_, capacity);""",
         replacement="""      compute_capacity_slots(top_indices, probs, num_experts_, capacity);""",
         desc="probabilities and indices swapped at the kernel (same types)",
         typeable=False, expected="missed"),
    # ---- finalize grads and step (train.cpp) ----
    dict(id="sp_layernorm_grad_not_reduced", file="train.cpp",
         original="""    g_ln1_w = spmd::all_reduce(g_ln1_w, tp, P, R);""",
         replacement="""    // (layernorm weight: reduced with the dense gradients below)""",
         at="""  p.ln1_weight.sub_(""",
         desc="the sequence-parallel LayerNorm weight's gradient not summed "
              "over tp",
         typeable=True, expected="caught"),
    dict(id="router_grad_not_reduced", file="train.cpp",
         original="""    g_router = spmd::all_reduce(g_router, tp, P, R);""",
         replacement="""    g_router = g_router;""",
         at="""  p.router_weight.sub_(""",
         desc="the router weight's gradient (tokens sharded on tp) not "
              "summed over tp",
         typeable=True, expected="caught"),
    dict(id="sp_grad_reduced_over_dp", file="train.cpp",
         original="""    g_ln1_b = spmd::all_reduce(g_ln1_b, tp, P, R);""",
         replacement="""    g_ln1_b = spmd::all_reduce(g_ln1_b, dp, P, R);""",
         desc="the sequence-parallel gradient reduced over dp instead of tp",
         typeable=True, expected="elsewhere"),
    dict(id="expert_grad_reduced_over_ep", file="train.cpp",
         original="""  auto d_w1 = spmd::all_reduce(spmd::all_reduce(g_w1, tp, P, R), dp, P, R);""",
         replacement="""  auto d_w1 = spmd::all_reduce(spmd::all_reduce(g_w1, tp, P, R), ep, P, R);""",
         desc="expert gradient summed over ep (other ranks' experts added)",
         typeable=True, expected="caught"),
    dict(id="expert_grad_not_reduced_tp", file="train.cpp",
         original="""  auto d_w2 = spmd::all_reduce(spmd::all_reduce(g_w2, tp, P, R), dp, P, R);""",
         replacement="""  auto d_w2 = spmd::all_reduce(g_w2, dp, P, R);""",
         at="""  p.expert_w2.sub_(""",
         desc="expert gradient not summed over the tp ranks that routed "
              "their own tokens",
         typeable=True, expected="caught"),
    dict(id="dense_grad_ep_missing", file="train.cpp",
         original="""  auto d_ln1_b = spmd::all_reduce(spmd::all_reduce(g_ln1_b, ep, P, R), dp, P, R);""",
         replacement="""  auto d_ln1_b = spmd::all_reduce(g_ln1_b, dp, P, R);""",
         at="""  p.ln1_bias.sub_(""",
         desc="dense gradients summed over dp but not over the ep ranks "
              "(which read other micro-batches)",
         typeable=True, expected="caught"),
    dict(id="qkv_grad_reduced_over_tp", file="train.cpp",
         original="""  auto d_qkv_w = spmd::all_reduce(spmd::all_reduce(g_qkv_w, ep, P, R), dp, P, R);""",
         replacement="""  auto d_qkv_w = spmd::all_reduce(spmd::all_reduce(g_qkv_w, tp, P, R), dp, P, R);""",
         desc="column-parallel weight gradient reduced over tp instead of ep",
         typeable=True, expected="caught"),
    dict(id="proj_bias_grad_reduced_twice", file="train.cpp",
         original="""      spmd::all_reduce(spmd::all_reduce(g_proj_b, ep, P, R), dp, P, R);""",
         replacement="""      spmd::all_reduce(spmd::all_reduce(spmd::all_reduce(g_proj_b, tp, P, R), ep, P, R), dp, P, R);""",
         desc="the row-parallel bias gradient (already summed by its "
              "convert) all-reduced over tp again",
         typeable=True, expected="caught"),
    dict(id="expert_step_with_raw_grad", file="train.cpp",
         original="""  p.expert_w1.sub_(d_w1 * lr);""",
         replacement="""  p.expert_w1.sub_(g_w1 * lr);""",
         desc="the unreduced expert gradient applied",
         typeable=True, expected="caught"),
]

EXPECTED_FALSE_ALARMS = [
    # first_try.cpp (1): the row-parallel bias declared R for both layouts
    # (a field takes no SPMD_WHEN); in the layout sequence_parallel_ = false
    # it is added to the all-reduced output, I.
    ("first_try.cpp", "output = output + bias_.value();", "op-type"),
]

LAYOUT_FLAG = "layer built with the run-time config flag"
VIEW = "view merging the sharded dim (sizes not constant)"
ONE_HOT = "one_hot has no sharding rule"
FACTORY_LOCAL = "factory in a local region without SPMD_MESH"
KERNEL = "unannotated capacity kernel's results"
OUT_PARAM = "plain local passed to a declared Tensor& out-parameter"
PARTIAL_HELPER = "helper typed on some axes: result loses the rank"

IDIOMS = [
    ("first_try.cpp", "return proj_(x);", LAYOUT_FLAG),
    ("first_try.cpp", "return hidden.view(", VIEW),
    ("first_try.cpp", "at::one_hot(top_indices, num_experts)", ONE_HOT),
    ("first_try.cpp", "routing_map.sum({0})", ONE_HOT),
    ("first_try.cpp", "at::zeros({1, tokens.size(1)})", FACTORY_LOCAL),
    ("first_try.cpp", "return permute_first_try(", KERNEL),
    ("first_try.cpp", "auto out = layer(hidden, aux_loss);", OUT_PARAM),
    ("first_try.cpp", "allreduce_grad_first_try(g_qkv_w)", PARTIAL_HELPER),
]

EXPECTED_UNKNOWNS = {
    LAYOUT_FLAG: 1,
    VIEW: 1,
    # one at the one_hot, two (the same value, named and unnamed) at the sum
    ONE_HOT: 3,
    FACTORY_LOCAL: 1,
    KERNEL: 1,
    OUT_PARAM: 1,
    PARTIAL_HELPER: 1,
}

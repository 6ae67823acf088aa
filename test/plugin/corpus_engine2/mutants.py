"""The mutation table of the second engine-style corpus, and its outcomes.

SECOND CORPUS (run_corpus.py --global --corpus-dir corpus_engine2): a
ScaleLLM-style Llama engine (ParallelArgs with rank/world_size and size-1
bypasses, region helpers, Impl classes behind TORCH_MODULE holders, layout
flags gather_output / input_is_parallelized, fused QKV with GQA kv-head
replication, fused gate_up, vocab-parallel and dim-parallel embeddings, LM
head with gather, rotary, RMSNorm, a data-parallel SGD step), written and
annotated by a new user from the user docs only, in strict global mode.
Replicated activations are tp = R (an inference engine: no copy-to region).
The other files hold the code after the user's workarounds; first_try.cpp
keeps the shapes as first written, whose false alarms and strict unknowns
are recorded below so that the harness says when the plugin learns them.

Format and meaning of the fields: as corpus_global/mutants.py (`original`
found once in `file`, `replacement` with the same number of lines, `at` the
line where a user wants the error, default the first line of `original`;
`expected` caught / elsewhere / missed as today's plugin does; `typeable`
whether an SPMD type, global types included, can express the bug). The `at`
lines were chosen before the mutants were run.
"""

MUTANTS = [
    # ---- communication regions (parallel.cpp) ----
    dict(id="gather_wrong_dim", file="parallel.cpp",
         original="""  return spmd::all_gather(input, tp, S(-1), R);""",
         replacement="""  return spmd::all_gather(input, tp, S(0), R);""",
         desc="gather of the last-dim shard along dim 0",
         typeable=True, expected="missed"),
    dict(id="gather_via_all_reduce", file="parallel.cpp",
         original="""  return spmd::all_gather(input, tp, S(-1), R);""",
         replacement="""  return spmd::all_reduce(input, tp, P, R);""",
         desc="all_reduce of a feature shard where an all_gather is needed",
         typeable=True, expected="caught"),
    dict(id="reduce_via_all_gather", file="parallel.cpp",
         original="""  return spmd::all_reduce(input, tp, P, R);""",
         replacement="""  return spmd::all_gather(input, tp, S(-1), R);""",
         desc="all_gather (concatenation) of a pending sum",
         typeable=True, expected="caught"),
    dict(id="reduce_wrong_axis", file="parallel.cpp",
         original="""  return spmd::all_reduce(input, tp, P, R);""",
         replacement="""  return spmd::all_reduce(input, dp, P, R);""",
         desc="the tp pending sum reduced over the dp group",
         typeable=True, expected="caught"),
    dict(id="reduce_dst_invariant", file="parallel.cpp",
         original="""  return spmd::all_reduce(input, tp, P, R);""",
         replacement="""  return spmd::all_reduce(input, tp, P, I);""",
         desc="all_reduce to I where the region promises R (the backward "
              "would skip the gradient's reduce)",
         typeable=True, expected="caught"),
    dict(id="reduce_scatter_not_all_reduce", file="parallel.cpp",
         original="""  return spmd::all_reduce(input, tp, P, R);""",
         replacement="""  return spmd::reduce_scatter(input, tp, P, S(-1));""",
         desc="reduce_scatter where every rank needs the whole sum",
         typeable=True, expected="caught"),
    dict(id="scatter_wrong_dim", file="parallel.cpp",
         original="""  return spmd::convert(input, tp, R, S(-1));""",
         replacement="""  return spmd::convert(input, tp, R, S(0));""",
         desc="the row-parallel input split along the tokens",
         typeable=True, expected="missed"),
    dict(id="gather_bypass_inverted", file="parallel.cpp",
         original="""  if (world_size == 1) {
    // bypass if only one gpu""",
         replacement="""  if (world_size != 1) {
    // bypass if only one gpu""",
         desc="size-1 bypass guard inverted: the gather is skipped on many "
              "ranks",
         typeable=True, expected="elsewhere"),
    # ---- linear layers (linear.cpp) ----
    dict(id="column_flag_inverted", file="linear.cpp",
         original="""  if (args_.world_size() > 1 && gather_output_) {""",
         replacement="""  if (args_.world_size() > 1 && !gather_output_) {""",
         desc="gather_output test inverted",
         typeable=True, expected="elsewhere"),
    dict(id="column_flag_ignored", file="linear.cpp",
         original="""  if (args_.world_size() > 1 && gather_output_) {""",
         replacement="""  if (args_.world_size() > 1) {""",
         desc="column-parallel output always gathered",
         typeable=True, expected="elsewhere"),
    dict(id="column_input_scattered", file="linear.cpp",
         original="""  auto output = F::linear(input, weight_, bias_);""",
         replacement="""  auto output = F::linear(scatter_to_tp_region(input, args_), weight_, bias_);""",
         desc="column-parallel input split on the features (its weight "
              "holds every input feature)",
         typeable=True, expected="caught"),
    dict(id="row_bias_before_reduce", file="linear.cpp",
         original="""  auto output = F::linear(input_parallel, weight_);""",
         replacement="""  auto output = F::linear(input_parallel, weight_, bias_);""",
         desc="row-parallel bias inside linear: added on every rank before "
              "the reduce",
         typeable=True, expected="caught"),
    dict(id="row_missing_reduce", file="linear.cpp",
         original="""    output = reduce_from_tp_region(output, args_);""",
         replacement="""    output = output.contiguous();""",
         at="""    output.add_(bias_);""",
         desc="row-parallel pending sum never reduced",
         typeable=True, expected="caught"),
    dict(id="row_double_reduce", file="linear.cpp",
         original="""    output = reduce_from_tp_region(output, args_);""",
         replacement="""    output = reduce_from_tp_region(reduce_from_tp_region(output, args_), args_);""",
         desc="row-parallel output reduced twice (tp times too large)",
         typeable=True, expected="caught"),
    dict(id="row_missing_scatter", file="linear.cpp",
         original="""    input_parallel = scatter_to_tp_region(input, args_);""",
         replacement="""    input_parallel = input;""",
         at="""  auto output = F::linear(input_parallel, weight_);""",
         desc="input_is_parallelized=false layout uses the whole input",
         typeable=True, expected="caught"),
    dict(id="row_flag_inverted", file="linear.cpp",
         original="""  if (!input_is_parallelized_) {""",
         replacement="""  if (input_is_parallelized_) {""",
         at="""    input_parallel = scatter_to_tp_region(input, args_);""",
         desc="input_is_parallelized test inverted: the split input split "
              "again",
         typeable=True, expected="caught"),
    dict(id="row_bias_scaled", file="linear.cpp",
         original="""    output.add_(bias_);""",
         replacement="""    output.add_(bias_ / args_.world_size());""",
         desc="bias divided by world_size although added after the reduce "
              "(a value bug)",
         typeable=False, expected="missed"),
    dict(id="qkv_kv_heads_not_replicated", file="linear.cpp",
         original="""    effective_kv_heads = world_size;""",
         replacement="""    effective_kv_heads = n_kv_heads;""",
         desc="GQA with tp > n_kv_heads: kv heads not replicated (0 local "
              "kv heads); sizes, not types",
         typeable=False, expected="missed"),
    dict(id="qkv_local_heads_not_split", file="linear.cpp",
         original="""  n_local_heads_ = n_heads / world_size;""",
         replacement="""  n_local_heads_ = n_heads;""",
         desc="query heads not divided among the ranks (sizes)",
         typeable=False, expected="missed"),
    dict(id="qkv_k_v_swapped", file="linear.cpp",
         original="""  auto k = qkv.narrow(-1, q_size, kv_size);""",
         replacement="""  auto k = qkv.narrow(-1, q_size + kv_size, kv_size);""",
         desc="k taken from v's columns in the per-rank split",
         typeable=False, expected="missed"),
    dict(id="qkv_gathered", file="linear.cpp",
         original="""  auto qkv = F::linear(input, weight_);""",
         replacement="""  auto qkv = gather_from_tp_region(F::linear(input, weight_), args_);""",
         at="""  return split_qkv_local(qkv, q_size, kv_size);""",
         desc="fused QKV gathered before the per-rank split",
         typeable=True, expected="caught"),
    # ---- embeddings (embedding.cpp) ----
    dict(id="vocab_mask_missing", file="embedding.cpp",
         original="""  output.masked_fill_(input_mask.unsqueeze(-1), 0);""",
         replacement="""  // rows of ids owned by other ranks: nothing to do""",
         at="""  return reduce_from_tp_region(output, args_);""",
         desc="rows of out-of-shard ids not zeroed before the sum",
         typeable=True, expected="caught"),
    dict(id="vocab_mask_wrong_value", file="embedding.cpp",
         original="""  output.masked_fill_(input_mask.unsqueeze(-1), 0);""",
         replacement="""  output.masked_fill_(input_mask.unsqueeze(-1), 1);""",
         at="""  return reduce_from_tp_region(output, args_);""",
         desc="out-of-shard rows filled with 1 instead of 0",
         typeable=True, expected="caught"),
    dict(id="vocab_ids_not_shifted", file="embedding.cpp",
         original="""  auto masked_input = input - start_index_;""",
         replacement="""  auto masked_input = input * 1;""",
         desc="global ids used as local row numbers (a value bug)",
         typeable=False, expected="missed"),
    dict(id="vocab_no_reduce", file="embedding.cpp",
         original="""  return reduce_from_tp_region(output, args_);""",
         replacement="""  return output;""",
         desc="vocab-parallel lookup returned without its all_reduce",
         typeable=True, expected="caught"),
    dict(id="vocab_gather_not_reduce", file="embedding.cpp",
         original="""  return reduce_from_tp_region(output, args_);""",
         replacement="""  return gather_from_tp_region(output, args_);""",
         desc="vocab-parallel lookup gathered (concatenated) instead of "
              "summed",
         typeable=True, expected="caught"),
    dict(id="vocab_bypass_always", file="embedding.cpp",
         original="""  if (args_.world_size() == 1) {""",
         replacement="""  if (args_.world_size() >= 1) {""",
         at="""    return F::embedding(input, weight_);""",
         desc="bypass guard always true: this rank's rows only",
         typeable=True, expected="caught"),
    dict(id="dim_embedding_no_gather", file="embedding.cpp",
         original="""    output = gather_from_tp_region(output, args_);""",
         replacement="""    output = output.contiguous();""",
         at="""  return output;""",
         desc="embedding-dim-parallel lookup not gathered",
         typeable=True, expected="caught"),
    dict(id="dim_embedding_reduced", file="embedding.cpp",
         original="""    output = gather_from_tp_region(output, args_);""",
         replacement="""    output = reduce_from_tp_region(output, args_);""",
         desc="embedding-dim shards summed instead of gathered",
         typeable=True, expected="caught"),
    # ---- model (model.cpp) ----
    dict(id="mlp_gate_up_gathered", file="model.cpp",
         original="""                           /*bias=*/false, /*gather_output=*/false, args));""",
         replacement="""                           /*bias=*/false, /*gather_output=*/true, args));""",
         at="""  return down_proj_(silu_and_mul(gate_up));""",
         desc="gate_up built with gather_output=true: the per-rank split "
              "gets the whole tensor",
         typeable=True, expected="caught"),
    dict(id="mlp_down_not_parallel", file="model.cpp",
         original="""                        /*bias=*/false, /*input_is_parallelized=*/true, args));""",
         replacement="""                        /*bias=*/false, /*input_is_parallelized=*/false, args));""",
         at="""  return down_proj_(silu_and_mul(gate_up));""",
         desc="down_proj built for a whole input, fed the split activation",
         typeable=True, expected="caught"),
    dict(id="o_proj_not_parallel", file="model.cpp",
         original="""                                  /*input_is_parallelized=*/true, args));""",
         replacement="""                                  /*input_is_parallelized=*/false, args));""",
         at="""  return o_proj_(context);""",
         desc="o_proj built for a whole input, fed the heads' shard",
         typeable=True, expected="caught"),
    dict(id="lm_head_not_gathered", file="model.cpp",
         original="""                                      /*bias=*/false, /*gather_output=*/true,""",
         replacement="""                                      /*bias=*/false, /*gather_output=*/false,""",
         at="""  return lm_head_(h);""",
         desc="LM head without gather: each rank samples from its vocab "
              "slice",
         typeable=True, expected="caught"),
    dict(id="softmax_over_heads", file="model.cpp",
         original="""  auto probs = torch::softmax(scores, -1);""",
         replacement="""  auto probs = torch::softmax(scores, 0);""",
         desc="attention softmax along the heads dim, which tp shards",
         typeable=True, expected="caught"),
    dict(id="gate_up_chunk_wrong_dim", file="model.cpp",
         original="""  auto chunks = gate_up.chunk(2, -1);""",
         replacement="""  auto chunks = gate_up.chunk(2, 0);""",
         desc="gate/up split along the tokens inside the per-rank helper",
         typeable=False, expected="missed"),
    dict(id="gqa_repeat_missing", file="model.cpp",
         original="""    k = repeat_kv(k, n_rep);""",
         replacement="""    k = k.contiguous();""",
         desc="GQA kv heads not repeated for the query heads (sizes)",
         typeable=False, expected="missed"),
    dict(id="context_not_transposed", file="model.cpp",
         original="""  auto context = torch::matmul(probs, vt).transpose(0, 1);""",
         replacement="""  auto context = torch::matmul(probs, vt).contiguous();""",
         desc="context left [heads, tokens, dim] before the merge of the "
              "heads (the assert_type after the reshape restates S(1))",
         typeable=False, expected="missed"),
    # ---- data-parallel training step (train.cpp) ----
    dict(id="dp_grad_sync_missing", file="train.cpp",
         original="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         replacement="""  if (args.dp_size() > 1) {
    // the optimizer averages later
  }
  g = g / static_cast<double>(args.dp_size());""",
         at="""  weight.sub_(g * lr);""",
         desc="column weight stepped with its replica's gradient only",
         typeable=True, expected="caught"),
    dict(id="dp_grad_sync_wrong_axis", file="train.cpp",
         original="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         replacement="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, tp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         at="""    g = spmd::all_reduce(g, tp, P, R);
  }
  g = g / static_cast<double>""",
         desc="the dp gradient sync done over tp (sums the shards)",
         typeable=True, expected="caught"),
    dict(id="dp_grad_sync_to_invariant", file="train.cpp",
         original="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         replacement="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, I);
  }
  g = g / static_cast<double>(args.dp_size());""",
         at="""  weight.sub_(g * lr);""",
         desc="gradient reduced to I, stepped into an R weight",
         typeable=True, expected="caught"),
    dict(id="replicated_grad_tp_sync_missing", file="train.cpp",
         original="""  if (args.world_size() > 1) {
    g = spmd::all_reduce(g, tp, P, R);
  }""",
         replacement="""  if (args.world_size() > 1) {
    // replicated over tp: nothing to sum
  }""",
         at="""  weight.sub_(g * (lr / args.dp_size()));""",
         desc="a replicated parameter's gradient not summed over tp (the "
              "sequence-parallel norm-weight bug)",
         typeable=True, expected="caught"),
    dict(id="replicated_grad_dp_sync_missing", file="train.cpp",
         original="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  weight.sub_(g * (lr / args.dp_size()));""",
         replacement="""  if (args.dp_size() > 1) {
    // the optimizer averages later
  }
  weight.sub_(g * (lr / args.dp_size()));""",
         at="""  weight.sub_(g * (lr / args.dp_size()));""",
         desc="a replicated parameter's gradient not summed over dp",
         typeable=True, expected="caught"),
    dict(id="loss_not_reduced", file="train.cpp",
         original="""    total = spmd::all_reduce(spmd::reinterpret(local_loss, dp, V, P), dp, P, R);""",
         replacement="""    total = local_loss * 1.0;""",
         at="""  return total / static_cast<double>(args.dp_size());""",
         desc="each replica logs its own loss as the mean",
         typeable=True, expected="caught"),
    dict(id="dp_grad_not_averaged", file="train.cpp",
         original="""  g = g / static_cast<double>(args.dp_size());""",
         replacement="""  g = g * 1.0;""",
         desc="summed gradient not divided by the replicas (a value bug)",
         typeable=False, expected="missed"),
    # ---- added with the KV cache (model.cpp) and more collectives ----
    dict(id="kv_cache_cat_heads", file="model.cpp",
         original="""    key_cache_ = torch::cat({key_cache_, k}, /*dim=*/0);""",
         replacement="""    key_cache_ = torch::cat({key_cache_, k}, /*dim=*/1);""",
         desc="new keys appended along the (sharded) heads dim",
         typeable=True, expected="caught"),
    dict(id="kv_cache_stores_gathered", file="model.cpp",
         original="""    key_cache_ = torch::cat({key_cache_, k}, /*dim=*/0);""",
         replacement="""    key_cache_ = torch::cat({key_cache_, spmd::all_gather(k, tp, S(1), R)}, /*dim=*/0);""",
         desc="every rank caches all heads' keys into its per-rank cache",
         typeable=True, expected="caught"),
    dict(id="kv_cache_v_from_k", file="model.cpp",
         original="""    value_cache_ = torch::cat({value_cache_, v}, /*dim=*/0);""",
         replacement="""    value_cache_ = torch::cat({value_cache_, k}, /*dim=*/0);""",
         desc="keys appended to the value cache (copy-paste)",
         typeable=False, expected="missed"),
    dict(id="kv_cache_result_dropped", file="model.cpp",
         original="""  std::tie(k, v) = kv_cache.append(k, v);""",
         replacement="""  kv_cache.append(k, v);""",
         desc="attention over this step's tokens only",
         typeable=False, expected="missed"),
    dict(id="gather_wrong_axis", file="parallel.cpp",
         original="""  return spmd::all_gather(input, tp, S(-1), R);""",
         replacement="""  return spmd::all_gather(input, dp, S(-1), R);""",
         desc="the tp shard gathered over the dp group",
         typeable=True, expected="caught"),
    dict(id="reduce_bypass_inverted", file="parallel.cpp",
         original="""  if (world_size == 1) {
    return input;
  }
  return spmd::all_reduce(input, tp, P, R);""",
         replacement="""  if (world_size != 1) {
    return input;
  }
  return spmd::all_reduce(input, tp, P, R);""",
         at="""    return input;
  }
  return spmd::all_reduce(input, tp, P, R);""",
         desc="size-1 bypass inverted: the pending sum returned unreduced "
              "on many ranks",
         typeable=True, expected="caught"),
    dict(id="dp_grad_reduced_twice", file="train.cpp",
         original="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         replacement="""  if (args.dp_size() > 1) {
    g = spmd::all_reduce(spmd::all_reduce(g, dp, P, R), dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());""",
         at="""    g = spmd::all_reduce(spmd::all_reduce(g, dp, P, R), dp, P, R);""",
         desc="gradient summed over dp twice (dp times too large)",
         typeable=True, expected="caught"),
    dict(id="loss_reduced_over_tp", file="train.cpp",
         original="""    total = spmd::all_reduce(spmd::reinterpret(local_loss, dp, V, P), dp, P, R);""",
         replacement="""    total = spmd::all_reduce(spmd::reinterpret(local_loss, tp, V, P), tp, P, R);""",
         desc="replica losses summed over the tp group",
         typeable=True, expected="caught"),
    # ---- attention through an opaque kernel (kernels.cpp) ----
    dict(id="handler_gets_gathered_k", file="kernels.cpp",
         original="""  handler.batch_prefill(q, k, v, output);""",
         replacement="""  handler.batch_prefill(q, spmd::all_gather(k, tp, S(1), R), v, output);""",
         desc="every head's keys handed to the per-rank attention",
         typeable=True, expected="caught"),
    dict(id="kernel_gets_gathered_k", file="kernels.cpp",
         original="""    flash_attn_varlen_fwd(q, k, v, output, scale_);""",
         replacement="""    flash_attn_varlen_fwd(q, spmd::all_gather(k, tp, S(1), R), v, output, scale_);""",
         desc="the same, one level down: at the CUDA kernel (missed while "
              "its declaration had no types; strict mode's opaque-call made "
              "the user annotate it)",
         typeable=True, expected="caught"),
    dict(id="handler_output_gathered", file="kernels.cpp",
         original="""  auto output = torch::zeros_like(q);""",
         replacement="""  auto output = torch::zeros_like(spmd::all_gather(q, tp, S(1), R));""",
         at="""  handler.batch_prefill(q, k, v, output);""",
         desc="the output buffer sized for every head",
         typeable=True, expected="caught"),
]

EXPECTED_FALSE_ALARMS = [
    # first_try.cpp, (2) is learned: the masked lookup is P.
]

EXPAND = "expand with non-constant sizes"
ANNOTATED_V = "dp = V reduced by all_reduce(P)"
EMPTY_RESET = "annotated field reset to an undefined tensor"
OPAQUE_KERNEL = "unannotated kernel called (opaque-call)"

# Learned (0 unknowns each, kept so that a regression is named): the expand
# keeps the shard (test/plugin/global_expand_variable_sizes.cpp), a declared
# V reduced as P needs no dim (strict_declared_v_reduce.cpp), and a reset to
# an undefined tensor keeps the field's type (model.cpp's KVCache::clear(),
# strict_undefined_tensor_reset.cpp).
IDIOMS = [
    ("first_try.cpp", "k.unsqueeze(2)", EXPAND),
    ("first_try.cpp", "return spmd::all_reduce(local_loss, dp, P, R)",
     ANNOTATED_V),
    ("model.cpp", "_cache_ = torch::Tensor();", EMPTY_RESET),
    ("first_try.cpp", "flash_attn_first_try(q, k, v, out, scale);",
     OPAQUE_KERNEL),
]

EXPECTED_UNKNOWNS = {
    EXPAND: 0,
    ANNOTATED_V: 0,
    EMPTY_RESET: 0,
    OPAQUE_KERNEL: 1,
}

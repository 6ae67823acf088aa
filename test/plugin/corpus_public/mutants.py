"""The mutation table of the public-code corpus, and its outcomes.

PUBLIC CORPUS (run_corpus.py --global --corpus-dir corpus_public): code
from public projects, annotated by a new user from the user docs only, in
strict global mode (docs/getting-started.md, "Two modes": "global mode with
`strict` for new code; it catches the most"). Provenance per file in
PROVENANCE.md and in each file's header:

* mappings.cpp, layers.cpp, apex.h: NVIDIA/apex apex.transformer
  tensor_parallel (mappings.py, layers.py), Python only, ported line by
  line to libtorch C++: Megatron-style tensor and sequence parallelism
  (copy_to / reduce_from / scatter / gather, VocabParallelEmbedding,
  ColumnParallelLinear and RowParallelLinear with gather_output,
  input_is_parallel, skip_bias_add, sequence_parallel_enabled and the
  async gradient all-reduce, the linear's backward written out).
* cross_entropy.cpp: NVIDIA/apex tensor_parallel/cross_entropy.py
  (ported): the vocab-parallel cross entropy's forward.
* dist_mnist.cpp: pytorch/examples cpp/distributed/dist-mnist.cpp (real
  libtorch C++): data parallelism with a c10d process group, gradients
  all-reduced and averaged after backward.
* first_try.cpp, first_try_mnist.cpp: layers.cpp and dist_mnist.cpp as
  first annotated, before the workarounds; their false alarms and strict
  unknowns are recorded below so that the harness says when the plugin
  learns these idioms.

Format and meaning of the fields: as corpus_engine3/mutants.py
(`original` found once in `file`, `replacement` with the same number of
lines, `at` the line where a user wants the error, default the first line
of `original`; `expected` caught / elsewhere / missed as today's plugin
does; `typeable` whether an SPMD type, global types included, can express
the bug). The `at` lines and `typeable` were chosen before the mutants were
run; `predicted` is the outcome guessed then (where it differs from
`expected`, the plugin surprised the user).
"""

MUTANTS = [
    # ---- mappings.cpp (apex tensor_parallel/mappings.py) ----
    dict(id="reduce_forgotten", file="mappings.cpp",
         original="""  return spmd::all_reduce(input_, tp, P, I);""",
         replacement="""  return input_;""",
         desc="_reduce returns the pending sum without the all-reduce",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="reduce_to_replicate", file="mappings.cpp",
         original="""  return spmd::all_reduce(input_, tp, P, I);""",
         replacement="""  return spmd::all_reduce(input_, tp, P, R);""",
         desc="g all-reduces to R: its backward would all-reduce the "
              "gradient again (copy_to's job)",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="split_last_wrong_dim", file="mappings.cpp",
         original="""  Tensor output = spmd::convert(input_, tp, I, S(-1));""",
         replacement="""  Tensor output = spmd::convert(input_, tp, I, S(0));""",
         desc="scatter_to_tensor_model_parallel_region splits the sequence "
              "instead of the hidden dim",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="split_first_wrong_dim", file="mappings.cpp",
         original="""  Tensor output = spmd::convert(input_, tp, I, S(0));""",
         replacement="""  Tensor output = spmd::convert(input_, tp, I, S(-1));""",
         desc="scatter_to_sequence_parallel_region splits the hidden dim",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="gather_last_wrong_dim", file="mappings.cpp",
         original="""  Tensor output = spmd::all_gather(input_, tp, S(-1), I);""",
         replacement="""  Tensor output = spmd::all_gather(input_, tp, S(0), I);""",
         desc="the hidden shard gathered along the sequence",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="gather_last_to_replicate", file="mappings.cpp",
         original="""  Tensor output = spmd::all_gather(input_, tp, S(-1), I);""",
         replacement="""  Tensor output = spmd::all_gather(input_, tp, S(-1), R);""",
         desc="gather to R: its backward reduce-scatters a gradient that "
              "the split backward of apex only slices",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="gather_first_as_all_reduce", file="mappings.cpp",
         original="""  Tensor output = spmd::all_gather(input_.contiguous(), tp, S(0), R);""",
         replacement="""  Tensor output = spmd::all_reduce(input_.contiguous(), tp, P, R);""",
         desc="all_reduce of the sequence shard instead of its all_gather",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="gather_first_no_backward_reduce_scatter", file="mappings.cpp",
         original="""  Tensor output = spmd::all_gather(input_.contiguous(), tp, S(0), R);""",
         replacement="""  Tensor output = spmd::all_gather(input_.contiguous(), tp, S(0), I);""",
         desc="all_gather without the backward reduce-scatter (to I)",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="reduce_scatter_wrong_dim", file="mappings.cpp",
         original="""  Tensor output = spmd::reduce_scatter(input_.contiguous(), tp, P, S(0));""",
         replacement="""  Tensor output = spmd::reduce_scatter(input_.contiguous(), tp, P, S(1));""",
         desc="reduce_scatter onto the batch instead of the sequence",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="reduce_scatter_as_all_reduce", file="mappings.cpp",
         original="""  Tensor output = spmd::reduce_scatter(input_.contiguous(), tp, P, S(0));""",
         replacement="""  Tensor output = spmd::all_reduce(input_.contiguous(), tp, P, R);""",
         desc="all_reduce where the sequence-parallel region needs a "
              "reduce_scatter",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="reduce_scatter_guard_inverted", file="mappings.cpp",
         original="""  if (world_size == 1) {
    return input_;
  }
  TORCH_CHECK(input_.size(0) % world_size == 0);""",
         replacement="""  if (world_size > 1) {
    return input_;
  }
  TORCH_CHECK(input_.size(0) % world_size == 0);""",
         at="""  if (world_size > 1) {""",
         desc="size-1 guard inverted: the pending sum returned unreduced on "
              "many ranks",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="copy_to_as_all_reduce", file="mappings.cpp",
         original="""  return spmd::convert(input_, tp, I, R);""",
         replacement="""  return spmd::all_reduce(input_, tp, P, R);""",
         desc="copy_to and reduce_from swapped: f all-reduces in the forward",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="copy_to_identity", file="mappings.cpp",
         original="""  return spmd::convert(input_, tp, I, R);""",
         replacement="""  return input_;""",
         desc="copy_to returns its input: the backward would not all-reduce "
              "the column-parallel input's gradient",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="reduce_from_identity", file="mappings.cpp",
         original="""  return _reduce(input_);""",
         replacement="""  return input_;""",
         desc="reduce_from returns the pending sum unreduced",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="scatter_calls_gather", file="mappings.cpp",
         original="""  return _split_along_last_dim(input_);""",
         replacement="""  return _gather_along_last_dim(input_);""",
         desc="scatter_to region calls the gather helper",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="sequence_gather_calls_split", file="mappings.cpp",
         original="""  return _gather_along_first_dim(input_);""",
         replacement="""  return _split_along_first_dim(input_);""",
         desc="gather_from_sequence region calls the split helper",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="sequence_reduce_scatter_calls_reduce", file="mappings.cpp",
         original="""  return _reduce_scatter_along_first_dim(input_);""",
         replacement="""  return _reduce(input_);""",
         desc="reduce_scatter_to_sequence region all-reduces instead",
         typeable=True, predicted="caught", expected="caught"),

    # ---- layers.cpp (apex tensor_parallel/layers.py) ----
    dict(id="embedding_output_not_masked", file="layers.cpp",
         original="""      output_parallel.masked_fill_(input_mask.unsqueeze(-1), 0.0);""",
         replacement="""      (void)input_mask;""",
         at="""    Tensor output = reduce_from_tensor_model_parallel_region(output_parallel);""",
         desc="rows of ids outside this rank's vocabulary not zeroed before "
              "the all-reduce",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="embedding_not_reduced", file="layers.cpp",
         original="""    Tensor output = reduce_from_tensor_model_parallel_region(output_parallel);""",
         replacement="""    Tensor output = output_parallel;""",
         desc="vocab-parallel lookup returned without the all-reduce",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="embedding_ids_not_shifted", file="layers.cpp",
         original="""      masked_input = input_.clone() - vocab_start_index_;""",
         replacement="""      masked_input = input_.clone();""",
         desc="global ids used as local rows (no - vocab_start_index)",
         typeable=False, predicted="missed", expected="missed"),
    dict(id="column_sp_gather_to_invariant", file="layers.cpp",
         original="""  Tensor total_input = spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  Tensor total_input = spmd::all_gather(input, tp, S(0), I);""",
         desc="sequence gather to I: the column input's gradient is not "
              "reduce-scattered",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="column_sp_gather_wrong_dim", file="layers.cpp",
         original="""  Tensor total_input = spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  Tensor total_input = spmd::all_gather(input, tp, S(-1), R);""",
         desc="sequence shard gathered along the hidden dim",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="column_sp_not_gathered", file="layers.cpp",
         original="""  Tensor total_input = spmd::all_gather(input, tp, S(0), R);""",
         replacement="""  Tensor total_input = input;""",
         at="""  Tensor output = at::matmul(total_input, weight.t());
  if (bias.has_value()) {
    output = output + *bias;
  }
  return output;
}

/// LinearWithGradAccumulationAndAsyncCommunication.backward""",
         desc="sequence shard multiplied without the all_gather",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="column_copy_to_forgotten", file="layers.cpp",
         original="""        input_parallel = copy_to_tensor_model_parallel_region(input_);""",
         replacement="""        input_parallel = input_;""",
         at="""      output_parallel = linear_with_grad_accumulation_and_async_allreduce(""",
         desc="column-parallel input without copy_to: its gradient is never "
              "summed over tp",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="column_copy_to_as_reduce_from", file="layers.cpp",
         original="""        input_parallel = copy_to_tensor_model_parallel_region(input_);""",
         replacement="""        input_parallel = reduce_from_tensor_model_parallel_region(input_);""",
         desc="reduce_from where copy_to belongs",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="column_async_convert_forgotten", file="layers.cpp",
         original="""        input_parallel = spmd::convert(input_, tp, I, R);""",
         replacement="""        input_parallel = input_;""",
         at="""      output_parallel = linear_with_grad_accumulation_and_async_allreduce(""",
         desc="async path: the input passed on as I",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="column_gather_output_forgotten", file="layers.cpp",
         original="""      output = gather_from_tensor_model_parallel_region(output_parallel);""",
         replacement="""      output = output_parallel;""",
         at="""    return {output, output_bias};
  }

 private:
  int64_t input_size_;
  int64_t output_size_;
  bool gather_output_;""",
         desc="gather_output layout returns this rank's columns",
         typeable=True, predicted="caught", expected="missed"),
    dict(id="column_gather_output_wrong_region", file="layers.cpp",
         original="""      output = gather_from_tensor_model_parallel_region(output_parallel);""",
         replacement="""      output = gather_from_sequence_parallel_region(output_parallel);""",
         desc="the column output gathered along the sequence",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="row_not_reduced", file="layers.cpp",
         original="""      output_ = reduce_from_tensor_model_parallel_region(output_parallel);""",
         replacement="""      output_ = output_parallel;""",
         at="""          output = output_ + *bias_;""",
         desc="row-parallel output without the all-reduce",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="row_bias_before_reduce", file="layers.cpp",
         original="""    Tensor output_parallel = at::matmul(input_parallel, weight_.t());""",
         replacement="""    Tensor output_parallel = at::matmul(input_parallel, weight_.t()) + *bias_;""",
         desc="bias added to the pending sum before the reduce",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="row_sp_all_reduce", file="layers.cpp",
         original="""      output_ = reduce_scatter_to_sequence_parallel_region(output_parallel);""",
         replacement="""      output_ = reduce_from_tensor_model_parallel_region(output_parallel);""",
         at="""    return {output, output_bias};
  }

 private:
  int64_t input_size_;
  int64_t output_size_;
  bool input_is_parallel_;""",
         desc="sequence-parallel row output all-reduced, not "
              "reduce-scattered",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="row_input_not_scattered", file="layers.cpp",
         original="""      input_parallel = scatter_to_tensor_model_parallel_region(input_);""",
         replacement="""      input_parallel = input_;""",
         at="""    Tensor output_parallel = at::matmul(input_parallel, weight_.t());""",
         desc="the whole input multiplied by this rank's rows",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="row_input_gathered", file="layers.cpp",
         original="""      input_parallel = scatter_to_tensor_model_parallel_region(input_);""",
         replacement="""      input_parallel = gather_from_tensor_model_parallel_region(input_);""",
         desc="gather where the scatter belongs",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="row_sp_bias_grad_not_summed", file="layers.cpp",
         original="""          output = output_ + spmd::convert(*bias_, tp, I, R);""",
         replacement="""          output = output_ + *bias_;""",
         desc="sequence-parallel bias whose gradient is never summed over tp",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="backward_async_grad_not_reduced", file="layers.cpp",
         original="""  grad_input = spmd::all_reduce(grad_input, tp, P, R);""",
         replacement="""  grad_input = grad_input * 1;""",
         at="""  grad_input = grad_input * 1;
  return grad_input;""",
         desc="async path: the input gradient's all-reduce forgotten",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="backward_sp_all_reduce", file="layers.cpp",
         original="""  Tensor sub_grad_input = spmd::reduce_scatter(grad_input, tp, P, S(0));""",
         replacement="""  Tensor sub_grad_input = spmd::all_reduce(grad_input, tp, P, R);""",
         at="""  return sub_grad_input;""",
         desc="sequence-parallel input gradient all-reduced, not "
              "reduce-scattered",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="backward_sp_wrong_dim", file="layers.cpp",
         original="""  Tensor sub_grad_input = spmd::reduce_scatter(grad_input, tp, P, S(0));""",
         replacement="""  Tensor sub_grad_input = spmd::reduce_scatter(grad_input, tp, P, S(2));""",
         desc="input gradient reduce-scattered onto the hidden dim",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="grad_bias_wrong_dim", file="layers.cpp",
         original="""    grad_bias = grad_output.sum({0});""",
         replacement="""    grad_bias = grad_output.sum({1});""",
         desc="bias gradient summed over the sharded features",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="grad_view_relabelled_wrong", file="layers.cpp",
         original="""  grad_output = spmd::assert_type(grad_output, {tp = S(1)});  // workaround""",
         replacement="""  grad_output = spmd::assert_type(grad_output, {tp = S(0)});  // workaround""",
         at="""    grad_weight = grad_output.t().matmul(total_input);""",
         desc="the flattened gradient relabelled on the token dim",
         typeable=True, predicted="caught", expected="caught"),

    # ---- dist_mnist.cpp (pytorch/examples cpp/distributed) ----
    dict(id="dp_grad_all_reduce_forgotten", file="dist_mnist.cpp",
         original="""  Tensor summed = spmd::all_reduce(g, dp, P, R);""",
         replacement="""  Tensor summed = g;""",
         at="""  return summed / numranks;""",
         desc="the gradient averaged without the all-reduce",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="dp_grad_not_averaged", file="dist_mnist.cpp",
         original="""  return summed / numranks;""",
         replacement="""  return summed;""",
         desc="the summed gradient not divided by the number of ranks",
         typeable=False, predicted="missed", expected="missed"),
    dict(id="dp_step_with_local_grad", file="dist_mnist.cpp",
         original="""    param->sub_(avg * learning_rate);""",
         replacement="""    param->sub_(g * learning_rate);""",
         desc="the optimizer steps with this rank's gradient, not the "
              "average",
         typeable=True, predicted="caught", expected="missed"),
    dict(id="dp_batch_gathered", file="dist_mnist.cpp",
         original="""  auto prediction = model.forward(ip);""",
         replacement="""  auto prediction = model.forward(spmd::all_gather(ip, dp, S(0), R));""",
         desc="every rank trains on the whole batch",
         typeable=True, predicted="caught", expected="caught"),
    # ---- cross_entropy.cpp (apex tensor_parallel/cross_entropy.py) ----
    dict(id="ce_max_not_gathered", file="cross_entropy.cpp",
         original="""  Tensor logits_max = spmd::all_gather(local_logits_max(vocab_parallel_logits),
                                       tp, S(-1), R)""",
         replacement="""  Tensor logits_max = local_logits_max(vocab_parallel_logits)
                                       /* no all-reduce MAX */""",
         desc="each rank subtracts its own maximum (the all-reduce MAX "
              "forgotten)",
         typeable=True, predicted="caught", expected="elsewhere"),
    dict(id="ce_predicted_not_reduced", file="cross_entropy.cpp",
         original="""  predicted_logits = spmd::all_reduce(predicted_logits, tp, P, R);""",
         replacement="""  predicted_logits = predicted_logits * 1;""",
         at="""  Tensor loss = sum_exp_logits.log() - predicted_logits;""",
         desc="the predicted logit's all-reduce forgotten",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="ce_sum_exp_not_reduced", file="cross_entropy.cpp",
         original="""  sum_exp_logits = spmd::all_reduce(sum_exp_logits, tp, P, R);""",
         replacement="""  sum_exp_logits = sum_exp_logits * 1;""",
         at="""  Tensor loss = sum_exp_logits.log() - predicted_logits;""",
         desc="the log of this rank's partial sum of exponentials",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="ce_sum_exp_wrong_dim", file="cross_entropy.cpp",
         original="""  Tensor sum_exp_logits = exp_logits.sum({-1});""",
         replacement="""  Tensor sum_exp_logits = exp_logits.sum({0});""",
         at="""  sum_exp_logits = spmd::all_reduce(sum_exp_logits, tp, P, R);""",
         desc="exponentials summed over the sequence, not the vocabulary",
         typeable=True, predicted="caught", expected="caught"),
    dict(id="ce_target_mask_not_applied", file="cross_entropy.cpp",
         original="""  predicted_logits.masked_fill_(target_mask, 0.0);""",
         replacement="""  (void)target_mask;""",
         desc="logits of targets outside this rank's slice not zeroed "
              "before the sum (inside the local region)",
         typeable=True, predicted="missed", expected="missed"),
    dict(id="ce_reduce_wrong_axis", file="cross_entropy.cpp",
         original="""  predicted_logits = spmd::all_reduce(predicted_logits, tp, P, R);""",
         replacement="""  predicted_logits = spmd::all_reduce(predicted_logits, dp, P, R);""",
         desc="the predicted logit all-reduced over dp instead of tp",
         typeable=True, predicted="elsewhere", expected="elsewhere"),
    dict(id="ce_softmax_local_sum", file="cross_entropy.cpp",
         original="""  exp_logits.div_(sum_exp_logits.unsqueeze(-1));""",
         replacement="""  exp_logits.div_(exp_logits.sum({-1}).unsqueeze(-1));""",
         desc="softmax normalised by this rank's partial sum",
         typeable=True, predicted="caught", expected="caught"),

]

# The first tries' errors: each is correct code rejected (docs/design/
# corpus-public.md classifies them).
EXPECTED_FALSE_ALARMS = [
    # class 1 (an axis size held in a field, SPMD_AXIS_SIZE on a data
    # member) was a false alarm here; SPMD_AXIS_SIZE now takes integer
    # variables and data members.
    # class 2: a bool *parameter* (sequence_parallel_enabled) chooses the
    # input's layout: S(0) gathered, or R used as is; one annotation cannot
    # say both (the forward and the backward of the autograd function).
    # (once in the forward, once in the backward)
    ("first_try.cpp", "total_input = spmd::all_gather(input, tp, S(0), R);",
     "collective-input"),
    ("first_try.cpp", "total_input = spmd::all_gather(input, tp, S(0), R);",
     "collective-input"),
    ("first_try.cpp", "input_parallel, weight_, bias, gradient_accumulation_fusion_,",
     "call-argument"),
    # class 2: bool parameters async_grad_allreduce / sequence_parallel_enabled
    # choose the backward's result type (R, S(0) or P).
    ("first_try.cpp",
     "sub_grad_input = spmd::reduce_scatter(grad_input, tp, P, S(0));",
     "path-conflict"),
    # new class 11: a flag computed in the constructor
    # (async_tensor_model_parallel_allreduce_) moves copy_to's backward
    # all-reduce into the linear: I on one path, R on the other.
    ("first_try.cpp", "input_parallel, weight_, bias, gradient_accumulation_fusion_,",
     "path-conflict"),
    # class 2 (field): the row-parallel bias is I without sequence
    # parallelism and R (gradient summed over tp) with it; a field takes no
    # SPMD_WHEN.
    ("first_try.cpp", "output = bias_.has_value() ? output_ + *bias_ : output_;",
     "op-type"),
    # new class 12: DDP's convention, a per-rank mean loss whose gradients
    # are summed and divided by the number of ranks, rejected at the loss
    # (nll_loss mean over a dp-sharded batch) and at backward().
    ("first_try_mnist.cpp",
     "auto loss = nll_loss(torch::log_softmax(prediction, 1), op);", "op-type"),
    ("first_try_mnist.cpp", "loss.backward();", "op-type"),
]

VIEW = "view / flatten with a -1 or computed size (class 3)"
OP_NAME = "SPMD_OP(kind) on a user function named like a core op (class 5)"
FIELD_POINTERS = "pointers to declared fields in a braced list (new class 13)"
MIXED_PAIR = "pair / vector of tensors of different types or ranks (class 8)"
MASK = "mask from Tensor::ge(Scalar) (class 8)"
OPTIONAL_LOCAL = "undeclared std::optional<Tensor> local (class 8)"
FLAG_PARAM = "argument typed by a bool parameter's layout (class 2)"

IDIOMS = [
    ("dist_mnist.cpp", "x = x.view({-1, 320});", OP_NAME),
    ("dist_mnist.cpp", "return torch::log_softmax(x, 1);", OP_NAME),
    ("dist_mnist.cpp", "param->sub_(avg * learning_rate);", FIELD_POINTERS),
    ("first_try_mnist.cpp", "x = x.view({-1, 320});", OP_NAME),
    ("first_try_mnist.cpp", "return torch::log_softmax(x, 1);", OP_NAME),
    ("first_try_mnist.cpp", "param->sub_(avg * learning_rate);", FIELD_POINTERS),
    ("first_try.cpp", "output_parallel.masked_fill_(input_mask", MASK),
    ("first_try.cpp", "grad_weight = grad_output.t().matmul(total_input);", VIEW),
    ("first_try.cpp", "grad_bias = grad_output.sum({0});", VIEW),
    ("first_try.cpp", "input_parallel, weight_, bias, gradient_accumulation_fusion_,",
     OPTIONAL_LOCAL),
    ("first_try.cpp", "return {output, output_bias};", MIXED_PAIR),
    ("layers.cpp", "return {output, output_bias};", MIXED_PAIR),
]

EXPECTED_UNKNOWNS = {
    OP_NAME: 4,
    FIELD_POINTERS: 2,
    MASK: 1,
    VIEW: 2,
    OPTIONAL_LOCAL: 1,
    MIXED_PAIR: 4,
}

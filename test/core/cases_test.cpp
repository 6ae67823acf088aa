// The cases of shared/cases/type-cases.md that are about types alone, keyed
// by case ID. Each case states the rule it checks; expectations are the
// cases file's.
//
// Skipped here (they need a runtime: values, shapes, process groups, Scalar
// objects, PartitionSpecs, name resolution, global mode, autograd):
//   S017 S019 S020 S021 S023 (Scalar arithmetic / construction)
//   M007 M009 M010 M011 M013 M016 M017 M019 M020 (singleton
//     normalisation at storage, bare types, name resolution, DeviceMesh,
//     local_axes, process groups); M024 (cross-mesh lift) is in
//     mesh_region_test.cpp
//   A009 A010 A014 A016 A017 A019 A023 A024 A026 (PartitionSpec)
//   A027 A041 (singleton axes), A029 (non-type value: rejected by C++ typing)
//   A030 (lists), A037 (map forms of mutate_type), A039 A040 (*_like)
//   C014 C037 C040 C041 C046 (values and shapes), C049 C050 C051 C053
//     (collective over a flattened axis: mesh_region_test.cpp)
//   L009 (explicit gradient: no check is made at all)
//   X016 X017 X019 X020 X021 X023 X026 (reinterpret_mesh and its hints:
//     mesh_region_test.cpp)
//   Y009 (backward_options is a struct in C++: an unknown key does not
//     compile), Y011 (needs dtypes and requires-grad)
//   G* (autograd functions, hooks), Z* (global SPMD), W* (raw collectives)
// Value/shape parts of the remaining C*, V*, D* cases are the runtime's; only
// their type parts are checked here.
#include <functional>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

using C = Collective;

struct Case {
  const char* id;
  const char* rule;
  std::function<void()> check;
};

// ---- helpers building checks --------------------------------------------

std::function<void()> InferIs(std::string op, std::vector<Operand> ops,
                              std::string want, InferenceContext ctx = {}) {
  return [=] { EXPECT_TRUE(Gives(infer(op, ops, ctx), want)) << op; };
}

std::function<void()> InferFails(std::string op, std::vector<Operand> ops,
                                 std::vector<std::string> phrases = {},
                                 InferenceContext ctx = {}) {
  return [=] {
    EXPECT_TRUE(
        FailsWith(infer(op, ops, ctx), ErrorKind::SpmdTypeError, phrases))
        << op;
  };
}

std::function<void()> RuleIs(std::vector<std::string> types, OpClass c,
                             PerAxisType want) {
  return [=] {
    std::vector<AxisOperand> ops;
    for (const std::string& t : types)
      ops.push_back(t == "Sc"
                        ? AxisOperand::scalar()
                        : AxisOperand::of(parse_per_axis_type(t).value()));
    Result<PerAxisType> r = infer_axis(ops, c, "tp");
    ASSERT_TRUE(Succeeds(r));
    EXPECT_EQ(r.value(), want);
  };
}

// Resolves against ndim, checks the arguments, then transfers the type.
Result<TensorType> RunCollective(CollectiveCall call, const char* input,
                                 long ndim) {
  Result<CollectiveCall> resolved = resolve(call, ndim);
  if (!resolved.ok()) return resolved.error();
  Status st = check_arguments(resolved.value());
  if (!st.ok()) return st.error();
  std::optional<TensorType> in;
  if (input) in = TT(input);
  return transfer(resolved.value(), in, "tp");
}

std::function<void()> CollIs(CollectiveCall call, const char* input,
                             std::string want, long ndim = 2) {
  return [=] { EXPECT_TRUE(Gives(RunCollective(call, input, ndim), want)); };
}

std::function<void()> CollFails(CollectiveCall call, const char* input,
                                ErrorKind kind,
                                std::vector<std::string> phrases = {},
                                long ndim = 2) {
  return [=] {
    EXPECT_TRUE(FailsWith(RunCollective(call, input, ndim), kind, phrases));
  };
}

struct Step {
  C op;
  PerAxisType src, dst;
};

// Backward: the dual operations, and the gradient types grad_out -> grad_in.
std::function<void()> BwdIs(
    CollectiveCall fwd, std::vector<Step> steps, PerAxisType grad_out,
    PerAxisType grad_in,
    std::function<void(const CollectiveCall&)> extra = nullptr) {
  return [=] {
    ASSERT_TRUE(Succeeds(check_arguments(fwd)));
    std::vector<CollectiveCall> got = backward_of(fwd);
    ASSERT_EQ(got.size(), steps.size());
    EXPECT_EQ(backward_type(fwd.dst.local()), grad_out);
    PerAxisType t = grad_out;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      SCOPED_TRACE(CallText(got[i]));
      EXPECT_EQ(got[i].op, steps[i].op);
      EXPECT_EQ(got[i].src, steps[i].src);
      EXPECT_EQ(got[i].dst, steps[i].dst);
      EXPECT_EQ(t, got[i].src.local());
      t = got[i].dst.local();
    }
    EXPECT_EQ(t, grad_in);
    if (extra && !got.empty()) extra(got.front());
  };
}

std::function<void()> InplaceIs(std::string op, std::vector<Operand> ops,
                                std::optional<std::string> before,
                                bool requires_grad, std::string want) {
  return [=] {
    Result<TensorType> inferred = infer(op, ops);
    ASSERT_TRUE(Succeeds(inferred));
    std::optional<TensorType> b;
    if (before) b = TT(*before);
    EXPECT_TRUE(
        Gives(apply_inplace(op, b, inferred.value(), requires_grad), want));
  };
}

std::function<void()> InplaceFails(std::string op, std::vector<Operand> ops,
                                   std::string before, std::string from_to) {
  return [=] {
    Result<TensorType> inferred = infer(op, ops);
    ASSERT_TRUE(Succeeds(inferred));
    EXPECT_TRUE(
        FailsWith(apply_inplace(op, TT(before), inferred.value(), false),
                  ErrorKind::SpmdTypeError, {"in-place/out", "tp", from_to}));
  };
}

MeshAxis Of(long size, long stride) { return MeshAxis::of(size, stride); }

// ---- the cases ------------------------------------------------------------

std::vector<Case> PropagationCases() {
  const Operand tR = Ten("{tp: R}", 0), tR1 = Ten("{tp: R}", 1);
  const Operand tV = Ten("{tp: V}", 0), tV1 = Ten("{tp: V}", 1);
  const Operand tI = Ten("{tp: I}", 0), tI1 = Ten("{tp: I}", 1);
  const Operand tP = Ten("{tp: P}", 0), tP1 = Ten("{tp: P}", 1),
                tP2 = Ten("{tp: P}", 2);
  const Operand tR2 = Ten("{tp: R}", 2);
  return {
      {"P001", "add R R is R", InferIs("add", {tR, tR1}, "{tp: R}")},
      {"P003", "add V V is V", InferIs("add", {tV, tV1}, "{tp: V}")},
      {"P004", "add I I is I", InferIs("add", {tI, tI1}, "{tp: I}")},
      {"P006", "mul I V Invariant cannot mix",
       InferFails("mul", {tI, tV1}, {"cannot mix"})},
      {"P007", "add P P is P", InferIs("add", {tP, tP1}, "{tp: P}")},
      {"P009", "add P R affine with suggestions",
       [=] {
         Result<TensorType> r = infer("add", {tP, tR1});
         ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError));
         std::string text = AllText(r.error());
         EXPECT_TRUE(Contains(text, "all_reduce(tensor, tp, "));
         EXPECT_TRUE(Contains(text, "convert(tensor, tp, "));
       }},
      {"P010", "add P V cannot combine with Varying",
       InferFails("add", {tP, tV1}, {"cannot combine with Varying"})},
      {"P011", "add P number affine", InferFails("add", {tP, Num(1)})},
      {"P013", "add R number is R", InferIs("add", {tR, Num(1)}, "{tp: R}")},
      {"P014", "add I number is I", InferIs("add", {tI, Num(1)}, "{tp: I}")},
      {"P016", "neg P is P",
       [=] {
         EXPECT_TRUE(Gives(infer("neg", {tP}), "{tp: P}"));
         EXPECT_TRUE(Gives(infer("__neg__", {tP}), "{tp: P}"));
       }},
      {"P017", "sum P is P", InferIs("sum", {tP}, "{tp: P}")},
      {"P019", "cumsum P is P", InferIs("cumsum", {tP}, "{tp: P}")},
      {"P020", "cat P P is P",
       InferIs("cat", {Ten("{tp: P}", 0), Ten("{tp: P}", 0)}, "{tp: P}")},
      {"P021", "cat P R affine",
       InferFails("cat", {Ten("{tp: P}", 0), Ten("{tp: R}", 0)})},
      {"P023", "stack I I is I",
       InferIs("stack", {Ten("{tp: I}", 0), Ten("{tp: I}", 0)}, "{tp: I}")},
      {"P024", "shape ops keep P",
       [=] {
         for (const char* op :
              {"reshape", ".view", "transpose", "permute", "flatten",
               "unsqueeze", ".unsqueeze", ".expand"}) {
           SCOPED_TRACE(op);
           EXPECT_TRUE(Gives(infer(op, {tP}), "{tp: P}"));
         }
       }},
      {"P026", "split chunk unbind keep P",
       [=] {
         for (const char* op : {"split", "chunk", "unbind", ".view"}) {
           SCOPED_TRACE(op);
           EXPECT_TRUE(Gives(infer(op, {tP}), "{tp: P}"));
         }
       }},
      {"P027", "clone detach keep P",
       [=] {
         EXPECT_TRUE(Gives(infer("clone", {tP}), "{tp: P}"));
         EXPECT_TRUE(Gives(infer("detach", {tP}), "{tp: P}"));
       }},
      {"P029", "mul R P is P", InferIs("mul", {tR, tP1}, "{tp: P}")},
      {"P030", "mul P P two partial factors",
       InferFails("mul", {tP, tP1}, {"Partial in multiple factors"})},
      {"P031", "mul P V cannot combine with Varying",
       InferFails("mul", {tP, tV1}, {"cannot combine with Varying"})},
      {"P033", "mul P I cannot mix with suggestions",
       [=] {
         Result<TensorType> r = infer("mul", {tP, tI1});
         ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, {"cannot mix"}));
         std::string text = AllText(r.error());
         EXPECT_TRUE(Contains(text, "convert(tensor, tp, "));
         EXPECT_TRUE(Contains(text, "all_reduce(tensor, tp, "));
       }},
      {"P034", "matmul P R is P", InferIs("matmul", {tP, tR1}, "{tp: P}")},
      {"P036", "matmul R V is V", InferIs("matmul", {tR, tV1}, "{tp: V}")},
      {"P037", "mm I I is I", InferIs("mm", {tI, tI1}, "{tp: I}")},
      {"P039", "einsum P R R is P",
       InferIs("einsum",
               {Ten("{tp: P}", 1), Ten("{tp: R}", 2), Ten("{tp: R}", 3)},
               "{tp: P}")},
      {"P040", "einsum P P two partial factors",
       InferFails("einsum", {tP1, tP2}, {"Partial in multiple factors"})},
      {"P041", "bmm V V is V", InferIs("bmm", {tV, tV1}, "{tp: V}")},
      {"P043", "div R by P nonlinear argument",
       InferFails("div", {tR, tP1}, {"nonlinear argument"})},
      {"P044", "div P by P nonlinear argument",
       InferFails("div", {tP, tP1}, {"nonlinear argument"})},
      {"P046", "number over P nonlinear argument",
       InferFails("__rtruediv__", {tP, Num(1)}, {"nonlinear argument"})},
      {"P047", "I over number is I",
       InferIs("__truediv__", {tI, Num(1)}, "{tp: I}")},
      {"P049", "relu P non-linear", InferFails("relu", {tP}, {"non-linear"})},
      {"P050", "relu V is V", InferIs("relu", {tV}, "{tp: V}")},
      {"P051", "exp R is R", InferIs("exp", {tR}, "{tp: R}")},
      {"P053", "sort P non-linear", InferFails("sort", {tP}, {"non-linear"})},
      {"P054", "F linear V R is V",
       InferIs("torch::nn::functional::linear", {tV, tR1}, "{tp: V}")},
      {"P056", "addmm P R R affine listed as R P",
       InferFails("addmm", {tP, tR1, tR2}, {"[R, P]"})},
      {"P057", "addmm P P R is P", InferIs("addmm", {tP, tP1, tR2}, "{tp: P}")},
      {"P059", "addmm R P R affine", InferFails("addmm", {tR, tP1, tR2})},
      {"P060", "addmm R P P two partial factors",
       InferFails("addmm", {tR, tP1, tP2}, {"Partial in multiple factors"})},
      {"P061", "addmm V R R is V", InferIs("addmm", {tV, tR1, tR2}, "{tp: V}")},
      {"P063", "baddbmm P P R is P",
       InferIs("baddbmm", {tP, tP1, tR2}, "{tp: P}")},
      {"P064", "addr P R R affine", InferFails("addr", {tP, tR1, tR2})},
      {"P066", "R indexed by V is V",
       InferIs("__getitem__", {tR, tV1}, "{tp: V}")},
      {"P067", "indexing P non-linear",
       InferFails("__getitem__", {tP}, {"non-linear"})},
      {"P069", "V ge number is V", InferIs("__ge__", {tV, Num(1)}, "{tp: V}")},
      {"P070", "unknown op R V is V",
       InferIs("unregistered_op", {tR, tV1}, "{tp: V}")},
      {"P071", "unknown op P non-linear",
       InferFails("unregistered_op", {tP}, {"non-linear"})},
      {"P073", "multi-axis mul",
       InferIs("mul", {Ten("{dp: P, tp: V}", 0), Ten("{dp: R, tp: V}", 1)},
               "{dp: P, tp: V}")},
      {"P074", "multi-axis matmul",
       InferIs("matmul", {Ten("{dp: V, tp: R}", 0), Ten("{dp: R, tp: V}", 1)},
               "{dp: V, tp: V}")},
      {"P076", "pow P non-linear", InferFails("pow", {tP}, {"non-linear"})},
      {"P077", "zeros_like typed P non-linear",
       InferFails("zeros_like", {tP}, {"non-linear"})},
      {"P079", "LINEAR P P P is P",
       RuleIs({"P", "P", "P"}, OpClass::Linear, P)},
      {"P080", "MULTILINEAR P R R Sc is P",
       RuleIs({"P", "R", "R", "Sc"}, OpClass::Multilinear, P)},
      {"P081", "NONLINEAR R V Sc is V",
       RuleIs({"R", "V", "Sc"}, OpClass::Nonlinear, V)},
  };
}

std::vector<Case> ScalarCases() {
  const Operand tP = Ten("{tp: P}", 0);
  return {
      {"S001", "P times Scalar R is P",
       InferIs("mul", {tP, Sc("{tp: R}", 1)}, "{tp: P}")},
      {"S003", "P times Scalar I rejected",
       InferFails("mul", {tP, Sc("{tp: I}", 1)})},
      {"S004", "P times Scalar P two partial factors",
       InferFails("mul", {tP, Sc("{tp: P}", 1)},
                  {"Partial in multiple factors"})},
      {"S006", "V plus Scalar V is V",
       InferIs("add", {Ten("{tp: V}", 0), Sc("{tp: V}", 1)}, "{tp: V}")},
      {"S007", "P plus Scalar P is P",
       InferIs("add", {tP, Sc("{tp: P}", 1)}, "{tp: P}")},
      {"S009", "I plus Scalar V cannot mix",
       InferFails("add", {Ten("{tp: I}", 0), Sc("{tp: V}", 1)},
                  {"cannot mix"})},
      {"S010", "narrow R with varying Scalars is V",
       InferIs("narrow",
               {Ten("{tp: R}", 0), Sc("{tp: V}", 2), Sc("{tp: V}", 3)},
               "{tp: V}")},
      {"S011", "narrow P with varying Scalars P with V",
       InferFails("narrow", {tP, Sc("{tp: V}", 2), Sc("{tp: V}", 3)},
                  {"cannot combine with Varying"})},
      {"S013", "P over Scalar R is P",
       InferIs("__truediv__", {tP, Sc("{tp: R}", 1)}, "{tp: P}")},
      {"S014", "P over Scalar P nonlinear argument",
       InferFails("__truediv__", {tP, Sc("{tp: P}", 1)},
                  {"nonlinear argument"})},
      {"S016", "arange of varying Scalars is V",
       InferIs("arange", {Sc("{tp: V}", 0), Sc("{tp: V}", 1)}, "{tp: V}")},
  };
}

std::vector<Case> FactoryAndMeshCases() {
  return {
      {"F001", "zeros without mesh is typed-empty", InferIs("zeros", {}, "{}")},
      {"F003", "randn under mesh is typed-empty",
       InferIs("randn", {}, "{}", Mesh({"dp", "tp"}))},
      {"F004", "R plus typed-empty strict missing axis",
       InferFails("add", {Ten("{tp: R}", 0), Ten("{}", 1)},
                  {"args[1]", "missing axis", "tp"})},
      {"F006", "new_zeros under mesh is R",
       InferIs(".new_zeros", {Ten("{tp: V}", 0)}, "{tp: R}", Mesh({"tp"}))},
      {"F007", "tensor under mesh is R",
       InferIs("tensor", {}, "{tp: R}", Mesh({"tp"}))},
      {"F009", "untyped plus untyped is typed-empty",
       InferIs("add", {Untyped(0), Untyped(1)}, "{}")},
      {"F010", "R plus untyped strict rejected",
       InferFails("add", {Ten("{tp: R}", 0), Untyped(1)})},
      {"F011", "R plus untyped permissive is R",
       InferIs("add", {Ten("{tp: R}", 0), Untyped(1)}, "{tp: R}",
               Permissive())},
      {"F013", "assert_type on typed-empty then add",
       [] {
         Result<TensorType> z = assert_type(TT("{}"), TT("{tp: R}"));
         ASSERT_TRUE(Succeeds(z));
         EXPECT_TRUE(Gives(
             infer("add", {Ten("{tp: R}", 0), Operand::tensor(z.value(), 1)}),
             "{tp: R}"));
       }},
      {"F014", "relu untyped under mesh strict missing mesh axis",
       InferFails("relu", {Untyped(0)},
                  {"args[0]", "missing axis", "current mesh"},
                  Mesh({"dp", "tp"}))},
      {"M001", "assert_type does not check completeness",
       [] {
         EXPECT_TRUE(
             Gives(assert_type(std::nullopt, TT("{tp: R}")), "{tp: R}"));
       }},
      {"M003", "permissive mesh axis on no operand is omitted",
       InferIs("add", {Ten("{tp: R}", 0), Ten("{tp: R}", 1)}, "{tp: R}",
               Mesh({"dp", "tp"}, false))},
      {"M004", "operand missing an axis of the union",
       InferFails("add", {Ten("{tp: R}", 0), Ten("{dp: R, tp: R}", 1)},
                  {"args[0]", "missing axis", "dp"})},
      {"M006", "complete operands under mesh",
       InferIs("add", {Ten("{dp: V, tp: R}", 0), Ten("{dp: R, tp: R}", 1)},
               "{dp: V, tp: R}", Mesh({"dp", "tp"}))},
      {"M014", "overlapping axes not orthogonal",
       [] {
         EXPECT_FALSE(are_orthogonal({Of(2, 4), Of(4, 2)}));
       }},
      {"M021", "incremental annotation then use under mesh",
       [] {
         Result<TensorType> x = assert_type(std::nullopt, TT("{tp: R}"));
         ASSERT_TRUE(Succeeds(x));
         x = assert_type(x.value(), TT("{dp: R}"));
         ASSERT_TRUE(Succeeds(x));
         EXPECT_TRUE(Gives(infer("add",
                                 {Operand::tensor(x.value(), 0),
                                  Operand::tensor(x.value(), 1)},
                                 Mesh({"dp", "tp"})),
                           "{dp: R, tp: R}"));
       }},
      {"M023", "all_reduce on tp leaves dp",
       CollIs(Call(C::AllReduce, P, R), "{dp: R, tp: P}", "{dp: R, tp: R}")},
  };
}

std::vector<Case> AnnotationCases() {
  return {
      {"A001", "assert_type on untyped stores",
       [] {
         EXPECT_TRUE(
             Gives(assert_type(std::nullopt, TT("{tp: R}")), "{tp: R}"));
       }},
      {"A003", "assert_type mismatch",
       [] {
         EXPECT_TRUE(FailsWith(assert_type(TT("{tp: R}"), TT("{tp: I}")),
                               ErrorKind::SpmdTypeError,
                               {"SPMD type mismatch"}));
       }},
      {"A004", "V asserted P becomes P",
       [] {
         EXPECT_TRUE(
             Gives(assert_type(TT("{tp: V}"), TT("{tp: P}")), "{tp: P}"));
       }},
      {"A006", "assert_type adds an axis",
       [] {
         EXPECT_TRUE(Gives(assert_type(TT("{dp: R}"), TT("{tp: I}")),
                           "{dp: R, tp: I}"));
       }},
      {"A007", "partial assertion leaves other axes",
       [] {
         EXPECT_TRUE(Gives(assert_type(TT("{dp: R, tp: V}"), TT("{tp: V}")),
                           "{dp: R, tp: V}"));
       }},
      {"A011", "S(2) out of bounds for ndim 2",
       [] {
         EXPECT_TRUE(FailsWith(resolve_shard_dim(S(2), 2),
                               ErrorKind::SpmdTypeError, {"out of bounds"}));
       }},
      {"A013", "0-d tensor admits no S(i)",
       [] {
         EXPECT_TRUE(FailsWith(resolve_shard_dim(S(0), 0),
                               ErrorKind::SpmdTypeError, {"out of bounds"}));
       }},
      {"A020", "asserted axes not orthogonal",
       [] {
         EXPECT_FALSE(are_orthogonal({Of(2, 4), Of(4, 2)}));
       }},
      {"A021", "added axis not orthogonal to existing",
       [] {
         EXPECT_FALSE(are_orthogonal({Of(4, 2), Of(2, 4)}));
       }},
      {"A031", "mutate_type V to R",
       [] {
         EXPECT_TRUE(Gives(mutate_type(TT("{dp: V}"), "dp", V, R), "{dp: R}"));
       }},
      {"A033", "mutate_type axis not found",
       [] {
         EXPECT_TRUE(FailsWith(mutate_type(TT("{dp: V}"), "tp", V, R),
                               ErrorKind::SpmdTypeError, {"tp"}));
       }},
      {"A034", "mutate_type every axis",
       [] {
         Result<TensorType> r = mutate_type(TT("{dp: V, tp: V}"), "dp", V, R);
         ASSERT_TRUE(Succeeds(r));
         EXPECT_TRUE(
             Gives(mutate_type(r.value(), "tp", V, R), "{dp: R, tp: R}"));
       }},
      {"A036", "mutate_type scalar src to map dst",
       [] {
         Result<TensorType> r =
             mutate_type(TT("{dp: R, tp: R, cp: I}"), "dp", R, P);
         ASSERT_TRUE(Succeeds(r));
         EXPECT_TRUE(Gives(mutate_type(r.value(), "tp", R, I),
                           "{cp: I, dp: P, tp: I}"));
       }},
  };
}

std::vector<Case> CollectiveCases() {
  const ErrorKind IA = ErrorKind::InvalidArgument,
                  TE = ErrorKind::SpmdTypeError;
  CollectiveCall c013 = Call(C::AllReduce, P, I);
  c013.inplace = true;
  c013.has_op_dtype = true;
  CollectiveCall c020 = Call(C::AllGather, V, R);
  c020.gather_dim = 1;
  CollectiveCall c026 = Call(C::AllGather, V, R);
  c026.split_sizes = {1, 1, 1};
  CollectiveCall c027 = Call(C::AllGather, S(1), R);
  c027.gather_dim = 0;
  CollectiveCall c029 = Call(C::AllGather, S(0), I);
  c029.split_sizes = {3, 2, 2};
  CollectiveCall c030 = Call(C::ReduceScatter, P, V);
  c030.scatter_dim = 0;
  CollectiveCall c047 = Call(C::AllToAll, S(0), S(0));
  c047.input_split_sizes = {2, 2, 2};
  c047.output_split_sizes = {2, 2, 2};
  return {
      {"C001", "all_reduce P to R",
       CollIs(Call(C::AllReduce, P, R), "{tp: P}", "{tp: R}")},
      {"C003", "all_reduce src V",
       CollIs(Call(C::AllReduce, V, R), "{tp: V}", "{tp: R}")},
      {"C004", "all_reduce default src P accepts V",
       CollIs(Call(C::AllReduce, P, R), "{tp: V}", "{tp: R}")},
      {"C006", "all_reduce src R must be P",
       CollFails(Call(C::AllReduce, R, R), "{tp: R}", IA, {"must be P"})},
      {"C007", "all_reduce src I must be P",
       CollFails(Call(C::AllReduce, I, I), "{tp: I}", IA, {"must be P"})},
      {"C009", "all_reduce src V on P input",
       CollFails(Call(C::AllReduce, V, R), "{tp: P}", TE,
                 {"expected input type V", "got P"})},
      {"C010", "all_reduce src S(0) must be P",
       CollFails(Call(C::AllReduce, S(0), R), "{tp: P}", IA, {"must be P"})},
      {"C011", "all_reduce keeps other axes",
       CollIs(Call(C::AllReduce, P, R), "{dp: R, tp: P}", "{dp: R, tp: R}")},
      {"C013", "all_reduce inplace with op_dtype",
       CollFails(c013, "{tp: P}", IA)},
      {"C016", "all_gather V to I",
       CollIs(Call(C::AllGather, V, I), "{tp: V}", "{tp: I}")},
      {"C017", "all_gather S(0) to R",
       CollIs(Call(C::AllGather, S(0), R), "{tp: V}", "{tp: R}", 1)},
      {"C019", "all_gather S(-1) to R",
       [] {
         Result<CollectiveCall> r = resolve(Call(C::AllGather, S(-1), R), 2);
         ASSERT_TRUE(Succeeds(r));
         EXPECT_EQ(r.value().src, S(1));
         EXPECT_TRUE(
             Gives(RunCollective(Call(C::AllGather, S(-1), R), "{tp: V}", 2),
                   "{tp: R}"));
       }},
      {"C020", "all_gather V gather_dim 1", CollIs(c020, "{tp: V}", "{tp: R}")},
      {"C021", "all_gather V to R",
       CollIs(Call(C::AllGather, V, R), "{tp: V}", "{tp: R}")},
      {"C023", "all_gather dst P must be R or I",
       CollFails(Call(C::AllGather, V, P), "{tp: V}", IA, {"must be R or I"})},
      {"C024", "all_gather on P input",
       CollFails(Call(C::AllGather, V, R), "{tp: P}", TE,
                 {"expected input type V", "got P"})},
      {"C026", "all_gather split_sizes with V",
       CollFails(c026, "{tp: V}", IA, {"only supported with src=S(i)"})},
      {"C027", "all_gather gather_dim conflicts with S(1)",
       CollFails(c027, "{tp: V}", IA, {"conflict"})},
      {"C029", "all_gather uneven S(0) to I",
       CollIs(c029, "{tp: V}", "{tp: I}", 1)},
      {"C030", "reduce_scatter P to V", CollIs(c030, "{tp: P}", "{tp: V}")},
      {"C031", "reduce_scatter P to S(0)",
       CollIs(Call(C::ReduceScatter, P, S(0)), "{tp: P}", "{tp: V}", 1)},
      {"C033", "reduce_scatter P to S(-1)",
       CollIs(Call(C::ReduceScatter, P, S(-1)), "{tp: P}", "{tp: V}", 2)},
      {"C034", "reduce_scatter defaults accept V",
       CollIs(Call(C::ReduceScatter, P, V), "{tp: V}", "{tp: V}")},
      {"C036", "reduce_scatter dst R must be V or S(i)",
       CollFails(Call(C::ReduceScatter, P, R), "{tp: P}", IA,
                 {"must be V or S(i)"})},
      {"C039", "reduce_scatter on R input",
       CollFails(Call(C::ReduceScatter, P, V), "{tp: R}", TE,
                 {"expected input type P", "got R"})},
      {"C043", "all_to_all src R must be V or S(i)",
       CollFails(Call(C::AllToAll, R, V), "{tp: R}", IA,
                 {"must be V or S(i)"})},
      {"C044", "all_to_all dst R must be V or S(i)",
       CollFails(Call(C::AllToAll, V, R), "{tp: V}", IA,
                 {"must be V or S(i)"})},
      {"C047", "all_to_all uneven S(0) S(0)",
       CollIs(c047, "{tp: V}", "{tp: V}")},
      {"C054", "all_reduce untyped strict",
       [] {
         EXPECT_TRUE(
             FailsWith(transfer(Call(C::AllReduce, P, R), std::nullopt, "tp"),
                       ErrorKind::SpmdTypeError, {"no type for axis tp"}));
       }},
      {"C056", "invariant_to_replicate I to R",
       CollIs(Call(C::InvariantToReplicate, I, R), "{tp: I}", "{tp: R}")},
      {"C057", "invariant_to_replicate on R",
       CollFails(Call(C::InvariantToReplicate, I, R), "{tp: R}", TE,
                 {"expected input type I", "got R"})},
      {"C059", "shard dst must be S(i)",
       CollFails(Call(C::Shard, R, V), "{tp: R}", IA, {"S(i)"})},
      {"C060", "unshard S(0) to R",
       CollIs(Call(C::Unshard, S(0), R), "{tp: V}", "{tp: R}", 1)},
      {"C061", "unshard src must be S(i)",
       CollFails(Call(C::Unshard, V, R), "{tp: V}", IA, {"S(i)"})},
  };
}

std::vector<Case> ReinterpretConvertCases() {
  const ErrorKind IA = ErrorKind::InvalidArgument,
                  TE = ErrorKind::SpmdTypeError;
  return {
      {"R001", "reinterpret V to P",
       CollIs(Call(C::Reinterpret, V, P), "{tp: V}", "{tp: P}")},
      {"R003", "reinterpret R to V expert",
       CollIs(Call(C::Reinterpret, R, V, true), "{tp: R}", "{tp: V}")},
      {"R004", "reinterpret R to I gated",
       CollFails(Call(C::Reinterpret, R, I), "{tp: R}", IA, {"expert_mode"})},
      {"R006", "reinterpret I to R gated",
       CollFails(Call(C::Reinterpret, I, R), "{tp: I}", IA, {"expert_mode"})},
      {"R007", "reinterpret I to R expert",
       CollIs(Call(C::Reinterpret, I, R, true), "{tp: I}", "{tp: R}")},
      {"R009", "reinterpret R to P expert",
       CollIs(Call(C::Reinterpret, R, P, true), "{tp: R}", "{tp: P}")},
      {"R010", "reinterpret I to V not gated",
       CollIs(Call(C::Reinterpret, I, V), "{tp: I}", "{tp: V}")},
      {"R011", "reinterpret I to P not gated",
       CollIs(Call(C::Reinterpret, I, P), "{tp: I}", "{tp: P}")},
      {"R013", "reinterpret V to R not supported",
       CollFails(Call(C::Reinterpret, V, R), "{tp: V}", IA, {"not supported"})},
      {"R014", "reinterpret to S(0) not supported",
       CollFails(Call(C::Reinterpret, R, S(0)), "{tp: R}", IA,
                 {"does not support S(i)"})},
      {"R016", "reinterpret V to P on R input",
       CollFails(Call(C::Reinterpret, V, P), "{tp: R}", TE,
                 {"expected input type V", "got R"})},
      {"R017", "reinterpret V to I not supported",
       CollFails(Call(C::Reinterpret, V, I), "{tp: V}", IA, {"not supported"})},
      {"R019", "reinterpret S(0) to S(0) not supported",
       CollFails(Call(C::Reinterpret, S(0), S(0)), "{tp: V}", IA,
                 {"does not support S(i)"}, 1)},
      {"V001", "convert R to V",
       CollIs(Call(C::Convert, R, V), "{tp: R}", "{tp: V}")},
      {"V003", "convert I to V",
       CollIs(Call(C::Convert, I, V), "{tp: I}", "{tp: V}")},
      {"V004", "convert I to S(0)",
       CollIs(Call(C::Convert, I, S(0)), "{tp: I}", "{tp: V}", 1)},
      {"V006", "convert I to P gated",
       CollFails(Call(C::Convert, I, P), "{tp: I}", IA, {"expert_mode"})},
      {"V007", "convert I to P expert",
       CollIs(Call(C::Convert, I, P, true), "{tp: I}", "{tp: P}")},
      {"V009", "convert V to P expert",
       CollIs(Call(C::Convert, V, P, true), "{tp: V}", "{tp: P}", 0)},
      {"V010", "convert S(0) to P gated",
       CollFails(Call(C::Convert, S(0), P), "{tp: V}", IA, {"expert_mode"}, 1)},
      {"V011", "convert S(0) to P expert",
       CollIs(Call(C::Convert, S(0), P, true), "{tp: V}", "{tp: P}", 1)},
      {"V013", "convert R to I expert",
       CollIs(Call(C::Convert, R, I, true), "{tp: R}", "{tp: I}")},
      {"V014", "convert I to R",
       CollIs(Call(C::Convert, I, R), "{tp: I}", "{tp: R}")},
      {"V016", "convert P to S(0) use reduce_scatter",
       CollFails(Call(C::Convert, P, S(0)), "{tp: P}", IA, {"reduce_scatter"},
                 1)},
      {"V017", "convert S(0) to S(1) needs communication",
       CollFails(Call(C::Convert, S(0), S(1)), "{tp: V}", IA, {"all_to_all"})},
      {"V019", "convert R to S(-1)",
       CollIs(Call(C::Convert, R, S(-1)), "{tp: R}", "{tp: V}", 2)},
      {"V020", "convert R to R is a no-op",
       [] {
         EXPECT_TRUE(is_noop(Call(C::Convert, R, R)));
         EXPECT_TRUE(Gives(RunCollective(Call(C::Convert, R, R), "{tp: R}", 2),
                           "{tp: R}"));
       }},
      {"V021", "convert R to V on V input",
       CollFails(Call(C::Convert, R, V), "{tp: V}", TE,
                 {"expected input type R", "got V"})},
      {"V023", "convert V to S(0) is a no-op",
       [] {
         EXPECT_TRUE(is_noop(Call(C::Convert, V, S(0))));
         EXPECT_TRUE(
             Gives(RunCollective(Call(C::Convert, V, S(0)), "{tp: V}", 1),
                   "{tp: V}"));
       }},
      {"V024", "convert R to S(2) out of bounds",
       CollFails(Call(C::Convert, R, S(2)), "{tp: R}", TE, {"out of bounds"},
                 2)},
  };
}

std::function<void()> RedistIs(PerAxisType src, PerAxisType dst,
                               const char* input, const char* want,
                               std::optional<C> via, long ndim = 2) {
  return [=] {
    EXPECT_TRUE(Gives(
        RunCollective(Call(C::Redistribute, src, dst), input, ndim), want));
    Result<PerAxisType> s = resolve_shard_dim(src, ndim);
    Result<PerAxisType> d = resolve_shard_dim(dst, ndim);
    ASSERT_TRUE(s.ok() && d.ok());
    std::optional<CollectiveCall> route = route_redistribute(*s, *d);
    if (!via) {
      EXPECT_FALSE(route.has_value());
    } else {
      ASSERT_TRUE(route.has_value());
      EXPECT_EQ(route->op, *via) << CallText(*route);
      EXPECT_TRUE(Succeeds(check_arguments(*route))) << CallText(*route);
    }
  };
}

std::vector<Case> RedistributeCases() {
  return {
      {"D001", "redistribute V to R via all_gather",
       RedistIs(V, R, "{tp: V}", "{tp: R}", C::AllGather, 0)},
      {"D003", "redistribute P to R via all_reduce",
       RedistIs(P, R, "{tp: P}", "{tp: R}", C::AllReduce, 1)},
      {"D004", "redistribute P to S(0) via reduce_scatter",
       RedistIs(P, S(0), "{tp: P}", "{tp: V}", C::ReduceScatter, 1)},
      {"D006", "redistribute R to V via convert",
       RedistIs(R, V, "{tp: R}", "{tp: V}", C::Convert)},
      {"D007", "redistribute R to P via convert",
       RedistIs(R, P, "{tp: R}", "{tp: P}", C::Convert, 1)},
      {"D009", "redistribute R to I without expert_mode",
       RedistIs(R, I, "{tp: R}", "{tp: I}", C::Convert)},
      {"D010", "redistribute I to P without expert_mode",
       RedistIs(I, P, "{tp: I}", "{tp: P}", C::Convert)},
      {"D011", "redistribute V to P via convert",
       RedistIs(V, P, "{tp: V}", "{tp: P}", C::Convert, 0)},
      {"D013", "redistribute src P accepts V input",
       RedistIs(P, R, "{tp: V}", "{tp: R}", C::AllReduce, 1)},
      {"D014", "redistribute V to S(0) is a no-op",
       [] {
         EXPECT_TRUE(is_noop(Call(C::Redistribute, V, S(0))));
         RedistIs(V, S(0), "{tp: V}", "{tp: V}", std::nullopt, 1)();
       }},
      {"D016", "redistribute P to V via reduce_scatter dim 0",
       [] {
         RedistIs(P, V, "{tp: P}", "{tp: V}", C::ReduceScatter)();
         std::optional<CollectiveCall> route = route_redistribute(P, V);
         ASSERT_TRUE(route.has_value());
         EXPECT_EQ(route->scatter_dim.value_or(0), 0);
       }},
  };
}

std::vector<Case> BackwardCases() {
  CollectiveCall b003 = Call(C::AllGather, V, R);
  b003.gather_dim = 1;
  CollectiveCall b007 = Call(C::AllGather, S(0), R);
  b007.split_sizes = {3, 2, 2};
  CollectiveCall b009 = Call(C::ReduceScatter, P, V);
  b009.scatter_dim = 1;
  CollectiveCall b011 = Call(C::AllToAll, V, V);
  b011.split_dim = 1;
  b011.concat_dim = 2;
  CollectiveCall b013 = Call(C::AllToAll, S(0), S(0));
  b013.input_split_sizes = {1, 2, 3};
  b013.output_split_sizes = {2, 2, 2};
  return {
      {"B001", "all_reduce P R backward all_reduce P R",
       BwdIs(Call(C::AllReduce, P, R), {{C::AllReduce, P, R}}, P, R)},
      {"B003", "all_gather V R backward reduce_scatter scatter_dim g",
       BwdIs(b003, {{C::ReduceScatter, P, V}}, P, V,
             [](const CollectiveCall& c) {
               EXPECT_EQ(c.scatter_dim, std::optional<long>(1));
             })},
      {"B004", "all_gather V I backward convert I V",
       BwdIs(Call(C::AllGather, V, I), {{C::Convert, I, V}}, I, V)},
      {"B006", "all_gather S(0) I backward convert I S(0)",
       BwdIs(Call(C::AllGather, S(0), I), {{C::Convert, I, S(0)}}, I, V)},
      {"B007", "uneven all_gather backward keeps split sizes",
       BwdIs(b007, {{C::ReduceScatter, P, S(0)}}, P, V,
             [](const CollectiveCall& c) {
               EXPECT_EQ(c.split_sizes, (std::vector<long>{3, 2, 2}));
             })},
      {"B009", "reduce_scatter backward all_gather gather_dim d",
       BwdIs(b009, {{C::AllGather, V, R}}, V, R,
             [](const CollectiveCall& c) {
               EXPECT_EQ(c.gather_dim, std::optional<long>(1));
             })},
      {"B010", "reduce_scatter S(1) backward all_gather S(1) R",
       BwdIs(Call(C::ReduceScatter, P, S(1)), {{C::AllGather, S(1), R}}, V, R)},
      {"B011", "all_to_all V V backward swaps dims",
       BwdIs(b011, {{C::AllToAll, V, V}}, V, V,
             [](const CollectiveCall& c) {
               EXPECT_EQ(c.split_dim, std::optional<long>(2));
               EXPECT_EQ(c.concat_dim, std::optional<long>(1));
             })},
      {"B013", "uneven all_to_all backward swaps split sizes",
       BwdIs(b013, {{C::AllToAll, S(0), S(0)}}, V, V,
             [](const CollectiveCall& c) {
               EXPECT_EQ(c.input_split_sizes, (std::vector<long>{2, 2, 2}));
               EXPECT_EQ(c.output_split_sizes, (std::vector<long>{1, 2, 3}));
             })},
      {"B014", "convert R V backward expert convert V P",
       BwdIs(Call(C::Convert, R, V), {{C::Convert, V, P}}, V, P,
             [](const CollectiveCall& c) { EXPECT_TRUE(c.expert_mode); })},
      {"B016", "convert I V backward all_gather V I",
       BwdIs(Call(C::Convert, I, V), {{C::AllGather, V, I}}, V, I)},
      {"B017", "convert I S(0) backward all_gather S(0) I",
       BwdIs(Call(C::Convert, I, S(0)), {{C::AllGather, S(0), I}}, V, I)},
      {"B019", "convert I P backward convert R I",
       BwdIs(Call(C::Convert, I, P, true), {{C::Convert, R, I}}, R, I)},
      {"B020", "convert V P backward convert R V",
       BwdIs(Call(C::Convert, V, P, true), {{C::Convert, R, V}}, R, V)},
      {"B021", "convert S(0) P backward convert R S(0)",
       BwdIs(Call(C::Convert, S(0), P, true), {{C::Convert, R, S(0)}}, R, V)},
      {"B023", "convert R I backward convert I P",
       BwdIs(Call(C::Convert, R, I, true), {{C::Convert, I, P}}, I, P)},
      {"B024", "reinterpret R V backward reinterpret V P",
       BwdIs(Call(C::Reinterpret, R, V, true), {{C::Reinterpret, V, P}}, V, P)},
      {"B026", "reinterpret R P self-dual",
       BwdIs(Call(C::Reinterpret, R, P, true), {{C::Reinterpret, R, P}}, R, P)},
      {"B027", "reinterpret I V backward two steps",
       BwdIs(Call(C::Reinterpret, I, V),
             {{C::Reinterpret, V, P}, {C::AllReduce, P, I}}, V, I)},
      {"B029", "reinterpret I P backward two steps",
       BwdIs(Call(C::Reinterpret, I, P),
             {{C::Reinterpret, R, P}, {C::AllReduce, P, I}}, R, I)},
  };
}

std::vector<Case> LossAndInplaceCases() {
  const Operand tR = Ten("{tp: R}", 0), tR1 = Ten("{tp: R}", 1);
  const Operand tV = Ten("{tp: V}", 0), tV1 = Ten("{tp: V}", 1);
  const Operand tP = Ten("{tp: P}", 0), tP1 = Ten("{tp: P}", 1);
  return {
      {"L001", "Invariant loss allowed",
       [] { EXPECT_TRUE(Succeeds(check_loss(TT("{tp: I}")))); }},
      {"L003", "Replicate loss rejected",
       [] {
         EXPECT_TRUE(FailsWith(check_loss(TT("{tp: R}")),
                               ErrorKind::SpmdTypeError, {"tp"}));
       }},
      {"L004", "Varying loss rejected suggesting reinterpret",
       [] {
         EXPECT_TRUE(FailsWith(check_loss(TT("{tp: V}")),
                               ErrorKind::SpmdTypeError, {"reinterpret"}));
       }},
      {"L006", "untyped loss strict rejected",
       [] {
         EXPECT_TRUE(FailsWith(check_loss(std::nullopt, true),
                               ErrorKind::SpmdTypeError));
       }},
      {"L007", "untyped loss permissive allowed",
       [] { EXPECT_TRUE(Succeeds(check_loss(std::nullopt, false))); }},
      {"U001", "R add_ R stays R",
       InplaceIs(".add_", {tR, tR1}, "{tp: R}", false, "{tp: R}")},
      {"U003", "R add_ V widens to V",
       InplaceIs(".add_", {tR, tV1}, "{tp: R}", false, "{tp: V}")},
      {"U004", "R iadd V widens to V",
       InplaceIs("__iadd__", {tR, tV1}, "{tp: R}", false, "{tp: V}")},
      {"U006", "out V given R result",
       InplaceFails("add", {tR, tR1}, "{tp: V}", "from V to R")},
      {"U007", "out R given V result widens",
       InplaceIs("add", {tR, tV1}, "{tp: R}", false, "{tp: V}")},
      {"U009", "untyped input with typed input strict",
       InferFails("add", {Untyped(0), tR1})},
      {"U010", "P add_ P stays P",
       InplaceIs(".add_", {tP, tP1}, "{tp: P}", false, "{tp: P}")},
      {"U011", "R mul_ P never widens",
       InplaceFails(".mul_", {tR, tP1}, "{tp: R}", "from R to P")},
      {"U013", "V mul_ number stays V",
       InplaceIs(".mul_", {tV, Num(1)}, "{tp: V}", false, "{tp: V}")},
      {"U014", "I add_ V cannot mix",
       InferFails(".add_", {Ten("{tp: I}", 0), tV1}, {"cannot mix"})},
      {"U016", "out V given V result",
       InplaceIs("add", {tR, tV1}, "{tp: V}", false, "{tp: V}")},
  };
}

std::vector<Case> MeshAxisAndDtypeCases() {
  return {
      {"X001", "coalesced layout equals one atom",
       [] {
         MeshAxis a = MeshAxis::from_layout({{2, 2}, {2, 1}});
         EXPECT_EQ(a, Of(4, 1));
         EXPECT_EQ(hash_value(a), hash_value(Of(4, 1)));
       }},
      {"X003", "4x1 orthogonal to 2x4",
       [] {
         EXPECT_TRUE(are_orthogonal({Of(4, 1), Of(2, 4)}));
       }},
      {"X004", "axis not orthogonal to itself",
       [] {
         EXPECT_FALSE(are_orthogonal({Of(4, 1), Of(4, 1)}));
       }},
      {"X006", "pairwise does not imply joint",
       [] {
         MeshAxis a = Of(2, 5), b = Of(2, 6), c = Of(2, 7);
         EXPECT_TRUE(are_orthogonal({a, b}));
         EXPECT_TRUE(are_orthogonal({a, c}));
         EXPECT_TRUE(are_orthogonal({b, c}));
         EXPECT_FALSE(are_orthogonal({a, b, c}));
       }},
      {"X007", "3x1 and 3x2 not orthogonal",
       [] {
         EXPECT_FALSE(are_orthogonal({Of(3, 1), Of(3, 2)}));
       }},
      {"X009", "flatten 2x8 2x4",
       [] {
         auto r = flatten({Of(2, 8), Of(2, 4)});
         ASSERT_TRUE(Succeeds(r));
         EXPECT_EQ(r.value(), Of(4, 4));
       }},
      {"X010", "flatten dp cp tp",
       [] {
         auto r = flatten({Of(2, 8), Of(2, 4), Of(4, 1)});
         ASSERT_TRUE(Succeeds(r));
         EXPECT_EQ(r.value(), Of(16, 1));
       }},
      {"X011", "flatten non-orthogonal",
       [] {
         EXPECT_TRUE(FailsWith(flatten({Of(2, 8), Of(4, 4)}),
                               ErrorKind::InvalidArgument, {"not orthogonal"}));
       }},
      {"X013", "4x1 not a sub-axis of 4x4",
       [] { EXPECT_FALSE(Of(4, 1).is_sub_axis_of(Of(4, 4))); }},
      {"X014", "sizes",
       [] {
         EXPECT_EQ(Of(4, 1).size(), 4);
         EXPECT_EQ(Of(1, 64).size(), 1);
       }},
      {"X024", "flattened vs split axes strict missing axis",
       InferFails("add", {Ten("{dp_cp: V}", 0), Ten("{cp: R, dp: R}", 1)},
                  {"missing axis"})},
      {"Y001", "all_reduce to R backward reduces (guard applies)",
       [] { EXPECT_TRUE(backward_reduces(Call(C::AllReduce, P, R))); }},
      {"Y003", "all_reduce to R backward reduces (bf16 input)",
       [] { EXPECT_TRUE(backward_reduces(Call(C::AllReduce, P, R))); }},
      {"Y004", "all_reduce to I not guarded",
       [] { EXPECT_FALSE(backward_reduces(Call(C::AllReduce, P, I))); }},
      {"Y006", "reducing op with out_dtype reduces in input dtype",
       [] {
         CollectiveCall c = Call(C::AllReduce, P, I);
         c.has_out_dtype = true;
         DtypePlan p = plan_dtypes(c, 32, 16);
         EXPECT_EQ(p.op, DtypeChoice::Input);
         EXPECT_EQ(p.out, DtypeChoice::Out);
       }},
      {"Y007", "non-reducing op with narrower out_dtype casts first",
       [] {
         CollectiveCall c = Call(C::AllGather, S(0), I);
         c.has_out_dtype = true;
         DtypePlan p = plan_dtypes(c, 32, 16);
         EXPECT_EQ(p.op, DtypeChoice::Out);
         EXPECT_EQ(p.out, DtypeChoice::Out);
       }},
      {"Y010", "invariant_to_replicate guarded",
       [] {
         EXPECT_TRUE(backward_reduces(Call(C::InvariantToReplicate, I, R)));
       }},
      {"Y013", "convert R to S(0) is reducing",
       [] {
         CollectiveCall c = Call(C::Convert, R, S(0));
         EXPECT_TRUE(is_reducing(c));
         c.has_out_dtype = true;
         DtypePlan p = plan_dtypes(c, 32, 16);
         EXPECT_EQ(p.op, DtypeChoice::Input);
         EXPECT_EQ(p.out, DtypeChoice::Out);
       }},
      {"Y014", "all_gather S(0) to R guarded",
       [] { EXPECT_TRUE(backward_reduces(Call(C::AllGather, S(0), R))); }},
  };
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.id << ": " << c.rule; }
class Cases : public ::testing::TestWithParam<Case> {};

TEST_P(Cases, Check) {
  SCOPED_TRACE(std::string(GetParam().id) + ": " + GetParam().rule);
  GetParam().check();
}

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  return std::string(info.param.id) + "_" + Ident(info.param.rule);
}

INSTANTIATE_TEST_SUITE_P(P, Cases, ::testing::ValuesIn(PropagationCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(S, Cases, ::testing::ValuesIn(ScalarCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(FM, Cases, ::testing::ValuesIn(FactoryAndMeshCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(A, Cases, ::testing::ValuesIn(AnnotationCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(C, Cases, ::testing::ValuesIn(CollectiveCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(RV, Cases,
                         ::testing::ValuesIn(ReinterpretConvertCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(D, Cases, ::testing::ValuesIn(RedistributeCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(B, Cases, ::testing::ValuesIn(BackwardCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(LU, Cases, ::testing::ValuesIn(LossAndInplaceCases()),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(XY, Cases,
                         ::testing::ValuesIn(MeshAxisAndDtypeCases()),
                         CaseName);

}  // namespace
}  // namespace spmd::core::testing

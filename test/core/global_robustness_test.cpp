// Robustness of the sharding rules under arbitrary, partly known input: a
// front end may pass any op name, placement, shape and argument. The core
// never throws (docs/core.md); every combination must return a value or a
// TypeError, and a shard dim outside its operand's rank must be an error.
#include "global_test_util.h"

namespace spmd::core::testing {
namespace {

TEST(GlobalRobustnessTest, EveryRuleAnswersEveryInputWithoutThrowing) {
  const char* ops[] = {"add",
                       "relu",
                       "mm",
                       "bmm",
                       "matmul",
                       "einsum",
                       "linear",
                       "addmm",
                       "baddbmm",
                       "addbmm",
                       "mv",
                       "dot",
                       "addmv",
                       "addr",
                       "outer",
                       "sum",
                       "mean",
                       "max",
                       "argmax",
                       "softmax",
                       "sort",
                       "layer_norm",
                       "rms_norm",
                       "transpose",
                       "t",
                       "prop T",
                       "prop mT",
                       "permute",
                       "movedim",
                       "view",
                       "reshape",
                       "view_as",
                       "flatten",
                       "unflatten",
                       "squeeze",
                       "unsqueeze",
                       "expand",
                       "expand_as",
                       "narrow",
                       "select",
                       "slice",
                       "__getitem__",
                       "index_select",
                       "cat",
                       "stack",
                       "chunk",
                       "split",
                       "unbind",
                       "flip",
                       "roll",
                       "repeat",
                       "embedding",
                       "aten::embedding",
                       "cross_entropy",
                       "unknown_op"};
  std::vector<Placement> placements = {
      Placement::replicate(), Placement::shard(0),  Placement::shard(1),
      Placement::shard(2),    Placement::partial(), Placement::unknown()};
  Shape partly;
  partly.dims = std::vector<std::optional<long>>{std::nullopt, 3};
  std::vector<Shape> shapes = {Shape::unknown(),
                               Shape::of({}),
                               Shape::of({4}),
                               Shape::of({4, 3}),
                               Shape::of({2, 4, 3}),
                               Shape::of({1, 6}),
                               partly};
  std::vector<ShardingArgs> argsets;
  argsets.push_back({});
  argsets.push_back(Dims({0}));
  argsets.push_back(Dims({-1, 0}));
  argsets.push_back(Dims({7}));
  argsets.push_back(Sizes({-1}));
  argsets.push_back(Sizes({2, 2, 3}));
  argsets.push_back(Sizes({}));
  argsets.push_back(Eq("ij,jk->ik"));
  argsets.push_back(Eq("...i,...i"));
  {
    ShardingArgs a;
    a.known = false;
    argsets.push_back(a);
    ShardingArgs b;
    b.index = {IndexItem{IndexItem::Kind::Ellipsis},
               IndexItem{IndexItem::Kind::Integer},
               IndexItem{IndexItem::Kind::Tensor},
               IndexItem{IndexItem::Kind::NewAxis}};
    argsets.push_back(b);
    ShardingArgs c;
    c.normalized_ndim = 5;
    c.reduction = "none";
    argsets.push_back(c);
  }
  long calls = 0, errors = 0;
  bool threw = false;
  auto run = [&](const char* op, const std::vector<AxisArg>& in,
                 const ShardingArgs& args) {
    try {
      auto r = propagate_axis(op, in, args, "tp");
      ++calls;
      if (!r) {
        ++errors;
        EXPECT_FALSE(r.error().message.empty()) << op;
      }
      // An out-of-rank shard is always reported.
      const auto& a = in[0];
      if (a.placement.is_shard() && a.shape.rank_known() &&
          a.placement.dim >= a.shape.rank())
        EXPECT_FALSE(r.ok()) << op;
    } catch (const std::exception& e) {
      threw = true;
      ADD_FAILURE() << op << " threw " << e.what() << " with "
                    << in[0].placement.to_string() << in[0].shape.to_string();
    }
  };
  // Every op, placement, shape and argument set on one operand; two and
  // three operands with a smaller choice of the others (the sweep runs under
  // the sanitizers too, so it is kept to ~10^5 calls).
  std::vector<Placement> others = {Placement::replicate(), Placement::shard(0),
                                   Placement::partial(), Placement::unknown()};
  std::vector<Shape> other_shapes = {Shape::unknown(), Shape::of({4, 3}),
                                     Shape::of({2, 4, 3})};
  for (const char* op : ops)
    for (const auto& pa : placements)
      for (const auto& sa : shapes) {
        for (const auto& args : argsets) run(op, {{pa, sa}}, args);
        for (std::size_t k = 0; k < 2 && !threw; ++k)
          for (const auto& pb : others)
            for (const auto& sb : other_shapes) {
              run(op, {{pa, sa}, {pb, sb}}, argsets[k * 3]);
              run(op, {{pa, sa}, {pb, sb}, {pb, sa}}, argsets[k * 3 + 1]);
            }
        if (threw) return;
      }
  EXPECT_GT(calls, 50000);
  EXPECT_GT(errors, 0);
  EXPECT_LT(errors, calls);
}

}  // namespace
}  // namespace spmd::core::testing

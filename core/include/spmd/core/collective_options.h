// spmd/core/collective_options.h - the options of the collectives, described
// once.
//
// spmd::CollectiveOptions (runtime/include/spmd/collectives.h) is one struct
// for every collective (spec §7.1-§7.10). This table says, per field, its
// name, its type, its default, which collectives accept it and what it
// means. check_arguments() rejects a given option that the op does not
// accept; the runtime fills a CollectiveCall from the struct; the plugin
// reads the fields of an options initializer by name (find_option) and
// stores what it could evaluate with set_option().
#ifndef SPMD_CORE_COLLECTIVE_OPTIONS_H
#define SPMD_CORE_COLLECTIVE_OPTIONS_H

#include <spmd/core/collectives.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace spmd::core {

/// How an option's value is written in spmd::CollectiveOptions.
enum class OptionType : unsigned char {
  Bool,             ///< bool
  Dim,              ///< std::optional<int64_t>, a tensor dim
  Sizes,            ///< std::vector<int64_t>, one entry per rank
  Dtype,            ///< std::optional<c10::ScalarType>
  BackwardOptions,  ///< spmd::BackwardOptions
};
const char* to_string(OptionType t);  ///< "bool", "dim", ...

/// One row of the table.
struct CollectiveOptionInfo {
  CollectiveOption id;
  const char* name;  ///< field name in spmd::CollectiveOptions
  OptionType type;
  const char* default_value;  ///< as written in C++: "false", "std::nullopt"
  std::uint32_t accepted_by;  ///< bit (1 << int(Collective)) per collective
  const char* meaning;        ///< one line, for documentation and --help

  bool accepts(Collective c) const {
    return (accepted_by >> static_cast<unsigned>(c)) & 1u;
  }
};

/// The table, in the declaration order of spmd::CollectiveOptions
/// (collective_options()[int(o)].id == o).
const std::vector<CollectiveOptionInfo>& collective_options();

/// The row of `o`.
const CollectiveOptionInfo& option_info(CollectiveOption o);

/// The row whose field is called `name` ("gather_dim"), or nullptr.
const CollectiveOptionInfo* find_option(std::string_view name);

/// Whether `call` gives option `o`: a non-default value, or a value marked
/// unread by set_option (Backward counts only when marked).
bool has_option(const CollectiveCall& call, CollectiveOption o);

/// The comma-separated names of the options `c` accepts ("op_dtype,
/// out_dtype, backward, inplace" for all_reduce), for messages.
std::string accepted_options(Collective c);

/// A value a front end read for an option.
struct OptionValue {
  enum class Kind { Unread, Bool, Int, Sizes };
  Kind kind = Kind::Unread;
  bool flag = false;
  long number = 0;
  std::vector<long> sizes;

  /// Given, but not readable statically (a variable, a call, ...).
  static OptionValue unread() { return {}; }
  static OptionValue of(bool b) { return {Kind::Bool, b, 0, {}}; }
  static OptionValue of(long n) { return {Kind::Int, false, n, {}}; }
  static OptionValue of(std::vector<long> v) {
    return {Kind::Sizes, false, 0, std::move(v)};
  }
};

/// Stores `value` for option `o` in `call`. Dtype and BackwardOptions take
/// any value (only their presence matters to the rules). An unread Bool is
/// taken as true (expert_mode: do not guess a violation) and marked unread;
/// an unread Dim or Sizes leaves the field empty and marks it unread, so the
/// option counts as given while checks needing its value are skipped.
/// Errors: UsageError when the value's kind does not fit the option's type
/// (an integer for a bool option, ...).
Status set_option(CollectiveCall& call, CollectiveOption o,
                  const OptionValue& value);

}  // namespace spmd::core

#endif  // SPMD_CORE_COLLECTIVE_OPTIONS_H

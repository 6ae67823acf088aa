// libFuzzer harness for the core's text parsers: the type parsers
// (TensorType::parse, parse_entries, parse_per_axis_type), parse_op_class and
// parse_collective. Besides "no crash", it checks what the headers promise:
// a parse error is a ParseError with a message, and what parses prints back
// to text that parses to the same value.
#include <spmd/core/collectives.h>
#include <spmd/core/per_axis_type.h>
#include <spmd/core/propagation.h>
#include <spmd/core/tensor_type.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

using namespace spmd::core;

namespace {

/// Stops the run with the input's text and what went wrong (libFuzzer saves
/// the input as a crash).
[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "core_parsers_fuzzer: %s; input: '%.*s'\n", what,
               static_cast<int>(input.size()), input.data());
  std::abort();
}

template <typename T>
void expect_parse_error(const Result<T>& r, std::string_view input) {
  if (r.ok()) return;
  if (r.error().kind != ErrorKind::ParseError)
    fail("a parser returned an error that is not a ParseError", input);
  if (r.error().message.empty()) fail("a parse error without a message", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);

  Result<TensorType> t = TensorType::parse(text);
  expect_parse_error(t, text);
  if (t.ok()) {
    std::string printed = t.value().to_string();
    Result<TensorType> again = TensorType::parse(printed);
    if (!again.ok() || again.value() != t.value())
      fail("TensorType: parse(to_string(t)) != t", text);
  }

  auto entries = TensorType::parse_entries(text);
  expect_parse_error(entries, text);
  if (entries.ok() != t.ok())
    fail("parse and parse_entries disagree on whether the text is valid", text);
  if (entries.ok())
    for (const auto& [axis, type] : entries.value())
      if (axis.empty()) fail("parse_entries returned an empty axis name", text);

  Result<PerAxisType> p = parse_per_axis_type(text);
  expect_parse_error(p, text);
  if (p.ok()) {
    Result<PerAxisType> again = parse_per_axis_type(to_string(p.value()));
    if (!again.ok() || again.value() != p.value())
      fail("PerAxisType: parse(to_string(t)) != t", text);
  }

  Result<OpClass> op = parse_op_class(text);
  expect_parse_error(op, text);
  if (op.ok()) {
    Result<OpClass> again = parse_op_class(to_string(op.value()));
    if (!again.ok() || again.value() != op.value())
      fail("OpClass: parse(to_string(c)) != c", text);
  }

  if (std::optional<Collective> c = parse_collective(text)) {
    std::optional<Collective> again = parse_collective(to_string(*c));
    if (!again || *again != *c)
      fail("Collective: parse(to_string(c)) != c", text);
  }
  return 0;
}

// Which type each tensor of a model gets: one policy for `graft quantize` and `graft synth`.
//
//   1. 1-D tensors (norms, biases) are f32, whatever the flags say (as llama.cpp keeps them).
//   2. --tensor-type REGEX=TYPE, in command-line order: the first whose ECMAScript regex is found
//      anywhere in the tensor name (std::regex_search) decides.
//   3. token_embd.weight: --embd-type; else, when the model has no output.weight (tied: the
//      embedding is also the output projection), the output rule; else --type.
//   4. output.weight: the output rule: --output-type; else q6_k when --type has fewer than 6 bits
//      per weight (llama.cpp's default; quantize only, see TypeOptions); else --type.
//   5. Every other tensor: --type.
// Then the rows must be whole blocks of the chosen type: if not, --fallback-type when given (it
// must fit), else an error naming the tensor, its row length, the type and its block size.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "graft/status.hpp"
#include "quantize/type_catalog.hpp"

namespace graft::quantize {

struct TypeOptions {
  std::string type = "f32";                // --type
  std::string output_type;                 // --output-type; empty: the default rule
  std::string embd_type;                   // --embd-type; empty: the default rule
  std::string fallback_type;               // --fallback-type; empty: rows that do not fit are an error
  std::vector<std::string> tensor_types;   // --tensor-type REGEX=TYPE, in command-line order
  // llama.cpp's q6_k output below 6 bits per weight (quantize). Off for synth, whose --type names
  // the one format a benchmark or cross-check model is made of.
  bool q6_k_output_default = true;
};

struct TypeChoice {
  TypeId type = type_id::f32;
  std::string why;  // the rule that decided: "--type", "1-D", "--tensor-type attn_v=q8_0", ...
};

class TypePolicy {
 public:
  // Resolves every named type through the catalog and compiles the patterns. Errors name the
  // flag: an unknown type, a type no plugin provides, "--tensor-type X: expected REGEX=TYPE", a bad
  // regular expression.
  static Expected<TypePolicy> create(const TypeOptions& options, const TypeCatalog& catalog);

  // ne: the tensor's dimensions (ne[0] = row length). has_output: the model has output.weight.
  Expected<TypeChoice> choose(std::string_view name, std::span<const std::uint64_t> ne, bool has_output) const;

  TypeId type() const { return type_; }
  const TypeOptions& options() const { return options_; }

 private:
  struct Override {
    std::string text;  // as given
    std::regex pattern;
    TypeId type;
  };
  Expected<TypeChoice> output_rule() const;

  const TypeCatalog* catalog_ = nullptr;
  TypeOptions options_;
  TypeId type_ = type_id::f32;
  std::optional<TypeId> output_, embd_, fallback_;
  std::vector<Override> overrides_;
};

}  // namespace graft::quantize

// A Profile written back as TOML (`graft profile show`): every section and key of the schema,
// in schema order, with the plugin keys of each plugin table. Reading the text back gives the
// same Profile; paths are written absolute so the text means the same from any folder.
#pragma once

#include <string>

#include "profile/profile.hpp"

namespace graft {

std::string to_toml(const Profile& profile);

// A TOML basic string: "..." with quotes, backslashes and control characters escaped.
std::string toml_quote(std::string_view text);

}  // namespace graft

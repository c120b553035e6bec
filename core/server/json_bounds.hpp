// What one request body may cost to parse: nlohmann::json builds a node of ~16 bytes plus, for
// objects, a map node and a key string per member, so a 15 MB body of tiny objects becomes ~0.6 GB
// of small blocks (and the routes parse it twice: once sorted, once in the client's key order).
// A streaming pass over the body counts its values and depth first, building nothing, and a body
// past the bounds is refused before any tree is made.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

#include "server/api_error.hpp"

namespace graft::server {

struct JsonBounds {
  std::size_t max_values = 200000;  // every value, object member key included
  std::size_t max_depth = 64;       // nested objects and arrays
};

// The error (413) for a body over the bounds, naming the bound; nullopt for a body within them and
// for a body that is not JSON at all (the route's own parse says that).
std::optional<ApiError> check_json_bounds(std::string_view body, const JsonBounds& bounds);

}  // namespace graft::server

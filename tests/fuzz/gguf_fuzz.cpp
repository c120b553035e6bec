// libFuzzer harness: any byte string must either parse into a File whose every view is in
// bounds, or fail with one non-empty error line. ASan/UBSan catch the rest.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "gguf/gguf_file.hpp"

// Keeps the reads above from being optimized away.
volatile std::size_t g_sink = 0;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace graft::gguf;
  auto file = File::parse(std::span<const std::uint8_t>(data, size));
  if (!file) {
    const std::string& msg = file.status().message();
    if (msg.empty() || msg.find('\n') != std::string::npos) std::abort();
    return 0;
  }
  const File& f = **file;
  std::size_t sink = 0;
  for (const auto& kv : f.metadata()) {
    sink += kv.value.to_string().size();
    sink += f.find(kv.key) == &kv.value;  // the index agrees with the list
    (void)f.get_string_array(kv.key);
    (void)f.get_int_array(kv.key);
    (void)f.get_real_array(kv.key);
  }
  for (const auto& t : f.tensors()) {
    if (f.tensor(t.name) != &t) std::abort();
    if (t.bytes > 0 && (t.data < data || t.data + t.bytes > data + size)) std::abort();
    // Reading first and last byte lets ASan check the view's ends.
    if (t.bytes > 0) sink += t.data[0] + t.data[t.bytes - 1];
  }
  g_sink = sink;
  return 0;
}

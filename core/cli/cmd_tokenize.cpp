// `graft tokenize`: text -> token ids with the vocabulary of a GGUF file (weights not needed).
#include <boost/program_options.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "gguf/gguf_file.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace graft::cli {
namespace {

namespace po = boost::program_options;

// A piece shown between quotes on one line: valid UTF-8 characters as they are, control
// characters and bytes of unfinished or invalid sequences (a token may hold half a character)
// escaped.
std::string quote(std::string_view bytes) {
  std::string out = "'";
  for (std::size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    const std::size_t n = unicode::valid_prefix_len(bytes.substr(i));
    if (n > 1) {
      out.append(bytes.substr(i, n));
      i += n;
      continue;
    }
    ++i;
    switch (c) {
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\\': out += "\\\\"; continue;
      case '\'': out += "\\'"; continue;
      default: break;
    }
    if (n == 1 && c >= 0x20 && c != 0x7F) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + "'";
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return !in.bad();
}

int fail(const std::string& msg) {
  std::fprintf(stderr, "graft tokenize: %s\n", msg.c_str());
  return 1;
}

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "graft tokenize: %s (try 'graft tokenize --help')\n", msg.c_str());
  return 2;
}

}  // namespace

int cmd_tokenize(const Args& args) {
  po::options_description desc(
      "usage: graft tokenize --model FILE (--prompt TEXT | --prompt-file FILE) [--ids] [--no-bos] "
      "[--parse-special]\n\noptions");
  desc.add_options()
      ("help,h", "show this help")
      ("model,m", po::value<std::string>()->value_name("FILE"), "GGUF file with a vocabulary (tensors not needed)")
      ("prompt,p", po::value<std::string>()->value_name("TEXT"), "text to tokenize")
      ("prompt-file,f", po::value<std::string>()->value_name("FILE"), "tokenize the contents of FILE")
      ("ids", po::bool_switch(), "print only the ids, as one list: [1, 2, 3]")
      ("no-bos", po::bool_switch(), "add no BOS/EOS even where the vocabulary asks for them")
      ("parse-special", po::bool_switch(), "read special-token text such as <|im_start|> as that token");

  po::variables_map vm;
  try {
    // No positional arguments: a stray word is a usage error, not silently ignored text.
    po::store(po::command_line_parser(args).options(desc).positional(po::positional_options_description()).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(e.what());
  }
  if (vm.count("help")) {
    std::ostringstream ss;
    ss << desc;
    std::fputs(ss.str().c_str(), stdout);
    std::fputs("\nOutput: one line per token, id<TAB>'piece'; --ids prints [id, ...] instead.\n", stdout);
    return 0;
  }
  if (!vm.count("model")) return usage_error("--model FILE is required");
  if (vm.count("prompt") == vm.count("prompt-file")) return usage_error("give exactly one of --prompt and --prompt-file");

  std::string text;
  if (vm.count("prompt")) {
    text = vm["prompt"].as<std::string>();
  } else {
    const auto& path = vm["prompt-file"].as<std::string>();
    errno = 0;
    if (!read_file(path, text)) {
      return fail("cannot read prompt file " + path + (errno ? std::string(": ") + std::strerror(errno) : ""));
    }
  }

  auto file = gguf::File::open(vm["model"].as<std::string>());
  if (!file) return fail(file.status().message());
  auto tok = Tokenizer::from_gguf(**file);
  if (!tok) return fail(tok.status().message());

  TokenizeOptions opt;
  opt.add_special = !vm["no-bos"].as<bool>();
  opt.parse_special = vm["parse-special"].as<bool>();
  auto ids = (*tok)->encode(text, opt);
  if (!ids) return fail(ids.status().message());

  std::string out;
  if (vm["ids"].as<bool>()) {
    out = "[";
    for (std::size_t i = 0; i < ids->size(); ++i) out += (i ? ", " : "") + std::to_string((*ids)[i]);
    out += "]\n";
  } else {
    for (const TokenId id : *ids) out += std::to_string(id) + "\t" + quote((*tok)->token_bytes(id)) + "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return std::fflush(stdout) == 0 ? 0 : fail("cannot write the output");
}

}  // namespace graft::cli

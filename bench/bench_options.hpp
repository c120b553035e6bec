// Command lines of the benchmark tools: Boost.Program_Options, with list options written as
// comma-separated values ("--k 1024,2048") read into a CommaList.
#pragma once

#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace graft::bench {

template <class T>
struct CommaList {
  std::vector<T> values;
};

// Program_Options' hook for reading a CommaList from one token.
template <class T>
void validate(boost::any& out, const std::vector<std::string>& tokens, CommaList<T>*, int) {
  namespace po = boost::program_options;
  po::validators::check_first_occurrence(out);
  CommaList<T> list;
  std::stringstream ss(po::validators::get_single_string(tokens));
  for (std::string item; std::getline(ss, item, ',');) {
    try {
      list.values.push_back(boost::lexical_cast<T>(item));
    } catch (const boost::bad_lexical_cast&) {
      throw po::invalid_option_value(item);
    }
  }
  out = list;
}

// A list option that replaces `target` when given (the target keeps its default otherwise).
template <class T>
boost::program_options::typed_value<CommaList<T>>* list_into(std::vector<T>& target) {
  return boost::program_options::value<CommaList<T>>()->notifier([&target](const CommaList<T>& l) { target = l.values; });
}

// Parses argv into the options' targets; on a bad command line prints the error and the option
// list to stderr and returns false.
inline bool parse_options(int argc, char** argv, const char* usage,
                          const boost::program_options::options_description& options) {
  namespace po = boost::program_options;
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(options).run(), vm);
    po::notify(vm);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\nusage: %s\n", e.what(), usage);
    std::cerr << options;
    return false;
  }
}

}  // namespace graft::bench

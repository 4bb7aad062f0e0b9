#pragma once
// The one error type at module boundaries. Bad user input and failed library calls become a
// commsim::Error with a message that names what is wrong; main() prints it and exits non-zero.
#include <stdexcept>
#include <string>

namespace commsim {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace commsim

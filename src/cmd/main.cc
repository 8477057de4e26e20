#include <iostream>

#include "cmd/commands.h"

int main(int argc, char** argv) {
  return tfjob::cmd::Main(argc, argv, std::cout, std::cerr);
}

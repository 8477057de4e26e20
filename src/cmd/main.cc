#include <iostream>

#include "cli/main.h"

int main(int argc, char** argv) {
  return tfjob::cli::Main(argc, argv, std::cout, std::cerr);
}

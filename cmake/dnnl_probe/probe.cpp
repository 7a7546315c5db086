// Links against oneDNN; never run.
#include <dnnl.hpp>

int main() {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine.get_kind() == dnnl::engine::kind::cpu ? 0 : 1;
}

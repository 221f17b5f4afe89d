// headrace._ext: the private extension behind the typed Python API in python/headrace/.
#include "bindings.hpp"

NB_MODULE(_ext, m) {
  m.doc() = "headrace C++ core (private: use the headrace package)";
  m.attr("__version__") = HEADRACE_VERSION;
  headrace::python::bind_errors(m);
  headrace::python::bind_environment(m);
  headrace::python::bind_format(m);
  bind_io(m);
  headrace::python::bind_codec(m);
  headrace::python::bind_gpu(m);
  headrace::python::bind_queue(m);
  headrace::python::bind_imaging(m);
  headrace::python::bind_streamlines(m);
  headrace::python::bind_particles(m);
  headrace::python::bind_volume(m);
  bind_probe(m);
}

// The options classes are bound field by field once (io.cpp: Settings, queue.cpp: QueueOptions); their
// repr and dict are read back from those bindings, so no list of fields is written a second time.
#include <nanobind/stl/string.h>

#include <string>

#include "bindings.hpp"

namespace nb = nanobind;

namespace headrace::python {

nb::dict fields_dict(nb::handle self) {
  const nb::module_ builtins = nb::module_::import_("builtins");
  const nb::object property = builtins.attr("property");
  nb::dict fields;
  for (nb::handle name : builtins.attr("dir")(self.type())) {
    if (nb::cast<std::string>(name).starts_with('_')) continue;
    if (PyObject_IsInstance(nb::getattr(self.type(), name).ptr(), property.ptr()) != 1) continue;
    nb::object value = nb::getattr(self, name);
    fields[name] = nb::hasattr(value, "to_dict") ? value.attr("to_dict")() : value;  // nested options
  }
  return fields;
}

std::string fields_repr(nb::handle self) {
  std::string text = nb::cast<std::string>(self.type().attr("__name__")) + "(";
  bool first = true;
  for (auto [name, value] : fields_dict(self)) {
    text += (first ? "" : ", ") + nb::cast<std::string>(nb::str(name)) + "=" + nb::cast<std::string>(nb::repr(value));
    first = false;
  }
  return text + ")";
}

}  // namespace headrace::python

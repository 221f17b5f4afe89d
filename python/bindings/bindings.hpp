// One bind function per layer; module.cpp calls them in data-flow order.
#pragma once

#include <nanobind/nanobind.h>

#include <optional>
#include <string>

namespace headrace::python {
// Keyword arguments left as None keep the setting's default.
template <typename T>
void assign_if_given(T& target, const std::optional<T>& value) {
  if (value) target = *value;
}

// An options object's fields (its properties, nested options as dicts) and its repr from them.
nanobind::dict fields_dict(nanobind::handle self);
std::string fields_repr(nanobind::handle self);

void bind_errors(nanobind::module_& m);
void bind_format(nanobind::module_& m);
void bind_codec(nanobind::module_& m);
void bind_environment(nanobind::module_& m);
void bind_gpu(nanobind::module_& m);
void bind_queue(nanobind::module_& m);
void bind_workloads(nanobind::module_& m);
}  // namespace headrace::python

void bind_io(nanobind::module_& m);
void bind_probe(nanobind::module_& m);

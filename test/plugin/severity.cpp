// Severity per diagnostic kind through plugin arguments; warnings obey
// -Werror and -w.
// RUN-PLUGIN: -Xclang -verify=err
// RUN-PLUGIN: -Xclang -verify=warn -fplugin-arg-spmd-check-warn=op-type
// RUN-PLUGIN: -Xclang -verify=err -fplugin-arg-spmd-check-warn=op-type -Werror
// RUN-PLUGIN: -Xclang -verify=warn -Xclang -plugin-arg-spmd-check -Xclang warn=op-type
// RUN-PLUGIN: -Xclang -verify=ignored -fplugin-arg-spmd-check-ignore=op-type
// RUN-PLUGIN: -Xclang -verify=ignored -fplugin-arg-spmd-check-warn=all -w
// RUN-PLUGIN: -Xclang -verify=ignored -fplugin-arg-spmd-check-ignore=all
// RUN-PLUGIN: -Xclang -verify=err -fplugin-arg-spmd-check-ignore=all -fplugin-arg-spmd-check-error=op-type
// ignored-no-diagnostics
#include "Inputs/prelude.h"

Tensor f(SPMD_TYPE(tp = P) const Tensor& p) { // err-note {{declared here}} warn-note {{declared here}}
  return torch::relu(p); // err-error {{cannot propagate through non-linear ops}} warn-warning {{cannot propagate through non-linear ops}} err-note {{insert}} warn-note {{insert}}
}

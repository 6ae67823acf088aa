// spmd/spmd.h - the runtime's umbrella header: annotations, device mesh,
// collectives, type annotations on live tensors.
#ifndef SPMD_SPMD_H
#define SPMD_SPMD_H

#include <spmd/annotations.h>
#include <spmd/collectives.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <spmd/process_groups.h>
#include <spmd/type_annotations.h>

#endif  // SPMD_SPMD_H

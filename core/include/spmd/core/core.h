// spmd/core/core.h - umbrella header for the SPMD type system core.
#ifndef SPMD_CORE_CORE_H
#define SPMD_CORE_CORE_H

#include <spmd/core/annotation_rules.h>
#include <spmd/core/collective_options.h>
#include <spmd/core/collectives.h>
#include <spmd/core/error.h>
#include <spmd/core/global_collectives.h>
#include <spmd/core/masks.h>
#include <spmd/core/mesh_axis.h>
#include <spmd/core/mesh_region.h>
#include <spmd/core/partition_spec.h>
#include <spmd/core/per_axis_type.h>
#include <spmd/core/propagation.h>
#include <spmd/core/sharding_propagation.h>
#include <spmd/core/tensor_type.h>

#endif  // SPMD_CORE_CORE_H

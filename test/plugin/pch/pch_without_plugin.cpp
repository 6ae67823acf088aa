// A precompiled header built without the plugin holds no annotations (and
// its SPMD_TYPE macro expands to nothing): a clear warning, not a silent
// loss. The PCH is annotated.h, built by plugin.pch.build_without_plugin.
// expected-warning@1 {{was built without the spmd-check plugin: the [[spmd::...]] annotations in it are not seen; rebuild it with the plugin loaded}}
void uses(const Tensor& r, const Tensor& v) { column_parallel(r, v); }

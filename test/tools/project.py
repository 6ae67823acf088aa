"""A small CMake-free project for the tool tests.

Copies test/tools/Inputs/project/*.cpp into <workdir>/src and writes
<workdir>/build/compile_commands.json with GCC-style command lines (g++ as the
compiler, flags Clang does not know), the way a GCC build exports them: the
tools must adjust those for Clang's frontend.
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))

# Flags only GCC knows: a Clang frontend stops with "unknown argument" unless
# the tools strip them.
GCC_ONLY_FLAGS = ["-fconcepts-diagnostics-depth=2",
                  "-fno-canonical-system-headers",
                  "-Wno-maybe-uninitialized"]


def make_project(workdir, source_dir, files=("clean.cpp", "bad.cpp")):
    """Creates the project; returns (src_dir, build_dir)."""
    src = os.path.join(workdir, "src")
    build = os.path.join(workdir, "build")
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(src)
    os.makedirs(build)
    includes = [
        "-I" + os.path.join(source_dir, "annotations", "include"),
        "-I" + os.path.join(source_dir, "runtime", "include"),
        "-I" + os.path.join(source_dir, "test", "plugin", "Inputs",
                            "mini-torch"),
        "-I" + os.path.join(source_dir, "test", "plugin", "Inputs"),
    ]
    commands = []
    for name in files:
        shutil.copy(os.path.join(HERE, "Inputs", "project", name), src)
        obj = os.path.splitext(name)[0] + ".o"
        commands.append({
            "directory": build,
            "command": " ".join(
                ["/usr/bin/g++", "-std=c++17", "-Wall", "-O2"] + includes +
                GCC_ONLY_FLAGS +
                ["-MD", "-MF", obj + ".d", "-o", obj, "-c",
                 os.path.join("..", "src", name)]),
            "file": os.path.join("..", "src", name),
        })
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(commands, f, indent=2)
    return src, build

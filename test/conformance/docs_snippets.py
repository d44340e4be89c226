#!/usr/bin/env python3
"""The docs' code as printed: a newcomer copies it, so it must compile
and do what the text says.

- guide.md, "A complete program": compiled with -Wall -Wextra -Werror
  against the build's public headers and libpami, run under pamirun at
  3 tasks; each task prints the greeting of the previous one.
- bootstrap.md, "oob": the params block and the MPI allgather callback,
  put in a main that joins MPI_COMM_WORLD, compiled with mpicc and run
  under mpirun at 2 tasks: pami_client_create and createv succeed
  (skipped, exit 77, without mpicc or mpirun).

  docs_snippets.py BUILD_DIR SOURCE_DIR PAMIRUN [MPICC MPIRUN]
  SNIPPET_CFLAGS: more compiler flags (a sanitizer build's).
"""
import os
import re
import subprocess
import sys
import tempfile


def blocks(path, heading):
    """The ```c blocks of the section that starts at heading."""
    text = open(path).read()
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```c\n(.*?)```", section, re.S)


def run(cmd, env=None, timeout=120):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout


def main():
    build, src, pamirun = sys.argv[1:4]
    mpicc = sys.argv[4] if len(sys.argv) > 4 else ""
    mpirun = sys.argv[5] if len(sys.argv) > 5 else ""
    flags = ["-Wall", "-Wextra", "-Werror",
             "-I" + os.path.join(build, "include", "pami"),
             "-L" + build, "-Wl,-rpath," + build, "-lpami"]
    # A sanitizer build's flags (meson.build sets them), for both programs.
    flags += os.environ.get("SNIPPET_CFLAGS", "").split()
    errors = []
    skipped = False
    with tempfile.TemporaryDirectory() as tmp:
        hello = os.path.join(tmp, "hello.c")
        open(hello, "w").write(blocks(os.path.join(src, "docs", "guide.md"),
                                      "## A complete program")[0])
        rc, out = run(["cc", hello, "-o", hello[:-2]] + flags)
        if rc != 0:
            errors.append("guide.md's complete program does not compile:\n"
                          + out)
        else:
            rc, out = run([pamirun, "-n", "3", hello[:-2]])
            got = sorted(re.findall(r'got "hello" from task (\d)', out))
            if rc != 0 or got != ["0", "1", "2"]:
                errors.append("guide.md's complete program at 3 tasks: "
                              "expected exit 0 and a greeting from each "
                              "task, seen %d and %s:\n%s" % (rc, got, out))
        if not (mpicc and mpirun):
            skipped = True
        else:
            params, callback = blocks(os.path.join(src, "docs",
                                                   "bootstrap.md"),
                                      "## oob")[:2]
            prog = ("#include <mpi.h>\n#include <pami.h>\n#include <stdio.h>\n"
                    + callback + "\nint main(int argc, char **argv)\n{\n"
                    "    MPI_Init(&argc, &argv);\n"
                    "    MPI_Comm my_comm = MPI_COMM_WORLD;\n"
                    "    int my_rank, my_size;\n"
                    "    MPI_Comm_rank(my_comm, &my_rank);\n"
                    "    MPI_Comm_size(my_comm, &my_size);\n"
                    + params +
                    "    pami_client_t client;\n"
                    "    pami_context_t ctx;\n"
                    "    pami_result_t rc = pami_client_create(\"snip\", "
                    "&params, &client);\n"
                    "    if (rc == PAMI_SUCCESS)\n"
                    "        rc = pami_context_createv(client, NULL, 1, &ctx);\n"
                    "    printf(\"task %d: %s\\n\", my_rank, "
                    "pami_error_text(rc));\n"
                    "    fflush(stdout);\n"
                    "    if (rc == PAMI_SUCCESS)\n"
                    "        pami_client_destroy(&client);\n"
                    "    MPI_Finalize();\n"
                    "    return rc == PAMI_SUCCESS ? 0 : 1;\n}\n")
            oob = os.path.join(tmp, "oob.c")
            open(oob, "w").write(prog)
            rc, out = run([mpicc, oob, "-o", oob[:-2]] + flags)
            if rc != 0:
                errors.append("bootstrap.md's oob snippets do not compile:\n"
                              + out)
            else:
                env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1",
                           OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
                rc, out = run([mpirun, "--oversubscribe", "-n", "2",
                               oob[:-2]], env=env)
                ok = re.findall(r"task \d: success", out)
                if rc != 0 or len(ok) != 2:
                    errors.append("bootstrap.md's oob snippets under mpirun "
                                  "at 2 tasks: expected both to succeed, seen "
                                  "exit %d:\n%s" % (rc, out))
    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    if skipped:
        print("guide.md's program passed; no mpicc/mpirun: oob skipped")
        return 77
    print("guide.md's program and bootstrap.md's oob snippets passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

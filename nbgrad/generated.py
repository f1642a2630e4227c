"""Code nbgrad writes at run time (each op's backward written out, its saver, its formulas),
compiled so that a traceback through it shows its lines, as it shows a file's.

The source is kept in ``linecache`` under the code's file name (``<MulBackward0 backward>``);
``source("<MulBackward0 backward>")`` gives it back whole.
"""

import linecache


def compile_registered(source, filename, mode="exec"):
    """``compile(source, filename, mode)``, with the source where tracebacks look for it."""
    # mtime None: linecache.checkcache leaves the entry alone (no file to compare it with)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return compile(source, filename, mode)


def source(filename):
    """The source compiled under ``filename`` by ``compile_registered``."""
    return "".join(linecache.getlines(filename))

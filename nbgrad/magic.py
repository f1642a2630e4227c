"""``%%autograd`` and ``%autograd``: run a cell (or one statement) while recording autograd.

    %load_ext nbgrad

    %%autograd [--no-show] [--backward NAME] [--full] [--max-nodes N] [--name NAME] ...
    <ordinary Python>

A cell on real PyTorch tensors records PyTorch's own graph (nbgrad.trace.torch_recorder), into
the same Trace; which engine a cell uses is detected (nbgrad.trace.engines), or set with
``--engine``.

The cell runs in the user's namespace exactly as a plain cell does: its variables remain, its
last expression is displayed, and an exception shows one traceback with the cell's own lines
and fails the cell (so ``nbconvert --execute`` stops). Then the trace is shown (``show_trace``,
the one function the graph widget replaces) and is available as ``nbgrad.last_trace()``.

A cell may ``await`` at its top level, as a plain cell may: IPython then runs it as a coroutine
(``await_recorded_cells``), and the recording spans its awaits.
"""

import argparse
import ast
import contextlib
import inspect
import io
import keyword
import sys
import tokenize

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class

from nbgrad.trace.api import DEFAULT_MAX_ELEMENTS, set_last_trace
from nbgrad.trace.engines import ENGINES, detect_engine, recorder_class
from nbgrad.trace.nonfinite import NonfiniteWatch
from nbgrad.trace.recorder import DEFAULT_MAX_NODES, DEFAULT_MAX_PASSES, RecordingError
from nbgrad.trace.source import source_for
from nbgrad.trace.values import Policy

BACKWARD_FILENAME = "<%%autograd --backward>"


def show_trace(trace, practice=False):
    """Show a recorded cell's trace below the cell: the graph widget (nbgrad.widget), which
    also carries a static SVG and a text summary for places that cannot run it. ``practice``:
    in practice mode (every gradient hidden until the learner works it out)."""
    from nbgrad.widget import display_trace

    display_trace(trace, practice=practice)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a bad option as an IPython usage error, with the usage text."""

    def error(self, message):
        raise UsageError(f"{self.format_usage()}{self.prog}: error: {message}")


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _count(text):
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {value}")
    return value


def _identifier(text):
    if not text.isidentifier() or keyword.iskeyword(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python variable name")
    return text


def _build_parser():
    parser = _Parser(
        prog="%autograd",
        add_help=False,
        description=(
            "Run the cell (%%autograd) or one statement (%autograd STATEMENT) while recording "
            "every autograd operation, backward step and gradient accumulation, then show the "
            "recorded graph. nbgrad.last_trace() returns the trace."
        ),
    )
    parser.add_argument("--no-show", action="store_true", help="record, but display nothing")
    parser.add_argument(
        "--backward",
        metavar="NAME",
        help="call NAME.backward() after the cell (NAME: a variable, or an attribute of one)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="keep every array whole (by default large arrays keep statistics and a preview)",
    )
    parser.add_argument(
        "--max-nodes",
        metavar="N",
        type=_positive,
        default=DEFAULT_MAX_NODES,
        help=f"stop recording at N grad_fn nodes or N operations (default {DEFAULT_MAX_NODES})",
    )
    parser.add_argument(
        "--max-passes",
        metavar="N",
        type=_count,
        default=DEFAULT_MAX_PASSES,
        help=(
            "record N backward passes, then let the rest of the cell (a training loop) run "
            f"unrecorded (default {DEFAULT_MAX_PASSES})"
        ),
    )
    parser.add_argument(
        "--max-elements",
        metavar="N",
        type=_count,
        default=DEFAULT_MAX_ELEMENTS,
        help=(
            "arrays with more than N elements are kept as statistics and a preview "
            f"(default {DEFAULT_MAX_ELEMENTS})"
        ),
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help=(
            "keep no per-parameter numbers (grad, update and value norms) for every backward "
            "pass past --max-passes (trace.history)"
        ),
    )
    parser.add_argument(
        "--name", metavar="NAME", type=_identifier, help="also bind the trace to variable NAME"
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help=(
            "the autograd to record: nbgrad's, or real PyTorch's (torch); auto (the default) "
            "records PyTorch when the cell imports it or uses its tensors or modules"
        ),
    )
    parser.add_argument(
        "--practice",
        action="store_true",
        help=(
            "practice mode: the graph shows no gradient; at each backward step you type what "
            "the node sends on each edge, and the widget says whether it is right"
        ),
    )
    parser.add_argument(
        "--stop-on-nonfinite",
        action="store_true",
        help=(
            "raise an error from the op or backward step that makes the first NaN or Inf "
            "(by default recording goes on and the trace shows where it appeared)"
        ),
    )
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    return parser


PARSER = _build_parser()
_TAKES_VALUE = {
    "--backward",
    "--max-nodes",
    "--max-passes",
    "--max-elements",
    "--name",
    "--engine",
}


def split_options(line):
    """Split a line magic's text into its leading options and the statement after them.

    Options are the leading words that start with ``-`` (with the value of those that take
    one); ``--`` ends them explicitly, for a statement that starts with ``-``.
    """
    rest = line.lstrip()
    options = []
    while rest.startswith("-"):
        word, _, after = rest.partition(" ")
        if word == "--":
            rest = after.lstrip()
            break
        options.append(word)
        rest = after.lstrip()
        if word in _TAKES_VALUE and rest:
            value, _, after = rest.partition(" ")
            options.append(value)
            rest = after.lstrip()
    return options, rest


@magics_class
class AutogradMagics(Magics):
    @line_cell_magic
    def autograd(self, line, cell=None):
        __tracebackhide__ = True  # noqa: F841 - IPython's debugger skips this frame
        if cell is None:
            words, statement = split_options(line)
        else:
            words, statement = line.split(), None
        options = PARSER.parse_args(words)
        if options.help:
            print(PARSER.format_help())
            if cell is not None and has_top_level_await(self.shell, cell):
                return _nothing()  # the cell's transformed text awaits what the magic returns
            return None
        if cell is None and not statement.strip():
            raise UsageError(f"{PARSER.format_usage()}%autograd: error: no statement to run")
        if cell is not None:
            header = f"%%autograd {line}".rstrip()
            return run_recorded(self.shell, cell, options, header=header)
        return run_recorded(self.shell, statement, options, header=None)


AutogradMagics.autograd.__doc__ = PARSER.format_help()


def run_recorded(shell, code, options, header):
    """Run ``code`` in the user's namespace while recording, then show the trace.

    ``header`` is the cell's first line (``%%autograd ...``), or None for a line magic. The cell
    body is compiled with one blank line in front of it so that line numbers in tracebacks and
    in the trace are the cell's own.

    Code with a top-level ``await`` (IPython's autoawait on) runs as IPython runs such a plain
    cell: as a coroutine, here the one this returns, which the cell's transformed text awaits
    (``await_recorded_cells``). Otherwise the code runs now and this returns None.
    """
    __tracebackhide__ = True  # noqa: F841
    number = shell.execution_count
    # The steps IPython's own %%time takes: its input transformations (%magics, !shell, help?),
    # its parser, then the user's AST transformers (shell.ast_transformers).
    transformed = _transform_cell(shell, code)
    compiled_text = ("\n" if header is not None else "") + transformed
    shown_text = (header + "\n" if header is not None else "") + transformed
    filename = shell.compile.cache(shown_text, number)
    tree = _parse(shell, compiled_text, filename)
    allow_await = header is not None and _may_await(shell, code)  # cells only, as IPython does
    cell_code, last_expression = _compile(shell, tree, filename, code, allow_await)

    engine = options.engine
    if engine == "auto":
        engine = detect_engine(tree, shell.user_ns, compiled_text)
    source = source_for(filename, compiled_text, tree=tree)
    if _is_coroutine(cell_code) or _is_coroutine(last_expression):
        return _run_recorded_awaiting(
            shell, options, engine, source, cell_code, last_expression, filename
        )
    recorder = _start_recorder(shell, options, engine, source, sys._getframe())

    error = None
    try:
        exec(cell_code, shell.user_global_ns, shell.user_ns)
        if last_expression is not None:
            # Compiled in "single" mode: Python hands the value to sys.displayhook, which in
            # IPython displays it as the cell's Out[n], as for a plain cell.
            exec(last_expression, shell.user_global_ns, shell.user_ns)
        if options.backward:
            _call_backward(shell, options.backward)
    except BaseException as raised:  # KeyboardInterrupt too: recording must end either way
        error = raised
    _end_recording(shell, recorder, options, error, filename)
    return None


async def _run_recorded_awaiting(
    shell, options, engine, source, cell_code, last_expression, filename
):
    """``run_recorded`` for code with a top-level ``await``: the same steps, awaiting the code
    as IPython awaits a plain cell's (``await eval(code, ...)``). The recording starts when this
    coroutine runs, so a coroutine never awaited leaves no recording running; its frame is the
    one the recorded code's frames lead back to while they run."""
    __tracebackhide__ = True  # noqa: F841
    recorder = _start_recorder(shell, options, engine, source, sys._getframe())
    error = None
    try:
        for code in (cell_code, last_expression):
            if code is None:
                continue
            if _is_coroutine(code):
                await eval(code, shell.user_global_ns, shell.user_ns)  # noqa: S307 - the cell
            else:
                exec(code, shell.user_global_ns, shell.user_ns)
        if options.backward:
            _call_backward(shell, options.backward)
    except BaseException as raised:  # a cancelled cell (CancelledError) too
        error = raised
    _end_recording(shell, recorder, options, error, filename)


def _start_recorder(shell, options, engine, source, base_frame):
    recorder = recorder_class(engine)(
        source,
        base_frame=base_frame,
        policy=Policy(max_elements=options.max_elements, full=options.full),
        max_nodes=options.max_nodes,
        max_passes=options.max_passes,
        name=options.name,
        source_kind="cell",
        history=not options.no_history,
    )
    if options.stop_on_nonfinite:
        recorder.nonfinite_watch = NonfiniteWatch()
    try:
        recorder.start()
    except RecordingError as error:
        raise UsageError(str(error)) from None
    return recorder


def _call_backward(shell, expression):
    target = eval(  # noqa: S307 - the user's own expression, run as their cell would
        compile(expression, BACKWARD_FILENAME, "eval"),
        shell.user_global_ns,
        shell.user_ns,
    )
    target.backward()


def _end_recording(shell, recorder, options, error, filename):
    """Finish the trace, make it the last one (and the variable ``--name`` asks for), show it,
    then raise the recorded code's exception, if any, as the cell's."""
    __tracebackhide__ = True  # noqa: F841
    # Names are read from the user's variables now; labels, roles and the rest when the trace is
    # first read (shown below, or by the user): a --no-show cell may never be read.
    trace = recorder.finish([shell.user_ns], error=error, defer=True)
    set_last_trace(trace)
    if options.name:
        shell.user_ns[options.name] = trace
    if not options.no_show:
        show_trace(trace, practice=options.practice)
    if error is not None:
        _raise_cleanly(shell, error, {filename, BACKWARD_FILENAME})


def _may_await(shell, code):
    """Whether ``code`` may use a top-level ``await`` (``async for``, ``async with``): when
    IPython's autoawait is on, as for a plain cell; the words are looked for first, a cheap
    test that spares most cells the shell's setting."""
    return ("await" in code or "async" in code) and bool(getattr(shell, "autoawait", False))


def has_top_level_await(shell, code):
    """Whether a cell's code has a top-level ``await`` IPython would run: the code compiles to
    a coroutine when top-level ``await`` is allowed, and autoawait is on. A cell that does not
    compile has none (the magic then reports its error)."""
    if not _may_await(shell, code):
        return False
    flags = shell.compile.flags | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        compiled = compile(_transform_cell(shell, code), "<%%autograd>", "exec", flags, True)
    except Exception:  # noqa: BLE001 - a syntax error, or one of IPython's transformations
        return False
    return _is_coroutine(compiled)


def await_recorded_cells(shell):
    """An input transformation for IPython (``load_ipython_extension`` adds it, ahead of
    IPython's own for cell magics): a ``%%autograd`` cell whose code has a top-level ``await``
    becomes ``await get_ipython().run_cell_magic(...)`` where IPython writes the call without
    ``await``. IPython then runs the cell as a coroutine (in a kernel, on the kernel's event
    loop), as it runs a plain cell with ``await``, and awaits the coroutine the magic returns
    for such code (``run_recorded``). Other cells are left to IPython."""

    def transform(lines):
        if not lines or not lines[0].startswith("%%autograd"):
            return lines
        name, _, line = lines[0][2:].rstrip().partition(" ")  # as IPython splits it
        body = "".join(lines[1:])
        if name != "autograd" or not has_top_level_await(shell, body):
            return lines
        return [f"await get_ipython().run_cell_magic({name!r}, {line!r}, {body!r})\n"]

    transform.nbgrad_awaits_recorded_cells = True  # found again by a second load
    return transform


async def _nothing():
    return None


def _is_coroutine(code):
    """Whether compiled code is a coroutine to await (it has a top-level ``await``)."""
    return code is not None and bool(code.co_flags & inspect.CO_COROUTINE)


# A recorded cell is often run again. What IPython would compute again from the same text is
# kept for the next run, where benchmarks/record_overhead.py shows it pays (a ten-line cell:
# transform_cell 280 us, parsing 70 us, against about 1 ms that recording adds).
_TRANSFORMED = {}  # (cell text, the shell's input transformations) -> transformed text
_TREES = {}  # transformed text -> its parsed tree (never changed once made)
RECENT_CELLS = 8


def _remember(cache, key, value):
    if len(cache) >= RECENT_CELLS:
        cache.clear()
    cache[key] = value
    return value


def _transform_cell(shell, code):
    """``shell.transform_cell(code)``: IPython's input transformations (%magics, !shell, help?
    and the user's own), the first step of a plain cell and of ``%%time``."""
    manager = shell.input_transformer_manager
    transforms = (
        *manager.cleanup_transforms,
        *manager.line_transforms,
        *manager.token_transformers,
    )
    key = (code, tuple(map(id, transforms)))
    transformed = _TRANSFORMED.get(key)
    if transformed is None:
        transformed = _remember(_TRANSFORMED, key, shell.transform_cell(code))
    return transformed


def _parse(shell, text, filename):
    """The cell's syntax tree, as IPython makes it: parsed, then passed through the user's AST
    transformers (``shell.ast_transformers``). Without transformers the tree is never changed,
    so it is kept for the next run of the same text (the filename, which changes with every
    execution count, is not in the tree)."""
    if shell.ast_transformers:
        return shell.transform_ast(shell.compile.ast_parse(text, filename))
    tree = _TREES.get(text)
    if tree is None:
        tree = _remember(_TREES, text, shell.compile.ast_parse(text, filename))
    return tree


def _compile(shell, tree, filename, raw, allow_await=False):
    """The cell's code, and its last expression compiled to be displayed (or None).
    ``allow_await``: a top-level ``await`` is allowed, and makes that code a coroutine."""
    flags = shell.compile.flags
    if allow_await:
        flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = list(tree.body)
    last = None
    if body and isinstance(body[-1], ast.Expr) and not _ends_with_semicolon(raw):
        last = compile(
            ast.Interactive(body=[body.pop()]), filename, "single", flags=flags, dont_inherit=True
        )
    module = ast.Module(body=body, type_ignores=[])
    return compile(module, filename, "exec", flags=flags, dont_inherit=True), last


def _ends_with_semicolon(code):
    """A trailing ``;`` hides the last expression's value, as in a plain IPython cell."""
    lines = [line for line in code.splitlines() if line.strip()]
    if not lines or ";" not in lines[-1]:
        return False
    try:  # the last line alone: a ``;`` in a string or a comment does not count
        tokens = list(tokenize.generate_tokens(io.StringIO(lines[-1]).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return False
    for token in reversed(tokens):
        if token.type in (
            tokenize.ENDMARKER,
            tokenize.NL,
            tokenize.NEWLINE,
            tokenize.COMMENT,
            tokenize.DEDENT,
            tokenize.INDENT,
        ):
            continue
        return token.type == tokenize.OP and token.string == ";"
    return False


def _raise_cleanly(shell, error, filenames):
    """Re-raise the cell's exception so that IPython shows one traceback starting at the
    cell's own code (not at this magic), and the cell counts as failed."""
    __tracebackhide__ = True  # noqa: F841
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename not in filenames:
        tb = tb.tb_next
    if tb is not None and not isinstance(error, (SystemExit, UsageError)):

        def render_traceback():
            # IPython calls this instead of formatting the traceback itself; used once.
            del error._render_traceback_
            return shell.InteractiveTB.structured_traceback(type(error), error, tb, tb_offset=0)

        # An exception class with __slots__ refuses the attribute: the long traceback it is.
        with contextlib.suppress(AttributeError):
            error._render_traceback_ = render_traceback
    raise error


def load_ipython_extension(shell):
    shell.register_magics(AutogradMagics)
    transforms = shell.input_transformer_manager.line_transforms
    if not any(getattr(t, "nbgrad_awaits_recorded_cells", False) for t in transforms):
        transforms.insert(0, await_recorded_cells(shell))


def unload_ipython_extension(shell):
    """Nothing to undo: the magics (and the transformation for cells with ``await``) stay
    registered until the kernel restarts, as IPython's own extensions do."""

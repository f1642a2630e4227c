"""The recorded code's text: which line and which expression ran an operation.

While recording, the recorder only notes the code object and instruction offset of the user's
frame (cheap). When the trace is finished, ``Source`` turns them into a line, an expression's
source text (``c * d``) and, where the expression is the right-hand side of an assignment, the
name it was assigned to. Python 3.11+ gives each instruction a column span; on 3.10 labels fall
back to the line's text.
"""

import ast
import bisect
import linecache
import re

LABEL_LENGTH = 40


_RECENT = {}  # (filename, text) -> Source, for code recorded again (a cell run again, a loop)
RECENT_SOURCES = 8


def source_for(filename, text=None, tree=None):
    """The Source of this text, reused when the same code is recorded again: its parse, its
    index and its labels are already made."""
    if text is None:
        text = "".join(linecache.getlines(filename))
    key = (filename, text)
    source = _RECENT.pop(key, None)
    if source is None:
        source = Source(filename, text, tree)
    _RECENT[key] = source  # most recent last
    while len(_RECENT) > RECENT_SOURCES:
        del _RECENT[next(iter(_RECENT))]
    return source


class Source:
    """The text of the recorded cell or file, parsed on first use.

    filename  the name code objects carry (``co_filename``) for this text
    text      the exact text that was compiled (line numbers and columns refer to it)
    """

    def __init__(self, filename, text=None, tree=None):
        self.filename = filename
        if text is None:
            text = "".join(linecache.getlines(filename))
        self.text = text
        self.lines = text.splitlines()
        self._tree = tree  # the parsed text, when the caller has it already
        self._parsed = False
        self._by_line = None
        self._parents = None
        self._indexed = None
        self._statements = None
        self._descriptions = {}
        self._starts = None
        self._statement_texts = {}  # index of a top-level statement -> its text
        # The code object last asked about and its positions: a cell's ops mostly run in one.
        self._last_code = self._last_positions = None

    # --- while recording --------------------------------------------------------------------

    def position_at(self, code, lasti):
        """(line, end line, col, end col) of the instruction at ``lasti`` in ``code`` (any may
        be None), or None."""
        if code is self._last_code:
            positions = self._last_positions
        elif not hasattr(code, "co_positions"):  # Python 3.10: lines, no columns
            for start, end, line in code.co_lines():
                if start <= lasti < end:
                    return (line, None, None, None)
            return None
        else:
            positions = _positions_of(code)
            self._last_code, self._last_positions = code, positions
        index = lasti // 2  # one position per 2-byte code unit
        return positions[index] if index < len(positions) else None

    def span_at(self, code, lasti):
        """(line, col, end line, end col) of the instruction at ``lasti`` in ``code``, or None."""
        position = self.position_at(code, lasti)
        if position is None or None in position:
            return None
        line, end_line, col, end_col = position
        return (line, col, end_line, end_col)

    def fill_spans(self, ops, sites):
        """Give each op without a span the span of its site ((code, lasti, direct) or None, one
        per op), when the trace is finished. (An op that noted where it ran, ``ran_at``, finds
        its own span when first read.)"""
        for op, site in zip(ops, sites):
            if op.span is None and site is not None:
                op.span = self.span_at(site[0], site[1])

    # --- when the trace is finished ----------------------------------------------------------

    def describe(self, span):
        """What the expression at ``span`` is, as (label, assigned name or None, operands), or
        None; cached, since a loop runs the same expression many times."""
        cache = self._descriptions
        if span in cache:
            return cache[span]
        key = self._statement_key(span)
        found = _DESCRIPTIONS.get(key, _UNKNOWN) if key is not None else _UNKNOWN
        if found is _UNKNOWN:
            node = self.expression(span)
            found = None
            if node is not None:
                found = (self.label(node), self.assigned_to(node), self.operands(node))
            if key is not None:
                if len(_DESCRIPTIONS) >= RECENT_DESCRIPTIONS:
                    _DESCRIPTIONS.clear()
                _DESCRIPTIONS[key] = found
        cache[span] = found
        return found

    def _statement_key(self, span):
        """What ``describe(span)`` depends on: the text of the top-level statement that holds
        the span, and the span's place in it; or None when the span is not inside one statement
        alone (statements sharing a line: ``a = 1; b = a * 2``).

        An expression is found and labelled from that statement's text only, so a cell whose
        other lines changed (or whose text is new only by a comment, or by its execution count)
        gets the labels of its unchanged statements without walking them again: indexing a
        statement's expressions costs more than recording a small step's ops."""
        if not self._parse():
            return None
        line, col, end_line, end_col = span
        statements = self._statements
        index = bisect.bisect_right(self._starts, line) - 1
        if index < 0:
            return None
        start, end, _ = statements[index]
        if end_line > end:
            return None
        if index > 0 and statements[index - 1][1] >= start:
            return None
        if index + 1 < len(statements) and statements[index + 1][0] <= end:
            return None
        text = self._statement_texts.get(index)
        if text is None:
            text = self._statement_texts[index] = "\n".join(self.lines[start - 1 : end])
        return (text, line - start, col, end_line - start, end_col)

    def line_text(self, line):
        if line is None or not 1 <= line <= len(self.lines):
            return None
        return self.lines[line - 1].strip()

    def expression(self, span):
        """The smallest expression (or augmented assignment) that contains ``span``."""
        if span is None or not self._parse():
            return None
        line, col, end_line, end_col = span
        best, best_size = None, None
        for node in self._nodes_at(line):
            start = (node.lineno, node.col_offset)
            end = (node.end_lineno, node.end_col_offset)
            if start <= (line, col) and (end_line, end_col) <= end:
                size = (end[0] - start[0], end[1] - start[1] if end[0] == start[0] else end[1])
                if best is None or size < best_size:
                    best, best_size = node, size
        return best

    def label(self, node):
        """An expression's source text on one line, shortened to at most 40 characters."""
        text = re.sub(r"\s+", " ", self._segment(node)).strip()
        if len(text) > LABEL_LENGTH:
            # Keep both ends: a chain of calls differs at its end (``....sum(1)`` and
            # ``....sum(1).mean()``), a long call at its start.
            head = (LABEL_LENGTH - 3) // 2
            text = text[:head].rstrip() + "..." + text[-(LABEL_LENGTH - 3 - head) :].lstrip()
        return text

    def _segment(self, node):
        """The source text of ``node`` (columns are UTF-8 byte offsets, as ``ast`` gives them)."""
        first, last = node.lineno - 1, node.end_lineno - 1
        if not 0 <= first <= last < len(self.lines):
            return ""
        lines = [line.encode() for line in self.lines[first : last + 1]]
        if first == last:
            return lines[0][node.col_offset : node.end_col_offset].decode(errors="replace")
        lines[0] = lines[0][node.col_offset :]
        lines[-1] = lines[-1][: node.end_col_offset]
        return b"\n".join(lines).decode(errors="replace")

    def assigned_to(self, node):
        """The name an expression's value was assigned to (``e`` in ``e = c * d``), or None."""
        if node is None or not self._parse():
            return None
        if isinstance(node, ast.AugAssign):
            return self._target_text(node.target)
        parent = self._parents.get(node)
        if isinstance(parent, ast.Assign) and parent.value is node and len(parent.targets) == 1:
            return self._target_text(parent.targets[0])
        if isinstance(parent, (ast.AnnAssign, ast.NamedExpr)) and parent.value is node:
            return self._target_text(parent.target)
        return None

    def operands(self, node):
        """The source texts of an expression's operands, in the order an op receives them:
        ``[c, d]`` for ``c * d``, ``[x, y]`` for ``x.mul(y)`` or ``torch.mul(x, y)``."""
        if node is None:
            return []
        if isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp):
            parts = [node.operand]
        elif isinstance(node, ast.Compare):
            parts = [node.left, *node.comparators]
        elif isinstance(node, ast.AugAssign):
            parts = [node.target, node.value]
        elif isinstance(node, ast.Call):
            receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
            is_method = receiver is not None and not _looks_like_module(receiver)
            parts = ([receiver] if is_method else []) + list(node.args)
        else:
            return []
        return [(self.label(p), isinstance(p, ast.Constant)) for p in parts]

    def _target_text(self, target):
        if isinstance(target, (ast.Name, ast.Attribute, ast.Subscript)):
            return self.label(target)
        return None

    def _parse(self):
        if not self._parsed:
            self._parsed = True
            if self._tree is None:
                try:
                    self._tree = ast.parse(self.text)
                except (SyntaxError, ValueError):
                    self._tree = None
            if self._tree is not None:
                self._by_line, self._parents, self._indexed = {}, {}, set()
                self._statements = [(s.lineno, s.end_lineno, s) for s in self._tree.body]
                self._starts = [start for start, _, _ in self._statements]
        return self._tree is not None

    def _nodes_at(self, line):
        """The expressions covering ``line``. The top-level statement holding the line is
        indexed on first need: a cell's other statements are never walked."""
        for start, end, statement in self._statements:
            if start <= line <= end:
                if id(statement) not in self._indexed:
                    self._indexed.add(id(statement))
                    self._index(statement)
                break
        return self._by_line.get(line, ())

    def _index(self, statement):
        by_line, parents = self._by_line, self._parents
        for parent in ast.walk(statement):
            for child in ast.iter_child_nodes(parent):
                parents[child] = parent
            if isinstance(parent, (ast.expr, ast.AugAssign)):
                for line in range(parent.lineno, parent.end_lineno + 1):
                    by_line.setdefault(line, []).append(parent)


def _looks_like_module(node):
    """``torch.mul(x, y)``: a call through a module name has no receiver operand. We cannot know
    for sure from text; a lowercase dotted name that is not called is the common module case."""
    names = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return False
    names.append(node.id)
    return names[-1] in {"torch", "nbgrad", "F", "nn", "np", "functional"}


_UNKNOWN = object()
# (a top-level statement's text, a span relative to it) -> its description (Source.describe)
_DESCRIPTIONS = {}
RECENT_DESCRIPTIONS = 4096

_POSITIONS = {}  # (bytecode, position table, first line) -> the code's positions
RECENT_POSITIONS = 16


def _positions_of(code):
    """``list(code.co_positions())``, made once per code: a cell run again is compiled again, to
    a new code object with the same bytecode and positions, so the list is kept by that content
    (not by the code object, which is new, nor by its filename, which has the execution count
    in it). Walking the positions from the start for each op cost more than the rest of
    recording it."""
    key = (code.co_code, code.co_linetable, code.co_firstlineno)
    positions = _POSITIONS.get(key)
    if positions is None:
        positions = list(code.co_positions())
        if len(_POSITIONS) >= RECENT_POSITIONS:
            _POSITIONS.clear()
        _POSITIONS[key] = positions
    return positions

"""One error family for everything plate raises: each says what, where, and what to change."""

from __future__ import annotations


class PlateError(Exception):
    """Base of every error plate raises on purpose."""


class MachineError(PlateError):
    """A machine description or preset is invalid or unknown."""


class IsaError(PlateError):
    """An instruction, operand or table entry violates the ISA."""


class AsmError(IsaError):
    """Malformed .pasm text; carries the line and column."""

    def __init__(self, message: str, *, line: int | None = None, col: int | None = None, text: str = ""):
        self.line, self.col, self.text = line, col, text
        where = f"line {line}" + (f", col {col}" if col is not None else "") if line is not None else ""
        caret = ""
        if text and col is not None:
            caret = f"\n    {text}\n    {' ' * max(col - 1, 0)}^"
        super().__init__(f"{where}: {message}{caret}" if where else message)


class BinaryFormatError(IsaError):
    """Malformed .pbin bytes; carries the byte offset."""

    def __init__(self, message: str, *, offset: int | None = None):
        self.offset = offset
        super().__init__(f"at byte {offset}: {message}" if offset is not None else message)


class SimulatorError(PlateError):
    """A fault while executing a program: names pc, instruction and source location."""

    def __init__(self, message: str, *, pc: int | None = None, instr: str = "", loc: str = "", programs=None):
        self.pc, self.instr, self.loc, self.programs = pc, instr, loc, programs
        parts = [message]
        if pc is not None:
            parts.append(f"at pc {pc}: {instr}" if instr else f"at pc {pc}")
        if loc:
            parts.append(f"source: {loc}")
        if programs is not None:
            parts.append(f"program id(s): {programs}")
        super().__init__("\n  ".join(parts))


class MemoryFault(SimulatorError):
    """An access outside every live allocation (out of bounds, freed, or wild)."""


class SanitizerError(PlateError):
    """PLATE_SANITIZE found races or reads of never-written memory in a launch; ``findings`` lists them
    (sim/sanitizer.py Finding), the message the first few."""

    def __init__(self, message: str, *, findings=()):
        super().__init__(message)
        self.findings = list(findings)


class DeviceOutOfMemory(PlateError):
    """A device allocation does not fit its home domain(s)."""


class SramOverflow(PlateError):
    """A kernel needs more scratchpad than a core has: a compile-time error."""

    def __init__(self, message: str, *, required: int | None = None, limit: int | None = None):
        Exception.__init__(self, message)  # not super(): a subclass also derives Triton's OutOfResources
        self.required, self.limit = required, limit


class CompileError(PlateError):
    """A TTIR construct plate cannot lower; names the op and the kernel source line."""


class RegisterOverflow(CompileError):
    """More scalar registers or DMA tokens live at once than a core has (codegen may lower again
    with shallower pipelining before reporting it)."""

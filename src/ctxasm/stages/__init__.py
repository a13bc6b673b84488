"""One module per pipeline slot. The order of the slots lives in :mod:`ctxasm.assembler` only."""

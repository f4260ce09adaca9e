"""The hostile catalogue: one test case per attack a stranger's file, option or request can make.

Each module holds one class of attack (see docs/security.md and docs/serve.md); every case fails on the
main branch it was written against and passes since. The summary line printed at the end of a run counts
the cases (`tests/conftest.py` prints it: with `make check`'s workers only the root conftest reaches the
process that prints), so the next audit starts from the catalogue rather than from scratch.
"""

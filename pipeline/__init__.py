"""Stage one of WikiSum: Beam transforms and the pure functions they wrap.

Each cleaning rule is a plain function over a typed record (testable without a pipeline); the
Beam jobs in this package only wire them together and count what they drop.
"""
